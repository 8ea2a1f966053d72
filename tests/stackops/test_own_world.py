"""The stackops tests' guard reads the test's own call log, and finds a workspace outside it."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from tests.stackops.conftest import workspaces_in


def _log(path: Path, *calls: tuple[list[str], str]) -> Path:
    path.write_text("".join(json.dumps({"argv": argv, "cwd": cwd}) + "\n" for argv, cwd in calls))
    return path


def test_the_guard_finds_each_workspace_the_stand_in_ran_in(tmp_path: Path) -> None:
    log = _log(
        tmp_path / "calls.jsonl",
        (["stack", "ls"], "/elsewhere/fullserver-ephemeral-abc/sub"),
        (["destroy", "--cwd", "/var/tmp/fullserver-janitor-x1"], str(tmp_path)),
        (["up"], str(tmp_path / "project")),
    )
    assert workspaces_in(log) == {Path("/elsewhere/fullserver-ephemeral-abc"), Path("/var/tmp/fullserver-janitor-x1")}


def test_no_log_means_no_workspace(tmp_path: Path) -> None:
    assert workspaces_in(tmp_path / "absent.jsonl") == set()


def test_each_test_has_its_own_temp_dir(workspaces_stay_in_tmp_path: Path, tmp_path: Path) -> None:
    assert Path(tempfile.gettempdir()) == workspaces_stay_in_tmp_path
    assert workspaces_stay_in_tmp_path.parent == tmp_path
