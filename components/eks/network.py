"""Where an EKS environment's nodes (and a created cluster) go: given subnets (a created cluster's
in two or more zones: ``given_network``), an attached cluster's own, or, for a created cluster, a
VPC of its own (``created_network``).

Design notes: docs/design/components.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from components.aws.network import aws_network, offering_zones
from components.eks.args import EksArgs
from fullserver.kube import KubePlan
from fullserver.kube.karpenter import subnet_tags
from fullserver.platforms import eks


@dataclass
class EksNetwork:
    """Where the nodes (and a created cluster) go."""

    subnet_ids: pulumi.Input[list[str]]
    """The node groups' subnets (a created cluster's: the private ones)."""
    vpc_id: pulumi.Input[str]
    security_group: pulumi.Input[str] | None
    node_subnet_ids: pulumi.Input[list[str]] | None = None
    """The node groups' subnets where they keep to one zone (``_one_zone``)."""
    cluster_subnet_ids: pulumi.Input[list[str]] | None = None
    """A created cluster's ``vpc_config.subnet_ids`` where they differ from ``subnet_ids``."""
    egress: tuple[pulumi.Resource, ...] = field(default=())
    """The private subnets' routes to the NAT gateway: node groups wait for them."""


def subnet_zones(
    region: str, instance_type: str, zone: str | None, available: list[str], offered: list[str]
) -> list[str]:
    """The zone of each of a created cluster's ``eks.CLUSTER_ZONES`` subnet pairs: the nodes' zone
    first (the plan's, else the first zone offering the instance type, as ``_one_zone`` picks it),
    then the other zones offering the type, then the region's other zones, in AWS's order; a
    region with fewer zones repeats them."""
    offering = offering_zones(region, instance_type, available, offered)
    first = zone or offering[0]
    rest = [z for z in offering if z != first] + [z for z in available if z not in offering and z != first]
    chosen = [first, *rest]
    return [chosen[i % len(chosen)] for i in range(eks.CLUSTER_ZONES)]


def control_plane_subnets(subnets: list[tuple[str, str]], names: list[str], zone_ids: list[str]) -> list[str]:
    """The subnets (id, zone) EKS takes for the cluster: none in a refused zone id, in at least two
    zones (network-reqs.adoc); fewer stops ``pulumi up`` before CreateCluster refuses them."""
    zone_id = dict(zip(names, zone_ids, strict=False))
    kept = [(s, z) for s, z in subnets if zone_id.get(z) not in eks.CONTROL_PLANE_EXCLUDED_ZONE_IDS]
    if len({z for _, z in kept}) < 2:
        raise ValueError(
            f"an EKS cluster needs subnets in two zones it accepts; {', '.join(sorted({z for _, z in subnets}))} "
            "leave fewer (network-reqs: disallowed zone ids); give the stack a zone elsewhere"
        )
    return [s for s, _ in kept]


def given_cluster_subnets(found: list[tuple[str, str, str]]) -> list[str]:
    """The given subnets (id, zone, zone id) a created cluster takes: EKS CreateCluster wants them in
    at least two zones, none in a zone id it refuses (network-reqs.adoc, as ``control_plane_subnets``);
    fewer would fail ``pulumi up`` at the cluster, so the preview stops here first, with a
    ``RunError``: Pulumi reports it as its one line, where a ``ValueError`` gets a traceback."""
    kept = [(s, z) for s, z, zone_id in found if zone_id not in eks.CONTROL_PLANE_EXCLUDED_ZONE_IDS]
    if len({z for _, z in kept}) < 2:
        zones = ", ".join(sorted({f"{z} ({zone_id})" for _, z, zone_id in found}))
        raise pulumi.RunError(
            f"subnet_ids: a created EKS cluster needs subnets in two or more zones EKS accepts for a control "
            f"plane, and these are in {zones}; pass subnets in two or more zones (node groups that must keep to "
            "one zone, for EFA or cluster placement, use one of them)"
        )
    return [s for s, _ in kept]


