"""Reading YAML files and turning validation errors into one line that names the file and field.

Every file fullserver reads (profiles, stacks, catalog data, inventories) goes through
``read_yaml``, so every reader gets the same guards, each ending in one ``file[:line]: what``
line instead of a traceback or a crash: see the design notes.

Design notes: docs/design/core.md.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Hashable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from fullserver.errors import InputError
from fullserver.plainblock import INT_TAG, STR_TAG, Tagger, decimal, read_plain_block

try:  # libyaml's C parser reads about ten times faster than the pure-Python one; both are "safe"
    from yaml import CSafeLoader as _BaseLoader
except ImportError:  # pragma: no cover - PyYAML built without libyaml
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

M = TypeVar("M", bound=BaseModel)

MAX_BYTES = 1 << 20
"""The largest YAML file read (1 MiB); the largest catalog data file is under 64 KiB."""

MAX_DEPTH = 64
"""The deepest nesting accepted; the repository's files nest fewer than ten levels."""

MAX_EXPANDED = 1_000_000
"""The most values a file may stand for once its aliases are expanded (the largest catalog file:
~2,300)."""

_MERGE_TAG = "tag:yaml.org,2002:merge"
_VALUE_TAG = "tag:yaml.org,2002:value"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_SCALAR_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "binary", "timestamp")
)
"""The safe scalar tags (besides ``str``), each built by the safe constructor's own function."""


# Characters YAML forbids in a stream (YAML 1.1 "printable"): C0 controls other than tab and
# line breaks, DEL, C1 controls other than NEL, surrogates and U+FFFE/U+FFFF.
_UNPRINTABLE = re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


_FLATTEN = "flatten the structure"
_FEWER_ALIASES = "write the values out instead of aliasing them"


class _DuplicateKey(yaml.YAMLError):
    def __init__(self, key: object, line: int, first: int) -> None:
        super().__init__(f"duplicate key {key!r}")
        self.key = key
        self.line = line
        self.first = first


class _Refused(yaml.YAMLError):
    def __init__(self, line: int | None, what: str, hint: str) -> None:
        super().__init__(what)
        self.line = line
        self.what = what
        self.hint = hint


class _NotPlain(Exception):
    """A node ``_Loader.construct_plain`` leaves to PyYAML's constructor."""


