"""What EC2 tries when accelerator capacity is out, for ``aws-gpu`` (``PlatformRules.capacity_steps``):
the balanced set (``fullserver.capacity``) handed to Auto Scaling groups' mixed instances."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fullserver.capacity import (
    CapacitySet,
    CapacityStep,
    in_use,
    on_demand_range,
    shapes_text,
    single_shape,
    spot_range,
)

if TYPE_CHECKING:
    from fullserver.platforms.reads import SpecReads


FALLBACK_AFTER_MINUTES = 10
"""Minutes the spot group stays short before the on-demand group fills (``components.aws.spot``)."""


def capacity_steps(spec: SpecReads, found: CapacitySet) -> CapacitySet:
    """What EC2 tries on a stockout, in order (``PlatformRules.capacity_steps``).

    Spot: one Auto Scaling group over the whole set (mixed instances, ``price-capacity-optimized``:
    the pools least likely to be interrupted among the cheapest, AWS "Allocation strategies"), in
    subnets of every zone offering a member; short for ``FALLBACK_AFTER_MINUTES``, an on-demand
    group over the same types fills, cheapest first (``prioritized``: "the first instance type
    in the list has the highest priority", AWS ``InstancesDistribution``). On-demand and reserved
    nodes stay one ``ec2.Instance`` each, the chosen type in one zone: each keeps its own data
    volume and protection across replacement, which a group's instances cannot."""
    chosen = found.members[0]
    if spec.reservation is not None or spec.capacity_block:
        what = (
            f"{chosen.machine_type} in reservation {spec.reservation}: the reserved slots only; nothing else is tried"
        )
        return single_shape(found, what, chosen.usd_hour)
    if spec.serving is not None:
        what = (
            f"on-demand {chosen.machine_type} replicas in subnets of every zone offering it (the serving group): "
            "a zone out of capacity, the group launches in another"
        )
        return single_shape(found, what, chosen.on_demand_usd_hour)
    if not spec.spot:
        what = (
            f"on-demand {chosen.machine_type}, one instance per node in one zone: a stockout "
            "(InsufficientInstanceCapacity) fails pulumi up and nothing else is tried (each node keeps "
            "its own data volume across replacement, which a group cannot); re-run up later or pin another zone"
        )
        return single_shape(found, what, chosen.on_demand_usd_hour)
    where = "one zone (the cluster placement group's)" if spec.network.compact_placement else "every zone offering them"
    spot_low, spot_high = spot_range(found.members)
    od_low, od_high = on_demand_range(found.members)
    steps = [
        CapacityStep(
            what=f"spot: any of {shapes_text(found.members)} in {where} (price-capacity-optimized; "
            "capacity rebalancing replaces a node warned of interruption)",
            usd_hour_low=spot_low,
            usd_hour_high=spot_high,
        ),
        CapacityStep(
            what=f"spot short for {FALLBACK_AFTER_MINUTES} min: on-demand, first of {shapes_text(found.members)} "
            "with capacity (prioritized), beside the spot group until its nodes are released",
            usd_hour_low=od_low,
            usd_hour_high=od_high,
        ),
    ]
    return in_use(found, steps, spot=True, fallback=True)
