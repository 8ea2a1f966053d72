"""SIGINT and SIGTERM against a real ``fullserver ephemeral`` process: passed on once, then teardown."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from tests.stackops.conftest import ROOT, FakePulumi, ephemeral_argv

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
    time.sleep(600)
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
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)  # the command would sleep 600 s unless it heard the signal
    assert proc.returncode == 128 + sig, err
    assert (marks / f"got-{sig.name}").exists()  # the command heard it (once, through us)
    assert f"{name} destroyed and removed" in err and f"interrupted by {sig.name}" in err
    assert fake_pulumi.stacks() == {}


def test_sigterm_during_up_cancels_it_and_still_destroys(
    fake_pulumi: FakePulumi, project: Path, tmp_path: Path
) -> None:
    argv = ephemeral_argv(fake_pulumi, project, "sh", "-c", f"touch {tmp_path}/ran")
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        env=fake_pulumi.subprocess_env(FAKE_PULUMI_UP_SLEEP="600"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_started(fake_pulumi, "up", proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)  # `up` would sleep 600 s unless cancelled
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "cancelling the Pulumi operation" in err and "destroyed and removed" in err
    [up] = [c for c in fake_pulumi.calls() if "up" in c["argv"][:2]]
    assert up["signals"] == ["SIGINT"] and up["exit"] != 0  # cancelled as Ctrl-C cancels it, not waited for
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


class StderrLines:
    """A process's stderr read line by line in the background, so a test can wait for a line."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        assert proc.stderr is not None
        stream = proc.stderr

        def read() -> None:
            for line in stream:
                self.lines.put(line)

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()

    def wait_for(self, text: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no line with {text!r} within {timeout} s; saw {self.seen}") from None
            self.seen.append(line)
            if text in line:
                return line

    def rest(self) -> str:
        self.reader.join(timeout=60)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return "".join(self.seen)


@pytest.mark.parametrize("first", [signal.SIGTERM, signal.SIGINT])
def test_repeated_signals_during_up_reach_pulumi_as_exactly_one_interrupt(
    fake_pulumi: FakePulumi, project: Path, tmp_path: Path, first: signal.Signals
) -> None:
    """A CI cancel sends SIGTERM more than once, a person presses Ctrl-C twice: the CLI must get one
    SIGINT (a second makes it terminate and leave the create in flight pending, invisible to
    destroy). ``kill -INT`` on our pid counts as well. Then refresh, destroy, and nothing is left.

    The stand-in's cancel lasts until the test releases it, and each signal is sent only after
    the previous one was answered, so every signal lands inside the cancel however loaded the
    machine is (no timing window)."""
    release = tmp_path / "release-cancel"
    proc = subprocess.Popen(
        ephemeral_argv(fake_pulumi, project, "true"),
        cwd=ROOT,
        env=fake_pulumi.subprocess_env(FAKE_PULUMI_UP_SLEEP="600", FAKE_PULUMI_CANCEL_UNTIL=str(release)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    err = StderrLines(proc)
    wait_started(fake_pulumi, "up", proc)
    proc.send_signal(first)
    err.wait_for("cancelling the Pulumi operation")
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGTERM):
        proc.send_signal(sig)
        err.wait_for(f"{sig.name} received; the Pulumi operation is already cancelling")
    release.touch()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("`up` was not cancelled") from None
    text = err.rest()
    assert proc.returncode == 128 + first, text
    [up] = [c for c in fake_pulumi.calls() if "up" in c["argv"][:2]]
    assert up["signals"] == ["SIGINT"], up
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