class _Loader(_BaseLoader):
    """The safe loader (C parser when available) that refuses a key given twice in one mapping.

    The check runs on the mapping's own entries, before merge keys (``<<: *base``) are
    flattened in, so overriding a merged key stays allowed as YAML intends.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
                continue  # a non-scalar key is refused by the constructor itself
            # A string key is its text; others (1 and 0x1 are one int) are compared constructed.
            key = key_node.value if key_node.tag == STR_TAG else self.construct_object(key_node)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise _DuplicateKey(key, line, seen[key])
            seen[key] = line
        return super().construct_mapping(node, deep)

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        """PyYAML's ``Resolver.resolve``, shortened where this loader has no path resolvers and no
        resolver for every first character (the safe loader's case): a plain scalar's tag is the
        first implicit resolver of its first character that matches it, else ``str``. Why: libyaml
        calls it for every node, and the general version was a tenth of reading a stack file."""
        if kind is yaml.ScalarNode and implicit[0] and _PLAIN_RESOLVERS:
            return _TAGGER.tag(value)
        return super().resolve(kind, value, implicit)  # type: ignore[no-any-return,no-untyped-call]

    def construct_plain(self, node: yaml.Node | None) -> Any:
        """The document as ``construct_document`` makes it, built directly where it is plain data.

        Why: PyYAML's constructor (Python, generators and per-node bookkeeping) took most of the
        time of reading a stack file. Plain data is maps, sequences and scalars of the safe tags,
        with no alias, merge key or other tag; there the result is the same dicts, lists and
        values. Anything else, and any error, is left to ``construct_document`` from the start
        (building here changes nothing), so what it returns or raises, and in which order, is
        PyYAML's own.
        """
        if node is None:
            return None
        try:
            return self._plain(node, set())
        except Exception:  # redone by PyYAML itself, which raises what it raises
            return self.construct_document(node)

    def _plain(self, node: yaml.Node, seen: set[int]) -> Any:
        if id(node) in seen:
            raise _NotPlain  # an alias: PyYAML shares the one object it builds
        seen.add(id(node))
        tag = node.tag
        if isinstance(node, yaml.ScalarNode):
            value = node.value
            if tag == STR_TAG:
                return value
            if tag == INT_TAG and (number := decimal(value)) is not None:
                return number
            construct = self.yaml_constructors.get(tag)
            if construct is None or tag not in _SCALAR_TAGS:
                raise _NotPlain
            return construct(self, node)
        if isinstance(node, yaml.SequenceNode) and tag == _SEQ_TAG:
            return [self._plain(item, seen) for item in node.value]
        if not isinstance(node, yaml.MappingNode) or tag != _MAP_TAG:
            raise _NotPlain
        out: dict[Hashable, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag in (_MERGE_TAG, _VALUE_TAG):
                raise _NotPlain
            key = self._plain(key_node, seen)
            if key in out:
                raise _NotPlain  # a duplicate key: construct_mapping refuses it naming both lines
            out[key] = self._plain(value_node, seen)
        return out

    def construct_bounded_int(self, node: yaml.ScalarNode) -> int:
        """An integer, or one line when it has more digits than Python converts (4,300).

        Why: PyYAML's int() raised a ValueError past that limit, a traceback; no key's bound is
        anywhere near it, so the value is refused as what it is."""
        try:
            return int(super().construct_yaml_int(node))
        except ValueError:
            raise _Refused(
                node.start_mark.line + 1,
                f"an integer of {len(node.value):,} characters is far above any value fullserver takes",
                "give a number within the key's bounds",
            ) from None


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_bounded_int)
_PLAIN_RESOLVERS = None not in _Loader.yaml_implicit_resolvers and not _Loader.yaml_path_resolvers
"""The loader's resolvers are the safe loader's, so ``_TAGGER`` types a plain scalar as they do."""
_TAGGER = Tagger(_Loader.yaml_implicit_resolvers)


# The cheap depth bound, a few string operations a line (a fifth of the cost of counting the
# parser's events). Block collections nest by indentation: each starts at a column no further
# right than the end of its line's leading run of indentation, indicators ("- ", "? ", ": ") and
# properties (anchors, tags), and at most two (a mapping and an indentless sequence under it)
# share a column, so block depth <= 2 * (longest leading run + 1). Flow collections nest by
# brackets, counted outside the quoted strings and comments a line opens and closes; "[" counts
# twice, as "[k: v]" holds a mapping without braces. A flow collection spanning lines, brackets
# that do not pair, or a closing bracket after a quote the line leaves open (it may be inside
# the string) leave the depth to the exact count.
_LEAD_CHARS = " \t-?:"
_LEAD = re.compile(r"(?:[ \t]|(?:---|[-?:])(?=[ \t]|$)|[&!][^ \t]*)*")
# A quote opens a quoted string only where a token starts: after the line's indentation and
# indicators, after "[", "{" or ",", or after ": ". Elsewhere it may sit in a plain scalar ("it's").
_QUOTED = re.compile(r"""((?:^[ \t]*(?:[-?:][ \t]+)*|[\[{,][ \t]*|:[ \t]+))(?:"(?:[^"\\]|\\.)*"|'(?:[^']|'')*')""")
# libyaml starts a comment at "#" wherever a token may start, even right after "[", "{" or ",".
_COMMENT = re.compile(r"(?:^|(?<=[ \t\[{,]))#.*")
_OPEN_QUOTE_THEN_CLOSE = re.compile(r"""(?:^|[\[{,:?-]|[&!][^ \t"']*[ \t])[ \t]*["'].*[]}]""")
_BRACKET = re.compile(r"[][{}]")
_PAIRS = {"]": "[", "}": "{"}


def _line_flow_depth(line: str) -> int | None:
    """A bound on the flow nesting one line opens, or None when the line cannot give one."""
    if "#" in line or '"' in line or "'" in line:
        line = _COMMENT.sub("", _QUOTED.sub(r"\1", line))
        if _OPEN_QUOTE_THEN_CLOSE.search(line):
            return None
    opened: list[str] = []
    depth = deepest = 0
    for bracket in _BRACKET.findall(line):
        if bracket in "[{":
            opened.append(bracket)
            depth += 2 if bracket == "[" else 1
            deepest = max(deepest, depth)
        elif opened:
            if opened.pop() != _PAIRS[bracket]:
                return None
            depth -= 2 if bracket == "]" else 1
        # a closing bracket with none open is text in a block scalar, or an error libyaml reports
    return None if opened else deepest


def _depth_bound(text: str) -> int | None:
    """An upper bound on the nesting depth of ``text``, or None when the scan cannot give one."""
    lead = flow = 0
    for line in text.splitlines():
        content = line.lstrip(_LEAD_CHARS)
        column = len(line) - len(content)
        if content[:1] in ("&", "!"):
            match = _LEAD.match(line)
            column = max(column, match.end() if match else 0)
        lead = max(lead, column)
        if "[" in content or "{" in content:
            depth = _line_flow_depth(line)
            if depth is None:
                return None
            flow = max(flow, depth)
    return 2 * (lead + 1) + flow


def _check_depth(text: str) -> None:
    """Refuse nesting deeper than ``MAX_DEPTH``, before libyaml's recursive composer sees it."""
    bound = _depth_bound(text)
    if bound is not None and bound <= MAX_DEPTH:
        return
    try:
        _count_depth(text, _BaseLoader)
    except _Refused:
        raise
    except yaml.YAMLError:
        # Some libyaml builds (PyYAML 6.0.4's) stop deep nesting with a limit and wording of their
        # own before our count reaches ours. The pure-Python parser has no such limit: counting
        # again with it gives our refusal, or the same syntax error with its line.
        _count_depth(text, yaml.SafeLoader)


def _count_depth(text: str, loader: Any) -> None:
    """Count the parser's collection events (its own stack, never recursion), refusing at depth."""
    depth = 0
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                mark = event.start_mark
                line = mark.line + 1 if mark is not None else None
                raise _Refused(line, f"nesting deeper than {MAX_DEPTH} levels", _FLATTEN)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _has_alias(text: str) -> bool:
    """Whether an alias ("*name") may start somewhere: only then is the expanded walk needed.

    A star where a token starts (line start, after a blank, "[", "{" or ",") followed by a name
    character; stars elsewhere ("a2-*", "2 * 3") are text. Looking at each star costs a tenth
    of a regular expression trying every position of the file.
    """
    start = text.find("*")
    while start >= 0:
        before = text[start - 1] if start else "\n"
        after = text[start + 1 : start + 2]
        if (before.isspace() or before in "[{,") and after and not after.isspace() and after not in "[]{},":
            return True
        start = text.find("*", start + 1)
    return False


def _check_expanded(data: Any) -> None:
    """Refuse aliases that make the data deeper than ``MAX_DEPTH``, larger than ``MAX_EXPANDED``
    values or cyclic once expanded ("billion laughs"): the nesting check sees only the text, and
    code that walks the data (merging profiles, printing JSON) would follow every alias."""
    memo: dict[int, tuple[int, int]] = {}  # id -> (depth, values), for objects aliases share
    open_: set[int] = set()
    stack: list[tuple[Any, bool]] = [(data, False)]
    while stack:
        obj, finished = stack.pop()
        children = list(obj.values()) if isinstance(obj, dict) else obj
        nested = [c for c in children if isinstance(c, (dict, list))]
        if not finished:
            if id(obj) in memo:
                continue
            if id(obj) in open_:
                raise _Refused(None, "an alias refers to the collection that contains it", _FEWER_ALIASES)
            open_.add(id(obj))
            stack.append((obj, True))
            stack.extend((c, False) for c in nested if id(c) not in memo)
            continue
        open_.discard(id(obj))
        depth = 1 + max((memo[id(c)][0] for c in nested), default=0)
        size = 1 + len(children) + sum(memo[id(c)][1] for c in nested)
        if depth > MAX_DEPTH:
            raise _Refused(None, f"aliases nest the data deeper than {MAX_DEPTH} levels", _FEWER_ALIASES)
        if size > MAX_EXPANDED:
            raise _Refused(None, f"aliases expand the data to more than {MAX_EXPANDED:,} values", _FEWER_ALIASES)
        memo[id(obj)] = (depth, size)


def _decode(path: Path, data: bytes) -> str:
    """UTF-8 text (a byte-order mark dropped), or one line naming what the bytes are instead."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InputError(str(path), "not UTF-8 text: a UTF-16 byte-order mark at byte offset 0", "save it as UTF-8")
    nul = data.find(b"\0")
    if nul >= 0:
        raise InputError(
            str(path),
            f"not UTF-8 text: a NUL byte at byte offset {nul} (a binary or UTF-16 file)",
            "check the path, or save the file as UTF-8",
        )
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            str(path),
            f"not UTF-8 text: byte 0x{data[exc.start]:02x} at byte offset {exc.start} (line {line})",
            "save the file as UTF-8",
        ) from None


def _read_bytes(path: Path, max_bytes: int = MAX_BYTES, kind: str = "a YAML file") -> bytes:
    """At most ``max_bytes`` + 1 bytes: enough to tell the file is too large, and no more. A named
    pipe or a device is refused before it is opened (opening a pipe waits for a writer; /dev/zero
    never ends)."""
    try:
        found = path.stat()
        if not (stat.S_ISREG(found.st_mode) or stat.S_ISDIR(found.st_mode)):  # a directory fails below
            raise InputError(str(path), "not a regular file (a pipe, socket or device)", "give the path of a file")
        with path.open("rb") as stream:
            # Asking for the size the file has (+1 to see it end) spares allocating max_bytes for
            # a 300-byte stack file; a file that grew meanwhile is read on, to the same limit.
            first = min(found.st_size, max_bytes) + 1
            data = stream.read(first)
            if len(data) == first and first <= max_bytes:
                data += stream.read(max_bytes + 1 - first)
    except OSError as exc:
        raise InputError(str(path), f"cannot read file: {exc.strerror or exc}", "check the path") from None
    if len(data) > max_bytes:
        raise InputError(
            str(path), f"larger than {max_bytes >> 20} MiB, the most {kind} may be", "is this the right file?"
        )
    return data


def read_text(path: Path, max_bytes: int = MAX_BYTES, kind: str = "a YAML file") -> str:
    """A file's UTF-8 text with the guards every reader gets: a regular file, at most ``max_bytes``,
    UTF-8 (one line naming the file and the byte otherwise)."""
    return _decode(path, _read_bytes(path, max_bytes, kind))


def read_yaml(path: Path) -> dict[str, Any]:
    """Parse a YAML mapping; every problem is one line naming the file (and the line, if any)."""
    data = load_yaml_text(read_text(path), str(path))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(str(path), "expected a mapping at the top level", "see the examples in the repo")
    return data


def load_yaml_text(text: str, where: str) -> Any:
    """Any YAML value from text (a file's, or a flag's such as ``--config KEY=VALUE``), with the
    same guards as a file: control characters, depth, duplicate keys, alias expansion."""
    bad = _UNPRINTABLE.search(text)
    if bad is not None:
        line = text.count("\n", 0, bad.start()) + 1
        raise InputError(
            f"{where}:{line}", f"control character U+{ord(bad.group()):04X} is not allowed in YAML", "remove it"
        )
    try:
        data = read_plain_block(text, _TAGGER, _Loader.bool_values, MAX_DEPTH) if _PLAIN_RESOLVERS else None
        if data is None:
            _check_depth(text)
            loader = _Loader(text)
            try:
                data = loader.construct_plain(loader.get_single_node())
            finally:
                loader.dispose()
        if isinstance(data, (dict, list)) and _has_alias(text):
            _check_expanded(data)
    except _DuplicateKey as exc:
        raise InputError(
            f"{where}:{exc.line}", f"duplicate key '{exc.key}' (first at line {exc.first})", "remove one"
        ) from None
    except _Refused as exc:
        raise InputError(f"{where}:{exc.line}" if exc.line else where, exc.what, exc.hint) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"{where}:{mark.line + 1}" if mark is not None else where
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise InputError(at, f"malformed YAML: {problem}", "fix the syntax at that line") from None
    return data


def field_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def validation_error(where: str, exc: ValidationError, prefix: str = "") -> InputError:
    """The first validation problem as one line: ``file: field: message (hint)``.

    With the ``--`` prefix the field is a command-line flag, spelt as typer spells it: the
    model's ``gpu_count`` is the flag ``--gpu-count``.
    """
    err = exc.errors()[0]
    loc = field_path(tuple(err["loc"]))
    if prefix == "--":
        loc = loc.replace("_", "-")
    # "fullserver:" and "--" prefixes glue to the field, and alone name no field (a check of the
    # whole model has no location: "field 'fullserver:'" named nothing); others join with a dot.
    glued = prefix.endswith((":", "-"))
    field = (prefix + loc if loc else "") if glued else ".".join(p for p in (prefix, loc) if p)
    kind = err["type"]
    if kind == "extra_forbidden":
        return InputError(where, f"unknown key '{field}'", "remove it or check its spelling against the schema")
    if kind == "missing":
        return InputError(where, f"missing required field '{field}'", "add it")
    msg = str(err["msg"]).removeprefix("Value error, ")
    return InputError(where, f"field '{field}': {msg}" if field else msg, "fix the value")


def parse(model: type[M], data: Any, where: str, prefix: str = "") -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise validation_error(where, exc, prefix) from None
