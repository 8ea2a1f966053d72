"""The Cluster Autoscaler on a created EKS cluster: managed node groups have no autoscaler of their
own ("Amazon EKS doesn't automatically scale your node group in or out. However, you can configure
the Kubernetes Cluster Autoscaler", awsdocs/amazon-eks-user-guide: latest/ug/nodes/create-managed-node-group.adoc),
so without it a group at zero and a serving range never grow.

Design notes: docs/design/components.md.
"""

from __future__ import annotations

import json
from typing import Any

from components.eks.controller import Chart, Controller, Site, controller_release
from fullserver.kube import KubePlan
from fullserver.kube.fallback import fallback_members
from fullserver.platforms import eks

NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "cluster-autoscaler"
DESCRIBE_ACTIONS = (
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeAutoScalingInstances",
    "autoscaling:DescribeLaunchConfigurations",
    "autoscaling:DescribeScalingActivities",
    "ec2:DescribeImages",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplateVersions",
    "ec2:GetInstanceTypesFromInstanceRequirements",
    "eks:DescribeNodegroup",
)
SCALE_ACTIONS = ("autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup")
DISCOVERY_PREFIX = "k8s.io/cluster-autoscaler"


def discovery_tags(cluster_name: str) -> dict[str, str]:
    """The Auto Scaling group tags the chart's ``autoDiscovery.clusterName`` looks for ("will find
    the ASGs that have at least all the given tags", README "Auto-Discovery Setup": the chart's
    ``--node-group-auto-discovery=asg:tag=k8s.io/cluster-autoscaler/enabled,k8s.io/cluster-autoscaler/<cluster>``),
    with the values the scaling actions' IAM condition holds them to (module doc)."""
    return {f"{DISCOVERY_PREFIX}/enabled": "true", f"{DISCOVERY_PREFIX}/{cluster_name}": "owned"}


def chart_for(version: str) -> tuple[str, str]:
    """The (chart version, image tag) pinned for a cluster version (``1.35`` or ``1.35.x``)."""
    minor = ".".join(version.split(".")[:2])
    found = eks.CLUSTER_AUTOSCALER.get(minor)
    if found is None:
        raise ValueError(
            f"EksArgs.kubernetes_version: no Cluster Autoscaler release is pinned for Kubernetes {version} "
            f"(fullserver.platforms.eks.CLUSTER_AUTOSCALER has {', '.join(sorted(eks.CLUSTER_AUTOSCALER))}); "
            "pick one of those or pin its chart there"
        )
    return found


def autoscaler_policy(cluster_name: str) -> dict[str, Any]:
    """The role's permissions (module doc)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": list(DESCRIBE_ACTIONS), "Resource": ["*"]},
            {
                "Effect": "Allow",
                "Action": list(SCALE_ACTIONS),
                "Resource": ["*"],
                "Condition": {
                    "StringEquals": {f"aws:ResourceTag/{k}": v for k, v in discovery_tags(cluster_name).items()}
                },
            },
        ],
    }


def expander_values(plan: KubePlan) -> dict[str, Any]:
    """With a spot group and its on-demand fallback, the chart's ``extraArgs.expander`` (the priority
    expander, then least-waste: ``eks.EXPANDER``) and ``expanderPriorities``, which the chart renders
    as the ``cluster-autoscaler-priority-expander`` ConfigMap in the release's namespace when the
    expander list holds ``priority`` and grants the autoscaler's Role ``list``/``watch`` on it
    (kubernetes/autoscaler chart 9.59.0, and 9.51.0/9.53.0 alike: ``templates/priority-expander-configmap.yaml``,
    ``templates/role.yaml``, ``values.yaml``). Helm merges the map into the chart's default
    ``extraArgs``. Nothing without a fallback group: the default expander stands."""
    if not plan.spot_first:
        return {}
    members = fallback_members([(p.name, p.spot) for p in plan.pools], plan.machine_type, plan.instance_types, None, 0)
    groups = [m.pool for m in members if m.pool is not None]
    return {"extraArgs": {"expander": eks.EXPANDER}, "expanderPriorities": eks.expander_priorities(groups)}


AUTOSCALER = Controller("autoscaler", "cluster-autoscaler", NAMESPACE, SERVICE_ACCOUNT, ("rbac", "serviceAccount"))
"""The chart takes its service account under ``rbac.serviceAccount`` (chart ``values.yaml``)."""


def cluster_autoscaler(site: Site, version: str) -> Any:
    """The role, its credentials' wiring and the Helm release (module doc), for a cluster of
    Kubernetes ``version``."""
    chart_version, image_tag = chart_for(version)
    chart = Chart(eks.CLUSTER_AUTOSCALER_CHART, chart_version, eks.CLUSTER_AUTOSCALER_REPO)
    policy = site.cluster.name.apply(lambda c: json.dumps(autoscaler_policy(c)))
    values = {
        "cloudProvider": "aws",
        "autoDiscovery": {"clusterName": site.cluster.name},
        "awsRegion": site.plan.region,
        "image": {"tag": image_tag},
        **expander_values(site.plan),
    }
    return controller_release(site, AUTOSCALER, chart, policy, values)
