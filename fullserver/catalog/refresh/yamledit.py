"""Editing a catalog data file in place: values change, everything else stays as written.

The data files are curated by hand: comments say why a figure is what it is, rows are grouped
and styled (block mappings in aws.yaml, one flow mapping per line in gcp.yaml and tpu.yaml).
Dumping the parsed data back would lose all of that, so a refresh edits the text instead: PyYAML's
node marks give the exact span of each scalar, and an edit replaces that span, adds a key after a
named one (default: the last) of a mapping (in the mapping's own style), appends a row in the style of the row before it,
or removes a row's lines. The result is parsed again and validated by the caller before anything
is written.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import textwrap
from dataclasses import dataclass, field
from decimal import Decimal

import yaml

from fullserver.errors import InputError

Scalar = str | int | float | Decimal | dt.date | list[str]
"""A value written in place; a list of names is written as a flow sequence (``[p5.48xlarge]``)."""

_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/+()=?&%~:-]*(?: [A-Za-z0-9._/+()-][A-Za-z0-9._/+()=?&%~:-]*)*")
WRAP = 100
"""Line width for notes written as folded block scalars."""


def render(value: Scalar, flow: bool = True) -> str:
    """A YAML scalar that reads back as ``value`` (numbers without exponents, dates ISO); ``flow``
    when it goes inside a flow mapping, where plain text may not hold ':' (URLs are quoted)."""
    if isinstance(value, list):
        return "[" + ", ".join(render(item) for item in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (float, Decimal)):
        text = format(Decimal(str(value)).normalize(), "f")
        return text if "." in text else text + ".0"
    if _PLAIN.fullmatch(value) and _reads_back(value, flow):
        return value
    return json.dumps(value, ensure_ascii=False)


def _reads_back(plain: str, flow: bool) -> bool:
    """Whether ``plain`` unquoted reads back as itself in a block mapping (and a flow one)."""
    try:
        block = yaml.safe_load(f"k: {plain}") == {"k": plain}
        return bool(block and (not flow or yaml.safe_load(f"{{k: {plain}}}") == {"k": plain}))
    except yaml.YAMLError:
        return False


@dataclass
class TextEdits:
    """Span replacements on one text, applied together (from the end, so spans stay valid)."""

    text: str
    _edits: list[tuple[int, int, int, str]] = field(default_factory=list)

    def replace(self, start: int, end: int, new: str) -> None:
        self._edits.append((start, end, len(self._edits), new))

    def insert(self, pos: int, new: str) -> None:
        self.replace(pos, pos, new)

    def apply(self) -> str:
        text = self.text
        last_start = len(text) + 1
        for start, end, _seq, new in sorted(self._edits, reverse=True):
            if end > last_start:
                raise AssertionError(f"overlapping edits at {start}:{end}")  # a bug in the caller
            text = text[:start] + new + text[end:]
            last_start = start
        return text

    def __len__(self) -> int:
        return len(self._edits)


def compose(text: str, where: str) -> yaml.MappingNode:
    """The document's node tree (marks included); the file was validated by ``read_yaml`` first."""
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    if not isinstance(node, yaml.MappingNode):
        raise InputError(where, "expected a mapping at the top level", "see the other data files")
    return node


def pairs(node: yaml.MappingNode) -> dict[str, tuple[yaml.Node, yaml.Node]]:
    return {str(k.value): (k, v) for k, v in node.value}


def _line_start(text: str, pos: int) -> int:
    return text.rfind("\n", 0, pos) + 1


def line_end(text: str, pos: int) -> int:
    """The index of the newline ending the line that holds ``pos - 1`` (a value ending at pos)."""
    if pos > 0 and text[pos - 1] == "\n":  # a block scalar ends after its line break
        return pos - 1
    end = text.find("\n", pos)
    return len(text) if end < 0 else end


def value_end(node: yaml.Node, text: str) -> int:
    """Where a value's own text ends: a block mapping's end mark runs on over blank lines and
    comments up to the next token, and a block scalar's over the blank lines after it; here a block
    mapping ends after its last value and a block scalar after its last line's break."""
    if isinstance(node, yaml.MappingNode) and node.value and not node.flow_style:
        return value_end(node.value[-1][1], text)
    if isinstance(node, yaml.ScalarNode) and node.style in (">", "|"):
        start = node.start_mark.index
        content = text[start : node.end_mark.index].rstrip()
        end = start + len(content)
        return end + 1 if end < len(text) and text[end] == "\n" else end
    return int(node.end_mark.index)


def _folded(value: str, indent: int) -> str:
    lines = textwrap.wrap(value, width=max(40, WRAP - indent), break_on_hyphens=False, break_long_words=False)
    pad = " " * indent
    return ">-\n" + "".join(f"{pad}{line}\n" for line in lines)


def set_value(edits: TextEdits, mapping: yaml.MappingNode, key: str, value: Scalar, folded: bool = False) -> None:
    """Set ``key`` to ``value``: replace the scalar if the key is there, else add the key."""
    found = pairs(mapping).get(key)
    if found is None:
        add_key(edits, mapping, key, value, folded)
        return
    knode, vnode = found
    start, end = vnode.start_mark.index, value_end(vnode, edits.text)
    is_block = isinstance(vnode, yaml.ScalarNode) and vnode.style in (">", "|")
    if isinstance(value, str) and (folded or is_block) and not mapping.flow_style:
        edits.replace(start, end, _folded(value, knode.start_mark.column + 2))
    elif is_block:  # a block scalar ends after its line break; keep the line
        edits.replace(start, end, render(value, flow=False) + "\n")
    else:
        edits.replace(start, end, render(value, flow=bool(mapping.flow_style)))


