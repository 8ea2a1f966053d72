"""The Cluster Autoscaler on a created EKS cluster: managed node groups have no autoscaler of their
own ("Amazon EKS doesn't automatically scale your node group in or out. However, you can configure
the Kubernetes Cluster Autoscaler", awsdocs/amazon-eks-user-guide: latest/ug/nodes/create-managed-node-group.adoc),
so without it a group at zero and a serving range never grow.

* A ``kubernetes:helm.sh/v3:Release`` of chart ``cluster-autoscaler`` from
  ``https://kubernetes.github.io/autoscaler``, the chart version and image tag pinned for the
  cluster's Kubernetes minor (``eks.CLUSTER_AUTOSCALER``), in ``kube-system``, with the chart's
  ``autoDiscovery.clusterName`` (it then finds the groups tagged ``k8s.io/cluster-autoscaler/enabled``
  and ``k8s.io/cluster-autoscaler/<cluster>``, chart values.yaml ``autoDiscovery.tags``; EKS tags
  managed node groups so, managed-node-groups.adoc), ``awsRegion``, ``rbac.serviceAccount.name``,
  and a ``nodeSelector`` on the system node group (``eks.amazonaws.com/nodegroup``, a label EKS puts
  on managed nodes, managed-node-update-behavior.adoc): every GPU group is tainted and may be at zero.
* Its IAM role, the "Full Cluster Autoscaler Features Policy (Recommended)" of
  kubernetes/autoscaler: cluster-autoscaler/cloudprovider/aws/README.md (2026-08-22), with its second
  block ("only the second block of actions should be updated to restrict the resources/add
  conditionals") restricted to this cluster's groups by the tag condition the EKS user guide gave
  (``aws:ResourceTag/k8s.io/cluster-autoscaler/<cluster>: owned``, doc_source/autoscaling.md until
  2023-05-08). ``autoscaling:DescribeTags`` is left out: the current README no longer lists it and
  cloudprovider/aws calls no DescribeTags.
* Credentials: EKS Pod Identity (the role trusts ``pods.eks.amazonaws.com`` with ``sts:AssumeRole``
  and ``sts:TagSession``, latest/ug/manage-access/aws-access/pod-id-role.adoc; an
  ``aws.eks.PodIdentityAssociation`` names the service account), or with ``identity = irsa`` the
  cluster's IAM OIDC provider (``sts:AssumeRoleWithWebIdentity`` for
  ``system:serviceaccount:kube-system:cluster-autoscaler`` and audience ``sts.amazonaws.com``,
  service-accounts.adoc) and the service account's ``eks.amazonaws.com/role-arn`` annotation.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_aws as aws

from components.aws.labels import aws_tags
from components.eks.trust import pod_role
from fullserver.kube import KubePlan
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
                "Condition": {"StringEquals": {f"aws:ResourceTag/k8s.io/cluster-autoscaler/{cluster_name}": "owned"}},
            },
        ],
    }


def cluster_autoscaler(
    name: str,
    plan: KubePlan,
    version: str,
    cluster: aws.eks.Cluster,
    oidc: aws.iam.OpenIdConnectProvider | None,
    system_group: pulumi.Input[str],
    provider: pulumi.ProviderResource,
    parent: pulumi.Resource,
    after: list[pulumi.Resource],
) -> Any:
    """The role, its credentials' wiring and the Helm release (module doc); ``oidc``: IRSA's provider,
    else Pod Identity."""
    import pulumi_kubernetes as k8s  # only for created EKS clusters and applied workloads

    chart_version, image_tag = chart_for(version)
    child = pulumi.ResourceOptions(parent=parent)
    tags = dict(plan.cloud_labels)
    role = pod_role(f"{name}-autoscaler", tags, oidc, NAMESPACE, SERVICE_ACCOUNT, child)
    policy = aws.iam.RolePolicy(
        f"{name}-autoscaler",
        role=role.name,
        policy=cluster.name.apply(lambda c: json.dumps(autoscaler_policy(c))),
        opts=child,
    )
    service_account: dict[str, Any] = {"name": SERVICE_ACCOUNT}
    waits: list[pulumi.Resource] = [policy, *after]
    if oidc is None:
        waits.append(
            aws.eks.PodIdentityAssociation(
                f"{name}-autoscaler",
                cluster_name=cluster.name,
                namespace=NAMESPACE,
                service_account=SERVICE_ACCOUNT,
                role_arn=role.arn,
                tags=aws_tags(tags, f"{name}-autoscaler"),
                opts=child,
            )
        )
    else:
        service_account["annotations"] = {"eks.amazonaws.com/role-arn": role.arn}
    return k8s.helm.v3.Release(
        f"{name}-cluster-autoscaler",
        chart=eks.CLUSTER_AUTOSCALER_CHART,
        version=chart_version,
        repository_opts={"repo": eks.CLUSTER_AUTOSCALER_REPO},
        namespace=NAMESPACE,
        values={
            "cloudProvider": "aws",
            "autoDiscovery": {"clusterName": cluster.name},
            "awsRegion": plan.region,
            "image": {"tag": image_tag},
            "rbac": {"serviceAccount": service_account},
            "nodeSelector": {"eks.amazonaws.com/nodegroup": system_group},
        },
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=waits),
    )
