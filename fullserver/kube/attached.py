"""What a cluster fullserver attaches pools to must already run for the pools' pods: it installs
these only on clusters it creates (``fullserver.kube.pool`` adds the warnings to the plan)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from fullserver.kube.volume import DataVolume
from fullserver.platforms import eks

if TYPE_CHECKING:
    from fullserver.kube.pool import KubePlan

EKS_ATTACHED_PLUGIN = (
    "the existing EKS cluster must already run NVIDIA's device plugin (the AL2023 NVIDIA AMI does not): "
    "without it no pod requesting nvidia.com/gpu schedules; fullserver installs it only on clusters it creates"
)
"""AL2023 NVIDIA AMIs need the plugin installed (EKS user guide, "Install Kubernetes device plugin for GPUs")."""

EKS_ATTACHED_EBS_CSI = (
    "the existing EKS cluster must already run the Amazon EBS CSI driver (EKS add-on aws-ebs-csi-driver): without "
    "it the workload pods' data volumes stay Pending; fullserver installs it only on clusters it creates"
)
"""EKS user guide, "Amazon EBS CSI driver" (add-ons-aws-ebs-csi-driver): an add-on, not on a new cluster."""
EKS_ATTACHED_LB_CONTROLLER = (
    "the existing EKS cluster must already run the AWS Load Balancer Controller, and its subnets carry "
    "kubernetes.io/role/elb (public) or kubernetes.io/role/internal-elb (private): without them the serving "
    "Service gets no Network Load Balancer; fullserver installs the controller only on clusters it creates"
)
"""EKS user guide, "Route TCP and UDP traffic with Network Load Balancers": the controller must be
installed; its subnet discovery reads those tags (``eks.PUBLIC_SUBNET_TAGS``)."""
EKS_ATTACHED_METRICS_SERVER = (
    "the existing EKS cluster must run the Kubernetes Metrics Server (EKS add-on metrics-server) for the "
    "serving HPA's CPU metric; fullserver installs it only on clusters it creates"
)
"""EKS user guide, "View resource usage with the Kubernetes Metrics Server": not deployed by default."""
GKE_ATTACHED_PD_CSI = (
    "the existing GKE cluster must have the Compute Engine persistent disk CSI driver enabled "
    "(GcePersistentDiskCsiDriver): without it the workload pods' data volumes stay Pending"
)
"""GKE "Using the Compute Engine persistent disk CSI Driver": "In Standard clusters, you must enable" it."""


def attached_warnings(provider: Literal["gke", "eks"], attached: bool, volume: DataVolume | None) -> list[str]:
    """What an attached cluster must already run for the pools' pods: NVIDIA's device plugin on
    EKS, and the CSI driver that provisions the pods' data volumes."""
    if not attached:
        return []
    if provider == "eks":
        return [EKS_ATTACHED_PLUGIN] + ([EKS_ATTACHED_EBS_CSI] if volume else [])
    return [GKE_ATTACHED_PD_CSI] if volume else []


def autoscaler_warnings(plan: KubePlan) -> list[str]:
    """One line when an attached EKS cluster's pools have a range to grow in: a created cluster gets
    the Cluster Autoscaler (``components.eks.autoscaler``), an attached one must run its own
    (``eks.ATTACHED_AUTOSCALER``)."""
    if plan.provider != "eks" or plan.create_cluster:
        return []
    return [eks.ATTACHED_AUTOSCALER] if any(p.min_nodes < p.max_nodes for p in plan.pools) else []
