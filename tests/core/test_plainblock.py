"""The plain-block reader reads a file exactly as PyYAML does, or declines it.

``fullserver.plainblock`` is a shortcut for the YAML most stack files are; PyYAML (libyaml, the
loader ``fullserver.yamlio`` uses) is the judge. Whatever it accepts must come out equal to PyYAML's
own reading, keys, types and order included; whatever PyYAML refuses it must decline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from fullserver.errors import InputError
from fullserver.plainblock import Tagger, read_plain_block
from fullserver.yamlio import _TAGGER, MAX_DEPTH, _Loader, load_yaml_text
from tests.project.repo import ROOT, tracked


def fast(text: str) -> dict[str, Any] | None:
    return read_plain_block(text, _TAGGER, _Loader.bool_values, MAX_DEPTH)


def pyyaml(text: str) -> Any:
    """PyYAML's reading with the loader fullserver uses, or the exception it raises."""
    loader = _Loader(text)
    try:
        return loader.get_single_data()
    except yaml.YAMLError as exc:
        return exc
    finally:
        loader.dispose()


def same(a: Any, b: Any) -> bool:
    """Equal, with the same types (``True == 1`` is not the same value here) and key order."""
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _repo_yaml() -> list[Path]:
    return [ROOT / p for p in tracked("*.yaml", "*.yml")]


def test_every_yaml_file_of_the_repository_reads_as_pyyaml_reads_it() -> None:
    read = 0
    for path in _repo_yaml():
        text = path.read_text()
        got = fast(text)
        if got is not None:
            assert same(got, pyyaml(text)), path
            read += 1
    # the plain example stacks and the plugin file; the serving stacks list their HTTPS domains and
    # eks-gpu-cluster its control-plane ranges (issue 33)
    assert read >= 7, "the shortcut should take the example stacks"


def test_example_stacks_without_lists_or_quotes_take_the_shortcut() -> None:
    """The shortcut is for these: a stack of keys and plain values, comments beside them."""
    for path in sorted((ROOT / "stacks").glob("Pulumi.*.yaml")):
        text = path.read_text()
        lines = [line.split(" #")[0].strip() for line in text.split("\n") if not line.lstrip().startswith("#")]
        plain = not any(line.startswith("-") or any(c in line for c in "[{'\"") for line in lines)
        assert (fast(text) is not None) is plain, path.name


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("config:\n  fullserver:region: us-central1\n", {"config": {"fullserver:region": "us-central1"}}),
        ("a: 1\nb: 0\nc: 10\n", {"a": 1, "b": 0, "c": 10}),
        ("a: true\nb: no\nc: Off\nd: null\ne:\n", {"a": True, "b": False, "c": False, "d": None, "e": None}),
        ("a:\n  b:\n    c: x y  z\n  d: 2\ne: f\n", {"a": {"b": {"c": "x y  z"}, "d": 2}, "e": "f"}),
        ("# top\n\na:   # a comment: the value is empty\nb: c  # this too\n", {"a": None, "b": "c"}),
        ("  a: 1\n  b: 2\n", {"a": 1, "b": 2}),
        ("a:\nb: 1\n", {"a": None, "b": 1}),
        (
            "a: user@example.com\nb: x=y+z/w\nc: /path/to.file\n",
            {"a": "user@example.com", "b": "x=y+z/w", "c": "/path/to.file"},
        ),
        ("gcp:project: p-1\nk:v: w   \n", {"gcp:project": "p-1", "k:v": "w"}),
    ],
)
def test_what_it_reads(text: str, expected: dict[str, Any] | None) -> None:
    got = fast(text)
    assert same(got, expected)
    if expected is not None:
        assert same(got, pyyaml(text))


