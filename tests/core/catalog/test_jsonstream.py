"""The streaming JSON reader: a huge offer file is walked member by member, in any chunking."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from fullserver.catalog.refresh.jsonstream import JsonStream
from fullserver.errors import InputError

DOC = {
    "formatVersion": "v1.0",
    "publicationDate": "2026-11-20T18:04:11Z",
    "products": {
        "SKU1": {"sku": "SKU1", "attributes": {"instanceType": "g5.xlarge", "note": 'a "quoted" }, {'}},
        "SKU2": {"sku": "SKU2", "attributes": {"instanceType": "p5.48xlarge", "π": "ünïcødé"}},
    },
    "terms": {"OnDemand": {"SKU1": {"x": [1, 2.5, -3e2, True, None]}}, "Reserved": {}},
    "count": 1234567,
}


def walk(text: bytes, chunk: int) -> dict[str, Any]:
    """Read DOC's parts back the way the AWS reader does: walk products and terms, decode the rest."""
    doc = JsonStream(io.BytesIO(text), "doc.json", chunk_chars=chunk)
    out: dict[str, Any] = {}
    for key in doc.members():
        if key == "products":
            out[key] = {sku: doc.value() for sku in doc.members()}
        elif key == "terms":
            terms: dict[str, Any] = {}
            for kind in doc.members():
                terms[kind] = {sku: doc.value() for sku in doc.members()}
            out[key] = terms
        else:
            out[key] = doc.value()
    return out


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 64, 1 << 20])
@pytest.mark.parametrize("indent", [None, 2])
def test_any_chunking_reads_the_same_document(chunk: int, indent: int | None) -> None:
    text = json.dumps(DOC, indent=indent, ensure_ascii=False).encode()
    assert walk(text, chunk) == DOC


def test_a_number_split_across_chunks_is_read_whole() -> None:
    # "count" ends a chunk mid-number at chunk size 3 for some offset; every size is tried above,
    # this pins the case the reader guards against explicitly: a number at the very end.
    doc = JsonStream(io.BytesIO(b'{"n": 1234567}'), "n.json", chunk_chars=8)
    assert [(k, doc.value()) for k in doc.members()] == [("n", 1234567)]


def test_values_left_unread_are_skipped() -> None:
    doc = JsonStream(io.BytesIO(json.dumps(DOC).encode()), "doc.json", chunk_chars=5)
    keys = list(doc.members())  # nothing read: every value skipped
    assert keys == list(DOC)


def test_malformed_json_is_one_line_naming_the_source() -> None:
    doc = JsonStream(io.BytesIO(b'{"a": 1, "b": [1, 2'), "offer.json", chunk_chars=4)
    with pytest.raises(InputError, match=r"offer.json: malformed JSON"):
        for _ in doc.members():
            doc.value()


def test_a_missing_comma_is_reported() -> None:
    doc = JsonStream(io.BytesIO(b'{"a": 1 "b": 2}'), "offer.json")
    with pytest.raises(InputError, match="expected ','"):
        for _ in doc.members():
            doc.value()


@pytest.mark.parametrize("chunk", [1, 3, 7, 64, 1 << 20])
def test_an_array_is_walked_element_by_element_in_any_chunking(chunk: int) -> None:
    doc = {"products": [{"sku": "A"}, {"sku": "B", "x": [1, 2]}, [], "s"], "terms": {"savingsPlan": []}, "n": 3}
    stream = JsonStream(io.BytesIO(json.dumps(doc).encode()), "sp.json", chunk_chars=chunk)
    out: dict[str, Any] = {}
    for key in stream.members():
        if key == "products":
            out[key] = [(i, stream.value()) for i in stream.elements() if i != 2]  # element 2 left unread: skipped
        elif key == "terms":
            out[key] = {kind: list(stream.elements()) for kind in stream.members()}
        else:
            out[key] = stream.value()
    assert out == {
        "products": [(0, {"sku": "A"}), (1, {"sku": "B", "x": [1, 2]}), (3, "s")],
        "terms": {"savingsPlan": []},
        "n": 3,
    }


def test_an_unclosed_array_is_refused() -> None:
    stream = JsonStream(io.BytesIO(b'{"a": [1, 2 3]}'), "bad.json")
    with pytest.raises(InputError, match="expected ',' or ']'"):
        for _ in stream.members():
            for _ in stream.elements():
                stream.value()
