"""Text-preserving edits of a data file: only the edited scalars and lines change."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
import yaml

from fullserver.catalog.refresh import yamledit

BLOCK = """\
# header comment
sources:
  a:
    title: first
    note: >-
      a folded
      note

  b:
    title: second
    as_of: '2026-01-19'

rows:
- shape: x
  on_demand_usd_hour: 1.5
  source: a  # why
# between
- shape: y
  on_demand_usd_hour: 2
  source: a
flows:
  - {shape: x, on_demand_usd_hour: 1.5, spot_usd_hour: 0.5, source: a}  # per GiB
  - {shape: y, on_demand_usd_hour: 2.0, source: a}
"""


def nodes(text: str) -> dict[str, yaml.Node]:
    return {k: v for k, (_, v) in yamledit.pairs(yamledit.compose(text, "t.yaml")).items()}


def item(text: str, section: str, i: int) -> yaml.MappingNode:
    seq = nodes(text)[section]
    assert isinstance(seq, yaml.SequenceNode)
    node = seq.value[i]
    assert isinstance(node, yaml.MappingNode)
    return node


def edit(text: str, *steps: tuple[object, ...]) -> str:
    edits = yamledit.TextEdits(text)
    for step in steps:
        name, section, index, *args = step
        getattr(yamledit, str(name))(edits, item(text, str(section), int(str(index))), *args)
    return edits.apply()


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Decimal("21.9576420000"), "21.957642"),
        (Decimal("1"), "1.0"),
        (0.1, "0.1"),
        (3, "3"),
        (dt.date(2026, 11, 23), "2026-11-23"),
        ("us-east-1", "us-east-1"),
        ("yes", '"yes"'),
        ("a: b", '"a: b"'),
        ("x,y", '"x,y"'),
    ],
)
def test_scalars_read_back_as_themselves(value: yamledit.Scalar, text: str) -> None:
    assert yamledit.render(value) == text
    expected = float(value) if isinstance(value, Decimal) else value
    assert yaml.safe_load(f"{{k: {text}}}")["k"] == expected
    assert yaml.safe_load(f"k: {text}")["k"] == expected


def test_text_that_only_a_block_mapping_reads_plain_is_quoted_in_a_flow_one() -> None:
    url = "https://example.com/skus?pageSize=5000"  # '?' inside a flow mapping starts a key
    assert yamledit.render(url, flow=False) == url
    assert yamledit.render(url) == f'"{url}"'


def test_a_scalar_is_replaced_in_place_and_nothing_else_moves() -> None:
    out = edit(BLOCK, ("set_value", "rows", "0", "on_demand_usd_hour", Decimal("1.75")))
    assert out == BLOCK.replace(
        "on_demand_usd_hour: 1.5\n  source: a  # why", "on_demand_usd_hour: 1.75\n  source: a  # why"
    )


def test_keys_are_added_and_removed_in_the_mapping_style() -> None:
    out = edit(
        BLOCK,
        ("add_key", "rows", "0", "spot_source", "b"),
        ("add_key", "flows", "1", "spot_usd_hour", Decimal("0.7"), False, "on_demand_usd_hour"),
        ("remove_key", "flows", "0", "spot_usd_hour"),
    )
    assert "  source: a  # why\n  spot_source: b\n# between\n" in out
    assert "  - {shape: y, on_demand_usd_hour: 2.0, spot_usd_hour: 0.7, source: a}\n" in out
    assert "  - {shape: x, on_demand_usd_hour: 1.5, source: a}  # per GiB\n" in out
    assert yaml.safe_load(out)["rows"][0] == {
        "shape": "x",
        "on_demand_usd_hour": 1.5,
        "source": "a",
        "spot_source": "b",
    }


def test_rows_are_appended_in_the_style_of_the_last_row_and_deleted_by_their_lines() -> None:
    edits = yamledit.TextEdits(BLOCK)
    rows, flows = nodes(BLOCK)["rows"], nodes(BLOCK)["flows"]
    assert isinstance(rows, yaml.SequenceNode) and isinstance(flows, yaml.SequenceNode)
    yamledit.append_item(edits, rows, [("shape", "z"), ("on_demand_usd_hour", Decimal("3")), ("source", "b")])
    yamledit.append_item(edits, flows, [("shape", "z"), ("on_demand_usd_hour", Decimal("3")), ("source", "b")])
    yamledit.delete_item(edits, flows, 0)
    out = edits.apply()
    assert (
        "- shape: y\n  on_demand_usd_hour: 2\n  source: a\n- shape: z\n  on_demand_usd_hour: 3.0\n  source: b\nflows:"
        in out
    )
    assert out.endswith(
        "flows:\n  - {shape: y, on_demand_usd_hour: 2.0, source: a}\n  - {shape: z, on_demand_usd_hour: 3.0, source: b}\n"
    )


def test_a_folded_note_is_rewritten_folded_and_the_blank_line_after_it_stays() -> None:
    sources = nodes(BLOCK)["sources"]
    assert isinstance(sources, yaml.MappingNode)
    a = yamledit.pairs(sources)["a"][1]
    assert isinstance(a, yaml.MappingNode)
    edits = yamledit.TextEdits(BLOCK)
    yamledit.set_value(edits, a, "note", "a new note " * 12, folded=True)
    out = edits.apply()
    assert yaml.safe_load(out)["sources"]["a"]["note"] == ("a new note " * 12).strip()
    assert "\n\n  b:\n    title: second" in out


def test_a_source_entry_is_added_after_the_last_one() -> None:
    sources = nodes(BLOCK)["sources"]
    assert isinstance(sources, yaml.MappingNode)
    edits = yamledit.TextEdits(BLOCK)
    fields: list[tuple[str, yamledit.Scalar]] = [("title", "new"), ("as_of", dt.date(2026, 11, 23)), ("note", "n")]
    yamledit.add_mapping_entry(edits, sources, "c", fields, folded={"note"})
    out = edits.apply()
    assert "    as_of: '2026-01-19'\n  c:\n    title: new\n    as_of: 2026-11-23\n    note: >-\n      n\n\nrows:" in out
    assert yaml.safe_load(out)["sources"]["c"] == {"title": "new", "as_of": dt.date(2026, 11, 23), "note": "n"}


def test_overlapping_edits_are_a_bug_not_a_silent_mess() -> None:
    edits = yamledit.TextEdits("abcdef")
    edits.replace(1, 4, "X")
    edits.replace(2, 5, "Y")
    with pytest.raises(AssertionError):
        edits.apply()
