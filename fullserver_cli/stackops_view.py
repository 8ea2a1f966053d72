"""stackops' events as a person reads them in a CI log: one line each on stderr, as it happens.

The operations (``stackops.ephemeral``, ``stackops.janitor``) print nothing; they hand typed
events (``stackops.events``) to the ``notify`` they are given, and ``fullserver ephemeral`` and
``fullserver janitor`` pass ``to_stderr``. Each line is flushed at once: CI logs interleave it with
the Pulumi CLI's output and the user's command's, and a runner killed half-way still shows how
far the teardown got.
"""

from __future__ import annotations

import sys

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
    SignalAction,
    SignalReceived,
    StackCreating,
    StepFailed,
    TornDown,
    Updating,
)
from stackops.naming import EXPIRES_FORMAT

EPHEMERAL = "fullserver ephemeral"

_SIGNAL = {
    "shielded": "teardown is running and will finish first",
    "to-command": "passing it to the command, then tearing down",
    "cancelling-pulumi": "cancelling the Pulumi operation, then tearing down",
    "already-cancelling": "the Pulumi operation is already cancelling (another interrupt would abort it and "
    "leave pending operations), then tearing down",
    "cancelling": "cancelling, then tearing down",
}
"""What a signal did, in words, by ``SignalReceived.action``."""


def _signal(name: str, action: SignalAction) -> str:
    return f"{EPHEMERAL}: {name} received; {_SIGNAL[action]}"


def _teardown(event: Event) -> str | None:
    """A teardown step's line (``fullserver ephemeral: ...`` or ``fullserver janitor: ...``)."""
    match event:
        case Refreshing(by, stack):
            what = f"pulumi refresh {stack} (reads back what an unfinished update left, before the destroy)"
        case RefreshFailed(by, stack, error):
            what = f"refresh {stack} failed: {error}; destroying anyway"
        case Destroying(by, stack, attempt, attempts):
            what = f"pulumi destroy {stack} (attempt {attempt}/{attempts})"
        case PendingKept(by, stack, pending):
            what = f"{stack}: {len(pending)} pending operation(s) left in the state: {'; '.join(pending)}; not removing the stack"
        case Removing(by, stack):
            what = f"pulumi stack rm {stack}"
        case StepFailed(by, stack, step, attempt, attempts, error):
            what = f"{step} {stack} failed (attempt {attempt}/{attempts}): {error}"
        case Retrying(by, _, delay_s):
            what = f"retrying in {delay_s:g} s"
        case _:
            return None
    return f"fullserver {by}: {what}"


def _run(event: Event) -> list[str]:
    """An ephemeral run's line(s), from the quota check to what was left behind."""
    match event:
        case QuotaCheckSkipped(reason):
            return [f"{EPHEMERAL}: quota check skipped: {reason}"]
        case QuotasChecked(count):
            return [f"{EPHEMERAL}: {count} quota(s) checked, none short"]
        case StackCreating():
            e = event
            return [
                f"{EPHEMERAL}: stack {e.stack} from {e.base}: {e.offer} in {e.region}, ~${e.usd_per_hour:,.2f}/h while "
                f"it runs, expires {e.expires_at.strftime(EXPIRES_FORMAT)}, backend {e.backend}"
            ]
        case Updating(stack):
            return [f"{EPHEMERAL}: pulumi up {stack}"]
        case TornDown(stack):
            return [f"{EPHEMERAL}: {stack} destroyed and removed"]
        case CommandStarting(argv):
            return [f"{EPHEMERAL}: running {' '.join(argv)}"]
        case CommandNotStarted(program, reason):
            return [f"{EPHEMERAL}: cannot run {program!r}: {reason}"]
        case CommandKilled(grace_s):
            return [f"{EPHEMERAL}: command still running after {grace_s:g} s; killing it"]
        case CommandExited(code):
            return [f"{EPHEMERAL}: command exited with {code}"]
        case SignalReceived(name, action):
            return [_signal(name, action)]
        case RunInterrupted(name):
            return [f"{EPHEMERAL}: interrupted by {name}; the stack was torn down"]
        case RunFailed(error):
            return [f"error: {error}"]
        case LeftBehind(report, command_code):
            out = [("error: " if i == 0 else "") + line for i, line in enumerate(report)]
            return out + ([f"(the command itself exited with {command_code})"] if command_code else [])
    return []


def lines(event: Event) -> list[str]:
    """The line(s) a person reads for ``event``, exactly as the command line prints them."""
    if isinstance(event, PulumiOutput):
        return [event.line]
    teardown = _teardown(event)
    return [teardown] if teardown is not None else _run(event)


def to_stderr(event: Event) -> None:
    """The ``notify`` of ``fullserver ephemeral`` and ``fullserver janitor``: each line to
    stderr, flushed."""
    for line in lines(event):
        sys.stderr.write(line + "\n")
    sys.stderr.flush()
