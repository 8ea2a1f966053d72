"""SIGINT and SIGTERM become a teardown, never a dead process with a stack left running.

A signal during a Pulumi operation makes the CLI cancel with exactly one SIGINT, however many
signals arrive (a second would make it terminate at once and leave pending operations). A signal
during the user's command goes to the command's process group. During teardown signals are noted
and do not interrupt it: the CLI runs in its own session (``PulumiCLI``), so a terminal's Ctrl-C
does not reach it either.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from contextlib import suppress
from types import FrameType
from typing import Any, Literal

from stackops.events import Notify, SignalReceived, ignore
from stackops.workspace import PulumiCLI


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived; a BaseException like KeyboardInterrupt so ``except Exception``
    in user code cannot swallow it and skip the teardown."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"interrupted by {signal.Signals(signum).name}")

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


Mode = Literal["raise", "defer", "shield"]


class SignalGuard:
    """Turns SIGINT/SIGTERM into a teardown instead of a dead process.

    ``defer`` while Pulumi commands run: note the signal and ask the running CLI to cancel with
    one SIGINT (its graceful cancel: in-flight operations finish and the state is saved), then
    raise once it returns. Exactly one interrupt is ever forwarded to Pulumi, whichever signals
    arrive and however many: the CLI treats a second one as "terminate now" and leaves pending
    operations behind. The CLI runs in its own session (``PulumiCLI``), so a terminal's Ctrl-C
    reaches only us. ``raise`` in the caller's code. ``shield`` during teardown: note and carry
    on, forwarding nothing. While a command started by ``run_command`` runs, signals are
    forwarded to its process group instead.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self, enabled: bool = True, notify: Notify = ignore) -> None:
        self.enabled = enabled and threading.current_thread() is threading.main_thread()
        self.mode: Mode = "raise"
        self.pending: int | None = None
        self.child: subprocess.Popen[bytes] | None = None
        self.cli: PulumiCLI | None = None
        self.forwarded = False
        """The one SIGINT has gone to a Pulumi CLI: no other will."""
        self.notify = notify
        """Where each signal's ``SignalReceived`` goes, from the signal handler itself."""
        self._old: dict[int, Any] = {}

    def watch(self, cli: PulumiCLI) -> None:
        """Forward to this CLI's processes; one started just after a signal still gets its SIGINT."""
        self.cli = cli
        cli.on_start = self._cli_started

    def __enter__(self) -> SignalGuard:
        if self.enabled:
            for sig in self.SIGNALS:
                self._old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.pending is None:
            self.pending = signum
        if self.mode == "shield":
            self.notify(SignalReceived(name, "shielded"))
            return
        child = self.child
        if child is not None and child.poll() is None:
            self.notify(SignalReceived(name, "to-command"))
            with suppress(OSError):
                os.killpg(child.pid, signum)
            return
        if self.mode == "defer":
            if self._interrupt_pulumi():
                self.notify(SignalReceived(name, "cancelling-pulumi"))
            elif self.forwarded:
                self.notify(SignalReceived(name, "already-cancelling"))
            else:
                self.notify(SignalReceived(name, "cancelling"))
            return
        raise Interrupted(signum)

    def _interrupt_pulumi(self) -> bool:
        """SIGINT to the running CLI, once per run; ``False`` when none runs or one was sent."""
        proc = self.cli.process if self.cli is not None else None
        if self.forwarded or proc is None or proc.poll() is not None:
            return False
        self.forwarded = True
        with suppress(OSError):
            os.kill(proc.pid, signal.SIGINT)
        return True

    def _cli_started(self, proc: subprocess.Popen[str]) -> None:
        if self.mode == "defer" and self.pending is not None:
            self._interrupt_pulumi()

    def checkpoint(self) -> None:
        """Raise ``Interrupted`` for a signal noted earlier, unless teardown is running."""
        if self.pending is not None and self.mode != "shield":
            raise Interrupted(self.pending)
