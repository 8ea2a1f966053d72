"""``fullserver ephemeral`` as CI runs it: a real process, its output and its exit codes.

The signal tests are in ``test_signals.py`` and the janitor's in ``test_janitor.py``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fullserver.errors import EXIT_LEFT_BEHIND, EXIT_PULUMI
from tests.stackops.conftest import FakePulumi, ephemeral_argv, run


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


def test_a_destroy_that_keeps_failing_exits_7_and_says_what_is_left(fake_pulumi: FakePulumi, project: Path) -> None:
    res = run(
        ephemeral_argv(fake_pulumi, project, "true", extra=("--retries", "2")),
        fake_pulumi,
        FAKE_PULUMI_FAIL="destroy:always",
    )
    assert res.returncode == EXIT_LEFT_BEHIND
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


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--ttl", "100000000h"), ("--retries", "1000000"), ("--backoff", "1e400"), ("--grace", "nan")],
)
def test_an_out_of_range_number_is_one_line_exit_2_naming_the_flag(
    fake_pulumi: FakePulumi, project: Path, flag: str, value: str
) -> None:
    """Issue 14.5: ``--ttl 100000000h`` ended in an ``OverflowError`` traceback."""
    res = run(ephemeral_argv(fake_pulumi, project, "true", extra=(flag, value)), fake_pulumi)
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith(f"error: {flag}: ") and res.stderr.count("\n") == 1, res.stderr
    assert fake_pulumi.calls() == []
