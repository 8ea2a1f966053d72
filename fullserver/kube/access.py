"""How the Kubernetes node-pool platforms reach their cluster: the stack keys a created or an
attached cluster takes beside ``fullserver:cluster``, checked before any sizing.

* ``clusterLocation`` (GKE, attached): the existing cluster's location, the region or one of its
  zones. A GKE cluster lives in a region (regional) or a zone (zonal), and a node pool's
  ``location`` is its cluster's (pulumi-gcp ``container.NodePool.location``: "The location
  (region or zone) of the cluster"), so a zonal cluster's pool sent to the region is not found.
  A cluster fullserver creates is regional, in the stack's region.
* ``privateEndpoint`` (GKE and EKS, created): the control plane answers only on its private
  address. GKE: ``private_cluster_config.enable_private_endpoint`` ("access to the public
  endpoint of the GKE cluster is denied", GKE API ``PrivateClusterConfig``); EKS:
  ``vpc_config.endpoint_public_access = false`` beside ``endpoint_private_access = true`` (EKS
  user guide, "Cluster API server endpoint"). An attached cluster's endpoint is its own.
* ``clusterIdentity`` (EKS, created): ``pod-identity`` (the Pod Identity Agent add-on) or
  ``irsa`` (the cluster's IAM OIDC provider); GKE clusters use Workload Identity.
* ``subnets`` (EKS, attached): the subnets of the cluster's VPC the node groups go into (its
  private ones, say); unset, the cluster's own. A created cluster builds its own network.

Which platform takes which key is each platform's ``PlatformRules.options``; which way in
(created or attached) takes it is said here, one line each.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from fullserver.platforms import owners, pool_member, rules_for

if TYPE_CHECKING:
    from fullserver.kube.pool import KubePlan

Identity = Literal["pod-identity", "irsa"]

KUBE_KEYS = (
    "cluster",
    "flexStart",
    "deployWorkload",
    "clusterLocation",
    "privateEndpoint",
    "clusterIdentity",
    "subnets",
)
"""The stack keys only the node-pool platforms take: setting one is the stack's choice of
Kubernetes (sizing never hands a cluster to a team that asked for none)."""

SUBNET_ID = re.compile(r"subnet-([0-9a-f]{8}|[0-9a-f]{17})")
"""An EC2 subnet id: ``subnet-`` and 8 or 17 hexadecimal digits (aws-cloudformation/cfn-lint
``src/cfnlint/rules/formats/SubnetId.py``, format ``AWS::EC2::Subnet.Id``; EC2 writes them in
lowercase)."""
MAX_SUBNETS = 16
"""More than the zones of any AWS region, twice over (a public and a private subnet in each)."""


class ClusterAccess(BaseModel):
    """Where the pools' cluster is and how it is reached (``KubePlan.access``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    location: str
    """The cluster's location: GKE's region or zone (``container.Cluster.location``); EKS's region."""
    private_endpoint: bool = False
    """A created cluster's control plane answers only on its private address."""
    identity: Identity = "pod-identity"
    """EKS: how pods get AWS credentials on a created cluster."""
    subnets: list[str] = []
    """EKS, attached: the node groups' subnets (empty: the cluster's own)."""

    @property
    def zonal(self) -> bool:
        """A cluster in one zone (its pools' nodes default to that zone): a location in the zone
        form of the platforms whose clusters have one (``clusterLocation``: GKE's)."""
        return any(rules_for(p).region_of_zone(self.location) is not None for p in owners("clusterLocation"))


def check_subnet_id(subnet: str) -> str:
    if not SUBNET_ID.fullmatch(subnet):
        shown = subnet if len(subnet) <= 40 else subnet[:40] + "..."
        raise ValueError(f"'{shown}' is not a subnet id (subnet- and 8 or 17 hexadecimal digits, e.g. subnet-0a1b2c3d)")
    return subnet


