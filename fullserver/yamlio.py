"""Reading YAML files and turning validation errors into one line that names the file and field."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from fullserver.errors import InputError

M = TypeVar("M", bound=BaseModel)

# libyaml's C loader parses about ten times faster than the pure-Python one; both are "safe".
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_yaml(path: Path) -> dict[str, Any]:
    """Parse a YAML mapping; a syntax error names the file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(str(path), f"cannot read file: {exc.strerror}", "check the path") from None
    try:
        data = yaml.load(text, Loader=_Loader)  # a safe loader either way
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise InputError(where, f"malformed YAML: {problem}", "fix the syntax at that line") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputError(str(path), "expected a mapping at the top level", "see the examples in the repo")
    return data


def field_path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def validation_error(where: str, exc: ValidationError, prefix: str = "") -> InputError:
    """The first validation problem as one line: ``file: field: message (hint)``."""
    err = exc.errors()[0]
    loc = field_path(tuple(err["loc"]))
    # "fullserver:" and "--" prefixes glue to the field; others join with a dot.
    field = prefix + loc if prefix.endswith((":", "-")) or not loc else ".".join(p for p in (prefix, loc) if p)
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
