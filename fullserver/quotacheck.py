"""``fullserver quota``: each quota a stack needs, against the account's limit and usage.

Design notes: docs/design/core.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from fullserver.errors import EXIT_SHORT, FullserverError
from fullserver.platforms.quota import QuotaNeed


class QuotaShort(FullserverError):
    """A quota the stack needs is below what it reaches (``fullserver quota``, ``ephemeral``)."""

    exit_code = EXIT_SHORT


class NoCredentials(FullserverError):
    """The account cannot be read: no credentials, or no client library to read it with."""


@dataclass(frozen=True)
class QuotaStatus:
    """One quota: what the stack needs, the account's limit and usage (``None``: unknown)."""

    need: QuotaNeed
    limit: float | None
    in_use: float | None
    note: str = ""

    @property
    def short(self) -> float | None:
        """How much more the limit must hold (0: enough); ``None`` when the limit is unknown."""
        if self.limit is None:
            return None
        return max(0.0, self.need.amount + (self.in_use or 0) - self.limit)

    @property
    def desired(self) -> int:
        """The limit to ask for: what is in use plus what the stack needs."""
        return math.ceil(self.need.amount + (self.in_use or 0))


class Reader(Protocol):
    def read(self, need: QuotaNeed) -> QuotaStatus: ...

    def request(self, status: QuotaStatus) -> str: ...


def short_error(where: str, checked: Iterable[tuple[QuotaStatus, Reader]]) -> QuotaShort | None:
    """One line naming each short quota and the request that raises it; ``None`` when none is short."""
    short = [(s, r) for s, r in checked if s.short]
    if not short:
        return None
    what = "; ".join(
        f"{s.need.code} ({s.need.name}) in {s.need.scope}: needs {s.need.amount:g} {s.need.unit}, "
        f"limit {s.limit or 0:g}, in use {s.in_use or 0:g}"
        for s, _ in short
    )
    return QuotaShort(where, f"quota short: {what}", "request: " + "; ".join(r.request(s) for s, r in short))


def check_all(needs: list[QuotaNeed], readers: dict[str, Reader]) -> list[tuple[QuotaStatus, Reader]]:
    """Each need read by its cloud's reader."""
    return [(readers[n.cloud].read(n), readers[n.cloud]) for n in needs]
