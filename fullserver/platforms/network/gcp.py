"""Google Cloud's billed network (``PlatformRules.network`` of ``gcp-gpu`` and ``tpu-vm``): the
serving load balancer it builds, per-VM Tier_1 egress, and how each is priced from the network
catalog (``fullserver/catalog/data/network.yaml``): Cloud NAT per VM, a global forwarding rule and
the data it processes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fullserver.platforms.base import Line, NetworkPricer, NetworkRules

if TYPE_CHECKING:
    from fullserver.platforms.reads import SpecReads

TIER1_FAMILIES = ("n2", "n2d", "c2", "c2d", "c3")
TIER1_MIN_VCPUS = 30
"""Per-VM Tier_1 networking is only supported on N2, N2D, C2, C2D or C3 VMs with at least 30
vCPUs, and needs gVNIC. GPU series do not take it: A2, G2 and N1 with GPUs get up to 100 Gbps
by machine type over gVNIC, A3 and A4 their full bandwidth through GPU NICs."""

_VCPUS = re.compile(r"^[a-z0-9]+-(?:custom-)?[a-z]*-?(\d+)")


def machine_vcpus(machine_type: str) -> int | None:
    """vCPUs named in a machine type (``n2-standard-32`` -> 32, ``n2-custom-36-73728`` -> 36)."""
    found = _VCPUS.match(machine_type)
    return int(found.group(1)) if found else None


def tier1_eligible(machine_type: str, vcpus: int | None = None) -> bool:
    """Whether ``machine_type`` can take ``TIER_1`` egress (``TIER1_FAMILIES``): never a GPU shape."""
    if machine_type.split("-", 1)[0] not in TIER1_FAMILIES:
        return False
    count = vcpus if vcpus is not None else machine_vcpus(machine_type)
    return count is not None and count >= TIER1_MIN_VCPUS


LOAD_BALANCER_SCHEMES = ("external",)
"""Serving load balancers built here: Google's global external Application Load Balancer
(``EXTERNAL_MANAGED``; no proxy-only subnet, no proxy-instance charge). Internal Application Load
Balancers bill proxy instances, whose price the network catalog does not hold yet."""
LOAD_BALANCER = "gcp-global-external"


def billed_network(spec: SpecReads) -> dict[str, Any]:
    """Google Cloud's part of the billed network (``fullserver.billables``): Tier_1 only where
    Compute Engine accepts it, and only for multi-node environments, where node-to-node bandwidth
    is what the profile pays for."""
    return {"tier1": spec.nodes > 1 and tier1_eligible(spec.machine_type, spec.vcpus)}


def nat_line(pricer: NetworkPricer, machines: int, zones: int) -> Line | None:
    """Cloud NAT, billed per VM using it (up to the gateway's limit); its data is not estimated."""
    rate = pricer.hourly("cloud-nat-vm", "Cloud NAT")
    limit = pricer.price("cloud-nat-vm")
    most = limit.max_units if limit is not None else None
    if rate is None:
        return None
    if most is not None and machines > most:
        pricer.warnings.append(f"Cloud NAT for {machines} VMs: the network catalog prices gateways of up to {most}")
        return None
    data = pricer.price("cloud-nat-data")
    per_gb = f"; {data.usd_per_gb}/{data.unit} processed (image and model pulls) not estimated" if data else ""
    cited = f" (catalog: {limit.source})" if limit is not None else ""
    return "Cloud NAT", rate * machines * pricer.hours, f"{machines} VM(s) x {rate}/h{per_gb}{cited}"


FORWARDING_RULES_BILLED_TOGETHER = 5
"""Cloud Load Balancing bills a project's first five forwarding rules together at the
``forwarding-rule`` rate, each further one apart (network catalog source ``gcp-lb-pricing``)."""


def forwarding_rule_line(pricer: NetworkPricer, gb: float, what: Callable[[float], str]) -> Line | None:
    """A load balancer billed as forwarding rules at the ``forwarding-rule`` rate (``what`` says
    which, given the rate) plus the data it processes: the VM path's global external load balancer
    and a node pool's regional passthrough NLB alike."""
    rate = pricer.hourly("forwarding-rule", "forwarding rule")
    if rate is None:
        return None
    rules_note = what(rate)
    data = pricer.price("lb-data")
    if data is None:
        pricer.warnings.append(f"no load-balancer data price for {pricer.region}: data processed not priced")
        return "load balancer", rate * pricer.hours, f"{rules_note} (data not priced)"
    note = f"{rules_note} + {gb:.0f} GB processed x {data.usd_per_gb}/{data.unit}"
    return "load balancer", rate * pricer.hours + gb * data.usd_per_decimal_gb, note


def lb_line(pricer: NetworkPricer, gb: float, rules: int = 1) -> Line | None:
    """The global forwarding rules (1, or 2 with HTTPS: 443 and the port-80 redirect, on one
    reserved address). Up to five rules cost the one rate; a project's other rules are not this
    environment's and are not counted."""
    if rules == 1:
        return forwarding_rule_line(pricer, gb, lambda rate: f"1 global forwarding rule x {rate}/h")
    what = f"{rules} global forwarding rules (HTTPS, HTTP redirect)"
    return forwarding_rule_line(pricer, gb, lambda rate: f"{what}: the first 5 billed together at {rate}/h")


NETWORK = NetworkRules(
    load_balancer=LOAD_BALANCER,
    load_balancer_schemes=LOAD_BALANCER_SCHEMES,
    health_check_item="health-check",
    spot_node_ip_item="public-ipv4-spot",  # a spot VM's address is billed at its own rate
    layout=billed_network,
    nat_line=nat_line,
    lb_line=lb_line,
)
