"""The GPU NICs of multi-node A3/A4 environments (``fullserver.platforms.gcp.GPU_NIC_PLANS``): the
networks each NIC is on, as Google's A3/A4 guides describe them."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_gcp as gcp

from components.gcp.args import GcpGpuArgs
from components.gcp.network import gcp_project
from components.names import logical
from fullserver.platforms import gcp as gce
from fullserver.platforms.gcp import GpuNicPlan

GPU_SUBNET = "192.168.{}.0/24"
"""GPU NIC subnets (one per NIC, as in Google's guides); clear of the primary 10.64.0.0/20."""
HOST_SUBNET = "10.65.{}.0/20"
"""Subnets of the extra host gVNICs (A3 Ultra / A4)."""


def gpu_nic_plan(args: GcpGpuArgs) -> GpuNicPlan | None:
    """The GPU NICs this environment builds: its shape's plan, for multi-node environments only."""
    return gce.gpu_nic_plan(args["machine_type"], args["nodes"])


def gpu_nics(
    parent: pulumi.Resource,
    name: str,
    plan: GpuNicPlan,
    *,
    region: str,
    zone: str,
    project: pulumi.Input[str] | None,
) -> list[Any]:
    """The networks of ``plan`` (module table) and the NICs every node adds on them, after its primary.

    GPUDirect-TCPX/TCPXO: one VPC network per GPU NIC, each with its subnet and a firewall rule
    that opens it to itself (the nodes' NICs on that rail). RDMA: extra host gVNICs on regular
    networks like the TCPX ones, and ONE RoCE network with a subnet per MRDMA NIC; RoCE networks
    allow all ingress implicitly and take no firewall rules.
    """
    opts = pulumi.ResourceOptions(parent=parent)
    nics: list[Any] = []

    def subnetted(prefix: str, cidr: str, network: gcp.compute.Network) -> gcp.compute.Subnetwork:
        return gcp.compute.Subnetwork(
            logical(gcp.compute.Subnetwork, f"{prefix}-subnet"),
            project=project,
            network=network.id,
            region=region,
            ip_cidr_range=cidr,
            opts=opts,
        )

    def own_network(prefix: str, cidr: str, nic_type: str, mtu: int) -> None:
        network = gcp.compute.Network(
            logical(gcp.compute.Network, f"{prefix}-net"),
            project=project,
            auto_create_subnetworks=False,
            mtu=mtu,
            description=f"fullserver environment {name}: {plan.fabric}",
            opts=opts,
        )
        subnet = subnetted(prefix, cidr, network)
        gcp.compute.Firewall(
            logical(gcp.compute.Firewall, f"{prefix}-internal"),
            project=project,
            network=network.id,
            direction="INGRESS",
            source_ranges=[cidr],
            allows=[{"protocol": "tcp"}, {"protocol": "udp"}, {"protocol": "icmp"}],
            description=f"node-to-node {plan.fabric} traffic inside the environment",
            opts=opts,
        )
        nics.append({"network": network.id, "subnetwork": subnet.id, "nic_type": nic_type})

    for i in range(1, plan.host_nics):
        own_network(f"{name}-host{i}", HOST_SUBNET.format(16 * i), "GVNIC", gce.MAX_MTU)
    if not plan.rdma:
        for i in range(plan.gpu_nics):
            own_network(f"{name}-gpu{i}", GPU_SUBNET.format(i), plan.nic_type, plan.mtu)
        return nics
    proj = gcp_project(parent, project)
    roce = gcp.compute.Network(
        logical(gcp.compute.Network, f"{name}-roce-net"),
        project=project,
        auto_create_subnetworks=False,
        mtu=plan.mtu,
        network_profile=pulumi.Output.concat("projects/", proj, "/global/networkProfiles/", zone, "-vpc-roce"),
        description=f"fullserver environment {name}: {plan.fabric}",
        opts=opts,
    )
    for i in range(plan.gpu_nics):
        subnet = subnetted(f"{name}-roce{i}", GPU_SUBNET.format(i), roce)
        nics.append({"network": roce.id, "subnetwork": subnet.id, "nic_type": plan.nic_type})
    return nics
