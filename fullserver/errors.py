"""Errors that reach a person: one line naming where, what, and how to fix it.

Every error fullserver shows on bad input is a ``FullserverError``. The CLI prints
``str(error)`` and exits with ``error.exit_code``; it never prints a traceback.
"""

from __future__ import annotations

EXIT_INPUT = 2
EXIT_BUDGET = 3
EXIT_SHORT = 4


class FullserverError(Exception):
    """A user-facing error: ``where: what (hint)`` on one line."""

    exit_code = EXIT_INPUT

    def __init__(self, where: str, what: str, hint: str = "") -> None:
        self.where = where
        self.what = what
        self.hint = hint
        super().__init__(self.line())

    def line(self) -> str:
        text = f"{self.where}: {self.what}" if self.where else self.what
        if self.hint:
            text += f" ({self.hint})"
        return " ".join(text.split())


class InputError(FullserverError):
    """A file, field or stack is malformed or names something that does not exist."""


class NothingFits(FullserverError):
    """No catalog shape satisfies the profile's minimums for the workload."""


class BudgetExceeded(FullserverError):
    """A plan's monthly estimate is above the budget the caller set."""

    exit_code = EXIT_BUDGET
