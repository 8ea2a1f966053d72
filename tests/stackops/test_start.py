"""``fullserver start STACK`` as a person runs it: a real process against the stand-in ``pulumi``
and stand-in ``gcloud``/``aws`` executables that record their argv (``fullserver_cli.start``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fullserver.errors import EXIT_INPUT, EXIT_PULUMI
from tests.stackops.conftest import CLI, FakePulumi, run

GCP_VMS = [
    ["gcloud", "compute", "instances", "start", f"ft-vm-{i}", "--zone", "us-central1-a", "--project", "proj-1"]
    for i in range(2)
]
STAND_IN = """#!{python}
import json, os, sys
with open({log!r}, "a") as fh:
    fh.write(json.dumps([os.path.basename(sys.argv[0]), *sys.argv[1:]]) + "\\n")
sys.exit(int(os.environ.get("STAND_IN_EXIT", "0")))
"""


class Clouds:
    """``gcloud`` and ``aws`` stand-ins on a directory of their own, and the argvs they got."""

    def __init__(self, tmp: Path) -> None:
        self.bin = tmp / "cloud-bin"
        self.bin.mkdir()
        self.log = tmp / "cloud-calls.jsonl"
        for name in ("gcloud", "aws"):
            exe = self.bin / name
            exe.write_text(STAND_IN.format(python=sys.executable, log=str(self.log)))
            exe.chmod(0o755)

    def calls(self) -> list[list[str]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.is_file() else []


@pytest.fixture
def clouds(tmp_path: Path) -> Clouds:
    return Clouds(tmp_path)


def deployed(fake: FakePulumi, project: Path, stack: str, outputs: dict[str, Any]) -> None:
    """A stack the stand-in brought up with ``outputs``, and its config file in ``stacks/``."""
    (project / "stacks").mkdir(exist_ok=True)
    (project / "stacks" / f"Pulumi.{stack}.yaml").write_text("config:\n  fullserver:profile: experimentation\n")
    env = fake.subprocess_env(PULUMI_BACKEND_URL=fake.backend, FAKE_PULUMI_OUTPUTS=json.dumps(outputs))
    exe = str(fake.root / "bin" / "pulumi")
    for argv in (["stack", "init", stack], ["up", "--yes", "--skip-preview", "--stack", stack]):
        subprocess.run([exe, *argv], cwd=project, env=env, check=True, capture_output=True, timeout=60)


def start(fake: FakePulumi, project: Path, clouds: Clouds, stack: str, *extra: str, **env: str) -> Any:
    argv = [*CLI, "start", stack, "--backend", fake.backend, "--project-dir", str(project)]
    argv += ["--stacks-dir", str(project / "stacks"), "--pulumi-root", str(fake.root), *extra]
    path = f"{clouds.bin}:{fake.subprocess_env()['PATH']}"
    return run(argv, fake, 120, PATH=path, **env)


def stopped(restored: bool, commands: list[list[str]]) -> dict[str, Any]:
    return {"platform": "x", "autostop": {"minutes": 30, "restoredByUp": restored, "startCommands": commands}}


def test_a_stopped_gcp_stack_gets_each_vm_s_start_command_and_no_update(
    fake_pulumi: FakePulumi, project: Path, clouds: Clouds
) -> None:
    deployed(fake_pulumi, project, "ft-gcp", stopped(False, GCP_VMS))
    before = len(fake_pulumi.calls())
    res = start(fake_pulumi, project, clouds, "ft-gcp")
    assert res.returncode == 0, res.stderr
    assert clouds.calls() == GCP_VMS
    assert fake_pulumi.commands()[before:] == ["version", "stack output"]
    assert res.stderr.splitlines()[-1] == "fullserver start: ft-gcp started"


def test_an_aws_spot_stack_is_brought_back_by_up_with_refresh(
    fake_pulumi: FakePulumi, project: Path, clouds: Clouds
) -> None:
    deployed(fake_pulumi, project, "exp-spot", stopped(True, []))
    before = len(fake_pulumi.calls())
    res = start(fake_pulumi, project, clouds, "exp-spot")
    assert res.returncode == 0, res.stderr
    [up] = [c["argv"] for c in fake_pulumi.calls()[before:] if "up" in c["argv"]]
    assert {"--refresh", "--yes", "--skip-preview"} <= set(up)
    assert up[up.index("--stack") + 1] == "exp-spot"
    assert clouds.calls() == []


def test_dry_run_prints_the_commands_and_runs_none(fake_pulumi: FakePulumi, project: Path, clouds: Clouds) -> None:
    outputs = stopped(False, GCP_VMS)
    outputs["autostop"] |= {"runningNodes": 0, "stoppedNow": True}
    deployed(fake_pulumi, project, "ft-gcp", outputs)
    res = start(fake_pulumi, project, clouds, "ft-gcp", "--dry-run")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [" ".join(argv) for argv in GCP_VMS]
    assert "fullserver start: ft-gcp: stopped, as of its last pulumi up" in res.stderr
    assert clouds.calls() == []


def test_an_unknown_stack_is_one_line_naming_it(fake_pulumi: FakePulumi, project: Path, clouds: Clouds) -> None:
    res = start(fake_pulumi, project, clouds, "no-such")
    assert res.returncode == EXIT_INPUT
    [line] = res.stderr.splitlines()
    assert line.startswith("error: stack 'no-such': cannot read its outputs: ")
    assert "no stack named 'no-such'" in line


def test_a_failing_start_command_is_named_and_exits_6(fake_pulumi: FakePulumi, project: Path, clouds: Clouds) -> None:
    deployed(fake_pulumi, project, "ft-gcp", stopped(False, GCP_VMS))
    res = start(fake_pulumi, project, clouds, "ft-gcp", STAND_IN_EXIT="1")
    assert res.returncode == EXIT_PULUMI
    assert len(clouds.calls()) == 2  # the second node is still tried
    assert res.stderr.splitlines()[-1].startswith(
        f"error: stack 'ft-gcp': `{' '.join(GCP_VMS[0])}` exited with 1; `{' '.join(GCP_VMS[1])}` exited with 1"
    )


def test_a_command_that_is_not_a_start_command_is_never_run(
    fake_pulumi: FakePulumi, project: Path, clouds: Clouds
) -> None:
    deployed(fake_pulumi, project, "ft-gcp", stopped(False, [["gcloud", "projects", "delete", "proj-1"]]))
    res = start(fake_pulumi, project, clouds, "ft-gcp")
    assert res.returncode == EXIT_INPUT
    assert "is not a start command fullserver runs" in res.stderr
    assert clouds.calls() == []
