"""Policy ``monthly-budget`` (stack) and the policy-time estimate it holds to ``maxMonthlyUsd``.

A guard against the expensive typo (nodes: 20, p5 instead of g5), before anything is created. The
estimate is deliberately simple and errs high: the catalog's list price of every machine the stack
runs, always on (``fullserver.rules.HOURS_PER_MONTH``), plus the disks it creates and its serving load
balancers' hours (an ALB, Google's forwarding rules, or the load balancer a node pool's LoadBalancer
Service makes: ``load_balancers``), each at the network catalog's dearest listed rate; ``fullserver
plan`` gives the full estimate. A machine the catalog cannot price fails the budget closed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyResource,
    ReportViolation,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from fullserver.catalog import Price
from fullserver.catalog.network import Item, load_network_prices
from fullserver.rules import HOURS_PER_MONTH, MAX_HOURS_PER_MONTH, disk_usd_month
from policy.clouds import readers
from policy.nodes import Disk, Node
from policy.offers import catalog
from policy.resources import describe, number, truthy
from policy.stack_nodes import DISK_READERS, accelerator_nodes


def _prices(node: Node) -> dict[str, Price]:
    """The node's prices per region: its offer's, else a CPU-only machine type's (a created
    cluster's system pool: ``Catalog.machine_prices``, never an offer); none is a shape the
    catalog does not list."""
    if node.offer is not None:
        return node.offer.prices
    prices = catalog().machine_prices.get(node.shape)
    if prices is None:
        raise LookupError(node.why_unpriced or f"{node.shape} is not in fullserver's catalog")
    return prices


def _hourly(name: str, prices: dict[str, Price], region: str | None, spot: bool) -> tuple[float, str]:
    """The catalog's hourly price; an unknown region takes the dearest listed one (a guard errs high)."""
    price = prices.get(region or "")
    note = ""
    if price is None:
        if not prices:
            raise LookupError(f"{name} has no price in the catalog")
        price = max(prices.values(), key=lambda p: p.on_demand)
        note = f" (not priced in {region or 'an unknown region'}: {price.region} price)"
    if spot and price.spot is not None:
        return price.spot, "spot" + note
    return price.on_demand, "on-demand" + note


def _disk_month(disk: Disk, region: str | None) -> float | None:
    """A disk's monthly price by the core's formula at the catalog's storage price (the dearest
    region's where its own is not listed); ``None`` for a kind the catalog does not price."""
    cat = catalog()
    price = cat.storage_price(disk.provider, disk.kind, region or "")
    if price is None:
        same = [p for p in cat.storage_prices if (p.provider, p.kind) == (disk.provider, disk.kind)]
        if not same:
            return None
        price = max(same, key=lambda p: p.usd_gib_month)
    return disk_usd_month(price, disk.gib, disk.iops, disk.mbps)


@dataclass
class Estimate:
    """A policy-time monthly estimate from the resources alone (not ``fullserver plan``'s full cost)."""

    usd_month: float = 0.0
    items: list[tuple[float, str]] = field(default_factory=list)
    unpriced: list[str] = field(default_factory=list)
    """Everything left out of ``usd_month``: compute, disks of unlisted kinds, values unknown in preview."""
    unpriced_compute: list[str] = field(default_factory=list)
    """Machines left out (a type the catalog does not list or price): the budget check fails closed on them."""

    def add(self, usd: float, item: str) -> None:
        self.usd_month += usd
        self.items.append((usd, item))


def estimate_month(resources: Sequence[PolicyResource], hours: float = HOURS_PER_MONTH) -> Estimate:
    """Catalog list price of every accelerator machine x ``hours``, plus the disks the stack creates."""
    est = Estimate()
    nodes, skipped = accelerator_nodes(resources)
    est.unpriced.extend(skipped)
    for node in nodes:
        if node.count <= 0:
            continue  # a template nothing launches: no machines, no cost
        what = describe(node.resource.resource_type, node.resource.name)
        try:
            prices = _prices(node)
            od_rate, od_note = _hourly(node.shape, prices, node.region, False)
            spot_rate, spot_note = _hourly(node.shape, prices, node.region, True)
        except LookupError as exc:
            entry = f"{what}: {node.count:g} x {node.shape} ({exc})"
            est.unpriced.append(entry)
            est.unpriced_compute.append(entry)
            continue
        on_demand = node.count - node.spot_count
        usd = (on_demand * od_rate + node.spot_count * spot_rate) * hours
        kinds = " + ".join(
            f"{n:g} x {node.shape} {note} ${rate:,.2f}/h"
            for n, rate, note in ((on_demand, od_rate, od_note), (node.spot_count, spot_rate, spot_note))
            if n > 0
        )
        est.add(usd, f"{what}: {kinds}")
        for inline in node.disks:
            month = _disk_month(inline, node.region)
            copies = node.count * inline.count
            if month is None:
                est.unpriced.append(f"{what}: {inline.kind} disk")
            elif month:
                est.add(month * copies, f"{what}: {copies:g} x {inline.gib:g} GiB {inline.kind}")
    for r in resources:
        read = DISK_READERS.get(r.resource_type)
        if read is None:
            continue
        disk, region = read(r)
        month = _disk_month(disk, region)
        if month is None:
            est.unpriced.append(f"{describe(r.resource_type, r.name)}: {disk.kind}")
        else:
            est.add(month, f"{describe(r.resource_type, r.name)}: {disk.gib:g} GiB {disk.kind}")
    _add_load_balancers(est, resources, hours)
    return est


CONFIG_GROUP = "kubernetes:yaml/v2:ConfigGroup"


