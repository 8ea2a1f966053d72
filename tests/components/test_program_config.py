"""The real program (``components.program.main``) under Pulumi's mock runtime reads the stack's
whole ``fullserver:`` namespace through the core's model: it refuses what ``fullserver plan``
refuses, with the same line, and plans what the plan plans (Pulumi.yaml's defaults included)."""

from __future__ import annotations

import contextvars
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.graph import GraphError, graph_for_config
from components.program import HIDDEN, read_config
from fullserver.stacks import config_keys
from tests.components.conftest import STACKS
from tests.core.test_stack_config import REFUSED, SECURE, stack_config

ROOT = Path(__file__).resolve().parents[2]


def _refuses(stack: str, config: dict[str, Any]) -> str:
    with pytest.raises(GraphError) as info:
        graph_for_config(stack, config)
    return str(info.value)


def test_a_misspelt_key_stops_the_program_instead_of_building_one_gpu() -> None:
    """`fullserver:acceleratorcount: 8` used to be ignored: the program built a 1-GPU machine."""
    line = _refuses("train-p5-cluster", stack_config("train-p5-cluster", acceleratorcount=8))
    assert line.endswith(
        "stacks/Pulumi.train-p5-cluster.yaml: unknown key 'fullserver:acceleratorcount'"
        " (did you mean 'fullserver:acceleratorCount'?)"
    ), line
    assert "\n" not in line


# A private key in plain text reaches the program decrypted either way: the mock runtime does not
# say which keys Pulumi holds as secrets, so only the stack-file check (the plan) refuses it.
# Likewise a text key written as a YAML number or boolean: Pulumi hands the program every value as
# text, so only the stack-file check sees the YAML type (fullserver.stacks._check_text).
PROGRAM_CASES = [
    c
    for c in REFUSED
    if not (c[0] == "sshPrivateKey" and not isinstance(c[2]["sshPrivateKey"], dict)) and "not text" not in c[3]
]


@pytest.mark.parametrize(
    ("key", "stack", "changes", "fragment"), PROGRAM_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(PROGRAM_CASES)]
)
def test_the_program_refuses_what_the_plan_refuses(
    key: str, stack: str, changes: dict[str, Any], fragment: str
) -> None:
    config = stack_config(stack, **changes)
    if isinstance(changes.get("sshPrivateKey"), dict):
        config["fullserver:sshPrivateKey"] = "decrypted by Pulumi"  # what the program is handed
    line = _refuses(stack, config)
    assert f"stacks/Pulumi.{stack}.yaml: " in line and f"fullserver:{key}" in line and fragment in line, line
    assert "\n" not in line


def _declared_defaults() -> dict[str, Any]:
    """What Pulumi merges into every stack's config from Pulumi.yaml (project keys with a default)."""
    config = yaml.safe_load((ROOT / "Pulumi.yaml").read_text(encoding="utf-8"))["config"]
    return {f"fullserver:{k}": d["default"] for k, d in config.items() if "default" in d}


@pytest.mark.parametrize("stack", ["exp-aws-spot", "train-tpu-v5e", "serve-gcp-realtime"])
def test_pulumi_yaml_defaults_change_nothing(stack: str) -> None:
    """Pulumi hands the program every declared default as if the stack had set it."""
    config = stack_config(stack)
    with_defaults = graph_for_config(stack, {**_declared_defaults(), **config})
    assert [r.as_json() for r in with_defaults.rows] == [r.as_json() for r in graph_for_config(stack, config).rows]


def test_bare_metal_needs_its_key_to_deploy_but_not_to_plan() -> None:
    config = {**_declared_defaults(), **stack_config("dedicated-h100")}
    line = _refuses("dedicated-h100", config)
    assert "fullserver:sshPrivateKey: is not set" in line and "pulumi config set --secret" in line
    graph = graph_for_config("dedicated-h100", {**config, "fullserver:sshPrivateKey": "decrypted key"})
    assert [r.type for r in graph.rows if r.custom] == ["pulumi-python:dynamic/fullserver:BareMetalFleet"]


def _read_config_with(config: dict[str, str], secret_keys: list[str]) -> dict[str, Any]:
    """``read_config`` over a config map as the language host sets it, in a context of its own."""
    from pulumi.runtime.config import set_all_config

    def run() -> dict[str, Any]:
        set_all_config(config, secret_keys)
        return read_config()

    return contextvars.Context().run(run)


def test_the_program_reads_the_whole_namespace_and_hides_secrets() -> None:
    config = {
        "fullserver:profile": "dedicated-steady",
        "fullserver:acceleratorcount": "8",
        "fullserver:sshPrivateKey": "-----BEGIN OPENSSH PRIVATE KEY-----",
        "fullserver:owner": "ops",
        "gcp:project": "p",
    }
    seen = _read_config_with(config, ["fullserver:sshPrivateKey", "fullserver:owner"])
    assert seen == {
        "fullserver:profile": "dedicated-steady",
        "fullserver:acceleratorcount": "8",  # unknown keys too, so the core can refuse them
        "fullserver:sshPrivateKey": HIDDEN,
        "fullserver:owner": HIDDEN,  # encrypted, so refused as the plan refuses `secure:`
    }
    assert "BEGIN" not in json.dumps(seen) and set(config_keys()) >= {"sshPrivateKey", "owner"}


def test_an_encrypted_key_the_plan_cannot_read_stops_the_program_too() -> None:
    from fullserver.stacks import workload_from_config

    config = {k: v if isinstance(v, str) else json.dumps(v) for k, v in stack_config("exp-aws-spot").items()}
    with pytest.raises(Exception, match=r"field 'fullserver:owner' is encrypted") as program:
        workload_from_config(_read_config_with(config, ["fullserver:owner"]), "stacks/Pulumi.exp-aws-spot.yaml")
    with pytest.raises(Exception, match=r"field 'fullserver:owner' is encrypted") as plan:
        workload_from_config(stack_config("exp-aws-spot", owner=SECURE), "stacks/Pulumi.exp-aws-spot.yaml")
    assert str(program.value) == str(plan.value)


def test_the_example_stacks_run_through_the_whole_program() -> None:
    for path in sorted(STACKS.glob("Pulumi.*.yaml")):
        stack = path.name[len("Pulumi.") : -len(".yaml")]
        config = {**_declared_defaults(), **stack_config(stack)}
        if stack == "dedicated-h100":
            config["fullserver:sshPrivateKey"] = "decrypted key"
        assert graph_for_config(stack, config).rows, stack
