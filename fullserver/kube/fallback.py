"""Spot first: a spot pool and its on-demand fallback of the same shape look alike to a cluster's
autoscaler, which would grow either (the Cluster Autoscaler's default expander is least-waste, random
before 2025), while the plan prices the profile's spot share (``cost.spot_share``) of the hours on
spot. Each member says how its autoscaler is told the order (``PoolRules.spot_first``): EKS the
Cluster Autoscaler's priority expander, GKE a custom ComputeClass the pods select. What the plan
carries: the line that says what the cloud tries in order on a stockout (``capacity_order``: spot
first, then the on-demand fallback, then the rest of the set), the compute class the pools are
bound to, and what an attached cluster must run for the order to hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from fullserver.naming import fit_name
from fullserver.platforms.kubernetes import COMPUTE_CLASS_TYPE
from fullserver.platforms.pool_rules import ClassMember, PoolRules, capacity_order


def class_name(environment: str) -> str:
    """A compute class name for ``environment``: a DNS-1123 subdomain that is also a label value (pods
    select it with a node selector, so at most 63 characters) and never starts with ``gke`` or
    ``autopilot``, which GKE reserves ("About custom ComputeClasses", limitations)."""
    return fit_name(COMPUTE_CLASS_TYPE, f"fullserver-{environment}", "metadata.name")


@dataclass(frozen=True)
class SpotFirstPlan:
    line: str = ""
    """The plan's line: which pool first, and what enforces it ("": no fallback pool)."""
    compute_class: str | None = None
    attached: list[str] = field(default_factory=list)


def fallback_members(
    pools: Sequence[tuple[str, bool]],
    machine_type: str,
    spot_types: Sequence[str],
    gpu_type: str | None,
    gpu_count: int,
) -> list[ClassMember]:
    """The stack's pools as fallback members: each (name, spot) pool runs the machine type, a spot
    pool every type it takes (``spot_types``: EKS's balanced alternatives), in ``capacity_order``."""
    members = [
        ClassMember(
            machine_types=tuple(spot_types or [machine_type]) if spot else (machine_type,),
            spot=spot,
            pool=name,
            gpu_type=gpu_type,
            gpu_count=gpu_count if gpu_type else 0,  # a TPU pool's chips are no GPUs
        )
        for name, spot in pools
    ]
    return capacity_order(members)


def spot_first(
    rules: PoolRules,
    pools: Sequence[tuple[str, bool]],
    machine: tuple[str, Sequence[str], str | None, int],
    environment: str,
    attached: bool,
) -> SpotFirstPlan:
    """The order of the spot pools before the on-demand ones as the member enforces it; nothing
    without both a spot pool and an on-demand one. ``pools`` and ``machine`` (its type, spot types,
    GPU type and count): what ``fallback_members`` takes, which builds the members only where
    there is an order to tell (not where the pools are all spot or all on-demand)."""
    how = rules.spot_first
    if how is None or not any(spot for _, spot in pools) or all(spot for _, spot in pools):
        return SpotFirstPlan()
    members = fallback_members(pools, *machine)
    needs = [how.attached_needs(members)] if attached and how.attached_needs is not None else []
    name = class_name(environment) if how.compute_class is not None else None
    return SpotFirstPlan(line=how.line(members), compute_class=name, attached=needs)
