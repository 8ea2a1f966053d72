"""Fewer cyclic garbage collections while a batch of stacks is planned, for that batch only.

Planning makes many short-lived objects and almost no reference cycles; at the default thresholds
the collector ran every few stacks and rescanned the memo each time (a quarter of the cold
planning time, issue 36). ``batch`` raises the youngest generation's threshold inside its block
and puts the caller's thresholds back after: nothing outside the block changes, cycles are still
collected, and reference counting frees everything else as before.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

BATCH_THRESHOLD = 20_000
"""Allocations between collections of the youngest generation inside ``batch`` (CPython's: 700)."""


@contextmanager
def batch() -> Iterator[None]:
    """The block with the youngest generation collected every ``BATCH_THRESHOLD`` allocations
    (never less often than the caller had it), then the caller's thresholds again."""
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], BATCH_THRESHOLD), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)
