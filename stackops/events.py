"""What a stack operation has to tell a person while it runs, as typed events.

stackops prints nothing: each step hands an event to the ``Notify`` callable it was given, and
whoever called decides what a person sees. The command line prints each as the line it always
printed (``fullserver_cli.stackops_view``); a Python caller (a pytest fixture around
``ephemeral_stack``) may log them, collect them, or drop them (the default, ``ignore``).

Design notes: docs/design/stackops.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

By = Literal["ephemeral", "janitor"]
"""Which command's teardown an event belongs to (the line starts ``fullserver <by>:``)."""


# -- a teardown (stackops.teardown): the ephemeral run's own, or the janitor's ------------------


@dataclass(frozen=True, slots=True)
class Refreshing:
    """``pulumi refresh`` before the destroy, after an update that did not finish."""

    by: By
    stack: str


@dataclass(frozen=True, slots=True)
class RefreshFailed:
    """The refresh failed; the destroy goes ahead anyway."""

    by: By
    stack: str
    error: str


@dataclass(frozen=True, slots=True)
class Destroying:
    """``pulumi destroy``, attempt ``attempt`` of ``attempts``."""

    by: By
    stack: str
    attempt: int
    attempts: int


@dataclass(frozen=True, slots=True)
class PendingKept:
    """The state still lists operations in flight after the destroy: the stack is kept."""

    by: By
    stack: str
    pending: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Removing:
    """``pulumi stack rm``, after the destroy."""

    by: By
    stack: str


@dataclass(frozen=True, slots=True)
class StepFailed:
    """A destroy or a stack rm failed; ``step`` is ``"destroy"`` or ``"stack rm"``."""

    by: By
    stack: str
    step: str
    attempt: int
    attempts: int
    error: str


@dataclass(frozen=True, slots=True)
class Retrying:
    """The failed step runs again after ``delay_s`` seconds."""

    by: By
    stack: str
    delay_s: float


@dataclass(frozen=True, slots=True)
class PulumiOutput:
    """One line the Pulumi CLI printed (``up``, ``refresh``, ``destroy``), as it printed it."""

    line: str


# -- an ephemeral run (stackops.ephemeral) ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QuotaCheckSkipped:
    """The account's quotas could not be read (no credentials); the run goes on."""

    reason: str


@dataclass(frozen=True, slots=True)
class QuotasChecked:
    """Every quota the stack needs was read and none is short."""

    count: int


@dataclass(frozen=True, slots=True)
class StackCreating:
    """The stack about to be created: what it runs, where, what an hour costs, when it expires."""

    stack: str
    base: str
    offer: str
    region: str
    usd_per_hour: float
    expires_at: datetime
    backend: str


@dataclass(frozen=True, slots=True)
class Updating:
    """``pulumi up`` of the new stack."""

    stack: str


@dataclass(frozen=True, slots=True)
class TornDown:
    """The stack was destroyed and removed: nothing is left."""

    stack: str


@dataclass(frozen=True, slots=True)
class CommandStarting:
    """The user's command, about to run with the stack's outputs."""

    argv: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CommandNotStarted:
    """The user's command could not be started (not found, not executable)."""

    program: str
    reason: str


@dataclass(frozen=True, slots=True)
class CommandKilled:
    """The command outlived its grace period after a signal and is killed."""

    grace_s: float


@dataclass(frozen=True, slots=True)
class CommandExited:
    """The command ended with ``code`` (shell-style: 128 + N after signal N)."""

    code: int


SignalAction = Literal["shielded", "to-command", "cancelling-pulumi", "already-cancelling", "cancelling"]
"""What a signal did: noted while teardown runs; passed to the command; the one SIGINT sent to
the Pulumi CLI; noted because that SIGINT went already; noted while no Pulumi CLI was running."""


@dataclass(frozen=True, slots=True)
class SignalReceived:
    """SIGINT or SIGTERM arrived (``signal`` is its name, e.g. ``"SIGTERM"``)."""

    signal: str
    action: SignalAction


@dataclass(frozen=True, slots=True)
class RunInterrupted:
    """The run was interrupted by ``signal`` and its stack torn down."""

    signal: str


@dataclass(frozen=True, slots=True)
class RunFailed:
    """The run stopped on an error, before or after its stack existed; ``error`` is the error's
    one line (``where: what (hint)``)."""

    error: str


@dataclass(frozen=True, slots=True)
class LeftBehind:
    """Teardown left something (a step failed after every retry, or pending operations remain):
    ``report`` says what is left and how to clean it up
    (``stackops.leftover``); ``command_code`` is the user's command's exit code (0 when it never
    ran or succeeded)."""

    report: tuple[str, ...]
    command_code: int = 0


Event = (
    Refreshing
    | RefreshFailed
    | Destroying
    | PendingKept
    | Removing
    | StepFailed
    | Retrying
    | PulumiOutput
    | QuotaCheckSkipped
    | QuotasChecked
    | StackCreating
    | Updating
    | TornDown
    | CommandStarting
    | CommandNotStarted
    | CommandKilled
    | CommandExited
    | SignalReceived
    | RunInterrupted
    | RunFailed
    | LeftBehind
)

Notify = Callable[[Event], None]
"""Where a stack operation's events go, one call each, as they happen."""


def ignore(event: Event) -> None:
    """The default ``Notify``: a Python caller that passes none hears nothing."""


def pulumi_lines(notify: Notify, enabled: bool) -> Callable[[str], None] | None:
    """The Automation API's ``on_output`` that passes each line the CLI prints on as a
    ``PulumiOutput`` event; ``None`` (the CLI's output is only captured) when not ``enabled``."""
    if not enabled:
        return None
    return lambda line: notify(PulumiOutput(line))
