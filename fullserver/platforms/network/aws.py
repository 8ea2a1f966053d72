"""AWS's billed network (``PlatformRules.network`` of ``aws-gpu``): the serving load balancer it
builds, the zones its subnets span, the CloudWatch alarms, and how each is priced from the network
catalog (``fullserver/catalog/data/network.yaml``): one NAT gateway with its Elastic IP, an
Application Load Balancer with its LCUs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fullserver.platforms.base import Line, NetworkPricer, NetworkRules

if TYPE_CHECKING:
    from fullserver.platforms.reads import SpecReads

LOAD_BALANCER_SCHEMES = ("internal", "external")
"""Serving load balancers built here: an Application Load Balancer, internet-facing or internal."""
LOAD_BALANCER = "alb"
LB_MIN_ZONES = 2
"""An Application Load Balancer needs subnets in at least two Availability Zones (ELB "Application
Load Balancers", subnets)."""
SERVING_ZONES = 3
"""A serving group that spreads across zones spans three (most regions have three or more)."""


def billed_network(spec: SpecReads) -> dict[str, Any]:
    """AWS's part of the billed network (``fullserver.billables``): the zones the subnets span,
    the internet-facing ALB's addresses (one per zone) and the CloudWatch alarms."""
    # the spot group's fallback alarm (components.aws.spot), two per target-tracking policy
    alarms = 1 if spec.spot and spec.serving is None else 0
    zones, lb_ips = 1, 0
    if spec.serving is not None:
        scheme = spec.endpoint.load_balancer if spec.endpoint else spec.serving.load_balancer
        zones = SERVING_ZONES if spec.serving.spread_zones else LB_MIN_ZONES
        lb_ips = zones if scheme == "external" else 0
        alarms += 2
    elif spec.spot and not spec.network.compact_placement and not spec.network.efa_interfaces:
        # A spot group launches in whichever zone has spare capacity: subnets in every zone that
        # offers the type (up to SERVING_ZONES) widen its pools (a cluster placement group keeps
        # one, and so does EFA, whose OS-bypass traffic never leaves its subnet: AWS EFA guide).
        zones = SERVING_ZONES
    return {"alarms": alarms, "zones": zones, "lb_public_ips": lb_ips}


def nat_line(pricer: NetworkPricer, machines: int, zones: int) -> Line | None:
    """One NAT gateway with its Elastic IP; the data it processes is not estimated."""
    rate = pricer.hourly("nat-gateway", "NAT gateway")
    if rate is None:
        return None
    data = pricer.price("nat-gateway-data")
    if zones > 1:
        # One gateway lives in one zone: its outage cuts every other zone's egress.
        pricer.warnings.append(
            f"one NAT gateway serves subnets in {zones} zones: if its zone fails, nodes in the others "
            f"lose internet egress (image pulls; Session Manager on VM nodes); a gateway per zone would cost "
            f"{rate * pricer.hours * (zones - 1):,.2f} USD/month more"
        )
    per_gb = f"; {data.usd_per_gb}/GB processed (image and model pulls) not estimated" if data else ""
    gateway = pricer.price("nat-gateway")
    cited = f" (catalog: {gateway.source})" if gateway is not None else ""
    return "NAT gateway", rate * pricer.hours, f"1 x {rate}/h{per_gb}{cited}"


def balancer_line(pricer: NetworkPricer, gb: float, item: str, name: str, unit: str, extra: str = "") -> Line | None:
    """An Elastic Load Balancer (``item`` ``alb`` or ``nlb``): its hours and the capacity units
    (``unit``: LCU, NLCU; network item ``<item>-lcu``) of the GB it processes; ``extra`` ends the
    priced note. The ALB of the VM path and the NLB of a node pool's Service are billed alike."""
    rate = pricer.hourly(item, name)
    if rate is None:
        return None
    short = item.upper()
    price = pricer.price(f"{item}-lcu")
    if price is not None and price.usd_hour is not None and price.gb_per_unit_hour:
        units = gb / price.gb_per_unit_hour
        note = f"{short} {rate}/h + {gb:.0f} GB processed = {units:.0f} {unit}-hours x {price.usd_hour}{extra}"
        return "load balancer", rate * pricer.hours + units * price.usd_hour, note
    pricer.warnings.append(f"no {short} {unit} price for {pricer.region} in the network catalog: {unit}s not priced")
    return "load balancer", rate * pricer.hours, f"{short} {rate}/h ({unit}s not priced)"


def lb_line(pricer: NetworkPricer, gb: float, listeners: int = 1) -> Line | None:
    """An Application Load Balancer. Its listeners are not billed apart (an HTTPS listener and the
    HTTP redirect cost nothing more)."""
    return balancer_line(pricer, gb, "alb", "Application Load Balancer", "LCU")


NETWORK = NetworkRules(
    load_balancer=LOAD_BALANCER,
    load_balancer_schemes=LOAD_BALANCER_SCHEMES,
    health_check_item="alb-health-check",
    spot_node_ip_item="public-ipv4",  # AWS bills a spot instance's address as any other
    layout=billed_network,
    nat_line=nat_line,
    lb_line=lb_line,
)
