"""``fullserver.stockout``: the plan's spot capacity table, asked of the stack's platform."""

from __future__ import annotations

from pathlib import Path

import pytest

from fullserver.capacity import CapacityStep
from fullserver.catalog import Catalog, load_catalog
from fullserver.plan import StackPlan, plan_paths
from fullserver.stockout import spot_question, with_spot_steps

STACKS = Path(__file__).resolve().parents[2] / "stacks"


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


def plan(tmp_path: Path, accelerator: str, platform: str = "tpu-vm", profile: str = "batch-inference") -> StackPlan:
    path = tmp_path / "Pulumi.s.yaml"
    path.write_text(
        "config:\n  gcp:project: my-ml-project\n"
        f"  fullserver:profile: {profile}\n  fullserver:platform: {platform}\n"
        "  fullserver:region: us-east5\n  fullserver:zone: us-east5-a\n"
        f"  fullserver:accelerator: {accelerator}\n  fullserver:framework: jax\n  fullserver:owner: o\n",
        encoding="utf-8",
    )
    (found,) = plan_paths([path])
    return found


def steps_of(planned: StackPlan) -> list[CapacityStep]:
    assert planned.spec.capacity is not None
    return planned.spec.capacity.steps


def test_a_spot_v5p_slice_states_queue_spot_rate_and_recreate(tmp_path: Path, catalog: Catalog) -> None:
    planned = plan(tmp_path, "v5p-32")
    question = spot_question(planned.spec, catalog)
    assert question is not None
    # catalog tpu_prices: v5p in us-east5, 1.29995 spot and 4.20 on-demand per chip-hour, 16 chips
    assert (question.shape, question.hosts, question.zone, question.queued) == ("v5p-32", 4, "us-east5-a", True)
    assert question.spot_usd_hour == pytest.approx(16 * 1.29995)
    assert question.on_demand_usd_hour == pytest.approx(16 * 4.20)
    steps = [(s.what, s.usd_hour_low) for s in steps_of(planned)]
    assert steps == [
        ("queue a spot request for v5p-32 (4 hosts) in us-east5-a", None),
        ("v5p-32 (4 hosts) runs on spot", pytest.approx(20.7992)),
        ("preempted (any time, no run-time limit)", None),
    ]
    # the compute line bills the same spot rate the table states for the running slice
    compute = next(line for line in planned.cost.lines if line.item == "compute")
    assert compute.note.startswith("spot 20.80/h (no on-demand fallback is built)")


def test_the_same_slice_as_a_gke_pool_states_the_spot_pool_then_its_on_demand_twin(tmp_path: Path) -> None:
    planned = plan(tmp_path, "v5p-32", platform="gke-tpu")
    steps = [(s.what, s.usd_hour_low) for s in steps_of(planned)]
    assert steps == [
        ("the spot pool grows: v5p-32 (4 nodes)", pytest.approx(20.7992)),
        ("the on-demand pool grows: v5p-32 (4 nodes)", pytest.approx(67.2)),
        ("a spot node is preempted", None),
    ]


def test_no_table_off_spot_or_where_the_platform_states_none(tmp_path: Path, catalog: Catalog) -> None:
    reserved = plan(tmp_path, "v5p-32", profile="scale-training")
    assert reserved.spec.spot is False and reserved.spec.capacity is None
    assert spot_question(reserved.spec, catalog) is None
    for stack in ("exp-aws-l4-spot", "finetune-gcp-g2"):  # GPU VMs: their set's steps come from sizing
        (gpu_spot,) = plan_paths([STACKS / f"Pulumi.{stack}.yaml"])
        assert gpu_spot.spec.spot is True and gpu_spot.spec.capacity is not None
        assert with_spot_steps(gpu_spot.spec, catalog) is gpu_spot.spec  # not replaced by TPU steps