def _lb_services(objs: Any) -> list[tuple[str, str, Item]]:
    """(what, provider, item) of a node pool's load balancers (``fullserver.kube.serve``): a
    LoadBalancer Service bills on the cloud whose annotation it carries, else on the cloud that
    needs none (GKE's passthrough NLB); a Gateway (GKE's HTTPS Gateway) where a cloud bills one
    (each cloud's policy reader, ``policy.clouds``)."""
    found: list[tuple[str, str, Item]] = []
    for obj in objs if isinstance(objs, list) else []:
        if not isinstance(obj, dict):
            continue
        if obj.get("kind") == "Gateway":
            found += [("Gateway", rd.KEY, rd.GATEWAY_ITEM) for rd in readers() if rd.GATEWAY_ITEM]
        if obj.get("kind") != "Service" or (obj.get("spec") or {}).get("type") != "LoadBalancer":
            continue
        keys = [str(k) for k in (obj.get("metadata") or {}).get("annotations") or {}]
        claims = [
            rd for rd in readers() if rd.SERVICE_ANNOTATION and any(k.startswith(rd.SERVICE_ANNOTATION) for k in keys)
        ]
        owner = next(iter(claims), None) or next((rd for rd in readers() if not rd.SERVICE_ANNOTATION), None)
        if owner is not None:
            found.append(("LoadBalancer Service", owner.KEY, owner.SERVICE_ITEM))
    return found


def load_balancers(resources: Sequence[PolicyResource]) -> list[tuple[str, str, Item]]:
    """(what, provider, network item) of each load balancer the stack's resources make, as each
    cloud's policy reader bills them (Google's forwarding rules up to five once: billed together)."""
    bills = {t: (rd.KEY, bill) for rd in readers() for t, bill in rd.LOAD_BALANCERS.items()}
    seen: Counter[str] = Counter()
    out: list[tuple[str, str, Item]] = []
    for r in resources:
        what = describe(r.resource_type, r.name)
        if r.resource_type in bills:
            provider, bill = bills[r.resource_type]
            item = bill(r, seen)
            if item is not None:
                out.append((what, provider, item))
        elif r.resource_type == CONFIG_GROUP:
            out.extend(
                (f"{what}: {kind}", provider, item) for kind, provider, item in _lb_services(r.props.get("objs"))
            )
    return out


def _add_load_balancers(est: Estimate, resources: Sequence[PolicyResource], hours: float) -> None:
    prices = load_network_prices()
    for what, provider, item in load_balancers(resources):
        price = prices.dearest(provider, item)
        if price is None or price.usd_hour is None:
            est.unpriced.append(f"{what}: {item}")
        else:
            est.add(price.usd_hour * hours, f"{what}: {item} ${price.usd_hour}/h")


def check_budget(args: StackValidationArgs, report: ReportViolation) -> None:
    """A guard against the expensive typo (nodes: 20, p5 instead of g5): the stack's machines at list
    price must fit the platform team's monthly budget before anything is created. A machine whose
    type the catalog cannot price fails it too (20 x p3dn.24xlarge is not $0), unless the config
    says ``allowUnpriced``: then the priced part alone is held to the budget."""
    config = args.get_config()
    budget = number(config.get("maxMonthlyUsd"))
    if budget is None:
        args.not_applicable("no maxMonthlyUsd configured for monthly-budget")
        return
    hours = number(config.get("hoursPerMonth")) or HOURS_PER_MONTH
    est = estimate_month(args.resources, hours)
    if est.unpriced_compute and not truthy(config.get("allowUnpriced", False)):
        report(
            f"cannot price {len(est.unpriced_compute)} compute resource(s), so the stack cannot be shown to fit "
            f"maxMonthlyUsd ${budget:,.0f} (the priced part is ${est.usd_month:,.0f}/month): "
            f"{'; '.join(est.unpriced_compute)}. Fix: use a shape fullserver's catalog lists (`fullserver catalog`), "
            "add the type with its prices to the catalog (fullserver/catalog/data/), or set allowUnpriced: true in "
            "the monthly-budget policy config to hold only the priced part to the budget.",
            None,
        )
    if est.usd_month <= budget:
        return
    top = "; ".join(item for _, item in sorted(est.items, key=lambda i: -i[0])[:3])
    left_out = f" Not priced: {'; '.join(est.unpriced)}." if est.unpriced else ""
    report(
        f"policy-time estimate ${est.usd_month:,.0f}/month exceeds maxMonthlyUsd ${budget:,.0f} "
        f"(catalog list prices x {hours:g} h, always on, plus disks and load balancers' hours; excludes egress, "
        "load-balancer data, NAT, IPs, idle-time savings "
        f"and commitment discounts). Largest: {top}.{left_out} Fix: a smaller shape or fewer nodes/replicas, a spot "
        "profile for interruptible work, or raise maxMonthlyUsd in the policy config; `fullserver plan` shows the "
        "full estimate.",
        None,
    )


POLICY = StackValidationPolicy(
    name="monthly-budget",
    description=f"The stack's policy-time monthly estimate (catalog list prices x {HOURS_PER_MONTH:g} h, plus disks "
    "and load balancers) "
    "is under maxMonthlyUsd.",
    validate=check_budget,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.MEDIUM,
    config_schema=PolicyConfigSchema(
        properties={
            "maxMonthlyUsd": {"type": "number", "minimum": 0, "description": "Monthly budget per stack in USD."},
            "hoursPerMonth": {
                "type": "number",
                "minimum": 1,
                "maximum": MAX_HOURS_PER_MONTH,
                "default": HOURS_PER_MONTH,
                "description": "Hours each machine is assumed to run per month.",
            },
            "allowUnpriced": {
                "type": "boolean",
                "default": False,
                "description": "Pass a stack whose priced part fits even when some machines' types are not in "
                "the catalog (by default such a stack fails: it cannot be shown to fit).",
            },
        }
    ),
)
