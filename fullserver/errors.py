"""Errors that reach a person: one line naming where, what, and how to fix it.

Every error fullserver shows on bad input is a ``FullserverError``. The CLI prints
``str(error)`` and exits with ``error.exit_code``; it never prints a traceback.
"""

from __future__ import annotations

from typing import Self

# One table of exit codes for every command (README "Exit codes" shows the same table): each
# outcome has a code of its own, so a CI script can tell "a host is down" from "a stack was left".
EXIT_OK = 0
EXIT_INPUT = 2  # bad input: a file, field, flag, host entry, or cloud credentials and settings; nothing changed
EXIT_BUDGET = 3  # a monthly estimate is above the budget given
EXIT_SHORT = 4  # audit, verify: a host short of the profile (or unverified); quota, ephemeral: a quota short
EXIT_UNREACHABLE = 5  # audit, verify: a host could not be reached or logged into
EXIT_PULUMI = 6  # ephemeral: Pulumi failed, and nothing was left behind; start: a start failed
EXIT_LEFT_BEHIND = 7  # ephemeral, janitor: a stack or its resources were left behind; each is named
EXIT_CODES: dict[int, str] = {
    EXIT_OK: "success",
    1: "an unexpected failure (a bug: please report it)",
    EXIT_INPUT: "bad input (file, field, flag, host entry, or cloud credentials and settings); nothing was changed",
    EXIT_BUDGET: "a monthly estimate is above --max-monthly-usd",
    EXIT_SHORT: "audit, verify: a host is short of its profile, or could not be verified; quota, ephemeral: a quota is short",
    EXIT_UNREACHABLE: "audit, verify: a host could not be reached or logged into",
    EXIT_PULUMI: "ephemeral: Pulumi failed; nothing was left behind; start: pulumi up or a node's start command failed",
    EXIT_LEFT_BEHIND: "ephemeral, janitor: a stack or its resources were left behind (each is named)",
}


class FullserverError(Exception):
    """A user-facing error: ``where: what (hint)`` on one line."""

    exit_code = EXIT_INPUT

    def __init__(self, where: str, what: str, hint: str = "") -> None:
        self.where = where
        self.what = what
        self.hint = hint
        super().__init__(self.line())

    def afresh(self) -> Self:
        """The same error as a new object: one that is kept (a memo's refusal) is raised as a copy,
        so raising it never ties the kept one to the raiser's frames. Copied, not made again: its
        line is the kept one's (whoever changes ``where`` or ``what`` sets ``args`` with them)."""
        fresh = type(self).__new__(type(self), *self.args)
        fresh.__dict__.update(self.__dict__)
        return fresh

    def line(self) -> str:
        text = f"{self.where}: {self.what}" if self.where else self.what
        if self.hint:
            text += f" ({self.hint})"
        return shown(" ".join(text.split()))


def shown(text: str) -> str:
    """``text`` with every character a terminal would act on written as its escape (``\\x1b``).

    Why: a file, stack or host name holding an escape sequence was printed raw, so the terminal
    showed a name that does not exist (``Pulumi.ex\\x1b[31mp.yaml`` as a red ``exp``); the escaped
    form is the name to type. Every error line passes through here."""
    if text.isprintable():  # the common case, without a look at each character
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


class InputError(FullserverError):
    """A file, field or stack is malformed or names something that does not exist."""


class NothingFits(FullserverError):
    """No catalog shape satisfies the profile's minimums for the workload."""


class BudgetExceeded(FullserverError):
    """A plan's monthly estimate is above the budget the caller set."""

    exit_code = EXIT_BUDGET
