"""The Amazon EBS CSI driver on a created EKS cluster, for the workload pods' data volumes.

Design notes: docs/design/components.md.
"""

import json
from typing import Any

import pulumi
import pulumi_aws as aws

from components.aws.labels import aws_tags
from components.eks.trust import pod_role
from fullserver.kube import KubePlan

EBS_CSI_ADDON = "aws-ebs-csi-driver"
EBS_CSI_POLICY = "arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy"
EBS_CSI_SERVICE_ACCOUNT = "ebs-csi-controller-sa"


def configuration(plan: KubePlan) -> str:
    """The add-on's configuration values: the controller tolerating the GPU taints (it lands on the
    system group while the GPU groups sit at zero), the node plugin on every node."""
    tolerations = [{"key": t.key, "operator": "Exists", "effect": t.effect} for t in plan.taints]
    return json.dumps({"controller": {"tolerations": tolerations}, "node": {"tolerateAllTaints": True}}, sort_keys=True)


def ebs_csi_driver(
    name: str,
    plan: KubePlan,
    cluster_name: pulumi.Input[str],
    oidc: Any,
    after: list[pulumi.Resource],
    parent: pulumi.Resource,
) -> Any:
    """The driver's role, its policy and the add-on (returns the add-on). ``oidc``: the cluster's
    IAM OIDC provider (IRSA), else ``None`` (Pod Identity, whose agent add-on is in ``after``)."""
    opts = pulumi.ResourceOptions(parent=parent)
    tags = dict(plan.cloud_labels)
    role = pod_role(f"{name}-ebs-csi", tags, oidc, "kube-system", EBS_CSI_SERVICE_ACCOUNT, opts)
    attachment = aws.iam.RolePolicyAttachment(
        f"{name}-ebs-csi-AmazonEBSCSIDriverPolicy", role=role.name, policy_arn=EBS_CSI_POLICY, opts=opts
    )
    identity: dict[str, Any] = (
        {"service_account_role_arn": role.arn}
        if oidc is not None
        else {"pod_identity_associations": [{"role_arn": role.arn, "service_account": EBS_CSI_SERVICE_ACCOUNT}]}
    )
    return aws.eks.Addon(
        f"{name}-ebs-csi",
        cluster_name=cluster_name,
        addon_name=EBS_CSI_ADDON,
        configuration_values=configuration(plan),
        tags=aws_tags(tags, EBS_CSI_ADDON),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[attachment, *after]),
        **identity,
    )
