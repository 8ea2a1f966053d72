"""Answers a catalog keeps: each a pure function of the read-only catalog and one frozen question.

A memoised function (``Catalog.answer``) takes its question as its only input besides the catalog,
so it cannot read what the key does not hold, and returns immutable values (tuples, frozen
models), so no caller can change what the next one is handed. ``Same`` lets a question hold an
object too large to hash by value (a profile, an offer) by identity: the memo keeps the object
alive while it keeps the answer, so its identity cannot be reused by another.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

MEMO_LIMIT = 10_000
"""Answers a catalog keeps (``Catalog.answer``) before they are dropped and worked out afresh."""

T = TypeVar("T")


@dataclass(frozen=True, slots=True, eq=False)
class Same(Generic[T]):
    """``of``, equal only to itself: a frozen object a question holds whole, by identity."""

    of: T

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Same) and other.of is self.of

    def __hash__(self) -> int:
        return id(self.of)
