"""The billed network of Kubernetes node pools (``PlatformRules.network`` of ``gke-gpu``, ``gke-tpu``
and ``eks-gpu``): the nodes' NAT is their VM platform's (``network.gcp`` / ``network.aws``); the
serving load balancer is the one a ``LoadBalancer`` Service gets (``fullserver.kube.serve``):
see the design notes.

Design notes: docs/design/platforms.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fullserver.platforms.base import Line, NetworkPricer, NetworkRules
from fullserver.platforms.network import aws as aws_network
from fullserver.platforms.network import gcp as gcp_network

if TYPE_CHECKING:
    from fullserver.platforms.reads import SpecReads

LOAD_BALANCER_SCHEMES = ("internal", "external")
"""Both clouds' LoadBalancer Services are built internal or external (``fullserver.kube.serve``)."""
GKE_LOAD_BALANCER = "gke-passthrough-nlb"
EKS_LOAD_BALANCER = "nlb"
NLB_ZONES = 3
"""The zones an internet-facing NLB holds an address in: the controller takes one public subnet per
zone, and a created cluster has public subnets in ``eks.CLUSTER_ZONES`` (3) zones; for an attached
cluster, whose subnets the plan cannot see, fullserver assumes the same three."""


def gke_layout(spec: SpecReads) -> dict[str, Any]:
    """A passthrough NLB's address is the forwarding rule's: nothing billed apart."""
    return {}


def eks_layout(spec: SpecReads) -> dict[str, Any]:
    """An internet-facing NLB's public IPv4 addresses, one per zone."""
    scheme = spec.endpoint.load_balancer if spec.endpoint else spec.serving.load_balancer if spec.serving else ""
    return {"lb_public_ips": NLB_ZONES if scheme == "external" else 0}


def gke_lb_line(pricer: NetworkPricer, gb: float, rules: int = 1) -> Line | None:
    """One regional forwarding rule and the data the load balancer processes; with HTTPS (``rules``
    2, ``cost.network_lines``) the Gateway's global external Application Load Balancer
    (``fullserver.platforms.gke_gateway``): one global forwarding rule on 443 (no HTTP listener),
    at the same rate and data price (the same pricing tables), the VM path's load balancer."""
    if rules > 1:
        return gcp_network.forwarding_rule_line(
            pricer, gb, lambda rate: f"Gateway (global external ALB): 1 global forwarding rule x {rate}/h"
        )
    return gcp_network.forwarding_rule_line(
        pricer, gb, lambda rate: f"passthrough NLB: 1 regional forwarding rule x {rate}/h"
    )


def eks_lb_line(pricer: NetworkPricer, gb: float, listeners: int = 1) -> Line | None:
    """A Network Load Balancer; ``listeners`` 2 is HTTPS (``cost.network_lines``), a TLS listener
    here, whose NLCUs also count TLS connections (the ELB pricing page's TLS NLCU: 50 new and 3,000
    active TLS connections, 1 GB an hour)."""
    tls = "; TLS listener: NLCUs also count TLS connections (50 new/s, 3,000 active each), not estimated"
    return aws_network.balancer_line(pricer, gb, "nlb", "Network Load Balancer", "NLCU", tls if listeners > 1 else "")


GKE_NETWORK = NetworkRules(
    load_balancer=GKE_LOAD_BALANCER,
    load_balancer_schemes=LOAD_BALANCER_SCHEMES,
    health_check_item=gcp_network.NETWORK.health_check_item,
    spot_node_ip_item=gcp_network.NETWORK.spot_node_ip_item,
    layout=gke_layout,
    nat_line=gcp_network.nat_line,
    lb_line=gke_lb_line,
)
EKS_NETWORK = NetworkRules(
    load_balancer=EKS_LOAD_BALANCER,
    load_balancer_schemes=LOAD_BALANCER_SCHEMES,
    health_check_item="nlb-health-check",
    spot_node_ip_item=aws_network.NETWORK.spot_node_ip_item,
    layout=eks_layout,
    nat_line=aws_network.nat_line,
    lb_line=eks_lb_line,
)
