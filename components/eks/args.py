"""``EksArgs``: what ``EksEnvironment`` takes, built from a ``KubePlan`` (no provider SDK here, so
``components.environment`` can name the type without loading ``pulumi_aws``).

The plan and the manifests travel as JSON text (see ``components.gke.args``); no ``from __future__
import annotations``: the component analyzer reads these annotations as types.
"""

import json
from typing import Literal, NotRequired, TypedDict

from fullserver.kube import KubePlan
from fullserver.kube.manifest import Manifest


class EksArgs(TypedDict):
    plan: str
    """``KubePlan`` as JSON (``fullserver.kube``)."""
    subnet_ids: list[str]
    """Subnets for the nodes (and a created cluster, which EKS creates only in two or more zones: the
    preview refuses fewer; nodes with EFA or placement keep to one zone of them). Empty: an attached
    cluster's own subnets, or a created cluster's own VPC (``components.eks.network``). On an
    attached cluster: the node groups' as given (one zone's for EFA and placement); without
    ``vpc_id`` (``fullserver:subnets``), the VPC and security group read from the cluster."""
    vpc_id: str
    """The subnets' VPC (the EFA security group lives there); empty: found with the subnets."""
    cluster_security_group_id: NotRequired[str]
    """An attached cluster's security group: EFA interfaces name their groups themselves, so the
    cluster's own must be among them for the nodes to reach the control plane (empty: the cluster's)."""
    private_endpoint: bool
    identity: str
    """``pod-identity`` (the Pod Identity Agent add-on) or ``irsa`` (an IAM OIDC provider); the
    component analyzer takes no ``Literal``."""
    kubernetes_version: NotRequired[str]
    """A created cluster's Kubernetes version; unset: ``eks.KUBERNETES_VERSION`` (the Cluster
    Autoscaler's release is pinned per minor, ``eks.CLUSTER_AUTOSCALER``)."""
    workload: str
    """The workload's manifests as a JSON list (``fullserver.kube.manifest``)."""
    deploy_workload: bool
    """Apply them to the cluster with pulumi-kubernetes (``components.kube_workload``)."""
    serving_secrets: NotRequired[dict[str, str]]
    """A serving workload's secrets, kind (``api_key``, ``token``) -> the cloud secret's name, read at
    deploy time into the pods' Kubernetes Secret (``fullserver.kube.serve``); only with ``deploy_workload``."""
    aws_profile: NotRequired[str]
    """The named AWS profile ``pulumi up`` deploys with (``aws:profile``): the Kubernetes provider's
    token is asked with it too, as a created cluster's creator is its only admin."""


def eks_args(
    plan: KubePlan,
    subnet_ids: list[str] | None = None,
    vpc_id: str = "",
    *,
    cluster_security_group_id: str | None = None,
    private_endpoint: bool = False,
    identity: Literal["pod-identity", "irsa"] = "pod-identity",
    kubernetes_version: str | None = None,
    workload: list[Manifest] | None = None,
    deploy_workload: bool = False,
    serving_secrets: dict[str, str] | None = None,
    aws_profile: str | None = None,
) -> EksArgs:
    if plan.provider != "eks":
        raise ValueError(f"{plan.platform.value} is not an EKS plan")
    if subnet_ids and not vpc_id and plan.create_cluster:
        raise ValueError("EKS subnets need their VPC (vpc_id)")
    if plan.efa_interfaces and not plan.create_cluster and vpc_id and subnet_ids and not cluster_security_group_id:
        raise ValueError(
            f"spec.network.efa_interfaces: EFA nodes joining the existing cluster '{plan.cluster_name}' in the given "
            "subnets need its security group (cluster_security_group_id)"
        )
    args = EksArgs(
        plan=plan.model_dump_json(),
        subnet_ids=list(subnet_ids or []),
        vpc_id=vpc_id,
        private_endpoint=private_endpoint,
        identity=identity,
        workload=json.dumps(list(workload or [])),
        deploy_workload=deploy_workload,
    )
    if cluster_security_group_id:
        args["cluster_security_group_id"] = cluster_security_group_id
    if kubernetes_version:
        args["kubernetes_version"] = kubernetes_version
    if serving_secrets:
        args["serving_secrets"] = dict(serving_secrets)
    if aws_profile:
        args["aws_profile"] = aws_profile
    return args