def add_key(
    edits: TextEdits,
    mapping: yaml.MappingNode,
    key: str,
    value: Scalar,
    folded: bool = False,
    after: str | None = None,
) -> None:
    """Add ``key: value`` after the pair ``after`` (default: the last pair), in the mapping's style."""
    text = edits.text
    if not mapping.value:
        raise InputError("", f"cannot add '{key}' to an empty mapping", "write the entry by hand")
    anchor = pairs(mapping).get(after) if after else None
    last_value = anchor[1] if anchor else mapping.value[-1][1]
    if mapping.flow_style:
        edits.insert(value_end(last_value, text), f", {key}: {render(value)}")
        return
    indent = mapping.value[0][0].start_mark.column
    rendered = _folded(value, indent + 2) if folded and isinstance(value, str) else render(value, False) + "\n"
    end = value_end(last_value, text)
    eol = line_end(text, end)
    if eol >= len(text):  # no newline at the end of the file
        edits.insert(eol, f"\n{' ' * indent}{key}: {rendered}")
    else:
        edits.insert(eol + 1, f"{' ' * indent}{key}: {rendered}")


def remove_key(edits: TextEdits, mapping: yaml.MappingNode, key: str) -> None:
    """Remove ``key`` (never the first key: rows start with their identity fields)."""
    index = next((i for i, (k, _) in enumerate(mapping.value) if k.value == key), None)
    if index is None:
        return
    if index == 0:
        raise InputError("", f"cannot remove the first key '{key}' of a mapping", "edit the file by hand")
    knode, vnode = mapping.value[index]
    if mapping.flow_style:
        edits.replace(value_end(mapping.value[index - 1][1], edits.text), vnode.end_mark.index, "")
        return
    text = edits.text
    eol = line_end(text, value_end(vnode, text))
    edits.replace(_line_start(text, knode.start_mark.index), min(eol + 1, len(text)), "")


def _item_prefix(text: str, item: yaml.Node) -> str:
    """The text before an item on its line, e.g. ``'  - '``."""
    start = item.start_mark.index
    return text[_line_start(text, start) : start]


def append_item(edits: TextEdits, seq: yaml.SequenceNode, fields: list[tuple[str, Scalar]]) -> None:
    """Append a mapping item after the sequence's last item, in that item's style."""
    text = edits.text
    if seq.flow_style or not seq.value or not isinstance(seq.value[-1], yaml.MappingNode):
        raise InputError("", "cannot append to an empty or flow-style list", "write the first row by hand")
    last = seq.value[-1]
    prefix = _item_prefix(text, last)
    if last.flow_style:
        body = "{" + ", ".join(f"{k}: {render(v)}" for k, v in fields) + "}"
        new = prefix + body
    else:
        indent = last.value[0][0].start_mark.column
        first, *rest = fields
        new = prefix + f"{first[0]}: {render(first[1], False)}"
        new += "".join(f"\n{' ' * indent}{k}: {render(v, False)}" for k, v in rest)
    end = line_end(text, value_end(last, text))
    # At the start of the next line, so a key added to the last item (same position, added
    # earlier) stays inside that item.
    if end >= len(text):
        edits.insert(end, "\n" + new)
    else:
        edits.insert(end + 1, new + "\n")


def delete_item(edits: TextEdits, seq: yaml.SequenceNode, index: int) -> None:
    """Remove one item's lines (a comment on its last line goes with it)."""
    text = edits.text
    item = seq.value[index]
    start = _line_start(text, item.start_mark.index)
    end = line_end(text, value_end(item, text))
    edits.replace(start, min(end + 1, len(text)), "")


def append_section(edits: TextEdits, name: str, rows: list[list[tuple[str, Scalar]]], comment: str = "") -> None:
    """Add a top-level list at the end of the file, one flow mapping per row."""
    text = edits.text
    out = "" if text.endswith("\n") else "\n"
    out += "\n"
    if comment:
        out += "".join(f"# {line}\n" for line in textwrap.wrap(comment, width=WRAP - 2))
    out += f"{name}:\n"
    out += "".join("  - {" + ", ".join(f"{k}: {render(v)}" for k, v in row) + "}\n" for row in rows)
    edits.insert(len(text), out)


def add_mapping_entry(
    edits: TextEdits, mapping: yaml.MappingNode, key: str, fields: list[tuple[str, Scalar]], folded: set[str]
) -> None:
    """Add ``key:`` with a block mapping of ``fields`` after the block mapping's last entry."""
    text = edits.text
    if mapping.flow_style or not mapping.value:
        raise InputError("", f"cannot add '{key}' to an empty or flow-style mapping", "write it by hand")
    indent = mapping.value[0][0].start_mark.column
    inner = indent + 2
    new = f"{' ' * indent}{key}:\n"
    for name, value in fields:
        if name in folded and isinstance(value, str):
            new += f"{' ' * inner}{name}: {_folded(value, inner + 2)}"
        else:
            new += f"{' ' * inner}{name}: {render(value, False)}\n"
    end = line_end(text, value_end(mapping.value[-1][1], text))
    edits.insert(min(end + 1, len(text)), new if end < len(text) else "\n" + new)
