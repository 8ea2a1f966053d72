"""The AWS network of an environment: a VPC with its subnets, gateways and security groups.

Each environment gets its own VPC rather than the default one, which gives every instance a
public address. Secure defaults: see the design notes.

Design notes: docs/design/components.md.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from components.args import AccessArgs
from components.aws.labels import aws_tags
from components.names import logical
from components.network import direct_ssh, nat_egress
from fullserver.platforms import aws as ec2

AWS_VPC_CIDR = "10.80.0.0/16"


def aws_direct_ssh(access: AccessArgs) -> bool:
    """AWS nodes are reached directly only with keys to log in with (fullserver sets no EC2 key
    pair): without them port 22 stays closed and Session Manager is the way in."""
    return direct_ssh(access) and bool(access.get("ssh_public_keys"))


def offering_zones(
    region: str, instance_type: str, available: list[str], offered: list[str], at_least: int = 1
) -> list[str]:
    """The region's available zones (in AWS's order) that offer ``instance_type``; none is an
    error that stops ``pulumi up`` before a subnet lands where the nodes could never launch.

    ``at_least``: a load balancer in front of the nodes needs subnets in that many zones (an ALB:
    two, one subnet per zone, ELBv2 CreateLoadBalancer), each holding nodes it can send traffic
    to; fewer offering zones stop ``pulumi up`` here rather than at the load balancer."""
    zones = [z for z in available if z in set(offered)]
    if not zones:
        raise ValueError(
            f"no available zone of {region} offers {instance_type} "
            "(aws ec2 describe-instance-type-offerings --location-type availability-zone); pick another region"
        )
    if len(zones) < at_least:
        raise ValueError(
            f"only {', '.join(zones)} of {region} offer {instance_type}, and the serving load balancer needs "
            f"{at_least} zones with nodes; pick another region or instance type"
        )
    return zones


def one_subnet_per_zone(subnets: list[aws.ec2.Subnet]) -> pulumi.Output[list[str]]:
    """The first subnet of each zone: where fewer zones offer the instance type than subnets are
    made, zones repeat (``_nth``), and an ALB takes one subnet per zone (ELBv2 CreateLoadBalancer)."""

    def first_per_zone(pairs: list[Any]) -> list[str]:
        chosen: dict[str, str] = {}
        for subnet_id, az in pairs:
            chosen.setdefault(str(az), str(subnet_id))
        return list(chosen.values())

    return pulumi.Output.all(*[pulumi.Output.all(s.id, s.availability_zone) for s in subnets]).apply(first_per_zone)


def _nth(i: int) -> Callable[[list[str]], str]:
    """The i-th zone, wrapping around in regions with fewer zones."""
    return lambda names: names[i % len(names)]


@dataclass(frozen=True)
class AwsNetwork:
    vpc: aws.ec2.Vpc
    subnets: list[aws.ec2.Subnet]
    """Where nodes go: private subnets without public IPs, public ones with; one per zone."""
    security_group: aws.ec2.SecurityGroup | None
    """The nodes' security group; none where the caller gives its nodes their groups (EKS)."""
    public_subnets: list[aws.ec2.Subnet]
    """One per zone, routed to the internet gateway: an internet-facing load balancer's."""
    lb_security_group: aws.ec2.SecurityGroup | None = None
    """The serving load balancer's: clients in on its port, out only to the nodes' server port."""
    internet_gateway: aws.ec2.InternetGateway | None = None
    """An internet-facing load balancer waits for it: EC2 refuses one in a VPC without an attached
    internet gateway (``InvalidSubnet: VPC ... has no internet gateway``), and on destroy the
    gateway cannot detach while the load balancer's public addresses are mapped."""
    egress: tuple[pulumi.Resource, ...] = ()
    """The nodes' subnets' routes to the internet (through the NAT gateway or the internet
    gateway): groups wait for them, so a node's first boot can pull the server image."""


