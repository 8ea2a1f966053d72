"""``fullserver ephemeral`` and ``fullserver janitor`` as CI runs them: a real process, real signals."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pulumi import automation as auto

from stackops import EXIT_LEFTOVER
from stackops.workspace import make_workspace
from tests.stackops.conftest import ROOT, FakePulumi, install_fake, write_project

EXIT_PULUMI = 6


def ephemeral_argv(fake: FakePulumi, project: Path, *command: str, extra: tuple[str, ...] = ()) -> list[str]:
    return [
        sys.executable,
        "-m",
        "fullserver.cli",
        "ephemeral",
        "--stack",
        "exp-aws-spot",
        "--ttl",
        "2h",
        "--backend",
        fake.backend,
        "--project-dir",
        str(project),
        "--backoff",
        "0.01",
        *extra,
        "--",
        *command,
    ]


def run(argv: list[str], fake: FakePulumi, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=ROOT, env=fake.subprocess_env(**env), capture_output=True, text=True, timeout=timeout
    )


# -- ephemeral --------------------------------------------------------------------------------


def test_the_command_gets_the_outputs_and_the_stack_is_gone_afterwards(fake_pulumi: FakePulumi, project: Path) -> None:
    script = (
        "import json, os; "
        "assert os.environ['FULLSERVER_OUTPUT_PLATFORM'] == 'aws-gpu'; "
        "outs = json.load(open(os.environ['FULLSERVER_OUTPUTS_FILE'])); "
        "print('connect:', outs['connect'], os.environ['FULLSERVER_STACK'])"
    )
    res = run(ephemeral_argv(fake_pulumi, project, sys.executable, "-c", script), fake_pulumi)
    assert res.returncode == 0, res.stderr
    [line] = [ln for ln in res.stdout.splitlines() if ln.startswith("connect:")]
    name = line.split()[-1]
    assert line == f"connect: ssh ubuntu@{name}.example.invalid {name}"
    assert f"{name} destroyed and removed" in res.stderr
    assert fake_pulumi.stacks() == {}


def test_a_failing_command_still_destroys_and_its_exit_code_propagates(fake_pulumi: FakePulumi, project: Path) -> None:
    res = run(ephemeral_argv(fake_pulumi, project, "sh", "-c", "exit 7"), fake_pulumi)
    assert res.returncode == 7
    assert "command exited with 7" in res.stderr and "destroyed and removed" in res.stderr
    assert fake_pulumi.stacks() == {}
    assert fake_pulumi.commands()[-4:] == ["destroy", "stack history", "stack export", "stack rm"]


def test_options_after_the_double_dash_belong_to_the_command(fake_pulumi: FakePulumi, project: Path) -> None:
    res = run(
        ephemeral_argv(fake_pulumi, project, sys.executable, "-c", "import sys; print(sys.argv[1:])", "--ttl", "9h"),
        fake_pulumi,
    )
    assert res.returncode == 0, res.stderr
    assert "['--ttl', '9h']" in res.stdout


TRAP = textwrap.dedent(
    """
    import os, signal, sys, time
    marks = sys.argv[1]
    def on_signal(signum, frame):
        open(os.path.join(marks, "got-" + signal.Signals(signum).name), "w").close()
        sys.exit(3)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    open(os.path.join(marks, "ready"), "w").write(os.environ["FULLSERVER_STACK"])
    time.sleep(60)
    """
)


def wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"exited early with {proc.returncode}: {proc.communicate()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"timed out waiting for {path}")
        time.sleep(0.05)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_the_command_is_passed_on_then_the_stack_is_destroyed(
    fake_pulumi: FakePulumi, project: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    argv = ephemeral_argv(fake_pulumi, project, sys.executable, "-c", TRAP, str(marks))
    proc = subprocess.Popen(
        argv, cwd=ROOT, env=fake_pulumi.subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    wait_for(marks / "ready", proc)
    name = (marks / "ready").read_text()
    assert list(fake_pulumi.stacks()) == [name]
    started = time.monotonic()
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, err
    assert (marks / f"got-{sig.name}").exists()  # the command heard it (once, through us)
    assert time.monotonic() - started < 20  # not the command's 60 s sleep
    assert f"{name} destroyed and removed" in err and f"interrupted by {sig.name}" in err
    assert fake_pulumi.stacks() == {}


def test_sigterm_during_up_cancels_it_and_still_destroys(
    fake_pulumi: FakePulumi, project: Path, tmp_path: Path
) -> None:
    argv = ephemeral_argv(fake_pulumi, project, "sh", "-c", f"touch {tmp_path}/ran")
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        env=fake_pulumi.subprocess_env(FAKE_PULUMI_UP_SLEEP="60"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while "fullserver:profile" not in json.dumps(fake_pulumi.stacks()):  # the last tag, set just before `up`
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    time.sleep(1.0)  # let `up` start
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert time.monotonic() - started < 20  # `up` was cancelled, not waited for
    assert "cancelling the Pulumi operation" in err and "destroyed and removed" in err
    assert not (tmp_path / "ran").exists()
    assert fake_pulumi.stacks() == {}
    assert "destroy" in fake_pulumi.commands()


def wait_started(fake: FakePulumi, command: str, proc: subprocess.Popen[str], timeout: float = 60) -> None:
    """Until the stand-in has started ``command`` (its signal handling is in place by then)."""
    deadline = time.monotonic() + timeout
    while command not in fake.started():
        if proc.poll() is not None:
            raise AssertionError(f"exited early with {proc.returncode}: {proc.communicate()}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"timed out waiting for `pulumi {command}`")
        time.sleep(0.05)


@pytest.mark.parametrize("first", [signal.SIGTERM, signal.SIGINT])
def test_repeated_signals_during_up_reach_pulumi_as_exactly_one_interrupt(
    fake_pulumi: FakePulumi, project: Path, first: signal.Signals
) -> None:
    """A CI cancel sends SIGTERM more than once, a person presses Ctrl-C twice: the CLI must get one
    SIGINT (a second makes it terminate and leave the create in flight pending, invisible to
    destroy). ``kill -INT`` on our pid counts as well. Then refresh, destroy, and nothing is left."""
    proc = subprocess.Popen(
        ephemeral_argv(fake_pulumi, project, "true"),
        cwd=ROOT,
        env=fake_pulumi.subprocess_env(FAKE_PULUMI_UP_SLEEP="30", FAKE_PULUMI_CANCEL_SLEEP="2"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_started(fake_pulumi, "up", proc)
    started = time.monotonic()
    for sig in (first, signal.SIGTERM, signal.SIGINT, signal.SIGTERM):
        proc.send_signal(sig)
        time.sleep(0.3)  # all within the CLI's cancel: each extra interrupt would terminate it
    try:
        _, err = proc.communicate(timeout=25)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("`up` was not cancelled") from None
    assert proc.returncode == 128 + first, err
    assert time.monotonic() - started < 20
    [up] = [c for c in fake_pulumi.calls() if "up" in c["argv"][:2]]
    assert up["signals"] == ["SIGINT"], up
    assert "already cancelling" in err
    commands = fake_pulumi.commands()
    assert commands.index("up") < commands.index("refresh") < commands.index("destroy")
    assert fake_pulumi.stacks() == {}
    assert fake_pulumi.cloud() == {}  # the create in flight finished, was recorded and destroyed


def test_a_terminal_ctrl_c_during_teardown_does_not_reach_pulumi_destroy(
    fake_pulumi: FakePulumi, project: Path
) -> None:
    """Ctrl-C in a terminal signals the whole foreground process group. The destroy runs in its own
    session, so only our bounded retries decide how teardown ends."""
    proc = subprocess.Popen(
        ephemeral_argv(fake_pulumi, project, "true"),
        cwd=ROOT,
        env=fake_pulumi.subprocess_env(FAKE_PULUMI_DESTROY_SLEEP="2"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        process_group=0,  # a terminal's foreground job
    )
    wait_started(fake_pulumi, "destroy", proc)
    for _ in range(2):
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.2)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGINT, err
    assert "teardown is running and will finish first" in err and "destroyed and removed" in err
    [destroy] = [c for c in fake_pulumi.calls() if "destroy" in c["argv"][:2]]
    assert destroy["signals"] == [] and destroy["exit"] == 0
    assert fake_pulumi.stacks() == {} and fake_pulumi.cloud() == {}


def test_a_destroy_that_keeps_failing_exits_5_and_says_what_is_left(fake_pulumi: FakePulumi, project: Path) -> None:
    res = run(
        ephemeral_argv(fake_pulumi, project, "true", extra=("--retries", "2")),
        fake_pulumi,
        FAKE_PULUMI_FAIL="destroy:always",
    )
    assert res.returncode == EXIT_LEFTOVER
    [name] = fake_pulumi.stacks()
    assert f"error: stack '{name}' was NOT cleaned up after 2 attempt(s)" in res.stderr
    assert f"backend:     {fake_pulumi.backend}" in res.stderr
    assert f"pulumi destroy --yes --remove --stack {name}" in res.stderr
    assert fake_pulumi.commands().count("destroy") == 2


def test_a_failed_up_exits_6_with_nothing_left(fake_pulumi: FakePulumi, project: Path) -> None:
    res = run(ephemeral_argv(fake_pulumi, project, "true"), fake_pulumi, FAKE_PULUMI_FAIL="up:always")
    assert res.returncode == EXIT_PULUMI
    assert "error: stack 'ci-" in res.stderr and "injected failure of 'up'" in res.stderr
    assert fake_pulumi.stacks() == {}


def test_bad_input_is_one_line_exit_2_and_no_pulumi_call(fake_pulumi: FakePulumi, project: Path) -> None:
    argv = ephemeral_argv(fake_pulumi, project, "true")
    argv[argv.index("exp-aws-spot")] = "nope"
    res = run(argv, fake_pulumi)
    assert res.returncode == 2
    assert res.stderr.startswith("error: --stack nope: no file") and res.stderr.count("\n") == 1
    assert fake_pulumi.calls() == []


def test_no_command_is_an_error(fake_pulumi: FakePulumi, project: Path) -> None:
    res = run(ephemeral_argv(fake_pulumi, project)[:-1], fake_pulumi)
    assert res.returncode == 2 and "no command given" in res.stderr


# -- janitor ----------------------------------------------------------------------------------


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
        sys.executable,
        "-m",
        "fullserver.cli",
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


def test_janitor_reports_failures_by_name_with_exit_5(seeded: FakePulumi, project: Path) -> None:
    res = run(janitor_argv(seeded, project, "--destroy", "--backoff", "0.01"), seeded, FAKE_PULUMI_FAIL="destroy:2")
    # the first stack fails twice (its two attempts), the second succeeds on its first
    assert res.returncode == EXIT_LEFTOVER
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
    each other; the end names both, and the exit code is 5."""
    res = run(
        janitor_argv(seeded, project, "--destroy", "--backoff", "0.01", "--at", iso(timedelta(hours=2))),
        seeded,
        FAKE_PULUMI_FAIL="stack tag ls@ci-older:always,destroy@ci-old:always",
    )
    assert res.returncode == EXIT_LEFTOVER, res.stderr
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
    assert res.returncode == EXIT_LEFTOVER
    [line] = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert line.startswith(f"error: stack '{other}' was not cleaned up: not destroyed: it belongs to project 'other'")
    assert "--project-dir" in line
    assert set(seeded.stacks()) == {"ci-older", "ci-fresh", "ci-garbled", "prod"}
    assert not [c for c in seeded.calls() if c["argv"][1:2] == ["destroy"] and other in c["argv"]]
