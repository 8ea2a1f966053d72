"""Networks shared by the components: a GCP VPC with its firewall, an AWS VPC with its security group.

Each environment gets its own network rather than the project's ``default`` one, because the
default network's firewall opens SSH (and RDP, ICMP) to 0.0.0.0/0 and the default VPC gives
every instance a public address. Secure defaults, in one place for every component:

* SSH only from the configured ranges, plus Google's IAP range on GCP whenever nodes are reached
  through IAP (``iap_ssh``: no external address, or no ranges to reach one from), which is what
  the exported ``connect`` command then uses (``gcloud ... --tunnel-through-iap``); on AWS nothing
  without ranges (Session Manager needs no inbound port).
* No external address unless the spec allows one; nodes without one reach the internet (package
  mirrors, model hubs) through Cloud NAT or a NAT gateway (the core's ``billables.nat``, which the
  plan prices with its address), and Google APIs through Private Google Access.
* Serving: on GCP the firewall admits Google's proxies and health checks (``HEALTH_CHECK_RANGES``)
  to the model server's port; on AWS the load balancer gets its own security group (clients in on
  its port, out only to the server port) and the nodes take the server port from it alone.
* Node-to-node traffic is open inside the environment only (NCCL, JAX multi-host, EFA need it).

GCP firewall rules either target the nodes' network tag or, where nodes cannot carry tags, every
instance of the network. TPU environments take the second form: a queued slice's node is given no
``tags`` (``components.tpu_vm``), and a rule with target tags would leave a queued slice's hosts
unreachable from each other (JAX multi-host) and from SSH. That is safe because the VPC belongs to
this environment alone: the only instances in it are its nodes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_gcp as gcp

from components.args import AccessArgs
from components.labels import aws_tags, gcp_name, logical
from fullserver.platforms import aws as ec2
from fullserver.platforms import gcp as gce

GCP_SUBNET_CIDR = "10.64.0.0/20"
# Google's health-check sources, the largest VPC MTU and the IAP range are Google Cloud facts
# (``fullserver.platforms.gcp``); the subnets are this component's choice.
GCP_HEALTH_CHECK_RANGES = list(gce.HEALTH_CHECK_RANGES)
GCP_MTU = gce.MAX_MTU

AWS_VPC_CIDR = "10.80.0.0/16"


@dataclass(frozen=True)
class GcpNetwork:
    network: gcp.compute.Network
    subnet: gcp.compute.Subnetwork
    tag: str | None
    """Network tag the firewall rules target (every node carries it), or None: the rules apply to
    every instance of the environment's own network (nodes that cannot carry tags, e.g. TPU slices)."""
    egress: tuple[pulumi.Resource, ...] = ()
    """Cloud NAT, where the nodes have no external address: serving groups wait for it, so a
    replica's first boot can install the container runtime and pull the server image."""

    @property
    def tags(self) -> list[str]:
        """What a node lists as its network tags."""
        return [self.tag] if self.tag else []


def direct_ssh(access: AccessArgs) -> bool:
    """Nodes are reached directly over SSH: they have an external address and SSH is open to the
    configured ranges (a person's machine is in one of them). Otherwise through IAP (GCP) or
    Session Manager (AWS)."""
    return access["public_ip"] and bool(access["ssh_source_ranges"])


def aws_direct_ssh(access: AccessArgs) -> bool:
    """AWS nodes are reached directly only with keys to log in with (fullserver sets no EC2 key
    pair): without them port 22 stays closed and Session Manager is the way in."""
    return direct_ssh(access) and bool(access.get("ssh_public_keys"))


def iap_ssh(access: AccessArgs) -> bool:
    """GCP nodes are reached through IAP TCP forwarding, so SSH must be open to IAP's range."""
    return not direct_ssh(access)


def nat_egress(access: AccessArgs) -> bool:
    """Nodes reach the internet through NAT: the core's decision (``billables.nat``, priced in the
    plan), or, for args written by hand, whenever nodes have no public address."""
    return access.get("nat", not access["public_ip"])


def gcp_ssh_ranges(access: AccessArgs) -> list[str]:
    """Where the SSH rule admits connections from: the configured ranges (a VPN, peered networks)
    and, whenever the connect command goes through IAP, IAP's range."""
    ranges = list(access["ssh_source_ranges"])
    if iap_ssh(access) and gce.IAP_SSH_RANGE not in ranges:
        ranges.append(gce.IAP_SSH_RANGE)
    return ranges


