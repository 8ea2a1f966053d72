"""fullserver.platforms.gke: node counts GKE takes per zone."""

from __future__ import annotations

import pytest

from fullserver.platforms import gke


@pytest.mark.parametrize(
    ("total_min", "zones", "per_zone"),
    [
        (2, 1, 2),  # one zone: the floor itself
        (0, 1, 0),  # elastic: from zero
        (2, None, 1),  # the region's three default zones: 1 each (3 >= 2), not 2 each (6)
        (4, None, 2),
        (0, None, 0),
        (5, 2, 3),
    ],
)
def test_initial_nodes_are_per_zone(total_min: int, zones: int | None, per_zone: int) -> None:
    assert gke.initial_nodes_per_zone(total_min, zones) == per_zone
    assert per_zone * (zones or gke.REGIONAL_DEFAULT_ZONES) >= total_min


def test_a_spot_tpu_pool_grows_whole_then_falls_back_on_demand_and_is_recreated_whole() -> None:
    from fullserver.platforms.capacity import SpotQuestion

    question = SpotQuestion("v5litepod-16", 4, "us-central1-a", False, spot_usd_hour=4.76, on_demand_usd_hour=19.2)
    spot, fallback, preempted = gke.tpu_pool_spot_steps(question)
    assert (spot.what, spot.usd_hour_low) == ("the spot pool grows: v5litepod-16 (4 nodes)", 4.76)
    assert "the whole slice at once" in spot.how and "on a stockout it retries" in spot.how
    assert (fallback.what, fallback.usd_hour_low) == ("the on-demand pool grows: v5litepod-16 (4 nodes)", 19.2)
    assert "ComputeClass's next priority" in fallback.how
    assert preempted.usd_hour_low is None and "GKE recreates the whole slice" in preempted.how
    one = gke.tpu_pool_spot_steps(SpotQuestion("v5litepod-8", 1, None, False, 2.38, 9.6))
    assert one[0].what == "the spot pool grows: v5litepod-8 (1 node)" and "GKE replaces the node" in one[2].how
    assert gke.TPU_RULES.spot_steps is gke.tpu_pool_spot_steps and gke.GPU_RULES.spot_steps is None
