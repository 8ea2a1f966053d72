"""stackops' events in words: each prints exactly the line ``fullserver ephemeral`` and ``fullserver
janitor`` printed before stackops returned events (issue 23), on stderr, flushed."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from fullserver_cli.stackops_view import lines, to_stderr
from stackops.events import (
    CommandExited,
    CommandKilled,
    CommandNotStarted,
    CommandStarting,
    Destroying,
    Event,
    LeftBehind,
    PendingKept,
    PulumiOutput,
    QuotaCheckSkipped,
    QuotasChecked,
    RefreshFailed,
    Refreshing,
    Removing,
    Retrying,
    RunFailed,
    RunInterrupted,
    SignalReceived,
    StackCreating,
    StepFailed,
    TornDown,
    Updating,
)

WHEN = datetime(2026, 3, 1, 16, 15, 2, tzinfo=UTC)

CASES: list[tuple[Event, list[str]]] = [
    (
        Refreshing("ephemeral", "ci-1"),
        ["fullserver ephemeral: pulumi refresh ci-1 (reads back what an unfinished update left, before the destroy)"],
    ),
    (
        RefreshFailed("janitor", "ci-1", "error: boom"),
        ["fullserver janitor: refresh ci-1 failed: error: boom; destroying anyway"],
    ),
    (Destroying("janitor", "ci-1", 1, 2), ["fullserver janitor: pulumi destroy ci-1 (attempt 1/2)"]),
    (
        PendingKept("ephemeral", "ci-1", ("creating urn:a", "updating urn:b")),
        [
            "fullserver ephemeral: ci-1: 2 pending operation(s) left in the state: creating urn:a; updating urn:b; "
            "not removing the stack"
        ],
    ),
    (Removing("ephemeral", "ci-1"), ["fullserver ephemeral: pulumi stack rm ci-1"]),
    (
        StepFailed("ephemeral", "ci-1", "stack rm", 2, 4, "error: x"),
        ["fullserver ephemeral: stack rm ci-1 failed (attempt 2/4): error: x"],
    ),
    (Retrying("ephemeral", "ci-1", 0.02), ["fullserver ephemeral: retrying in 0.02 s"]),
    (Retrying("janitor", "ci-1", 5.0), ["fullserver janitor: retrying in 5 s"]),
    (PulumiOutput("Updating (ci-1):"), ["Updating (ci-1):"]),
    (
        QuotaCheckSkipped("AWS: no credentials (set AWS_PROFILE)"),
        ["fullserver ephemeral: quota check skipped: AWS: no credentials (set AWS_PROFILE)"],
    ),
    (QuotasChecked(3), ["fullserver ephemeral: 3 quota(s) checked, none short"]),
    (
        StackCreating("ci-1", "exp-aws-spot", "g6.xlarge", "us-east-1", 1234.5, WHEN, "file:///state"),
        [
            "fullserver ephemeral: stack ci-1 from exp-aws-spot: g6.xlarge in us-east-1, ~$1,234.50/h while it runs, "
            "expires 2026-03-01T16:15:02Z, backend file:///state"
        ],
    ),
    (Updating("ci-1"), ["fullserver ephemeral: pulumi up ci-1"]),
    (TornDown("ci-1"), ["fullserver ephemeral: ci-1 destroyed and removed"]),
    (CommandStarting(("sh", "-c", "true")), ["fullserver ephemeral: running sh -c true"]),
    (
        CommandNotStarted("nope", "No such file or directory"),
        ["fullserver ephemeral: cannot run 'nope': No such file or directory"],
    ),
    (CommandKilled(30.0), ["fullserver ephemeral: command still running after 30 s; killing it"]),
    (CommandExited(7), ["fullserver ephemeral: command exited with 7"]),
    (
        SignalReceived("SIGINT", "shielded"),
        ["fullserver ephemeral: SIGINT received; teardown is running and will finish first"],
    ),
    (
        SignalReceived("SIGTERM", "to-command"),
        ["fullserver ephemeral: SIGTERM received; passing it to the command, then tearing down"],
    ),
    (
        SignalReceived("SIGTERM", "cancelling-pulumi"),
        ["fullserver ephemeral: SIGTERM received; cancelling the Pulumi operation, then tearing down"],
    ),
    (
        SignalReceived("SIGINT", "already-cancelling"),
        [
            "fullserver ephemeral: SIGINT received; the Pulumi operation is already cancelling (another interrupt "
            "would abort it and leave pending operations), then tearing down"
        ],
    ),
    (
        SignalReceived("SIGINT", "cancelling"),
        ["fullserver ephemeral: SIGINT received; cancelling, then tearing down"],
    ),
    (
        RunInterrupted("SIGTERM"),
        ["fullserver ephemeral: interrupted by SIGTERM; the stack was torn down"],
    ),
    (RunFailed("--ttl: '9h' exceeds (use less)"), ["error: --ttl: '9h' exceeds (use less)"]),
    (
        LeftBehind(("stack 'ci-1' was NOT cleaned up", "  backend:     file:///state"), 3),
        [
            "error: stack 'ci-1' was NOT cleaned up",
            "  backend:     file:///state",
            "(the command itself exited with 3)",
        ],
    ),
    (LeftBehind(("stack 'ci-1' was NOT cleaned up",)), ["error: stack 'ci-1' was NOT cleaned up"]),
]


@pytest.mark.parametrize(("event", "expected"), CASES, ids=[type(e).__name__ for e, _ in CASES])
def test_each_event_reads_as_the_line_it_always_printed(event: Event, expected: list[str]) -> None:
    assert lines(event) == expected


def test_every_event_type_has_words() -> None:
    """A new event type without a line in the view would be dropped silently."""
    from typing import get_args

    from stackops.events import Event as Union

    assert {type(e) for e, _ in CASES} == set(get_args(Union))


def test_the_lines_go_to_stderr_and_nothing_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    to_stderr(LeftBehind(("a", "b"), 1))
    out, err = capsys.readouterr()
    assert out == "" and err == "error: a\nb\n(the command itself exited with 1)\n"