def given_one_zone(
    found: list[tuple[str, str, str]], pinned: str | None, offering: list[str], machine: str, cluster: str = ""
) -> list[str]:
    """The subnets (id, zone, zone id) of the one zone the nodes keep to: the plan's, else the
    first zone of the region (AWS's order) that offers the instance type and holds one of them.
    None left would fail ``pulumi up`` at the node group (EKS takes one subnet or more), so the
    preview stops with a ``RunError`` line; ``cluster`` names the attached cluster whose own
    subnets these are ("" for given ``subnet_ids``)."""
    zones = sorted({z for _, z, _ in found})
    zone = pinned or next((z for z in offering if z in zones), None)
    chosen = [s for s, z, _ in found if z == zone]
    if not chosen:
        raise pulumi.RunError(_no_zone(", ".join(zones), pinned, ", ".join(offering), machine, cluster))
    return chosen


def _no_zone(zones: str, pinned: str | None, offering: str, machine: str, cluster: str) -> str:
    """Why no subnet is left in the nodes' one zone, and what to do."""
    if not cluster and pinned:
        return (
            f"subnet_ids: none is in {pinned}, the plan's zone, where nodes with EFA or cluster placement keep "
            "to; pass a subnet there"
        )
    if not cluster:
        return f"subnet_ids: none of their zones ({zones}) offers {machine}; pass subnets in one that does ({offering})"
    keep = f"EKS cluster {cluster}: nodes with EFA or cluster placement keep to one zone"
    given = "pass subnet_ids (fullserver:subnets) of its VPC"
    if pinned:
        return (
            f"{keep}, and none of its subnets is in {pinned}, the plan's zone (they are in {zones}); pin "
            f"fullserver:zone to one of those that offers {machine}, or {given} in {pinned}"
        )
    return f"{keep}, and none of its subnets' zones ({zones}) offers {machine}; {given} in one that does ({offering})"


def subnets_found(
    subnet_ids: pulumi.Input[list[str]], parent: pulumi.Resource
) -> pulumi.Output[list[tuple[str, str, str]]]:
    """Each subnet's (id, zone, zone id), read with ``ec2.get_subnet`` through the component's
    provider. An attached cluster's ids are an Output: an invoke per id needs the list, so the
    lookups run inside an apply (its function may return an Output, which Pulumi flattens)."""
    invoke = pulumi.InvokeOptions(parent=parent)

    def look_up(ids: list[str]) -> pulumi.Output[list[tuple[str, str, str]]]:
        lookups = [aws.ec2.get_subnet_output(id=s, opts=invoke) for s in ids]
        return pulumi.Output.all(*lookups).apply(
            lambda subnets: [(str(s.id), str(s.availability_zone), str(s.availability_zone_id)) for s in subnets]
        )

    return pulumi.Output.from_input(subnet_ids).apply(look_up)


def given_network(plan: KubePlan, args: EksArgs, parent: pulumi.Resource) -> EksNetwork:
    """A created cluster in the given subnets: each one's zone read (``subnets_found``), the cluster
    in those of two or more zones (``given_cluster_subnets``), nodes that keep to one zone in one of
    theirs (``_one_zone``)."""
    found = subnets_found(args["subnet_ids"], parent)
    network = EksNetwork(
        args["subnet_ids"],
        args["vpc_id"],
        args.get("cluster_security_group_id"),
        cluster_subnet_ids=found.apply(given_cluster_subnets),
    )
    if plan.compact_placement or plan.efa_interfaces:
        network.node_subnet_ids = _one_zone(plan, found, parent)
    return network


