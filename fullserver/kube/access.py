"""How the Kubernetes node-pool platforms reach their cluster: the stack keys a created or an
attached cluster takes beside ``fullserver:cluster``, checked before any sizing.

Design notes: docs/design/kubernetes.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Protocol

from pydantic import AfterValidator, Field, StrictStr

from fullserver.errors import InputError
from fullserver.kube.model import ClusterAccess as ClusterAccess  # re-exported: where callers look
from fullserver.kube.model import Identity as Identity
from fullserver.netcheck import check_ssh_ranges
from fullserver.platforms import owners, pool_member, pool_member_of, rules_for, zone_problem

if TYPE_CHECKING:
    from fullserver.kube.model import KubePlan
    from fullserver.platform import Platform

KUBE_KEYS = (
    "cluster",
    "flexStart",
    "deployWorkload",
    "clusterLocation",
    "privateEndpoint",
    "clusterIdentity",
    "nodeProvisioner",
    "subnets",
    "controlPlaneSourceRanges",
    "controlPlaneOpenToInternet",
)
"""The stack keys only the node-pool platforms take: setting one is the stack's choice of
Kubernetes (sizing never hands a cluster to a team that asked for none)."""

SUBNET_ID = re.compile(r"subnet-([0-9a-f]{8}|[0-9a-f]{17})")
"""An EC2 subnet id: ``subnet-`` and 8 or 17 hexadecimal digits (aws-cloudformation/cfn-lint
``src/cfnlint/rules/formats/SubnetId.py``, format ``AWS::EC2::Subnet.Id``; EC2 writes them in
lowercase)."""
MAX_SUBNETS = 16
"""More than the zones of any AWS region, twice over (a public and a private subnet in each)."""
MAX_API_RANGES = 50
"""The most ``controlPlaneSourceRanges`` any member's control plane takes (GKE's 50); each member's
own limit (``PoolRules.api_ranges_max``) is checked where the platform is known."""


def check_subnet_id(subnet: str) -> str:
    if not SUBNET_ID.fullmatch(subnet):
        shown = subnet if len(subnet) <= 40 else subnet[:40] + "..."
        raise ValueError(f"'{shown}' is not a subnet id (subnet- and 8 or 17 hexadecimal digits, e.g. subnet-0a1b2c3d)")
    return subnet


def _subnet_ids(subnets: list[str]) -> list[str]:
    return [check_subnet_id(s) for s in subnets]


Subnets = Annotated[list[StrictStr], Field(max_length=MAX_SUBNETS), AfterValidator(_subnet_ids)]
"""``subnets`` as the stack model takes it (``fullserver.workload``)."""


def location_problem(location: str, region: str) -> str | None:
    """Why ``location`` is not the region or a zone of it, in the names of the platforms whose
    clusters have a location (``clusterLocation``: GKE's), or ``None``."""
    takers = owners("clusterLocation")
    if location == region or any(rules_for(p).zone_in_region(location, region) for p in takers):
        return None
    if location.startswith(f"{region}-"):  # a zone of the region by its name, one its cloud does not have
        return next(z for p in takers if (z := zone_problem(location, region, p)) is not None)
    return f"'{location}' is neither region {region} nor one of its zones (e.g. {region}-a)"


class StackKeys(Protocol):
    """``workload.Workload``'s cluster keys as ``cluster_keys_refusal`` reads them (the stack model
    calls it, so naming the model here closed an import cycle: issue 36)."""

    @property
    def platform(self) -> Platform | None: ...
    @property
    def cluster(self) -> str | None: ...
    @property
    def cluster_location(self) -> str | None: ...
    @property
    def private_endpoint(self) -> bool: ...
    @property
    def cluster_identity(self) -> str | None: ...
    @property
    def subnets(self) -> Sequence[str] | None: ...
    @property
    def control_plane_source_ranges(self) -> list[str] | None: ...
    @property
    def control_plane_open_to_internet(self) -> bool: ...


def cluster_keys_refusal(w: StackKeys) -> tuple[str, str, str] | None:
    """The cluster key of a stack (``Workload``) that does not apply to its way in or contradicts
    another (``way_in_refusal``), or lists more control-plane ranges than its platform's clusters
    take (``api_ranges_problem``; a stack whose platform is left open is checked when sized)."""
    found = way_in_refusal(
        attached=w.cluster is not None,
        location=w.cluster_location is not None,
        private_endpoint=w.private_endpoint,
        identity=w.cluster_identity is not None,
        subnets=w.subnets is not None,
        api_ranges=w.control_plane_source_ranges is not None,
        api_open=w.control_plane_open_to_internet,
    )
    member = pool_member_of(w.platform) if w.platform is not None else None
    if found is None and member is not None and w.control_plane_source_ranges is not None:
        too_many = api_ranges_problem(w.control_plane_source_ranges, member.key)
        if too_many is not None:
            return "controlPlaneSourceRanges", too_many, "list fewer, wider ranges (none wider than /8)"
    return found


def way_in_refusal(
    *,
    attached: bool,
    location: bool,
    private_endpoint: bool,
    identity: bool,
    subnets: bool,
    api_ranges: bool = False,
    api_open: bool = False,
) -> tuple[str, str, str] | None:
    """The key (of those set) that does not apply to the way in, with what and what to do."""
    reach = api_reach_refusal(attached=attached, private_endpoint=private_endpoint, ranges=api_ranges, open_=api_open)
    if reach is not None:
        return reach
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


def api_reach_refusal(
    *, attached: bool, private_endpoint: bool, ranges: bool, open_: bool
) -> tuple[str, str, str] | None:
    """``controlPlaneSourceRanges`` / ``controlPlaneOpenToInternet`` where they mean nothing or
    contradict another key: on an existing cluster (its endpoint is its own), beside
    ``privateEndpoint`` (no public endpoint to admit anyone), or together (pick one)."""
    key = "controlPlaneSourceRanges" if ranges else "controlPlaneOpenToInternet"
    if not (ranges or open_):
        return None
    if attached:
        return (
            key,
            "applies to a cluster fullserver creates; the existing cluster's endpoint is its own",
            f"remove fullserver:{key}, or fullserver:cluster to create one",
        )
    if private_endpoint:
        return (
            key,
            "opens a public endpoint, and fullserver:privateEndpoint turns it off",
            f"remove fullserver:{key} or fullserver:privateEndpoint",
        )
    if ranges and open_:
        return (
            "controlPlaneOpenToInternet",
            "opens the API to the whole internet, and fullserver:controlPlaneSourceRanges narrows it",
            "keep one of the two (the ranges are the safe one)",
        )
    return None


def check_api_ranges(ranges: list[str]) -> list[str]:
    """``controlPlaneSourceRanges``, validated as SSH ranges are (no range wider than /8, nor a set
    covering more), with the whole internet refused by name: that is ``controlPlaneOpenToInternet``."""
    for text in ranges:
        if text.strip().endswith("/0"):
            raise ValueError(
                f"{text.strip()} would open the Kubernetes API to the whole internet; list your office, VPN or CI "
                "runner egress ranges, or set fullserver:controlPlaneOpenToInternet: true to do so on purpose"
            )
    return check_ssh_ranges(ranges, opens="the Kubernetes API")


ApiRanges = Annotated[list[StrictStr], Field(max_length=MAX_API_RANGES), AfterValidator(check_api_ranges)]
"""``controlPlaneSourceRanges`` as the stack model takes it (``fullserver.workload``)."""


def api_ranges_problem(ranges: list[str], provider: str) -> str | None:
    """More ranges than the member's control plane takes (``PoolRules.api_ranges_max``: EKS 40,
    not adjustable; GKE 50), or ``None``: refused at plan time, never at ``pulumi up``."""
    most = pool_member(provider).api_ranges_max
    if len(ranges) <= most:
        return None
    return f"lists {len(ranges)} ranges; a {provider.upper()} control plane admits at most {most}"


def control_plane(provider: str, access: ClusterAccess) -> str:
    """Who can reach a created cluster's Kubernetes API, for the plan's ``cluster`` row: the
    stack's ranges only, the whole internet (asked for), or none from outside but the member's own
    way (``PoolRules.api_without_ranges``: GKE's DNS endpoint with IAM; EKS: the VPC only)."""
    if access.private_endpoint:
        return "control plane: private endpoint only (inside its VPC)"
    if access.api_open:
        return "control plane: public, open to the whole internet (fullserver:controlPlaneOpenToInternet)"
    if access.api_ranges:
        return f"control plane: reachable from {', '.join(access.api_ranges)} only"
    return "control plane: " + pool_member(provider).api_without_ranges


INTERNET = ("0.0.0.0/0",)
"""``controlPlaneOpenToInternet``: the public endpoint's ranges, EKS's own default said aloud."""


@dataclass(frozen=True, slots=True)
class ApiEndpoint:
    """How a created cluster's API endpoint is built (``api_endpoint``), the same for both members:
    the private endpoint is always on (the nodes reach the API inside the VPC)."""

    public_cidrs: tuple[str, ...] = ()
    """The public IP endpoint admits exactly these; empty: there is none."""
    dns: bool = False
    """The IAM-guarded DNS endpoint takes traffic from outside (GKE's ``allow_external_traffic``)."""

    @property
    def open_to_internet(self) -> bool:
        return self.public_cidrs == INTERNET


def api_endpoint(plan: KubePlan, private_endpoint: bool = False) -> ApiEndpoint:
    """A created cluster's API endpoint from the stack's keys (``private_endpoint``: the component's
    argument, or the plan's ``privateEndpoint``): private only; open to the internet when asked
    (``controlPlaneOpenToInternet``); public to the stack's ranges only; else none from outside but
    the member's DNS endpoint where it has one (``PoolRules.dns_endpoint``)."""
    a = plan.access
    if private_endpoint or (a is not None and a.private_endpoint):
        return ApiEndpoint()
    if a is not None and a.api_open:
        return ApiEndpoint(INTERNET)
    if a is not None and a.api_ranges:
        return ApiEndpoint(tuple(a.api_ranges))
    return ApiEndpoint(dns=pool_member(plan.provider).dns_endpoint)


def through_dns(plan: KubePlan) -> bool:
    """Whether a created cluster's API is reached through its IAM-guarded DNS endpoint (GKE without
    ranges): kubectl, ``fullserver verify`` and the workload's provider then go there."""
    return plan.create_cluster and api_endpoint(plan).dns


def applied_through_api(provider: str, deploy_workload: bool) -> list[str]:
    """What ``pulumi up`` applies through a created cluster's API server: the member's own installs
    (``PoolRules.applied_through_api``) and, with ``deployWorkload``, the workload."""
    return [*pool_member(provider).applied_through_api, *(["the workload"] if deploy_workload else [])]


def unreachable_api_refusal(provider: str, access: ClusterAccess, deploy_workload: bool) -> tuple[str, str, str] | None:
    """A created cluster whose API the same ``pulumi up`` must use (``applied_through_api``) but
    cannot reach: a private-only endpoint answers only inside the cluster's VPC (EKS user guide,
    "Cluster API server endpoint"; GKE ``PrivateClusterConfig.enable_private_endpoint``), and that
    VPC is created by this very ``up``, so nobody runs it from inside. Reachable: the stack's
    ranges, the internet on purpose, or the member's IAM-guarded DNS endpoint (``dns_endpoint``)."""
    applied = applied_through_api(provider, deploy_workload)
    if not applied:
        return None
    listed = ", ".join(applied[:-1]) + (" and " if len(applied) > 1 else "") + applied[-1]
    said = f"pulumi up applies {listed} through the created cluster's Kubernetes API"
    if access.private_endpoint:
        return (
            "privateEndpoint",
            f"{said}, and a private-only endpoint answers only inside the VPC this same pulumi up creates",
            "remove fullserver:privateEndpoint and list your egress ranges in fullserver:controlPlaneSourceRanges"
            + ("" if pool_member(provider).applied_through_api else ", or drop fullserver:deployWorkload"),
        )
    if access.api_ranges or access.api_open or pool_member(provider).dns_endpoint:
        return None
    return (
        "controlPlaneSourceRanges",
        f"{said}, and without fullserver:controlPlaneSourceRanges or fullserver:controlPlaneOpenToInternet "
        "its endpoint is private, inside the VPC this same pulumi up creates",
        "list the egress ranges pulumi up and kubectl run from in fullserver:controlPlaneSourceRanges",
    )


def check_api_reach(plan: KubePlan) -> None:
    """Refuse, naming the key, a created cluster whose API the same ``pulumi up`` cannot reach
    (``unreachable_api_refusal``): called when a stack is planned (``fullserver.plan``)."""
    if not plan.create_cluster or plan.access is None:
        return
    found = unreachable_api_refusal(plan.provider, plan.access, plan.deploy_workload)
    if found is not None:
        raise InputError(f"fullserver:{found[0]}", found[1], found[2])


def control_plane_warning(provider: str, access: ClusterAccess, deploy_workload: bool) -> str | None:
    """What the plan warns of a created cluster's API: whoever applies through it (``pulumi up``
    where it installs something, kubectl, ``fullserver verify``) must be among the ranges, or inside
    the VPC where there is no public endpoint; an open one names the risk."""
    applied = applied_through_api(provider, deploy_workload)
    run = f"; pulumi up applies {' and '.join(applied)} through it, so run pulumi up from there too" if applied else ""
    if access.private_endpoint:
        return PRIVATE_ENDPOINT_WARNING
    if access.api_open:
        return (
            "the created cluster's Kubernetes API admits the whole internet (fullserver:controlPlaneOpenToInternet): "
            "anyone can probe it and try credentials or an API server vulnerability; list your ranges in "
            "fullserver:controlPlaneSourceRanges instead"
        )
    if access.api_ranges:
        return (
            f"the created cluster's Kubernetes API admits only {', '.join(access.api_ranges)} "
            f"(fullserver:controlPlaneSourceRanges): run kubectl and fullserver verify from an address in them{run}"
        )
    return None


PRIVATE_ENDPOINT_WARNING = (
    "the created cluster's control plane answers only on its private address (fullserver:privateEndpoint): "
    "reach it with kubectl and fullserver verify from inside its network (a VPN, an interconnect or a host there)"
)
"""What the plan says of a created cluster's private endpoint where ``pulumi up`` applies nothing
through it (``unreachable_api_refusal`` refuses the rest): kubectl and ``fullserver verify`` must be
inside the cluster's network."""


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
