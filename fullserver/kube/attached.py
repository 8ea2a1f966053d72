"""What a cluster fullserver attaches pools to must already run for the pools' pods: it installs
these only on clusters it creates (``fullserver.kube.pool`` adds the warnings to the plan). What
each member's clusters need is its ``PoolRules``' (``attached_needs`` and the rest)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fullserver.kube.volume import DataVolume
from fullserver.platforms import pool_member
from fullserver.platforms.pool_rules import PoolRules

if TYPE_CHECKING:
    from fullserver.kube.model import KubePlan


def attached_warnings(rules: PoolRules, attached: bool, volume: DataVolume | None) -> list[str]:
    """What an attached cluster must already run for the pools' pods (NVIDIA's device plugin on
    EKS), and the CSI driver that provisions the pods' data volumes."""
    if not attached:
        return []
    volume_needs = [rules.attached_volume_needs] if volume and rules.attached_volume_needs else []
    return [*rules.attached_needs, *volume_needs]


def autoscaler_warnings(plan: KubePlan) -> list[str]:
    """One line when an attached cluster's pools have a range to grow in and its member scales no
    pool itself: a created EKS cluster gets the Cluster Autoscaler (``components.eks.autoscaler``),
    an attached one must run its own (``PoolRules.attached_autoscaler``); under Karpenter the plan
    names the NodePool it must run instead (``fullserver.kube.karpenter.attached_needs``)."""
    needs = pool_member(plan.provider).attached_autoscaler
    if not needs or plan.create_cluster or plan.provisioner == "karpenter":
        return []
    return [needs] if any(p.min_nodes < p.max_nodes for p in plan.pools) else []
