"""What an existing cluster must already run for pools fullserver attaches to it: a created EKS
cluster gets NVIDIA's device plugin and the Cluster Autoscaler (``components.eks``), an attached
one gets neither. (The device plugin's line is ``fullserver.kube.pool.EKS_ATTACHED_PLUGIN``.)"""

from __future__ import annotations

from fullserver.kube.pool import KubePlan
from fullserver.platforms import eks


def attached_warnings(plan: KubePlan) -> list[str]:
    """One line when an attached EKS cluster's pools have a range to grow in (``eks.ATTACHED_AUTOSCALER``)."""
    if plan.provider != "eks" or plan.create_cluster:
        return []
    return [eks.ATTACHED_AUTOSCALER] if any(p.min_nodes < p.max_nodes for p in plan.pools) else []
