"""The AWS stop script the idle agent runs for a spot environment (``components.aws.autostop``), run
by ``/bin/sh`` as the agent runs it against a stand-in ``aws`` CLI that answers as Auto Scaling
does and records its argv: what reaches the cloud is what is checked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from components.aws.autostop import stop_script
from fullserver.platforms import aws_autostop as ec2
from fullserver.rules import LABEL_ENVIRONMENT

SPOT, FALLBACK = "exp-aws-l4-spot-spot-1a2b3c", "exp-aws-l4-spot-ondemand-4d5e6f"
AWS = """#!{python}
# stand-in `aws autoscaling ...`: the environment's groups, and which of their members are protected
import json, sys
args = sys.argv[1:]
with open({log!r}, "a") as fh:
    fh.write(json.dumps(args) + "\\n")
protected = json.load(open({protected!r}))
if args[:2] == ["autoscaling", "describe-auto-scaling-groups"]:
    if "--auto-scaling-group-names" in args:
        print(" ".join(protected.get(args[args.index("--auto-scaling-group-names") + 1], [])))
    else:
        print(" ".join(protected))
"""


def run(tmp: Path, protected: dict[str, list[str]]) -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
    bin_dir, log, state = tmp / "bin", tmp / "aws.jsonl", tmp / "protected.json"
    bin_dir.mkdir()
    state.write_text(json.dumps(protected))
    (bin_dir / "aws").write_text(AWS.format(python=sys.executable, log=str(log), protected=str(state)))
    (bin_dir / "aws").chmod(0o755)
    script = tmp / "fullserver-autostop-stop"
    script.write_text(stop_script(ec2.GROUP_TO_ZERO.key, "us-east-1", {LABEL_ENVIRONMENT: "exp-aws-l4-spot"}))
    script.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    done = subprocess.run([str(script)], env=env, capture_output=True, text=True, timeout=30)
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return done, calls


def test_an_idle_spot_environment_lifts_its_fallbacks_protection_before_its_groups_go_to_zero(tmp_path: Path) -> None:
    """The on-demand fallback's nodes are protected from scale-in (``components.aws.spot``): at
    desired 0 they would keep running and billing, so their protection goes first."""
    done, calls = run(tmp_path, {SPOT: [], FALLBACK: ["i-0aaa", "i-0bbb"]})
    assert done.returncode == 0, done.stderr
    writes = [c for c in calls if c[1] in ("set-instance-protection", "update-auto-scaling-group")]
    assert [(c[1], c[c.index("--auto-scaling-group-name") + 1]) for c in writes] == [
        ("update-auto-scaling-group", SPOT),
        ("set-instance-protection", FALLBACK),
        ("update-auto-scaling-group", FALLBACK),
    ]
    unprotect = writes[1]
    assert unprotect[unprotect.index("--instance-ids") + 1 : unprotect.index("--no-protected-from-scale-in")] == [
        "i-0aaa",
        "i-0bbb",
    ]
    for resize in (writes[0], writes[2]):
        assert resize[-6:] == ["--min-size", "0", "--max-size", "0", "--desired-capacity", "0"]


def test_the_grant_covers_every_call_the_script_makes(tmp_path: Path) -> None:
    """Each action the script calls is in the node's grant, and no other write is."""
    _, calls = run(tmp_path, {SPOT: ["i-0ccc"], FALLBACK: []})
    called = {"autoscaling:" + "".join(w.capitalize() for w in c[1].split("-")) for c in calls}
    statements: Any = ec2.group_stop_policy("exp-aws-l4-spot")["Statement"]
    granted = {s["Action"] for s in statements}
    assert (
        called
        == granted
        == {
            "autoscaling:DescribeAutoScalingGroups",
            ec2.RESIZE,
            ec2.UNPROTECT,
        }
    )