def gcp_network(
    name: str,
    parent: pulumi.Resource,
    *,
    region: str,
    access: AccessArgs,
    project: pulumi.Input[str] | None = None,
    serving_port: int | None = None,
    tagged: bool = True,
) -> GcpNetwork:
    """VPC, subnet, firewall rules and (without external IPs) Cloud NAT, as children of ``parent``.

    ``tagged=False`` builds rules without target tags (module docstring): they cover every
    instance in this environment's network.
    """
    opts = pulumi.ResourceOptions(parent=parent)
    tag = gcp_name(f"{name}-node") if tagged else None
    targets = [tag] if tag else None
    net = gcp.compute.Network(
        logical(gcp.compute.Network, f"{name}-net"),
        project=project,
        auto_create_subnetworks=False,
        mtu=GCP_MTU,
        description=f"fullserver environment {name}",
        opts=opts,
    )
    subnet = gcp.compute.Subnetwork(
        logical(gcp.compute.Subnetwork, f"{name}-subnet"),
        project=project,
        network=net.id,
        region=region,
        ip_cidr_range=GCP_SUBNET_CIDR,
        private_ip_google_access=True,
        opts=opts,
    )
    ssh_ranges = gcp_ssh_ranges(access)
    gcp.compute.Firewall(
        logical(gcp.compute.Firewall, f"{name}-ssh"),
        project=project,
        network=net.id,
        direction="INGRESS",
        source_ranges=ssh_ranges,
        allows=[{"protocol": "tcp", "ports": ["22"]}],
        target_tags=targets,
        description="SSH from the configured ranges and, for nodes reached through IAP, IAP only",
        opts=opts,
    )
    gcp.compute.Firewall(
        logical(gcp.compute.Firewall, f"{name}-internal"),
        project=project,
        network=net.id,
        direction="INGRESS",
        source_ranges=[GCP_SUBNET_CIDR],
        allows=[{"protocol": "tcp"}, {"protocol": "udp"}, {"protocol": "icmp"}],
        target_tags=targets,
        description="node-to-node traffic inside the environment (NCCL, JAX multi-host)",
        opts=opts,
    )
    if serving_port is not None:
        gcp.compute.Firewall(
            logical(gcp.compute.Firewall, f"{name}-health"),
            project=project,
            network=net.id,
            direction="INGRESS",
            source_ranges=GCP_HEALTH_CHECK_RANGES,
            allows=[{"protocol": "tcp", "ports": [str(serving_port)]}],
            target_tags=targets,
            description="load-balancer proxies and health checks to the model server",
            opts=opts,
        )
    egress: tuple[pulumi.Resource, ...] = ()
    if nat_egress(access):
        router = gcp.compute.Router(
            logical(gcp.compute.Router, f"{name}-router"), project=project, network=net.id, region=region, opts=opts
        )
        nat = gcp.compute.RouterNat(
            logical(gcp.compute.RouterNat, f"{name}-nat"),
            project=project,
            router=router.name,
            region=region,
            nat_ip_allocate_option="AUTO_ONLY",
            source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
            opts=opts,
        )
        egress = (nat,)
    return GcpNetwork(network=net, subnet=subnet, tag=tag, egress=egress)


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
    security_group: aws.ec2.SecurityGroup
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
    lb_port: int = 80,
) -> AwsNetwork:
    """VPC, subnets in ``zones`` zones, internet/NAT gateway and the nodes' security group.

    ``zone`` pins every subnet to one zone (a cluster placement group lives in one zone);
    otherwise subnets go to the region's available zones, in order, that offer ``instance_type``
    (EC2 instance type offerings by availability zone): not every zone has every GPU type, and a
    subnet in a zone without it would leave an instance or a group unable to launch there.
    """
    opts = pulumi.ResourceOptions(parent=parent)
    if zone:
        zone_names: list[pulumi.Input[str]] = [zone] * zones
    else:
        invoke = pulumi.InvokeOutputOptions(parent=parent)
        azs = aws.get_availability_zones_output(state="available", region=region, opts=invoke)
        if instance_type:
            offers = aws.ec2.get_instance_type_offerings_output(
                filters=[{"name": "instance-type", "values": [instance_type]}],
                location_type="availability-zone",
                region=region,
                opts=invoke,
            )
            least = ec2.LB_MIN_ZONES if lb_scheme is not None else 1
            usable = pulumi.Output.all(azs.names, offers.locations).apply(
                lambda found: offering_zones(region, instance_type, list(found[0]), list(found[1]), least)
            )
        else:
            usable = azs.names.apply(list)
        zone_names = [usable.apply(_nth(i)) for i in range(zones)]
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

    def subnets_for(kind: str, first_block: int, route_table: aws.ec2.RouteTable) -> list[aws.ec2.Subnet]:
        """One /20 per zone from 10.80.<first_block>.0 on, each routed through ``route_table``."""
        out = []
        for i in range(zones):
            subnet = aws.ec2.Subnet(
                f"{name}-{kind}-{i}",
                region=region,
                vpc_id=vpc.id,
                cidr_block=f"10.80.{first_block + 16 * i}.0/20",
                availability_zone=zone_names[i],
                map_public_ip_on_launch=False,
                tags=aws_tags(tags, f"{name}-{kind}-{i}"),
                opts=opts,
            )
            routes.append(
                aws.ec2.RouteTableAssociation(
                    f"{name}-{kind}-{i}", region=region, subnet_id=subnet.id, route_table_id=route_table.id, opts=opts
                )
            )
            out.append(subnet)
        return out

    routes: list[aws.ec2.RouteTableAssociation] = []
    public = subnets_for("public", 0, public_rt)
    subnets = public
    if nat_egress(access):
        routes.clear()  # the nodes' subnets are the private ones below
        eip = aws.ec2.Eip(f"{name}-nat-ip", region=region, domain="vpc", tags=aws_tags(tags, f"{name}-nat"), opts=opts)
        nat = aws.ec2.NatGateway(
            f"{name}-nat",
            region=region,
            subnet_id=public[0].id,
            allocation_id=eip.id,
            tags=aws_tags(tags, f"{name}-nat"),
            opts=pulumi.ResourceOptions(parent=parent, depends_on=[igw]),
        )
        private_rt = aws.ec2.RouteTable(
            f"{name}-private-rt",
            region=region,
            vpc_id=vpc.id,
            routes=[{"cidr_block": "0.0.0.0/0", "nat_gateway_id": nat.id}],
            tags=aws_tags(tags, f"{name}-private"),
            opts=opts,
        )
        subnets = subnets_for("private", 128, private_rt)

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
    lb_sg = None
    if serving_port is not None and lb_scheme is not None:
        # Clients: anyone for an internet-facing load balancer, the VPC (and what is routed into
        # it) for an internal one; out: the nodes' server port only (requests and health checks).
        clients = ["0.0.0.0/0"] if lb_scheme == "external" else [AWS_VPC_CIDR]
        lb_sg = aws.ec2.SecurityGroup(
            logical(aws.ec2.SecurityGroup, f"{name}-lb-sg"),
            region=region,
            vpc_id=vpc.id,
            description=f"fullserver {name}: the serving load balancer ({lb_scheme})",
            ingress=[
                {
                    "protocol": "tcp",
                    "from_port": lb_port,
                    "to_port": lb_port,
                    "cidr_blocks": clients,
                    "description": "clients",
                }
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
            opts=opts,
        )
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
    egress: list[aws.ec2.SecurityGroupEgressArgsDict] = [
        {"protocol": "-1", "from_port": 0, "to_port": 0, "cidr_blocks": ["0.0.0.0/0"], "description": "outbound"},
    ]
    if efa:
        egress.append({"protocol": "-1", "from_port": 0, "to_port": 0, "self": True, "description": "EFA to the group"})
    sg = aws.ec2.SecurityGroup(
        logical(aws.ec2.SecurityGroup, f"{name}-sg"),
        region=region,
        vpc_id=vpc.id,
        description=f"fullserver {name}: SSH from configured ranges only; node-to-node inside the group",
        ingress=ingress,
        egress=egress,
        tags=aws_tags(tags, f"{name}-sg"),
        opts=opts,
    )
    return AwsNetwork(
        vpc=vpc,
        subnets=subnets,
        security_group=sg,
        public_subnets=public,
        lb_security_group=lb_sg,
        internet_gateway=igw,
        egress=tuple(routes),
    )


def gcp_project(parent: pulumi.Resource, project: pulumi.Input[str] | None) -> pulumi.Output[str]:
    """The project the nodes live in: the args', else the provider's (what it creates them in)."""
    if project is not None:
        return pulumi.Output.from_input(project)
    return gcp.organizations.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=parent)).project
