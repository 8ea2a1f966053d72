"""What Compute Engine tries when GPU capacity is out, for ``gcp-gpu`` (``PlatformRules.capacity_steps``):
the balanced set (``fullserver.capacity``) handed to a regional managed instance group's instance
flexibility, spot or on demand, and the rules the API enforces on such a group, checked before
anything is made (docs/deploying.md, "GCP instance flexibility")."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fullserver.capacity import (
    CapacitySet,
    CapacityStep,
    in_use,
    price_range,
    shapes_text,
    single_shape,
    spot_range,
)
from fullserver.platforms.base import Refusal
from fullserver.platforms.gcp_gpu_nics import gpu_nic_plan

if TYPE_CHECKING:
    from fullserver.platforms.reads import SpecReads


# A regional managed instance group with instance flexibility (``components.gcp.flexible``):
# Compute Engine "Regional MIG target distribution shape" and "Set a target distribution shape".
MIG_TARGET_SHAPE = "BALANCED"
"""Prefers zones with capacity while staying as even as it can: the shape for batch and serving
that may run short in a zone (EVEN, the default, waits for the zone instead)."""
MIG_REDISTRIBUTION = "NONE"
"""With BALANCED and a template whose machine types are not in every selected zone, proactive
redistribution must be off (Compute Engine "Set a target distribution shape", limitations)."""
FLEXIBLE_SHAPES = frozenset({"BALANCED", "ANY", "ANY_SINGLE_ZONE"})
"""Target shapes that take an instance flexibility policy: EVEN (and an unset shape) does not.
Google's limitations section was not read whole; Spinnaker clouddriver's validator (2026) refuses
flexibility with EVEN and on zonal groups, and ``docs/deploying.md`` records it."""
DATA_DEVICE = "data"
"""The data disk's device name in the template (``/dev/disk/by-id/google-data``), kept by the group."""
STATEFUL_DELETE_RULE = "ON_PERMANENT_INSTANCE_DELETION"
"""A stateful disk outlives autohealing, updates and recreation, and goes with its VM's permanent
deletion, the group's own included (Compute API ``StatefulPolicyPreservedStateDiskDevice.autoDelete``):
``pulumi destroy`` leaves no disk behind. ``NEVER``, the default, would."""
STATEFUL_REPLACEMENT = "RECREATE"
"""A stateful group replaces a VM under its own name ("Configuring stateful persistent disks in MIGs",
limitations: rolling updates need ``RECREATE``)."""
STOPPED_WITH_DATA = "autostop stops each VM and keeps /data; a stateful group's VMs cannot be stopped, only deleted"
"""Why idle on-demand nodes with a data disk stay VMs of their own: a stateful group's VMs cannot be
stopped ("Configuring stateful MIGs", limitations), and resizing it to 0 deletes their stateful disks
with them (``gcp_autostop.GROUP_TO_ZERO``). With autostop off (0 minutes) the group stays."""


@dataclass(frozen=True)
class GroupPolicy:
    """What a regional group is asked for, as the API judges it (``flexibility_refusal``)."""

    target_shape: str
    redistribution: str
    machine_types: tuple[str, ...]
    stateful_disks: tuple[str, ...] = ()
    replacement: str = "SUBSTITUTE"
    max_unavailable: int = 1


def _flexible_shape(g: GroupPolicy) -> str:
    if len(g.machine_types) > 1 and g.target_shape not in FLEXIBLE_SHAPES:
        return f"instance flexibility needs target shape {', '.join(sorted(FLEXIBLE_SHAPES))}, not {g.target_shape}"
    return ""


def _shape_redistribution(g: GroupPolicy) -> str:
    if g.target_shape != "EVEN" and g.redistribution != "NONE":
        return f"target shape {g.target_shape} needs instance_redistribution_type NONE, not {g.redistribution}"
    return ""


def _listed_twice(g: GroupPolicy) -> str:
    return "a machine type is listed twice" if len(set(g.machine_types)) < len(g.machine_types) else ""


def _stateful_redistribution(g: GroupPolicy) -> str:
    if g.stateful_disks and g.redistribution != "NONE":
        return f"a regional stateful group needs instance_redistribution_type NONE, not {g.redistribution}"
    return ""


def _stateful_replacement(g: GroupPolicy) -> str:
    if g.stateful_disks and g.replacement != STATEFUL_REPLACEMENT:
        return f"a stateful group replaces by {STATEFUL_REPLACEMENT}, not {g.replacement}"
    return ""


def _recreate_unavailable(g: GroupPolicy) -> str:
    if g.replacement == "RECREATE" and g.max_unavailable < 1:
        return "RECREATE needs max_unavailable_fixed above 0"
    return ""


GROUP_RULES: tuple[tuple[str, Callable[[GroupPolicy], str]], ...] = (
    ("distribution_policy_target_shape", _flexible_shape),
    ("update_policy", _shape_redistribution),
    ("machine_types", _listed_twice),
    # "Configuring stateful MIGs", limitations: redistribution NONE (it would delete stateful VMs
    # to rebalance zones), and rolling updates by RECREATE
    ("update_policy", _stateful_redistribution),
    ("update_policy", _stateful_replacement),
    # pulumi-gcp RegionInstanceGroupManagerUpdatePolicy.replacement_method: RECREATE needs max unavailable > 0
    ("update_policy", _recreate_unavailable),
)
"""Each rule the API enforces on a regional group with flexibility: its field and what it refuses."""


