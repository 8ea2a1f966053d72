"""``fullserver.collector.batch``: fewer collections inside the block, the caller's thresholds after."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from fullserver.collector import BATCH_THRESHOLD, batch


@pytest.fixture(autouse=True)
def _thresholds() -> Iterator[tuple[int, int, int]]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*before)


def test_inside_a_batch_the_youngest_generation_waits_for_more_allocations() -> None:
    with batch():
        assert gc.get_threshold() == (BATCH_THRESHOLD, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)


def test_the_callers_thresholds_come_back_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError), batch():
        raise RuntimeError("planning failed")
    assert gc.get_threshold() == (700, 10, 10)


def test_a_caller_collecting_less_often_already_is_left_as_it_is() -> None:
    gc.set_threshold(BATCH_THRESHOLD * 2, 5, 5)
    with batch():
        assert gc.get_threshold() == (BATCH_THRESHOLD * 2, 5, 5)
    assert gc.get_threshold() == (BATCH_THRESHOLD * 2, 5, 5)


def test_batches_nest_and_unwind_to_the_outermost_callers_thresholds() -> None:
    with batch(), batch():
        assert gc.get_threshold()[0] == BATCH_THRESHOLD
    assert gc.get_threshold() == (700, 10, 10)


def test_collection_still_happens_inside_a_batch() -> None:
    collected: list[int] = []

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            collected.append(info["generation"])

    gc.callbacks.append(seen)
    try:
        with batch():
            kept: list[list[int]] = [[] for _ in range(3 * BATCH_THRESHOLD)]  # containers the collector tracks, alive
    finally:
        gc.callbacks.remove(seen)
    assert len(kept) == 3 * BATCH_THRESHOLD
    assert collected, "the collector never ran inside the batch"
