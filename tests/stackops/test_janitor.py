"""``fullserver janitor`` against a backend as crashed runs would have left it."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pulumi import automation as auto

from fullserver.errors import EXIT_LEFT_BEHIND
from stackops.janitor import parse_expiry
from stackops.workspace import make_workspace
from tests.stackops.conftest import CLI, FakePulumi, install_fake, write_project
from tests.stackops.conftest import run as run_cli


def run(argv: list[str], fake: FakePulumi, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    """The janitor at the width of a wide CI log (``COLUMNS``, which rich reads): these tests read
    whole cells of its table, which an 80-column console folds."""
    return run_cli(argv, fake, timeout, **{"COLUMNS": "160", **env})


def iso(delta: timedelta) -> str:
    return (datetime.now(UTC) + delta).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture(scope="module")
def seeded_state(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A backend as crashed runs would have left it (created, tagged, up), built once through the
    stand-in CLI with the Automation API, then copied for each test."""
    tmp = tmp_path_factory.mktemp("seed")
    fake = install_fake(tmp)
    project = write_project(tmp / "project")
    ws = make_workspace(project, tmp / "ws", fake.options(env={"FAKE_PULUMI_LOG": "", "FAKE_PULUMI_STARTED": ""}))
    eph = {"fullserver:ephemeral": "true", "fullserver:base-stack": "exp-aws-spot"}
    stacks = {
        "ci-old": eph | {"fullserver:expires-at": iso(-timedelta(hours=3))},
        "ci-older": eph | {"fullserver:expires-at": iso(-timedelta(days=1))},
        "ci-fresh": eph | {"fullserver:expires-at": iso(timedelta(hours=1))},
        "ci-garbled": eph | {"fullserver:expires-at": "soon"},
        "prod": {"fullserver:expires-at": iso(-timedelta(days=9))},  # not ephemeral
    }
    for name, tags in stacks.items():
        stack = auto.Stack.create(name, ws)
        for key, value in tags.items():
            ws.set_tag(name, key, value)
        stack.up()
    return fake.state


@pytest.fixture
def seeded(seeded_state: Path, fake_pulumi: FakePulumi) -> FakePulumi:
    shutil.rmtree(fake_pulumi.state)
    shutil.copytree(seeded_state, fake_pulumi.state)
    return fake_pulumi


def janitor_argv(fake: FakePulumi, project: Path, *extra: str) -> list[str]:
    return [
        *CLI,
        "janitor",
        "--backend",
        fake.backend,
        "--project-dir",
        str(project),
        *extra,
    ]


def test_janitor_dry_run_lists_only_expired_ephemeral_stacks(seeded: FakePulumi, project: Path) -> None:
    res = run(janitor_argv(seeded, project), seeded)
    assert res.returncode == 0, res.stderr
    assert "ci-old" in res.stdout and "ci-older" in res.stdout and "would destroy" in res.stdout
    assert "ci-fresh" not in res.stdout.split("ephemeral stack(s) not yet expired")[0]
    assert "prod" not in res.stdout
    assert "1 ephemeral stack(s) not yet expired" in res.stdout and "ci-garbled" in res.stdout
    assert "dry run: pass --destroy" in res.stdout
    assert set(seeded.stacks()) == {"ci-old", "ci-older", "ci-fresh", "ci-garbled", "prod"}
    assert "destroy" not in seeded.commands()
    [ls] = [c["argv"] for c in seeded.calls() if c["argv"][1:3] == ["stack", "ls"]]
    assert ls[3:] == ["--json", "--tag", "fullserver:ephemeral=true"]


def test_janitor_json_sorts_by_expiry(seeded: FakePulumi, project: Path) -> None:
    res = run(janitor_argv(seeded, project, "--json"), seeded)
    data = json.loads(res.stdout)
    assert [s["name"] for s in data["expired"]] == ["ci-older", "ci-old"]
    assert [s["name"] for s in data["notExpired"]] == ["ci-fresh"]
    assert [s["name"] for s in data["unreadableExpiry"]] == ["ci-garbled"]
    assert data["expired"][0]["resourceCount"] == 3 and data["destroyed"] == []


def test_janitor_destroy_removes_the_expired_and_only_them(seeded: FakePulumi, project: Path) -> None:
    res = run(janitor_argv(seeded, project, "--destroy"), seeded)
    assert res.returncode == 0, res.stderr
    assert set(seeded.stacks()) == {"ci-fresh", "ci-garbled", "prod"}
    assert res.stdout.count("destroyed and removed") == 2


def test_janitor_at_a_later_time_sees_more_expired(seeded: FakePulumi, project: Path) -> None:
    res = run(janitor_argv(seeded, project, "--json", "--at", iso(timedelta(hours=2))), seeded)
    assert [s["name"] for s in json.loads(res.stdout)["expired"]] == ["ci-older", "ci-old", "ci-fresh"]


