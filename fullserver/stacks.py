"""Stacks: where a workload runs. A Pulumi stack file (``stacks/Pulumi.<env>.yaml``, keys
``fullserver:<key>``) and the config Pulumi hands the program, read into a ``Workload``.

Design notes: docs/design/core.md.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import json
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fullserver.catalog.model import Platform
from fullserver.clouds import all_clouds
from fullserver.errors import InputError
from fullserver.platforms import rules_for
from fullserver.rules import STACK_FILE_GLOB, stack_file, stack_name_problem, stack_of_file
from fullserver.workload import CONFIG_NAMESPACE, KeyProblem, Unset, Workload
from fullserver.yamlio import read_yaml, validation_error


@dataclass(frozen=True)
class ConfigKey:
    """One ``fullserver:`` key as Pulumi.yaml declares it, derived from ``Workload``."""

    name: str
    type: str | None  # Pulumi's declared type; None for UNTYPED_KEYS
    items: str | None  # an array's item type
    default: Any  # the declared default; None when the key is required
    secret: bool
    description: str

    @property
    def required(self) -> bool:
        return self.default is None


# Keys Pulumi.yaml declares without a ``type``, and why: Pulumi type-checks only typed keys.
UNTYPED_KEYS = {
    # three states (the profile's, true, false), and a typed boolean's default must be one of two
    "publicIp": "boolean",
    # a typed secret key must hold an encrypted value in every stack (a default is not encrypted),
    # so cloud stacks, which have no SSH key, would fail; the model checks it instead
    "sshPrivateKey": "boolean",
}
# Keys set with `pulumi config set --secret`: known to be set, never read.
SECRET_KEYS = frozenset({"sshPrivateKey"})
_PULUMI_TYPES = {"string": "string", "integer": "integer", "boolean": "boolean", "array": "array", "object": "object"}


def _schema_type(schema: dict[str, Any], defs: dict[str, Any]) -> tuple[str, str | None]:
    """Pulumi's type (and array item type) of one JSON-schema property of the model."""
    options = [s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"]
    first = options[0]
    if "$ref" in first:
        target = defs[first["$ref"].rsplit("/", 1)[-1]]
        return ("string", None) if "enum" in target else ("object", None)
    kind = _PULUMI_TYPES[first["type"]]
    if kind != "array":
        return kind, None
    return kind, _schema_type(first["items"], defs)[0]


_EMPTY: dict[str | None, Any] = {"string": "", "integer": 0, "array": [], "object": {}, None: ""}


@functools.cache
def config_keys() -> dict[str, ConfigKey]:
    """Every key Pulumi.yaml declares, by name: the model's fields, their types and descriptions,
    and as default the model's own default (or, for optional keys, the value meaning "not set")."""
    schema = Workload.model_json_schema(by_alias=True)
    defs = schema.get("$defs", {})
    out: dict[str, ConfigKey] = {}
    for field in Workload.model_fields.values():
        name = str(field.alias)
        kind, items = _schema_type(schema["properties"][name], defs)
        typed = None if name in UNTYPED_KEYS else kind
        if field.is_required():
            default: Any = None
        elif field.default is None:
            unset = [m.empty for m in field.metadata if isinstance(m, Unset)]
            default = unset[0] if unset else _EMPTY[typed]
        elif name in SECRET_KEYS:
            default = ""
        else:
            value = field.get_default(call_default_factory=True)
            default = value.value if isinstance(value, Platform) else value
        out[name] = ConfigKey(
            name=name,
            type=typed,
            items=items if typed == "array" else None,
            default=default,
            secret=name in SECRET_KEYS,
            description=str(field.description),
        )
    return out


def _as_text(value: object) -> str:
    """A stack file's scalar as Pulumi stores it and hands it to the program: text (``.inf`` and
    ``1.5`` stay text no integer key accepts)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


_INTEGER = re.compile(rf"[+-]?\d{{1,{sys.int_info.default_max_str_digits}}}")


_SMALL = 10**18
"""Integers this far from 0 are written in fewer digits than Python's limit on ``str(int)``."""


def _kind(key: ConfigKey) -> str | None:
    """The type a key's value is read as: its declared one, else the model's (``UNTYPED_KEYS``)."""
    return key.type or UNTYPED_KEYS.get(key.name)


def _decode(value: object, kind: str | None) -> object:
    """A value as its declared type (``kind``) reads it; anything else is left for the model to
    refuse. Text for a text key and a (not huge) integer for an integer key are already that: the
    common case, returned before the general steps."""
    if (type(value) is str and kind == "string") or (
        type(value) is int and kind == "integer" and -_SMALL < value < _SMALL
    ):
        return value
    if kind in ("array", "object"):
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:  # not JSON, or an integer past Python's 4,300 digits
                return value
        return value
    if isinstance(value, (list, dict)):
        return value
    text = _as_text(value)
    if kind == "integer" and _INTEGER.fullmatch(text):
        # Every integer key is bounded: a count of 19 digits or more reads as the number it is,
        # so the model says "at most 512" rather than "not a valid integer". Python's own limit
        # on int(str) bounds the work.
        return int(text)
    if kind == "boolean" and text in ("true", "false"):
        return text == "true"
    return text


def _check_text(key: ConfigKey, value: object, where: str) -> None:
    """A text key written as a YAML number or boolean is refused, not read as Python prints it.

    Why: YAML 1.1 reads an unquoted ``0755`` as the octal number 493 and ``no`` as false, so
    ``owner: 0755`` became the label "493" and ``region: no`` the region 'false'; the text
    written is gone by then, so the one fix is quotes."""
    if _kind(key) != "string" or not isinstance(value, bool | int | float):
        return
    kind = "boolean" if isinstance(value, bool) else "number"
    raise InputError(
        where,
        f"field '{CONFIG_NAMESPACE}:{key.name}' is the YAML {kind} {_as_text(value)}, not text "
        "(unquoted, 0755 is the octal number 493 and no is false)",
        f"write the value in quotes: {CONFIG_NAMESPACE}:{key.name}: '...'",
    )


@functools.cache
def _read_as() -> dict[str, tuple[str, ConfigKey, str | None]]:
    """Each key by its name in a stack file (``fullserver:owner``), with the type ``_decode`` reads
    its value as: worked out once, as the keys are fixed."""
    return {f"{CONFIG_NAMESPACE}:{name}": (name, key, _kind(key)) for name, key in config_keys().items()}


def _is_encrypted(value: object) -> bool:
    return isinstance(value, dict) and set(value) == {"secure"}


def _unknown_key(where: str, name: str, known: dict[str, ConfigKey]) -> InputError:
    by_case = {k.lower(): k for k in known}
    close = [by_case[name.lower()]] if name.lower() in by_case else difflib.get_close_matches(name, list(known), n=1)
    hint = (
        f"did you mean '{CONFIG_NAMESPACE}:{close[0]}'?"
        if close
        else "remove it or check its spelling against Pulumi.yaml"
    )
    return InputError(where, f"unknown key '{CONFIG_NAMESPACE}:{name}'", hint)


def workload_from_config(config: Mapping[str, Any], where: str) -> Workload:
    """Validate a stack's ``fullserver:`` keys; other namespaces (``gcp:project``...) pass by.

    ``config`` is a stack file's ``config:`` section or what Pulumi hands the program (text, with
    each secret as ``{"secure": ...}``); scalars are read as Pulumi's text either way, so both
    accept and refuse the same values.
    """
    read_as = _read_as()
    ours: dict[str, Any] = {}
    for raw_key, value in config.items():
        found = read_as.get(str(raw_key))
        if found is None:  # another namespace's key, or one of ours that is unknown
            ns, _, name = str(raw_key).rpartition(":")
            if ns != CONFIG_NAMESPACE:
                continue
            raise _unknown_key(where, name, config_keys())
        name, key, kind = found
        if _is_encrypted(value) and not key.secret:
            raise InputError(
                where,
                f"field '{CONFIG_NAMESPACE}:{name}' is encrypted (set with --secret), but fullserver plans it offline and reads it in plain text",
                f"pulumi config set {CONFIG_NAMESPACE}:{name} <value> (without --secret)",
            )
        _check_text(key, value, where)
        ours[name] = value if key.secret else _decode(value, kind)
    try:
        return Workload.model_validate(ours)
    except ValidationError as exc:
        raise _config_error(where, exc) from None


def _config_error(where: str, exc: ValidationError) -> InputError:
    err = exc.errors()[0]
    problem = (err.get("ctx") or {}).get("error")
    if isinstance(problem, KeyProblem):
        return InputError(where, f"field '{CONFIG_NAMESPACE}:{problem.key}': {problem.what}", problem.hint)
    return validation_error(where, exc, prefix=f"{CONFIG_NAMESPACE}:")


@dataclass(frozen=True)
class Stack:
    """A stack config file: its environment name, path and validated workload. A dataclass: a
    model would validate the workload again (its after-validator runs on every instance it is
    given), and the workload is validated once, by ``workload_from_config``."""

    name: str
    path: str
    workload: Workload
    config: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """The file's text settings of other namespaces (``gcp:project``); a secret (a ``secure:``
    mapping) is not kept."""


def stack_name(path: Path) -> str:
    """The stack a ``Pulumi.<stack>.yaml`` file configures; a name Pulumi refuses is refused here."""
    stack = stack_of_file(path.name)
    if stack is None:
        raise InputError(str(path), "not a stack config file", "name it stacks/Pulumi.<env>.yaml")
    problem = stack_name_problem(stack)
    if problem is not None:
        raise InputError(str(path), problem, "use 1-100 letters, digits, '-', '_' or '.' between 'Pulumi.' and '.yaml'")
    return stack


def load_stack(path: Path) -> Stack:
    data = read_yaml(path)
    name = stack_name(path)
    config = data.get("config", {})
    if not isinstance(config, dict):
        raise InputError(f"{path}: field 'config'", "expected a mapping of keys to values", "see stacks/ examples")
    return stack_from_config(name, str(path), config)


def stack_from_config(name: str, path: str, config: Mapping[str, Any]) -> Stack:
    """A stack from its ``config:`` section (what ``load_stack`` reads, or a test's variant of it):
    the ``fullserver:`` keys validated, the other namespaces' text settings kept."""
    for cloud in all_clouds():
        cloud.check_config(config, path)
    return Stack(name=name, path=path, workload=workload_from_config(config, path), config=_other_settings(config))


_OURS = f"{CONFIG_NAMESPACE}:"


def _other_settings(config: Mapping[str, Any]) -> dict[str, str]:
    return {k: v for k, v in config.items() if not k.startswith(_OURS) and isinstance(v, str)}


def cloud_project(platform: Platform, config: Mapping[str, Any], environ: Mapping[str, str]) -> str | None:
    """The project ``pulumi up`` creates a stack's resources in (``PlatformRules.project``: the
    config key, else the provider's environment variables), ``None`` where its cloud has none;
    refused in one line when the platform needs one and neither names it. ``plan``, ``quota`` and
    ``ephemeral`` ask here, so none of them plans against a project ``up`` would not have."""
    need = rules_for(platform).project
    if need is None:
        return None
    found = need.of(config, environ)
    if found is None:
        raise InputError(
            need.key,
            f"not set, and {platform.value} creates its resources in a {need.cloud} project",
            f"pulumi config set {need.key} <project-id>, or export {need.env[0]}",
        )
    return found[0]


_STACK_NAME_HINT = "a stack name is 1-100 letters, digits, '-', '_' and '.'"


def find_stacks(directory: Path, names: list[str]) -> list[Path]:
    """The named stacks in the order given, else every stack file in name order."""
    if not names:
        found = sorted(directory.glob(STACK_FILE_GLOB))
        if not found:
            raise InputError(str(directory), "no stack configs found", "add stacks/Pulumi.<env>.yaml")
        return found
    return [stack_path(directory, name, f"stack '{name}'") for name in names]


def stack_path(directory: Path, name: str, where: str) -> Path:
    """The file of the stack ``name`` (a stack name, or a path ending in .yaml), refused in one
    line naming ``where`` (a stack argument, ``--stack``) when it names no file; what is there is
    for the one reader to refuse in its words (``yamlio``: a pipe is "not a regular file"), so
    ``plan``, ``quota`` and ``ephemeral`` say the same of it."""
    if not name.endswith(".yaml") and (problem := stack_name_problem(name)) is not None:
        shown = name if len(name) <= 40 else f"{name[:40]}... ({len(name)} characters)"
        raise InputError(f"stack {shown!r}", problem.replace(f"'{name}'", "it"), _STACK_NAME_HINT)
    path = Path(name) if name.endswith(".yaml") else directory / stack_file(name)
    try:
        exists = path.exists()
    except OSError:  # a name the file system refuses (too long) names no file
        exists = False
    if not exists:
        known = ", ".join(str(stack_of_file(p.name)) for p in sorted(directory.glob(STACK_FILE_GLOB)))
        raise InputError(where, f"no file {path}", f"known stacks: {known or 'none'}")
    return path
