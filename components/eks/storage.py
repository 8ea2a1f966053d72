"""The Amazon EBS CSI driver on a created EKS cluster, for the workload pods' data volumes.

A ``KubePlan`` with a data volume (``fullserver.kube.volume``) has every workload pod mount a
generic ephemeral volume from a ``StorageClass`` whose provisioner is ``ebs.csi.aws.com``. No EKS
cluster runs that driver until it is installed: the EKS user guide ("Amazon EBS CSI driver",
https://docs.aws.amazon.com/eks/latest/userguide/add-ons-aws-ebs-csi-driver.html) names the add-on
``aws-ebs-csi-driver`` and requires the ``AmazonEBSCSIDriverPolicy`` managed policy on an IAM role for
its controller's service account ``ebs-csi-controller-sa`` in ``kube-system``. The role is given:

* with Pod Identity (the cluster's default here): trusted by ``pods.eks.amazonaws.com`` for
  ``sts:AssumeRole`` and ``sts:TagSession`` and associated through the add-on's
  ``pod_identity_associations`` (EKS user guide, "Use Pod Identities to assign an IAM role to an
  Amazon EKS add-on"), after the Pod Identity Agent add-on;
* with IRSA: trusted by the cluster's IAM OIDC provider for that service account
  (``sts:AssumeRoleWithWebIdentity``, ``sub`` and ``aud`` conditions) and set as the add-on's
  ``service_account_role_arn`` (pulumi-aws ``eks.Addon``).

Where the controller runs, and ``pulumi up``'s wait: the add-on is created after the created
cluster's untainted system node group (``eks.SYSTEM_INSTANCE_TYPE``, fixed at ``SYSTEM_NODES``,
never at zero), so its controller Deployment has a node to run on however many GPU nodes there are;
a GPU group at zero leaves it running. pulumi-aws's ``eks.Addon`` is terraform-provider-aws's
``aws_eks_addon``, whose create waits for the add-on with ``CREATING`` and ``DEGRADED`` pending and
``ACTIVE`` the target, 20 minutes by default, and fails on ``CREATE_FAILED`` with the add-on's health
issues (internal/service/eks ``waitAddonCreated``): an add-on whose controller had no node would
hold ``up`` 20 minutes and then fail it, which the system group rules out. The configuration
still lets the controller tolerate the GPU taint and the node DaemonSet every taint (the driver
chart's ``controller.tolerations`` and ``node.tolerateAllTaints``, which the add-on's configuration
values follow; the add-on's own schema, ``aws eks describe-addon-configuration``, was not read here):
the node plugin must run on the GPU nodes whose pods mount the volumes.
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
    """The add-on's configuration values: the controller on the GPU nodes, the node plugin on every node."""
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