def aws_network(
    name: str,
    parent: pulumi.Resource,
    *,
    region: str,
    zone: str | None,
    zones: int,
    access: AccessArgs,
    tags: dict[str, str],
    efa: bool,
    serving_port: int | None = None,
    instance_type: str | None = None,
    lb_scheme: str | None = None,
    lb_ports: tuple[int, ...] = (80,),
    zone_names: list[pulumi.Input[str]] | None = None,
    set_types: tuple[str, ...] = (),
    subnet_tags: dict[str, dict[str, str]] | None = None,
    node_security_group: bool = True,
) -> AwsNetwork:
    """VPC, subnets in ``zones`` zones, internet/NAT gateway and the nodes' security group.

    ``zone`` pins every subnet to one zone (a cluster placement group lives in one zone);
    otherwise to the region's zones offering ``instance_type`` or one of ``set_types`` (the balanced
    set's others; EC2 instance type offerings): a subnet in a zone without them never launches.

    A created EKS cluster's (``components.eks.network``) gives ``zone_names`` (each subnet's zone)
    instead, ``subnet_tags`` by kind (load balancer discovery) and no nodes' security group.
    """
    opts = pulumi.ResourceOptions(parent=parent)
    if zone_names is None:
        zone_names = _zone_names(parent, region, zone, zones, instance_type, lb_scheme, set_types)
    vpc = aws.ec2.Vpc(
        f"{name}-vpc",
        region=region,
        cidr_block=AWS_VPC_CIDR,
        enable_dns_hostnames=True,
        enable_dns_support=True,
        tags=aws_tags(tags, f"{name}-vpc"),
        opts=opts,
    )
    igw = aws.ec2.InternetGateway(
        f"{name}-igw", region=region, vpc_id=vpc.id, tags=aws_tags(tags, f"{name}-igw"), opts=opts
    )
    public_rt = aws.ec2.RouteTable(
        f"{name}-public-rt",
        region=region,
        vpc_id=vpc.id,
        routes=[{"cidr_block": "0.0.0.0/0", "gateway_id": igw.id}],
        tags=aws_tags(tags, f"{name}-public"),
        opts=opts,
    )
    subnets = _Subnets(parent, name, region, vpc, zone_names, tags, subnet_tags or {})
    public, routes = subnets.routed("public", 0, public_rt)
    nodes = public
    if nat_egress(access):  # the nodes' subnets are private ones, routed through the NAT gateway
        nodes, routes = subnets.routed("private", 128, _nat_route_table(parent, name, region, vpc, igw, public, tags))
    lb_sg = None
    if serving_port is not None and lb_scheme is not None:
        lb_sg = _lb_security_group(parent, name, region, vpc, tags, lb_scheme, lb_ports, serving_port)
    sg = None
    if node_security_group:
        sg = aws.ec2.SecurityGroup(
            logical(aws.ec2.SecurityGroup, f"{name}-sg"),
            region=region,
            vpc_id=vpc.id,
            description=f"fullserver {name}: SSH from configured ranges only; node-to-node inside the group",
            ingress=_node_ingress(access, serving_port, lb_sg),
            egress=_node_egress(efa),
            tags=aws_tags(tags, f"{name}-sg"),
            opts=opts,
        )
    return AwsNetwork(
        vpc=vpc,
        subnets=nodes,
        security_group=sg,
        public_subnets=public,
        lb_security_group=lb_sg,
        internet_gateway=igw,
        egress=tuple(routes),
    )


def _zone_names(
    parent: pulumi.Resource,
    region: str,
    zone: str | None,
    zones: int,
    instance_type: str | None,
    lb_scheme: str | None,
    set_types: tuple[str, ...] = (),
) -> list[pulumi.Input[str]]:
    """The zone of each subnet (``aws_network``): the pinned one, or the zones offering the type
    (or any type of its set: the filter's values are ORed, EC2 ``DescribeInstanceTypeOfferings``)."""
    if zone:
        return [zone] * zones
    invoke = pulumi.InvokeOutputOptions(parent=parent)
    azs = aws.get_availability_zones_output(state="available", region=region, opts=invoke)
    if instance_type:
        offers = aws.ec2.get_instance_type_offerings_output(
            filters=[{"name": "instance-type", "values": [instance_type, *set_types]}],
            location_type="availability-zone",
            region=region,
            opts=invoke,
        )
        least = ec2.LB_MIN_ZONES if lb_scheme is not None else 1
        usable = pulumi.Output.all(azs.names, offers.locations).apply(
            lambda found: offering_zones(
                region, " or ".join([instance_type, *set_types]), list(found[0]), list(found[1]), least
            )
        )
    else:
        usable = azs.names.apply(list)
    return [usable.apply(_nth(i)) for i in range(zones)]


@dataclass(frozen=True)
class _Subnets:
    """Makes an environment's subnets: one per zone, in its VPC."""

    parent: pulumi.Resource
    name: str
    region: str
    vpc: aws.ec2.Vpc
    zone_names: list[pulumi.Input[str]]
    tags: dict[str, str]
    extra_tags: dict[str, dict[str, str]]
    """Tags beside the labels, by kind (``public``, ``private``)."""

    def routed(
        self, kind: str, first_block: int, route_table: aws.ec2.RouteTable
    ) -> tuple[list[aws.ec2.Subnet], list[aws.ec2.RouteTableAssociation]]:
        """One /20 per zone from 10.80.<first_block>.0 on, each routed through ``route_table``."""
        opts = pulumi.ResourceOptions(parent=self.parent)
        name, region = self.name, self.region
        subnets, routes = [], []
        for i, zone_name in enumerate(self.zone_names):
            subnet = aws.ec2.Subnet(
                f"{name}-{kind}-{i}",
                region=region,
                vpc_id=self.vpc.id,
                cidr_block=f"10.80.{first_block + 16 * i}.0/20",
                availability_zone=zone_name,
                map_public_ip_on_launch=False,
                tags={**aws_tags(self.tags, f"{name}-{kind}-{i}"), **self.extra_tags.get(kind, {})},
                opts=opts,
            )
            routes.append(
                aws.ec2.RouteTableAssociation(
                    f"{name}-{kind}-{i}", region=region, subnet_id=subnet.id, route_table_id=route_table.id, opts=opts
                )
            )
            subnets.append(subnet)
        return subnets, routes


