"""Spot first: a spot pool and its on-demand fallback of the same shape look alike to a cluster's
autoscaler, which would grow either (the Cluster Autoscaler's default expander is least-waste, random
before 2025), while the plan prices the profile's spot share (``cost.spot_share``) of the hours on
spot. Each member says how its autoscaler is told the order (``PoolRules.spot_first``): EKS the
Cluster Autoscaler's priority expander, GKE a custom ComputeClass the pods select. What the plan
carries: the line that says the order, the compute class the pools are bound to, and what an
attached cluster must run for the order to hold.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fullserver.naming import fit_name
from fullserver.platforms.kubernetes import COMPUTE_CLASS_TYPE
from fullserver.platforms.pool_rules import PoolRules


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


def spot_first(
    rules: PoolRules, spot: str | None, fallback: str | None, environment: str, attached: bool
) -> SpotFirstPlan:
    """The order of ``spot`` before ``fallback`` as the member enforces it; nothing without both pools."""
    how = rules.spot_first
    if how is None or spot is None or fallback is None:
        return SpotFirstPlan()
    needs = [how.attached_needs(spot, fallback)] if attached and how.attached_needs is not None else []
    name = class_name(environment) if how.compute_class is not None else None
    return SpotFirstPlan(line=how.line(spot, fallback), compute_class=name, attached=needs)
