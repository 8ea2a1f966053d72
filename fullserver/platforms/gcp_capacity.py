"""What Compute Engine tries when GPU capacity is out, for ``gcp-gpu`` (``PlatformRules.capacity_steps``):
the balanced set (``fullserver.capacity``) handed to a regional managed instance group's instance
flexibility, and the rules the API enforces on such a group, checked before anything is made."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fullserver.capacity import CapacitySet, CapacityStep, peak_usd_hour, shapes_text, single_shape, spot_range
from fullserver.platforms.base import Refusal
from fullserver.platforms.gcp_gpu_nics import gpu_nic_plan

if TYPE_CHECKING:
    from fullserver.spec import EnvironmentSpec


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


def flexibility_refusal(target_shape: str, redistribution: str, machine_types: list[str]) -> Refusal | None:
    """What the API refuses of a regional group's flexibility policy, checked before any resource:
    a shape that takes none (``FLEXIBLE_SHAPES``), proactive redistribution with a shape that
    needs it off, and a machine type listed twice (selections must not overlap)."""
    if len(machine_types) > 1 and target_shape not in FLEXIBLE_SHAPES:
        what = f"instance flexibility needs target shape {', '.join(sorted(FLEXIBLE_SHAPES))}, not {target_shape}"
        return Refusal("capacity", "distribution_policy_target_shape", what, "re-plan with the core")
    if target_shape != "EVEN" and redistribution != "NONE":
        what = f"target shape {target_shape} needs instance_redistribution_type NONE, not {redistribution}"
        return Refusal("capacity", "update_policy", what, "re-plan with the core")
    if len(set(machine_types)) != len(machine_types):
        return Refusal("capacity", "machine_types", "a machine type is listed twice", "re-plan with the core")
    return None


def mig_reason(spec: EnvironmentSpec) -> str:
    """Why the spot nodes stay single VMs ("": a regional group takes the set). A reservation is
    zonal and named; compact placement keeps nodes in one zone and a multi-node A3/A4's GPU NICs
    are zonal networks; a serving group is its own MIG (``components.gcp.serving``); N1 with
    attached GPUs carries them in the template, not the machine type (unconfirmed with flexibility)."""
    if spec.reservation is not None:
        return f"reservation {spec.reservation} is zonal"
    if spec.network.compact_placement:
        return "compact placement keeps the nodes in one zone"
    if gpu_nic_plan(spec.machine_type, spec.nodes) is not None:
        return "the GPU NICs' networks are zonal"
    if spec.offer != spec.machine_type:
        return "GPUs attached to an N1 host are not taken by instance flexibility"
    return ""


def in_group(spec: EnvironmentSpec) -> bool:
    """Whether the nodes are a regional managed instance group's members over the balanced set
    (``components.gcp.flexible``) rather than VMs of their own: spot, a set found, and nothing
    ``mig_reason`` names keeping them single."""
    held = spec.capacity
    return spec.spot and held is not None and held.used and not mig_reason(spec)


def capacity_steps(spec: EnvironmentSpec, found: CapacitySet) -> CapacitySet:
    """What Compute Engine tries on a stockout, in order (``PlatformRules.capacity_steps``).

    Spot: one regional managed instance group whose instance flexibility policy lists the set
    (each member its own selection, ranked cheapest first: "lower rank, higher preference") over
    every zone listing a member, shape BALANCED; a preempted VM is recreated by the group when
    capacity returns. No on-demand fallback is built (``no_spot_fallback``). On-demand, reserved
    and the cases ``mig_reason`` names stay one ``compute.Instance`` per node, the chosen type
    in one zone."""
    chosen = found.members[0]
    zone = spec.zone or "the provider's default zone"
    if spec.serving is not None:
        what = f"on-demand {chosen.machine_type} replicas in the serving group's zones; a zone out of capacity, another"
        return single_shape(found, what, chosen.on_demand_usd_hour)
    if not spec.spot:
        what = (
            f"on-demand {chosen.machine_type}, one VM per node in {zone}: a stockout "
            "(ZONE_RESOURCE_POOL_EXHAUSTED) fails pulumi up and nothing else is tried; re-run up later or pin another zone"
        )
        return single_shape(found, what, chosen.usd_hour)
    why = mig_reason(spec)
    if why:
        what = (
            f"spot {chosen.machine_type}, one VM per node in {zone} ({why}): a stockout fails pulumi up; nothing else"
        )
        return single_shape(found, what, chosen.spot_usd_hour or chosen.usd_hour)
    zones = ", ".join(found.zones) or "the region's zones"
    low, high = spot_range(found.members)
    steps = [
        CapacityStep(
            what=f"spot: a regional group over {shapes_text(found.members)} (instance flexibility, cheapest "
            f"ranked first) in {zones} ({MIG_TARGET_SHAPE}); a preempted VM is recreated when capacity returns",
            usd_hour_low=low,
            usd_hour_high=high,
        ),
        CapacityStep(what="spot out everywhere: the group keeps retrying; no on-demand fallback is built"),
    ]
    used = found.model_copy(update={"steps": steps, "used": True})
    return used.model_copy(update={"peak_usd_hour": peak_usd_hour(used, spot=True, fallback=False)})
