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