def test_janitor_reports_failures_by_name_with_exit_7(seeded: FakePulumi, project: Path) -> None:
    res = run(janitor_argv(seeded, project, "--destroy", "--backoff", "0.01"), seeded, FAKE_PULUMI_FAIL="destroy:2")
    # the first stack fails twice (its two attempts), the second succeeds on its first
    assert res.returncode == EXIT_LEFT_BEHIND
    assert "error: stack 'ci-older' was not cleaned up: destroy failed: error: injected failure" in res.stderr
    assert "ci-old'" not in res.stderr
    assert set(seeded.stacks()) == {"ci-older", "ci-fresh", "ci-garbled", "prod"}


def test_janitor_prefix_limits_it_to_one_runs_stacks(seeded: FakePulumi, project: Path) -> None:
    res = run(janitor_argv(seeded, project, "--json", "--prefix", "ci-olde", "--at", iso(timedelta(hours=2))), seeded)
    assert [s["name"] for s in json.loads(res.stdout)["expired"]] == ["ci-older"]


def test_janitor_skips_a_stack_whose_update_is_in_progress(seeded: FakePulumi, project: Path) -> None:
    """``updateInProgress`` in ``stack ls --json``: its owner is still at work (a destroy would fail
    with 409 Conflict, or worse, race it). Skipped, listed, not a failure."""
    seeded.edit_stack("ci-old", updateInProgress=True)
    res = run(janitor_argv(seeded, project, "--destroy", "--json", "--backoff", "0.01"), seeded)
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert [s["name"] for s in data["updateInProgress"]] == ["ci-old"]
    assert data["destroyed"] == ["ci-older"] and data["failed"] == {}
    assert "ci-old" in seeded.stacks()
    assert not [c for c in seeded.calls() if "destroy" in c["argv"] and "ci-old" in c["argv"]]
    table = run(janitor_argv(seeded, project), seeded)
    assert "skipped: an update is in progress" in table.stdout


def test_janitor_finishes_the_sweep_and_names_every_failure(seeded: FakePulumi, project: Path) -> None:
    """One stack's unreadable tags and another's failing destroy stop neither the other stacks nor
    each other; the end names both, and the exit code is EXIT_LEFT_BEHIND (7)."""
    res = run(
        janitor_argv(seeded, project, "--destroy", "--backoff", "0.01", "--at", iso(timedelta(hours=2))),
        seeded,
        FAKE_PULUMI_FAIL="stack tag ls@ci-older:always,destroy@ci-old:always",
    )
    assert res.returncode == EXIT_LEFT_BEHIND, res.stderr
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 2, res.stderr
    assert "error: stack 'ci-older' was not cleaned up: its tags could not be read" in res.stderr
    assert "error: stack 'ci-old' was not cleaned up: destroy failed: error: injected failure" in res.stderr
    assert set(seeded.stacks()) == {"ci-old", "ci-older", "ci-garbled", "prod"}  # ci-fresh was destroyed
    assert "could not be checked" in res.stdout and "ci-older" in res.stdout


def test_janitor_lists_other_projects_stacks_but_does_not_destroy_them(seeded: FakePulumi, project: Path) -> None:
    """``pulumi destroy`` needs the stack's own project (Pulumi.yaml, stack config): from this one it
    can only list another project's expired stacks, and says so in one line each."""
    seeded.edit_stack("ci-older", project="other")
    other = "organization/other/ci-older"
    mine = json.loads(run(janitor_argv(seeded, project, "--json"), seeded).stdout)
    assert [s["name"] for s in mine["expired"]] == ["ci-old"] and mine["otherProjects"] == []
    listed = run(janitor_argv(seeded, project, "--json", "--all-projects"), seeded)
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    assert [(s["name"], s["project"]) for s in data["otherProjects"]] == [(other, "other")]
    assert [s["name"] for s in data["expired"]] == ["ci-old"]

    res = run(janitor_argv(seeded, project, "--destroy", "--all-projects", "--backoff", "0.01"), seeded)
    assert res.returncode == EXIT_LEFT_BEHIND
    [line] = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert line.startswith(f"error: stack '{other}' was not cleaned up: not destroyed: it belongs to project 'other'")
    assert "--project-dir" in line
    assert set(seeded.stacks()) == {"ci-older", "ci-fresh", "ci-garbled", "prod"}
    assert not [c for c in seeded.calls() if c["argv"][1:2] == ["destroy"] and other in c["argv"]]


@pytest.mark.parametrize("text", ["9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00"])
def test_an_expiry_outside_the_calendar_in_utc_is_unreadable_not_a_crash(text: str) -> None:
    """A tag valid where it was written but past year 9999 in UTC: one odd stack, left alone."""
    assert parse_expiry(text) is None


@pytest.mark.parametrize(("flag", "value"), [("--retries", "100000"), ("--retries", "0"), ("--backoff", "nan")])
def test_janitor_refuses_an_out_of_range_number_in_one_line(
    fake_pulumi: FakePulumi, project: Path, flag: str, value: str
) -> None:
    res = run(janitor_argv(fake_pulumi, project, "--destroy", flag, value), fake_pulumi)
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith(f"error: {flag}: ") and res.stderr.count("\n") == 1, res.stderr
    assert fake_pulumi.calls() == []