def _nat_route_table(
    parent: pulumi.Resource,
    name: str,
    region: str,
    vpc: aws.ec2.Vpc,
    igw: aws.ec2.InternetGateway,
    public: list[aws.ec2.Subnet],
    tags: dict[str, str],
) -> aws.ec2.RouteTable:
    """A NAT gateway (with its address) in the first public subnet, and the private route table to it."""
    opts = pulumi.ResourceOptions(parent=parent)
    eip = aws.ec2.Eip(f"{name}-nat-ip", region=region, domain="vpc", tags=aws_tags(tags, f"{name}-nat"), opts=opts)
    nat = aws.ec2.NatGateway(
        f"{name}-nat",
        region=region,
        subnet_id=public[0].id,
        allocation_id=eip.id,
        tags=aws_tags(tags, f"{name}-nat"),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[igw]),
    )
    return aws.ec2.RouteTable(
        f"{name}-private-rt",
        region=region,
        vpc_id=vpc.id,
        routes=[{"cidr_block": "0.0.0.0/0", "nat_gateway_id": nat.id}],
        tags=aws_tags(tags, f"{name}-private"),
        opts=opts,
    )


def _lb_security_group(
    parent: pulumi.Resource,
    name: str,
    region: str,
    vpc: aws.ec2.Vpc,
    tags: dict[str, str],
    lb_scheme: str,
    lb_ports: tuple[int, ...],
    serving_port: int,
) -> aws.ec2.SecurityGroup:
    """Clients: anyone for an internet-facing load balancer, the VPC's own range only for an
    internal one, on each listener's port (HTTP, and HTTPS when it is served: the HTTP one
    then answers its redirect); out: the nodes' server port only (requests and health checks)."""
    clients = ["0.0.0.0/0"] if lb_scheme == "external" else [AWS_VPC_CIDR]
    return aws.ec2.SecurityGroup(
        logical(aws.ec2.SecurityGroup, f"{name}-lb-sg"),
        region=region,
        vpc_id=vpc.id,
        description=f"fullserver {name}: the serving load balancer ({lb_scheme})",
        ingress=[
            {"protocol": "tcp", "from_port": port, "to_port": port, "cidr_blocks": clients, "description": "clients"}
            for port in lb_ports
        ],
        egress=[
            {
                "protocol": "tcp",
                "from_port": serving_port,
                "to_port": serving_port,
                "cidr_blocks": [AWS_VPC_CIDR],
                "description": "to the model servers",
            }
        ],
        tags=aws_tags(tags, f"{name}-lb-sg"),
        opts=pulumi.ResourceOptions(parent=parent),
    )


def _node_ingress(
    access: AccessArgs, serving_port: int | None, lb_sg: aws.ec2.SecurityGroup | None
) -> list[aws.ec2.SecurityGroupIngressArgsDict]:
    """What the nodes admit: SSH from the ranges (with keys only), each other, and the server port
    from the load balancer alone (or from the VPC without one)."""
    ingress: list[aws.ec2.SecurityGroupIngressArgsDict] = []
    if access["ssh_source_ranges"] and access.get("ssh_public_keys"):
        ingress.append(
            {
                "protocol": "tcp",
                "from_port": 22,
                "to_port": 22,
                "cidr_blocks": list(access["ssh_source_ranges"]),
                "description": "SSH",
            }
        )
    # EFA needs all traffic to and from the security group itself (AWS "Get started with EFA",
    # security group step); ordinary multi-node traffic (NCCL over TCP) is covered by the same rule.
    ingress.append({"protocol": "-1", "from_port": 0, "to_port": 0, "self": True, "description": "node to node"})
    if serving_port is not None and lb_sg is not None:
        ingress.append(
            {
                "protocol": "tcp",
                "from_port": serving_port,
                "to_port": serving_port,
                "security_groups": [lb_sg.id],
                "description": "model server, from the load balancer only",
            }
        )
    elif serving_port is not None:
        ingress.append(
            {
                "protocol": "tcp",
                "from_port": serving_port,
                "to_port": serving_port,
                "cidr_blocks": [AWS_VPC_CIDR],
                "description": "inference",
            }
        )
    return ingress


def _node_egress(efa: bool) -> list[aws.ec2.SecurityGroupEgressArgsDict]:
    egress: list[aws.ec2.SecurityGroupEgressArgsDict] = [
        {"protocol": "-1", "from_port": 0, "to_port": 0, "cidr_blocks": ["0.0.0.0/0"], "description": "outbound"},
    ]
    if efa:
        egress.append({"protocol": "-1", "from_port": 0, "to_port": 0, "self": True, "description": "EFA to the group"})
    return egress
