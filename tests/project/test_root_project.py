"""The repository's own Pulumi.yaml and stacks/ pass what the CLI checks, and the checker itself
refuses what the CLI refuses (so a passing template or project means something)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from fullserver.stacks import workload_from_config

from .projectfile import missing_keys, project_errors, stack_errors

ROOT = Path(__file__).resolve().parents[2]
STACKS = sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))


def _yaml(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    return data


def _stack_config(path: Path) -> dict[str, Any]:
    config = _yaml(path).get("config") or {}
    assert isinstance(config, dict)
    return config


def test_root_project_passes_schema_and_cli_rules() -> None:
    assert project_errors(_yaml(ROOT / "Pulumi.yaml")) == []


@pytest.mark.parametrize("path", STACKS, ids=lambda p: p.name)
def test_every_declared_stack_key_has_the_declared_type(path: Path) -> None:
    project = _yaml(ROOT / "Pulumi.yaml")
    stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
    assert stack_errors(project, stack, _stack_config(path)) == []


@pytest.mark.parametrize("path", STACKS, ids=lambda p: p.name)
def test_every_stack_key_is_one_fullserver_knows(path: Path) -> None:
    # The CLI accepts undeclared keys, so a typo would be ignored by Pulumi: fullserver's own
    # workload model refuses unknown keys instead (and types the optional ones).
    workload_from_config(_stack_config(path), str(path))


@pytest.mark.parametrize("path", STACKS, ids=lambda p: p.name)
def test_no_stack_misses_a_required_key(path: Path) -> None:
    assert missing_keys(_yaml(ROOT / "Pulumi.yaml"), _stack_config(path)) == []


# --- the checker refuses what the CLI refuses ------------------------------------------------

BASE: dict[str, Any] = {"name": "proj", "runtime": "python"}


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ({"size": {"type": "string", "default": "a", "value": "b"}}, "both a 'default' and 'value'"),
        ({"zones": {"type": "array", "default": ["a"]}}, "'items' attribute"),
        ({"count": {"type": "integer", "default": "many"}}, "not of the expected type"),
        ({"on": {"type": "boolean", "default": 1}}, "not of the expected type"),
        ({"opts": {"type": "object", "default": [1]}}, "not of the expected type"),
        ({"gcp:project": {"type": "string", "value": "p"}}, "should not define a type"),
        ({"gcp:project": {"default": "p"}}, "should not define a default value"),
        ({"gcp:project": {"description": "which project"}}, "must provide an attribute 'value'"),
        ({"size": {"type": "float"}}, "#/config/size"),
        ({"size": {"typo": "string"}}, "#/config/size"),
    ],
)
def test_checker_refuses_what_the_cli_refuses(config: dict[str, Any], fragment: str) -> None:
    errors = project_errors({**BASE, "config": config})
    assert any(fragment in e for e in errors), errors


@pytest.mark.parametrize(
    "config",
    [
        {"count": {"type": "integer", "default": 3}},
        {"count": {"type": "integer", "default": "3"}},
        {"on": {"type": "boolean", "default": "true"}},
        {"zones": {"type": "array", "items": {"type": "string"}, "default": ["a", "b"]}},
        {"proj:size": {"type": "string", "default": "m"}},
        {"gcp:project": "my-project"},
        {"gcp:project": {"value": "my-project"}},
        {"size": "m"},
    ],
)
def test_checker_accepts_what_the_cli_accepts(config: dict[str, Any]) -> None:
    assert project_errors({**BASE, "config": config}) == []


def test_stack_checks_types_declarations_and_required_keys() -> None:
    project = {
        **BASE,
        "config": {"count": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}, "default": []}},
    }
    assert (
        stack_errors(project, "dev", {"proj:count": 2, "proj:tags": ["a"], "gcp:project": "p"}, require_declared=True)
        == []
    )
    assert stack_errors(project, "dev", {"proj:count": "two"}) == [
        "Stack 'dev' with configuration key 'count' must be of type 'integer'"
    ]
    assert stack_errors(project, "dev", {"proj:cuont": 2}, require_declared=True) == [
        "Stack 'dev' sets 'proj:cuont', which the project does not declare"
    ]
    assert missing_keys(project, {}) == ["count"]
    assert missing_keys(project, {"proj:count": 1}) == []