@pytest.mark.parametrize(
    "text",
    [
        "a:\n\tb: 1\n",  # a tab
        "a: 1\r\nb: 2\r\n",  # CR line ends: left to PyYAML
        "a: [1, 2]\n",
        "a: {b: 1}\n",
        "a:\n- 1\n",
        "a: 'q'\n",
        'a: "q"\n',
        "a: b# not a comment\n",
        "a: b #\tcomment\n",
        "a: 1\n  b: 2\n",  # deeper under a key that has a value: PyYAML refuses it
        "a:\n    b: 1\n  c: 2\n",  # between two open mappings
        "  a: 1\nb: 2\n",
        "a: 1\na: 2\n",  # a duplicate: yamlio names both lines
        "a: -\n",
        "a: -1\n",
        "a: @x\n",
        "a: =\n",
        "a: ~\n",
        "a: 1.5\n",
        "a: 0755\n",
        "a: 0x1f\n",
        "a: 1_000\n",
        "a: 2026-01-01\n",
        "a: &x 1\nb: *x\n",
        "a: !!str 1\n",
        "---\na: 1\n",
        "a: |\n  text\n",
        "a: b\n  c\n",  # a multi-line plain scalar
        "true: 1\n",  # a key that is not a string
        "1: a\n",
        "a : 1\n",
        "",
        "# only a comment\n",
        "plain text\n",
    ],
)
def test_what_it_leaves_to_pyyaml(text: str) -> None:
    assert fast(text) is None


_KEYS = st.sampled_from(["a", "b", "fullserver:x", "k_1", "1", "yes", "a.b", "x/y", "a:", "-a", "c"])
_VALUES = st.sampled_from(
    [
        "",
        "1",
        "01",
        "0",
        "true",
        "No",
        "null",
        "~",
        "x y",
        "a:b",
        "a: b",
        "-",
        "-x",
        "@",
        "=",
        "1.0",
        "v ",
        "é",
        "a#b",
        "a #b",
        "a  # c",
        "2026-01-01",
        "x,y",
        "'s'",
        "[1]",
    ]
)


@st.composite
def documents(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 8))):
        indent = " " * draw(st.sampled_from([0, 0, 2, 4, 1, 3]))
        key, value = draw(_KEYS), draw(_VALUES)
        lines.append(
            draw(
                st.sampled_from(
                    [f"{indent}{key}: {value}", f"{indent}{key}:", f"{indent}# c", "", f"{indent}- {value}"]
                )
            )
        )
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\n\n"]))


@settings(max_examples=3000, deadline=None)
@given(documents())
def test_generated_documents_read_as_pyyaml_reads_them_or_are_declined(text: str) -> None:
    got = fast(text)
    if got is not None:
        expected = pyyaml(text)
        assert not isinstance(expected, Exception), (text, expected)
        assert same(got, expected), text


def test_the_file_reader_takes_the_shortcut_and_keeps_its_guards() -> None:
    """Through ``load_yaml_text``: a plain file reads the same, and the guards that run first
    (control characters) still refuse."""
    assert load_yaml_text("config:\n  fullserver:nodes: 2\n", "x.yaml") == {"config": {"fullserver:nodes": 2}}
    with pytest.raises(Exception, match="control character"):
        load_yaml_text("a: b\x07\n", "x.yaml")


def test_the_tagger_types_scalars_as_the_resolver_and_forgets_at_its_bound() -> None:
    tagger = Tagger(_Loader.yaml_implicit_resolvers)
    for word in ["1", "0x1f", "yes", "No", "null", "~", "1.5", "2026-01-01", "text", "=", "<<", ""]:
        loader = _Loader("")
        try:
            assert tagger.tag(word) == loader.resolve(yaml.ScalarNode, word, (True, False)), word
        finally:
            loader.dispose()
    tagger.MAX_REMEMBERED = 3
    for word in ["a", "b", "c", "d"]:
        tagger.tag(word)
    assert list(tagger.known) == ["d"]


def test_nesting_past_the_limit_is_left_to_the_guarded_reader() -> None:
    """Deeper than ``MAX_DEPTH`` mappings: declined here, and refused by ``load_yaml_text``'s
    depth guard in one line, as before the shortcut."""
    deep = "".join(f"{' ' * i}k{i}:\n" for i in range(MAX_DEPTH + 1)) + f"{' ' * (MAX_DEPTH + 1)}v: 1\n"
    assert fast(deep) is None
    assert fast("".join(f"{' ' * i}k{i}:\n" for i in range(MAX_DEPTH - 1)) + f"{' ' * MAX_DEPTH}v: 1\n") is not None
    with pytest.raises(InputError, match=f"nesting deeper than {MAX_DEPTH} levels"):
        load_yaml_text(deep, "x.yaml")
