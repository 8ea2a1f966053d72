"""``fullserver.collector.batch``: no automatic collection inside the block, the caller's setting
after; and the premise that makes it safe, that planning makes no reference cycles."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from fullserver.catalog import load_catalog
from fullserver.collector import batch
from fullserver.plan import plan_paths

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "stacks").glob("Pulumi.*.yaml"))

LEFT_OPEN = """\
config:
  fullserver:profile: fine-tuning
  fullserver:location: [us, europe]
  fullserver:accelerator: A100-40GB
  fullserver:acceleratorCount: 1
  gcp:project: example-project
"""
"""Platform and region left to the plan, and one cloud refusing the accelerator count: the refusals
kept while the others are weighed."""


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.enable()
    yield
    if not enabled:
        gc.disable()


def test_inside_a_batch_nothing_is_collected_automatically_and_after_it_is_again() -> None:
    with batch():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_callers_setting_comes_back_when_the_block_raises() -> None:
    with pytest.raises(RuntimeError), batch():
        raise RuntimeError("planning failed")
    assert gc.isenabled()


def test_a_caller_that_had_collection_off_keeps_it_off() -> None:
    gc.disable()
    with batch():
        pass
    assert not gc.isenabled()


def test_batches_nest_and_unwind_to_the_outermost_callers_setting() -> None:
    with batch():
        with batch():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_what_a_batch_keeps_goes_to_the_oldest_generation_unscanned() -> None:
    gc.collect()
    with batch():
        kept = [[n] for n in range(5_000)]
    oldest = gc.get_objects(generation=2)
    assert any(o is kept[0] for o in oldest), "what the batch kept is left to the young collections"
    assert gc.get_freeze_count() == 0


def test_objects_a_caller_froze_stay_frozen() -> None:
    """Held by the caller's own object, not the count: another thread of the process may free frozen
    objects meanwhile (the count falls by those), and ``gc.get_objects`` never lists a frozen one."""
    mine = [["the caller's"]]
    gc.freeze()
    try:
        assert not any(o is mine for o in gc.get_objects())
        with batch():
            kept = [[n] for n in range(1_000)]
        assert not any(o is mine for o in gc.get_objects()), "the batch unfroze what the caller froze"
        assert kept
    finally:
        gc.unfreeze()
    assert any(o is mine for o in gc.get_objects())


def test_a_cycle_made_inside_a_batch_is_collected_after_it() -> None:
    gc.collect()
    with batch():
        looped: list[object] = []
        looped.append(looped)
        del looped
    assert gc.collect() == 1


def test_planning_makes_no_reference_cycle_for_the_collector_to_find(tmp_path: Path) -> None:
    """What lets ``batch`` pause the collector: every example's plan, its comparison rows (a refused
    row among them), a placement with refusals and the memo's answers are freed by reference
    counting alone."""
    (tmp_path / "Pulumi.left-open.yaml").write_text(LEFT_OPEN)
    stacks = [*EXAMPLES, tmp_path / "Pulumi.left-open.yaml"]
    catalog = load_catalog()
    plan_paths(stacks, catalog=catalog)  # imports and first-use caches made before we count
    catalog.memo.clear()
    gc.collect()
    with batch():
        plans = plan_paths(stacks, catalog=catalog)
        assert any(row.usd_month is None for plan in plans for row in plan.comparison), "no refused row planned"
        assert plans[-1].placement is not None and plans[-1].placement.skipped, "no refused placement"
        del plans
        catalog.memo.clear()
        assert gc.collect() == 0