def flexibility_refusal(group: GroupPolicy) -> Refusal | None:
    """The first of ``GROUP_RULES`` the group breaks, before any resource is made."""
    for field, broken in GROUP_RULES:
        what = broken(group)
        if what:
            return Refusal("capacity", field, what, "re-plan with the core")
    return None


def mig_reason(spec: SpecReads) -> str:
    """Why the nodes stay single VMs ("": a regional group takes the set). A reservation is
    zonal and named; compact placement keeps nodes in one zone and a multi-node A3/A4's GPU NICs
    are zonal networks; a serving group is its own MIG (``components.gcp.serving``); N1 with
    attached GPUs carries them in the template, not the machine type (unconfirmed with flexibility);
    on-demand nodes with /data that autostop must stop, not delete (``STOPPED_WITH_DATA``)."""
    if spec.reservation is not None:
        return f"reservation {spec.reservation} is zonal"
    if spec.network.compact_placement:
        return "compact placement keeps the nodes in one zone"
    if gpu_nic_plan(spec.machine_type, spec.nodes) is not None:
        return "the GPU NICs' networks are zonal"
    if spec.offer != spec.machine_type:
        return "GPUs attached to an N1 host are not taken by instance flexibility"
    if spec.autostop_minutes > 0 and not spec.spot and spec.data_disk is not None:
        return STOPPED_WITH_DATA
    return ""


def in_group(spec: SpecReads) -> bool:
    """The nodes are a regional group's members over the balanced set (spot or on demand), not VMs
    of their own: what the components build and what may stop them (``gcp_autostop``) ask this."""
    held = spec.capacity
    return held is not None and held.used and not mig_reason(spec)


def stateful_disks(spec: SpecReads) -> list[str]:
    """The template disks an on-demand group keeps across a VM's recreation: its data disk. A spot
    group keeps none (a preempted VM is deleted and its disks with it: stage data from a bucket)."""
    return [DATA_DEVICE] if in_group(spec) and not spec.spot and spec.data_disk is not None else []


def _kept(spec: SpecReads) -> str:
    """What a recreated VM of an on-demand group keeps (Compute Engine "How some operations affect
    preserved state": stateful disks are reattached; a stateless boot disk comes from the image)."""
    kept = "name, zone and /data disk" if spec.data_disk is not None else "name and zone"
    return f"a VM the group recreates (host error, repair) keeps its {kept}, not its boot disk, /scratch or addresses"


def capacity_steps(spec: SpecReads, found: CapacitySet) -> CapacitySet:
    """What Compute Engine tries on a stockout, in order (``PlatformRules.capacity_steps``).

    Spot or on demand: one regional managed instance group whose instance flexibility policy lists
    the set (each member its own selection, ranked cheapest first: "lower rank, higher preference")
    over every zone listing a member, shape BALANCED; it keeps retrying a node it cannot create.
    Spot has no on-demand fallback (docs/deploying.md: no Compute Engine mechanism starts one).
    Reserved nodes and the cases ``mig_reason`` names stay one ``compute.Instance`` per node, the
    chosen type in one zone; serving is its own group (``components.gcp.serving``)."""
    chosen = found.members[0]
    zone = spec.zone or "the provider's default zone"
    if spec.serving is not None:
        what = f"on-demand {chosen.machine_type} replicas in the serving group's zones; a zone out of capacity, another"
        return single_shape(found, what, chosen.on_demand_usd_hour)
    why = mig_reason(spec)
    if why:
        kind, rate = ("spot", chosen.spot_usd_hour or chosen.usd_hour) if spec.spot else ("on-demand", chosen.usd_hour)
        what = (
            f"{kind} {chosen.machine_type}, one VM per node in {zone} ({why}): a stockout "
            "(ZONE_RESOURCE_POOL_EXHAUSTED) fails pulumi up and nothing else is tried; re-run up later"
        )
        return single_shape(found, what, rate)
    zones = ", ".join(found.zones) or "the region's zones"
    group = f"a regional group over {shapes_text(found.members)} (instance flexibility, cheapest ranked first) in {zones} ({MIG_TARGET_SHAPE})"
    if spec.spot:
        low, high = spot_range(found.members)
        first = CapacityStep(
            what=f"spot: {group}; a preempted VM is recreated when capacity returns",
            usd_hour_low=low,
            usd_hour_high=high,
        )
        last = CapacityStep(what="spot out everywhere: the group keeps retrying; no on-demand fallback is built")
    else:
        low, high = price_range([m.usd_hour for m in found.members])  # on demand, or its committed rate
        first = CapacityStep(what=f"on-demand: {group}", usd_hour_low=low, usd_hour_high=high, how=_kept(spec))
        last = CapacityStep(
            what="every type out in every zone: the group keeps retrying (pulumi up does not wait); nothing else is tried"
        )
    return in_use(found, [first, last], spot=spec.spot, fallback=False)