def location_problem(location: str, region: str) -> str | None:
    """Why ``location`` is not the region or a zone of it, in the names of the platforms whose
    clusters have a location (``clusterLocation``: GKE's), or ``None``."""
    if location == region or any(rules_for(p).zone_in_region(location, region) for p in owners("clusterLocation")):
        return None
    return f"'{location}' is neither region {region} nor one of its zones (e.g. {region}-a)"


def way_in_refusal(
    *, attached: bool, location: bool, private_endpoint: bool, identity: bool, subnets: bool
) -> tuple[str, str, str] | None:
    """The key (of those set) that does not apply to the way in, with what and what to do."""
    if attached and private_endpoint:
        return (
            "privateEndpoint",
            "applies to a cluster fullserver creates; the existing cluster's endpoint is its own",
            "remove fullserver:privateEndpoint, or fullserver:cluster to create one",
        )
    if attached and identity:
        return (
            "clusterIdentity",
            "applies to a cluster fullserver creates; the existing cluster's workload identity is its own",
            "remove fullserver:clusterIdentity, or fullserver:cluster to create one",
        )
    if not attached and location:
        return (
            "clusterLocation",
            "names an existing cluster's location, and no fullserver:cluster is set (a created cluster is regional)",
            "set fullserver:cluster, or remove fullserver:clusterLocation",
        )
    if not attached and subnets:
        return (
            "subnets",
            "picks subnets of an existing cluster's VPC, and no fullserver:cluster is set (a created cluster builds its own network)",
            "set fullserver:cluster, or remove fullserver:subnets",
        )
    return None


def private_endpoint_warning(provider: str, deploy_workload: bool) -> str:
    """What the plan says of a created cluster's private endpoint: whoever talks to the API server
    (kubectl, ``fullserver verify``, and ``pulumi up`` where it applies something through it) must
    be inside the cluster's network."""
    applied = list(pool_member(provider).applied_through_api)
    if deploy_workload:
        applied.append("the workload")
    said = (
        "the created cluster's control plane answers only on its private address (fullserver:privateEndpoint): "
        "reach it with kubectl and fullserver verify from inside its network (a VPN, an interconnect or a host there)"
    )
    if applied:
        said += f"; pulumi up applies {' and '.join(applied)} through it, so run pulumi up from there too"
    return said


def one_zone_warning(zone: str | None) -> str:
    """Given subnets with EFA or a cluster placement group: a placement group is "a logical grouping
    of instances within a single Availability Zone" (EC2 user guide, placement strategies), and the
    EKS user guide's EFA node group takes one zone (node-efa.adoc); fullserver narrows only subnets
    it found itself, so the stack's must already be of one zone.

    A warning, not a refusal: a subnet id is ``subnet-`` and 8 or 17 hex digits chosen by EC2
    (cfn-lint's ``AWS::EC2::Subnet.Id`` form), with no zone in it, so whether the given subnets span
    zones is known only to the EC2 API (``DescribeSubnets``), never offline where ``fullserver
    plan`` runs. Two subnets of one zone are valid (and so not refused either)."""
    where = f" ({zone})" if zone else ""
    return (
        f"EFA interfaces and a cluster placement group keep the node groups to one zone: fullserver:subnets "
        f"must all be in one zone{where}, or the nodes cannot launch (a subnet id does not say its zone, so "
        "fullserver cannot check this before pulumi up: `aws ec2 describe-subnets --subnet-ids ...` shows them)"
    )


def pod_credentials(plan: KubePlan) -> str:
    """How the workload's pods get cloud credentials, where fullserver sets that up (an EKS
    cluster it creates: ``clusterIdentity``), for the plan view; "" elsewhere."""
    if "clusterIdentity" not in rules_for(plan.platform).options or not plan.create_cluster or plan.access is None:
        return ""
    return "pod credentials: " + ("IRSA (IAM OIDC provider)" if plan.access.identity == "irsa" else "Pod Identity")
