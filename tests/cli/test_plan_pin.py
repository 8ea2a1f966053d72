"""``fullserver plan --pin``: the place table in the plan, and the pin written once."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from fullserver_cli.app import app

STACK = """\
# Four T4s, wherever they are cheapest in the US.
config:
  fullserver:profile: experimentation
  fullserver:location:
  - us
  fullserver:accelerator: T4
  fullserver:acceleratorCount: 4
  gcp:project: example-project
"""


def _plan(stacks: Path, *args: str) -> str:
    result = CliRunner().invoke(app, ["plan", "--stacks-dir", str(stacks), "t4", *args], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    return result.output


def test_the_plan_names_the_winner_the_runner_up_and_that_up_refuses_it(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.t4.yaml").write_text(STACK, encoding="utf-8")
    out = _plan(tmp_path)
    assert "cheapest of 2 option(s) in us: gcp-gpu in us-central1 (n1-highmem-16+4xT4, 1 node(s))" in out
    assert "runner-up aws-gpu in us-east-1 (g4dn.12xlarge, 1 node(s))" in out
    assert "not pinned: planned on gcp-gpu in us-central1; pulumi up refuses the stack until" in out


def test_plan_pin_writes_once_then_says_it_is_pinned(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.t4.yaml"
    path.write_text(STACK, encoding="utf-8")
    assert f"t4: pinned to gcp-gpu in us-central1 ({path})" in _plan(tmp_path, "--summary", "--pin")
    text = path.read_text(encoding="utf-8")
    config = yaml.safe_load(text)["config"]
    assert (config["fullserver:platform"], config["fullserver:region"]) == ("gcp-gpu", "us-central1")
    assert f"t4: already pinned to gcp-gpu in us-central1 ({path})" in _plan(tmp_path, "--summary", "--pin")
    assert path.read_text(encoding="utf-8") == text
    assert "pinned: gcp-gpu in us-central1, still the cheapest" in _plan(tmp_path)


def test_plan_json_carries_every_option(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.t4.yaml").write_text(STACK, encoding="utf-8")
    result = CliRunner().invoke(app, ["plan", "--stacks-dir", str(tmp_path), "t4", "--json"])
    assert result.exit_code == 0, result.output
    (doc,) = json.loads(result.stdout)
    options = doc["placement"]["options"]
    assert [(o["platform"], o["region"]) for o in options] == [("gcp-gpu", "us-central1"), ("aws-gpu", "us-east-1")]
    assert doc["placement"]["pinned"] is False