def created_network(name: str, plan: KubePlan, parent: pulumi.Resource) -> EksNetwork:
    """A created cluster's VPC (module doc)."""
    invoke = pulumi.InvokeOutputOptions(parent=parent)
    azs = aws.get_availability_zones_output(state="available", region=plan.region, opts=invoke)
    offers = aws.ec2.get_instance_type_offerings_output(
        filters=[{"name": "instance-type", "values": [plan.machine_type]}],
        location_type="availability-zone",
        region=plan.region,
        opts=invoke,
    )
    zones = pulumi.Output.all(azs.names, offers.locations).apply(
        lambda found: subnet_zones(plan.region, plan.machine_type, plan.zone, list(found[0]), list(found[1]))
    )
    net = aws_network(
        name,
        parent,
        region=plan.region,
        zone=None,
        zones=eks.CLUSTER_ZONES,
        access={"ssh_source_ranges": [], "public_ip": False, "nat": True},
        tags=dict(plan.cloud_labels),
        efa=plan.efa_interfaces > 0,
        zone_names=[zones.apply(_nth(i)) for i in range(eks.CLUSTER_ZONES)],
        subnet_tags={
            "public": dict(eks.PUBLIC_SUBNET_TAGS),
            "private": {**eks.PRIVATE_SUBNET_TAGS, **subnet_tags(plan)},
        },
        node_security_group=False,
    )
    pairs = [pulumi.Output.all(s.id, s.availability_zone) for s in [*net.public_subnets, *net.subnets]]
    cluster_subnets = pulumi.Output.all(azs.names, azs.zone_ids, *pairs).apply(
        lambda v: control_plane_subnets([(str(p[0]), str(p[1])) for p in v[2:]], list(v[0]), list(v[1]))
    )
    private: pulumi.Output[list[str]] = pulumi.Output.all(*[s.id for s in net.subnets]).apply(list)
    return EksNetwork(
        subnet_ids=private,
        vpc_id=net.vpc.id,
        security_group=None,
        # the first private subnet is in the nodes' zone (``subnet_zones``)
        node_subnet_ids=net.subnets[0].id.apply(lambda s: [s])
        if plan.compact_placement or plan.efa_interfaces
        else None,
        cluster_subnet_ids=cluster_subnets,
        egress=net.egress,
    )


def _nth(i: int) -> Callable[[list[str]], str]:
    return lambda zones: zones[i]


def eks_network(plan: KubePlan, args: EksArgs, name: str, parent: pulumi.Resource) -> EksNetwork:
    """The given subnets, else an attached cluster's own, else a created cluster's VPC."""
    invoke = pulumi.InvokeOptions(parent=parent)
    if args["subnet_ids"] and plan.create_cluster:
        return given_network(plan, args, parent)
    if args["subnet_ids"] and args["vpc_id"]:
        # an attached cluster's nodes: taken as the one zone's where they keep to one (``_one_zone``)
        return EksNetwork(args["subnet_ids"], args["vpc_id"], args.get("cluster_security_group_id"))
    if not plan.create_cluster:
        found = aws.eks.get_cluster_output(name=plan.cluster_name, opts=invoke)
        config = found.vpc_config
        network = EksNetwork(
            args["subnet_ids"] or config.subnet_ids,  # fullserver:subnets, in the cluster's VPC
            config.vpc_id,
            args.get("cluster_security_group_id") or config.cluster_security_group_id,
        )
    else:
        return created_network(name, plan, parent)
    if (plan.compact_placement or plan.efa_interfaces) and not args["subnet_ids"]:  # given: the stack's zone
        own = subnets_found(config.subnet_ids, parent)
        network.node_subnet_ids = _one_zone(plan, own, parent, cluster=plan.cluster_name)
    return network


def _one_zone(
    plan: KubePlan, found: pulumi.Output[list[tuple[str, str, str]]], parent: pulumi.Resource, cluster: str = ""
) -> pulumi.Output[list[str]]:
    """The subnets of one zone among ``found`` (id, zone, zone id: a created cluster's given
    subnets, or an attached cluster's own), which span several: a cluster placement group is "a
    logical grouping of instances within a single Availability Zone" (EC2 user guide, placement
    strategies), and the EKS user guide's EFA node group takes one zone while its cluster takes two
    (awsdocs/amazon-eks-user-guide: latest/ug/ml/node-efa.adoc, ``efa-cluster.yaml``). The zone is
    the plan's, else the first zone of the region offering the instance type that holds one of them
    (``given_one_zone``; ``components.aws.network.offering_zones``). An attached cluster's given
    subnets (``EksArgs.subnet_ids``) are taken as the one zone's the caller chose."""
    invoke = pulumi.InvokeOptions(parent=parent)
    offering: pulumi.Output[list[str]] = pulumi.Output.from_input([])
    if not plan.zone:
        azs = aws.get_availability_zones_output(state="available", opts=invoke)
        offers = aws.ec2.get_instance_type_offerings_output(
            filters=[{"name": "instance-type", "values": [plan.machine_type]}],
            location_type="availability-zone",
            opts=invoke,
        )
        offering = pulumi.Output.all(azs.names, offers.locations).apply(
            lambda found: offering_zones(plan.region, plan.machine_type, list(found[0]), list(found[1]))
        )
    return pulumi.Output.all(found, offering).apply(
        lambda v: given_one_zone(v[0], plan.zone, list(v[1]), plan.machine_type, cluster)
    )
