"""The Google Cloud network of an environment (GPU VMs and TPUs alike): a VPC with its firewall.

Each environment gets its own network rather than the project's ``default`` one, because the
default network's firewall opens SSH (and RDP, ICMP) to 0.0.0.0/0. Secure defaults:
see the design notes.

Design notes: docs/design/components.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_gcp as gcp

from components.args import AccessArgs
from components.gcp.labels import gcp_name
from components.names import logical
from components.network import direct_ssh, nat_egress
from fullserver.platforms import gcp as gce

IAP_SSH_RANGE = gce.IAP_SSH_RANGE
"""Where Identity-Aware Proxy TCP forwarding connects from (Google Cloud "Using IAP for TCP forwarding")."""
GCP_SUBNET_CIDR = "10.64.0.0/20"
# Google's health-check sources, the largest VPC MTU and the IAP range are Google Cloud facts
# (``fullserver.platforms.gcp``); the subnets are this component's choice.
GCP_HEALTH_CHECK_RANGES = list(gce.HEALTH_CHECK_RANGES)
GCP_MTU = gce.MAX_MTU


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


def iap_ssh(access: AccessArgs) -> bool:
    """GCP nodes are reached through IAP TCP forwarding, so SSH must be open to IAP's range."""
    return not direct_ssh(access)


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
    egress = (_cloud_nat(parent, name, region, project, net),) if nat_egress(access) else ()
    return GcpNetwork(network=net, subnet=subnet, tag=tag, egress=egress)


def _cloud_nat(
    parent: pulumi.Resource, name: str, region: str, project: pulumi.Input[str] | None, net: gcp.compute.Network
) -> gcp.compute.RouterNat:
    """Cloud NAT for nodes without an external address: a router and its NAT."""
    opts = pulumi.ResourceOptions(parent=parent)
    router = gcp.compute.Router(
        logical(gcp.compute.Router, f"{name}-router"), project=project, network=net.id, region=region, opts=opts
    )
    return gcp.compute.RouterNat(
        logical(gcp.compute.RouterNat, f"{name}-nat"),
        project=project,
        router=router.name,
        region=region,
        nat_ip_allocate_option="AUTO_ONLY",
        source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
        opts=opts,
    )


def gcp_project(parent: pulumi.Resource, project: pulumi.Input[str] | None) -> pulumi.Output[str]:
    """The project the nodes live in: the args', else the provider's (what it creates them in)."""
    if project is not None:
        return pulumi.Output.from_input(project)
    return gcp.organizations.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=parent)).project
