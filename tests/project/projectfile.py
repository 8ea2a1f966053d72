"""What the Pulumi CLI checks in a project file and its stack files, without the CLI.

A ``Pulumi.yaml`` must pass the project JSON schema (vendored at ``tests/data``, the one the CLI
embeds) *and* the rules Go code enforces beyond it, or every ``pulumi`` command in the project
fails. Those rules are ported here from ``sdk/go/common/workspace`` (``project.go``:
``RewriteShorthandConfigValues``, ``ValidateConfigValue``, ``Project.Validate``;
``config.go``: ``mergeConfig``, ``validateStackConfigValues``) so templates and the repo's own
project are checked offline on every test run.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA_PATH = Path(__file__).resolve().parents[1] / "data" / "pulumi-project-schema.json"

TYPES = ("string", "integer", "boolean", "array", "object")


@cache
def _validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def is_project_key(project: str, key: str) -> bool:
    """``configKeyIsNamespacedByProject``: no namespace, or the project's own."""
    return ":" not in key or key.startswith(project + ":")


def _primitive(value: Any) -> bool:
    # Go's isPrimitiveValue: string, int, bool (YAML floats are not rewritten).
    return isinstance(value, (str, bool, int))


def rewrite_shorthand(project: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``RewriteShorthandConfigValues``: ``key: scalar`` is a default for a project key and a value
    for any other namespace."""
    out: dict[str, dict[str, Any]] = {}
    config = project.get("config")
    if not isinstance(config, dict):
        return out
    name = str(project.get("name", ""))
    for key, decl in config.items():
        if _primitive(decl) or isinstance(decl, list):
            out[key] = {"default": decl} if is_project_key(name, key) else {"value": decl}
        elif isinstance(decl, dict):
            out[key] = decl
    return out


def value_matches(type_name: str, items: dict[str, Any] | None, value: Any) -> bool:
    """``ValidateConfigValue``: integers may be whole floats or integer text, booleans "true"/"false"."""
    if type_name == "string":
        return isinstance(value, str)
    if type_name == "integer":
        if isinstance(value, bool):
            return False
        if isinstance(value, int):
            return True
        if isinstance(value, float):
            return value.is_integer()
        return isinstance(value, str) and re.fullmatch(r"[+-]?\d+", value) is not None
    if type_name == "boolean":
        return isinstance(value, bool) or value in ("true", "false")
    if type_name == "object":
        return isinstance(value, dict)
    if not isinstance(value, list) or items is None:
        return False
    return all(value_matches(str(items.get("type")), items.get("items"), v) for v in value)


def project_errors(project: dict[str, Any]) -> list[str]:
    """Everything ``pulumi`` would refuse in this project file (empty when it loads)."""
    name = project.get("name")
    if not isinstance(name, str) or not name:
        return ["project is missing a non-empty string 'name' attribute"]
    errors = [f"#/{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in _validator().iter_errors(project)]
    for key, decl in rewrite_shorthand(project).items():
        typed = decl.get("type") is not None
        default, value = decl.get("default"), decl.get("value")
        if default is not None and value is not None:
            errors.append(f"project config '{key}' cannot have both a 'default' and 'value' attribute")
        if is_project_key(name, key):
            if decl.get("type") == "array" and decl.get("items") is None:
                errors.append(
                    f"The configuration key '{key}' declares an array but does not specify the underlying type via the 'items' attribute"
                )
            if typed and default is not None and not value_matches(str(decl["type"]), decl.get("items"), default):
                errors.append(
                    f"The default value specified for configuration key '{key}' is not of the expected type '{decl['type']}'"
                )
        else:
            if typed:
                errors.append(
                    f"Configuration key '{key}' is not namespaced by the project and should not define a type"
                )
            if default is not None:
                errors.append(
                    f"Configuration key '{key}' is not namespaced by the project and should not define a default value"
                )
            if value is None:
                errors.append(f"Configuration key '{key}' is namespaced and must provide an attribute 'value'")
    return errors


def _split(project: str, key: str) -> tuple[str, str]:
    namespace, _, rest = key.partition(":")
    return (namespace, rest) if rest else (project, key)


def _as_engine_sees(value: Any) -> Any:
    """A stack-file value as ``validateStackConfigValue`` gets it: objects and arrays decoded from
    JSON, scalars as their text."""
    if isinstance(value, (dict, list)):
        return json.loads(json.dumps(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def missing_keys(project: dict[str, Any], config: dict[str, Any]) -> list[str]:
    """Declared project keys with neither default nor value that the stack leaves out: ``pulumi``
    refuses such a stack ("Stack '<name>' is missing configuration values ...")."""
    name = str(project["name"])
    given = {_split(name, k) for k in config}
    return sorted(
        key
        for k, d in rewrite_shorthand(project).items()
        for ns, key in [_split(name, k)]
        if ns == name and (ns, key) not in given and d.get("default") is None and d.get("value") is None
    )


def stack_errors(
    project: dict[str, Any], stack: str, config: dict[str, Any], *, require_declared: bool = False
) -> list[str]:
    """Stack values of the wrong type for their declaration (what ``validateStackConfigValues``
    refuses). ``require_declared`` adds our own rule: every project-namespace key the stack sets is
    declared (the CLI accepts undeclared keys, so a typo would silently be ignored)."""
    name = str(project["name"])
    decls = {_split(name, k): d for k, d in rewrite_shorthand(project).items()}
    errors: list[str] = []
    for k, raw in config.items():
        ns, key = _split(name, k)
        decl = decls.get((ns, key))
        if decl is None:
            if require_declared and ns == name:
                errors.append(f"Stack '{stack}' sets '{ns}:{key}', which the project does not declare")
            continue
        if decl.get("type") is not None and not value_matches(
            str(decl["type"]), decl.get("items"), _as_engine_sees(raw)
        ):
            errors.append(f"Stack '{stack}' with configuration key '{key}' must be of type '{decl['type']}'")
    return errors
