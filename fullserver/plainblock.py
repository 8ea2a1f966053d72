"""Reading the YAML most stack files are, without a YAML parser: nested block mappings of plain,
one-line scalars (``config:`` and ``fullserver:region: us-central1`` under it).

Why: planning a stack spent more time in libyaml composing its dozen keys (a Python node, two
marks and a resolver call per scalar) than in sizing it. This reader accepts only text it reads
exactly as PyYAML does, and answers ``None`` for anything else, which ``fullserver.yamlio`` then
reads with PyYAML; so a file reads the same either way, and every error is still PyYAML's.

Design notes: docs/design/core.md.
"""

from __future__ import annotations

import re
import sys
from typing import Any

_LINE = re.compile(
    r"( *)([A-Za-z0-9_/][A-Za-z0-9_./-]*(?::[A-Za-z0-9_./-]+)*):"
    r"(?: +([A-Za-z0-9_/](?:[A-Za-z0-9_./+=@ -]*[A-Za-z0-9_./+=@-])?))?(?: *| +#.*)"
)
"""``indent key: value  # comment``: a key whose colons are each followed by a key character
(``a:: b`` is left to PyYAML), a value that starts with no indicator and holds no ``:``, ``#`` or
``,``; a comment after a blank."""

STR_TAG = "tag:yaml.org,2002:str"
INT_TAG = "tag:yaml.org,2002:int"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_NULL_TAG = "tag:yaml.org,2002:null"
_MAX_DIGITS = sys.int_info.default_max_str_digits

Resolvers = dict[Any, list[tuple[str, re.Pattern[str]]]]


class Tagger:
    """Plain scalars' tags as PyYAML's resolver gives them, remembered: the safe loader has no path
    resolvers and none for every first character, so a scalar's tag is the first implicit resolver
    of its first character that matches it, else ``str``. Why remembered: the same keys and values
    (``fullserver:region``, ``1``) recur in every stack file, and each match is a regular expression.
    ``lines`` remembers whole lines as ``read_plain_block`` reads them, for the same reason."""

    MAX_REMEMBERED = 4096
    """Scalars (and lines) remembered before the memory starts again: a bound whatever is read."""

    def __init__(self, resolvers: Resolvers) -> None:
        self.resolvers = resolvers
        self.known: dict[str, str] = {}
        self.lines: dict[str, _Line] = {}

    def tag(self, value: str) -> str:
        found = self.known.get(value)
        if found is not None:
            return found
        found = next((t for t, regexp in self.resolvers.get(value[:1], ()) if regexp.match(value)), STR_TAG)
        if len(self.known) >= self.MAX_REMEMBERED:
            self.known.clear()
        self.known[value] = found
        return found

    def line(self, line: str) -> _Line:
        """What one line says (``_read_line``), remembered."""
        found = self.lines.get(line)
        if found is None:
            found = _read_line(line, self)
            if len(self.lines) >= self.MAX_REMEMBERED:
                self.lines.clear()
            self.lines[line] = found
        return found


_Line = tuple[int, str, int, Any]
"""A line read: ``(indentation, key, what it says, the value or the boolean word)``; independent
of the file it is in, so it can be remembered."""
_NO_VALUE, _VALUE, _BOOL, _BLANK, _DECLINED = range(5)
"""What a line says: a key and nothing after it (a mapping or null follows), a key and a value, a
key and a boolean word (the loader's ``bools`` say which), no content (blanks or a comment), or
something this reader leaves to PyYAML."""
_BLANK_LINE: _Line = (0, "", _BLANK, None)
_DECLINED_LINE: _Line = (0, "", _DECLINED, None)


def _read_line(line: str, tagger: Tagger) -> _Line:
    stripped = line.lstrip(" ")
    if not stripped or stripped[0] == "#":
        return _BLANK_LINE
    match = _LINE.fullmatch(line)
    if match is None or tagger.tag(match[2]) != STR_TAG:
        return _DECLINED_LINE  # ... or a key that is not a string: PyYAML says what it makes of it
    value = match[3]
    if value is None:
        return (len(match[1]), match[2], _NO_VALUE, None)
    tag = tagger.tag(value)
    if tag == _BOOL_TAG:
        return (len(match[1]), match[2], _BOOL, value.lower())
    if tag == STR_TAG:
        scalar: object = value
    elif tag == INT_TAG and (number := decimal(value)) is not None:
        scalar = number
    elif tag == _NULL_TAG:
        scalar = None
    else:
        return _DECLINED_LINE
    return (len(match[1]), match[2], _VALUE, scalar)


def read_plain_block(text: str, tagger: Tagger, bools: dict[str, bool], max_depth: int) -> dict[str, Any] | None:
    """The mapping ``text`` holds, or ``None`` where it is more than plain block mappings (see the
    module's docstring) or nests more than ``max_depth`` mappings (the reader PyYAML's text is
    left to refuses that). ``tagger`` and ``bools``: the loader's implicit resolvers and boolean
    words, so scalars are typed as the loader types them."""
    if "\t" in text or "\r" in text:
        return None
    root: dict[str, Any] = {}
    open_: list[tuple[int, dict[str, Any]]] = []  # (indentation, mapping), outermost first
    empty: tuple[int, dict[str, Any], str] | None = None  # the last key, when it had no value
    for line in text.split("\n"):
        indent, key, follows, value = tagger.line(line)
        if follows == _BLANK:
            continue
        if follows == _DECLINED:
            return None
        if empty is not None:
            at, parent, named = empty
            if indent > at:  # the key's value is the mapping this line starts
                child: dict[str, Any] = {}
                parent[named] = child
                open_.append((indent, child))
                if len(open_) > max_depth:
                    return None
            empty = None
        if not open_:
            open_.append((indent, root))
        while open_[-1][0] > indent:
            open_.pop()
            if not open_:
                return None
        if open_[-1][0] != indent:  # between open mappings, or under a key with a value
            return None
        mapping = open_[-1][1]
        if key in mapping:
            return None  # a duplicate: PyYAML refuses it naming both lines
        if follows == _NO_VALUE:
            mapping[key] = None
            empty = (indent, mapping, key)
        else:
            mapping[key] = bools[value] if follows == _BOOL else value
    return root if open_ else None


def decimal(value: str) -> int | None:
    """An int-tagged scalar that is a plain decimal, as ``construct_yaml_int`` reads it (a leading
    0 is octal there; past Python's digit limit ``yamlio`` refuses it in one line), else ``None``:
    the other forms (``0x1f``, ``1_000``, ``+1``) are left to that constructor."""
    if value.isascii() and value.isdigit() and (value[0] != "0" or value == "0") and len(value) <= _MAX_DIGITS:
        return int(value)
    return None
