"""What ``fullserver start STACK`` does for a stack whose idle agent stopped it, read from the
stack's ``autostop`` output (``components.program``): ``pulumi up --refresh`` where the program
brings the nodes back (``StopWay.restored_by_up``: group sizes, a deleted TPU VM), else each
node's start command, an argv the components exported.

Why argvs checked against the platforms' own start commands: the outputs come from the state
backend, and a command read from it runs on the person's machine with their cloud credentials.
Only the start commands the platforms build (``start_argv`` of ``fullserver.platforms.*_autostop``)
are run, without a shell, so a name in them is never read as shell syntax.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fullserver.errors import InputError
from fullserver.platforms import aws_autostop, gcp_autostop, tpu_autostop

OUTPUT = "autostop"
_VALUE = "\0"
START_COMMANDS: tuple[tuple[str, ...], ...] = (
    tuple(aws_autostop.start_argv(_VALUE, _VALUE)),
    tuple(gcp_autostop.start_argv(_VALUE, _VALUE, _VALUE)),
    tuple(tpu_autostop.start_argv(_VALUE, _VALUE, _VALUE)),
)
"""The start commands that are run (``aws ec2 start-instances``, ``gcloud compute instances start``,
``gcloud compute tpus tpu-vm start``), ``_VALUE`` where a name, zone, region or project goes:
nothing else is."""


def _fits(argv: tuple[str, ...], form: tuple[str, ...]) -> bool:
    """``argv`` is ``form`` with a value in each place, none empty or read as an option."""
    if len(argv) != len(form):
        return False
    return all(a and not a.startswith("-") if f == _VALUE else a == f for a, f in zip(argv, form, strict=True))


@dataclass(frozen=True, slots=True)
class StartPlan:
    """``up``: run ``pulumi up --refresh`` on the stack; ``commands``: each node's start argv;
    ``running``: the nodes not stopped as the provider read them at the stack's last program run
    (``runningNodes``; None where the output predates it)."""

    stack: str
    up: bool
    commands: tuple[tuple[str, ...], ...] = ()
    running: int | None = None

    def state(self) -> str:
        """What the outputs say of the nodes now, and as of when (docs/autostop.md)."""
        if self.running is None:
            return f"{self.stack}: its outputs do not say whether it is stopped (run `pulumi up` once)"
        now = "stopped" if self.running == 0 else f"{self.running} node(s) running"
        return f"{self.stack}: {now}, as of its last pulumi up (or pulumi refresh --run-program)"


def _running(auto: Mapping[str, Any]) -> int | None:
    """``runningNodes``, a count or nothing: the outputs come from the state backend."""
    value = auto.get("runningNodes")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _where(stack: str) -> str:
    return f"stack '{stack}' output '{OUTPUT}'"


def _argv(stack: str, item: Any) -> tuple[str, ...]:
    """One start command, refused unless it is a platform's, with no empty or option-like name."""
    if not isinstance(item, list) or not all(isinstance(w, str) and w for w in item):
        raise InputError(
            _where(stack), f"start command {item!r} is not a list of words", "run `pulumi up` to refresh it"
        )
    argv = tuple(item)
    if not any(_fits(argv, form) for form in START_COMMANDS):
        raise InputError(
            _where(stack),
            f"'{' '.join(argv)}' is not a start command fullserver runs",
            "start the nodes yourself, or run `pulumi up` to refresh the output",
        )
    return argv


def start_plan(stack: str, outputs: Mapping[str, Any]) -> StartPlan:
    """What brings ``stack`` back, from its outputs (``pulumi stack output --json``)."""
    auto = outputs.get(OUTPUT)
    if not isinstance(auto, dict):
        raise InputError(
            f"stack '{stack}'",
            f"has no '{OUTPUT}' output: its nodes do not stop themselves",
            f"`pulumi up --refresh --stack {stack}` restores anything else",
        )
    if not isinstance(auto.get("restoredByUp"), bool) or not isinstance(auto.get("startCommands"), list):
        raise InputError(
            _where(stack),
            "says nothing of how to start (brought up before `fullserver start` existed)",
            f"run `pulumi up --refresh --stack {stack}` once, then `fullserver start {stack}` after a stop",
        )
    if auto["restoredByUp"]:
        return StartPlan(stack, up=True, running=_running(auto))
    commands = tuple(_argv(stack, item) for item in auto["startCommands"])
    if not commands:
        raise InputError(_where(stack), "lists no node to start", f"run `pulumi up --refresh --stack {stack}`")
    return StartPlan(stack, up=False, commands=commands, running=_running(auto))
