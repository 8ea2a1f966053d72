"""Cost beyond the hourly price: compute by pricing model, storage, data transfer, idle capacity
and commitment terms, per hour and per month.

Idle capacity is priced explicitly: ``hours_per_month`` are the productive hours a workload needs;
on pay-as-you-go capacity the paid hours are those divided by ``1 - idle_share`` (the time a
machine sits up but unused), while reserved and dedicated capacity is paid for every hour of the
month whether used or not. The difference shows as its own "idle" line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from fullserver.billables import decide
from fullserver.catalog import Catalog, Same
from fullserver.catalog.model import Platform
from fullserver.catalog.network import NetworkPrice, NetworkPrices, load_network_prices
from fullserver.catalog.staleness import CONTRACT, UsedPrice, egress_read, network_read, storage_read
from fullserver.comparable import DEDICATED
from fullserver.hourly import hourly_rate, units_billed
from fullserver.kube.cost import kube_cost
from fullserver.platforms import rules_for
from fullserver.profiles import PricingModel, Profile
from fullserver.rules import HOURS_PER_MONTH, disk_usd_month
from fullserver.spec import Billables, EnvironmentSpec
from fullserver.workload import Workload

__all__ = [
    "HOURS_PER_MONTH",
    "CostEstimate",
    "CostLine",
    "estimate",
    "estimate_at_minimum",
    "network_lines",
    "pricing_basis",
]


@dataclass(frozen=True, slots=True)
class CostLine:
    """One line of the bill. A plain dataclass, not a model: an estimate makes a dozen, each from
    values the estimate computed itself (nothing to validate), and a model cost twice as much to
    build; ``CostEstimate`` dumps its fields in order, as a model's would be."""

    item: str
    usd_month: float
    note: str = ""
    prices: Annotated[tuple[UsedPrice, ...], Field(exclude=True)] = ()
    """The catalog entries the line read, as each look-up recorded them: the one rule of
    ``fullserver.catalog.staleness`` judges every one's age. Excluded from the plan's JSON."""


class CostEstimate(BaseModel):
    model_config = ConfigDict(frozen=True)

    platform: Platform
    offer: str
    region: str
    pricing: PricingModel
    basis: str = Field(exclude=True)
    """The pricing model the compute is priced on, as comparisons label it: the hourly rate's
    (``Rate.basis``), or ``dedicated monthly`` for a contract. Excluded from the plan's JSON."""
    compute_usd_hour: float
    paid_hours: float
    productive_hours: float
    lines: list[CostLine]
    warnings: list[str] = []
    usd_month_peak: float | None = None
    """A serving group that can grow past its minimum: the month with every replica up to its
    maximum (the lines price the minimum). Budgets are held to this, the most the stack can
    spend, not to the quiet month."""
    peak_replicas: int | None = None
    peak_what: str = ""
    """What the peak month is, in words: "at 8 replicas", "with the on-demand fallback running
    beside every spot node" (a spot fallback, ``Rate.peak_usd``), "with every node pool at its
    maximum", or on the balanced set's dearest member (``CapacitySet.peak_usd_hour``)."""
    unpriced: list[str] = []
    """Items the environment pays for that the catalog has no price for (e.g. "boot disk
    (1200 GiB hyperdisk-balanced)"). They are not in ``lines`` and never count as $0: the total is
    then a lower bound (``complete`` is False), and a comparison must not rank it as a price."""

    @property
    def complete(self) -> bool:
        """Every billed item is priced, so ``usd_month`` is the total, not a lower bound."""
        return not self.unpriced

    @property
    def usd_month(self) -> float:
        """The sum of the priced lines: the whole cost only when ``complete``."""
        return _total(self.lines)

    @property
    def usd_month_at_most(self) -> float:
        """The most a month can cost: the peak where the group scales, else the total."""
        return self.usd_month_peak if self.usd_month_peak is not None else self.usd_month

    @property
    def usd_hour(self) -> float:
        """Per wall-clock hour of the month: everything, spread over 730 hours."""
        return round(self.usd_month / HOURS_PER_MONTH, 4)

    @property
    def usd_per_productive_hour(self) -> float:
        return round(self.usd_month / self.productive_hours, 4) if self.productive_hours else 0.0


def _total(lines: list[CostLine]) -> float:
    """What the priced lines add up to (``CostEstimate.usd_month``)."""
    return round(sum([line.usd_month for line in lines]), 2)


def _hours(profile: Profile, workload: Workload) -> tuple[float, float]:
    productive = workload.hours_per_month or profile.cost.hours_per_month
    if profile.pricing in (PricingModel.RESERVED, PricingModel.DEDICATED_MONTHLY):
        return productive, HOURS_PER_MONTH
    paid = min(HOURS_PER_MONTH, productive / (1 - profile.cost.idle_share))
    return productive, paid


def _compute_hourly(
    spec: EnvironmentSpec, profile: Profile, catalog: Catalog, warnings: list[str]
) -> tuple[float, str, str, float | None, tuple[UsedPrice, ...]]:
    """The compute rate of the whole environment: the rate sizing ranked the shape by
    (``fullserver.hourly``), times the nodes and replicas it runs (a slice is priced whole), its
    note, its pricing basis, the most an hour can cost where that is more (``Rate.peak_usd``), and
    the entries the rate read."""
    offer = catalog.offer(spec.offer)
    assert offer is not None, spec.offer
    units = units_billed(spec.platform, spec.nodes, spec.replicas)
    rate = hourly_rate(offer, spec.region, profile, catalog, spec.platform)
    if rate.warning:
        warnings.append(rate.warning)
    peak = rate.peak_usd * units if rate.peak_usd is not None else None
    held = spec.capacity.peak_usd_hour if spec.capacity is not None else None
    if held is not None and held * units > max(peak or 0.0, rate.usd * units):
        peak = held * units  # the balanced set's dearest member (fullserver.capacity.peak_usd_hour)
    return rate.usd * units, f"{rate.note} x {units}", rate.basis, peak, rate.prices


def _storage_lines(
    spec: EnvironmentSpec, catalog: Catalog, share: float, warnings: list[str], unpriced: list[str] | None = None
) -> list[CostLine]:
    """Boot, data and local disks; a kind without a price is named in ``unpriced`` and warned
    about, never priced at $0."""
    lines: list[CostLine] = []
    provider = spec.provider
    machines = spec.machines
    rules = rules_for(spec.platform)
    disks: list[tuple[str, str, float, int, int]] = []
    if rules.boot_disk_sized:
        disks.append(("boot disk", spec.boot_disk_kind, spec.boot_disk_gib * machines, 0, 0))
    if spec.data_disk:
        d = spec.data_disk
        item = "data volumes" if spec.kube is not None else "data disk"  # a node pool's: one per pod
        disks.append(
            (item, d.kind, d.size_gib * machines, (d.iops or 0) * machines, (d.throughput_mbps or 0) * machines)
        )
    if rules.local_ssd_price_kind and spec.local_nvme_disks:
        local = spec.local_nvme_disks * spec.local_nvme_disk_gib * machines
        disks.append(("local SSD", rules.local_ssd_price_kind, local, 0, 0))
    for item, kind, gib, iops, mbps in disks:
        price = catalog.storage_price(provider, kind, spec.region)
        if price is None:
            warnings.append(
                f"no {kind} price for {spec.region} in the catalog: {item} ({gib:.0f} GiB) not priced; "
                "the total leaves it out and is a lower bound"
            )
            if unpriced is not None:
                unpriced.append(f"{item} ({gib:.0f} GiB {kind})")
            continue
        usd = disk_usd_month(price, gib, iops, mbps, disks=machines)
        read = (storage_read(provider, kind, spec.region, price.source),)
        lines.append(CostLine(item=item, usd_month=round(usd * share, 2), note=f"{gib:.0f} GiB {kind}", prices=read))
    return lines


def pricing_basis(spec: EnvironmentSpec, profile: Profile, catalog: Catalog) -> str:
    """The pricing model ``estimate`` prices ``spec``'s compute on (``CostEstimate.basis``), known
    without the estimate: a comparison decides from every row's basis which model it prices all of
    them on, before it prices any."""
    if not rules_for(spec.platform).supply.from_catalog:
        return DEDICATED
    offer = catalog.offer(spec.offer)
    assert offer is not None, spec.offer
    return hourly_rate(offer, spec.region, profile, catalog, spec.platform).basis


def estimate(spec: EnvironmentSpec, profile: Profile, workload: Workload, catalog: Catalog) -> CostEstimate:
    """The monthly and hourly cost of one environment spec, and the most a month can cost where
    that is more (``usd_month_peak``): a serving group at its maximum replicas, else every paid
    hour at the peak hour ``estimate_at_minimum`` finds."""
    cost = estimate_at_minimum(spec, profile, workload, catalog)
    serving = spec.serving
    if serving is not None and serving.max_replicas > serving.min_replicas:
        # The billed network is decided afresh at the maximum: Cloud NAT is billed per VM and each
        # node's address per hour, so the spec's own (decided at the minimum) would undercount it.
        most = serving.model_copy(update={"min_replicas": serving.max_replicas})
        at_max = spec.model_copy(update={"serving": most, "billables": None})
        peak = estimate_at_minimum(at_max, profile, workload, catalog)
        return cost.model_copy(
            update={
                "usd_month_peak": peak.usd_month,
                "peak_replicas": serving.max_replicas,
                "peak_what": f"at {serving.max_replicas} replicas",
            }
        )
    return cost


_CONTRACT = (UsedPrice("dedicated contract", CONTRACT),)
"""A declared server's lines: priced by the stack's own contract, not the catalog."""


def _contract_lines(spec: EnvironmentSpec, workload: Workload, productive: float, lines: list[CostLine]) -> float:
    """Declared servers priced by their contract: the servers, egress over the allowance and the
    setup fee, added to ``lines``; the compute cost an hour."""
    ded = spec.dedicated
    assert ded is not None
    servers = spec.nodes
    compute_hour = ded.monthly_usd * servers / HOURS_PER_MONTH
    lines.append(
        CostLine(
            item="dedicated servers",
            usd_month=round(compute_hour * productive, 2),
            note=f"{servers} x {ded.monthly_usd:.0f}/month",
            prices=_CONTRACT,
        )
    )
    billable = max(0.0, workload.egress_gb_month - ded.included_egress_gb_month)
    if billable:
        lines.append(
            CostLine(
                item="data transfer",
                usd_month=round(billable * ded.egress_usd_per_gb, 2),
                note=f"{billable:.0f} GB over the included allowance",
                prices=_CONTRACT,
            )
        )
    if ded.setup_usd:
        lines.append(CostLine("setup fee (over 12 months)", round(ded.setup_usd / 12, 2), prices=_CONTRACT))
    return compute_hour


def _kube_lines(
    spec: EnvironmentSpec,
    profile: Profile,
    catalog: Catalog,
    lines: list[CostLine],
    compute_hour: float,
    peak_hour: float | None,
    compute_prices: tuple[UsedPrice, ...],
    share: float,
    unpriced: list[str],
) -> float | None:
    """A node-pool platform's cluster fee and a created cluster's system pool and its boot disks,
    and its pools' range (``fullserver.kube.cost``), added to ``lines``; the peak hour with every
    pool at its maximum where that is more. The cluster's parts run whatever the pools do, for as
    long as the stack lives: ``share`` of the month, as its NAT and the VMs' disks (all month for a
    persistent profile, the paid hours for an ephemeral one, whose cluster goes with the stack)."""
    assert spec.kube is not None
    pools = kube_cost(spec.kube, spec, profile, catalog)
    cluster = pools.cluster
    hours = HOURS_PER_MONTH * share
    when = "all month" if share == 1.0 else f"{hours:.0f} h: the stack's paid hours"
    fee_note = f"{cluster.note}, {when}" if cluster.usd_hour else cluster.note
    usd = round(cluster.usd_hour * hours, 2)
    lines.append(CostLine(item="cluster fee", usd_month=usd, note=fee_note, prices=cluster.prices))
    if cluster.system_note:
        note = f"{cluster.system_note}, {when}"
        usd = round(cluster.system_usd_hour * hours, 2)
        lines.append(CostLine(item="system pool", usd_month=usd, note=note, prices=cluster.system_prices))
    if cluster.system_disk_note and cluster.system_disk_usd_hour:
        note = f"{cluster.system_disk_note}, {when}"
        usd = round(cluster.system_disk_usd_hour * hours, 2)
        lines.append(CostLine(item="system pool disks", usd_month=usd, note=note, prices=cluster.system_disk_prices))
    unpriced.extend(cluster.unpriced)
    ranges = "; ".join([f"{p.pool} {p.min_usd_hour:,.2f}-{p.max_usd_hour:,.2f}/h ({p.note})" for p in pools.pools])
    spot = profile.cost.spot_share
    order = f", {spot:.0%} of hours on the spot pool the autoscaler grows first" if spec.kube.spot_first else ""
    lines.append(
        CostLine(
            item="node pools (range)",
            usd_month=0.0,
            note=f"{ranges} (what compute prices: the workload's nodes at the profile's expected rate{order})",
            prices=(*compute_prices, *pools.pool_prices),
        )
    )
    # Every pool at its maximum, less the workload's own nodes' data volumes the data line bills:
    # what the peak adds to compute is the extra nodes and their pods' volumes.
    base_volumes = sum([p.volume_usd_hour for p in pools.pools[:1]]) * spec.machines
    kube_peak = pools.max_usd_hour - cluster.always_usd_hour - base_volumes
    return max(peak_hour or 0.0, kube_peak) if kube_peak > compute_hour else peak_hour


def estimate_at_minimum(spec: EnvironmentSpec, profile: Profile, workload: Workload, catalog: Catalog) -> CostEstimate:
    """``estimate`` with a serving group at its minimum replicas only: no month at its maximum
    (``usd_month_peak`` is set only by a peak hour: a spot fallback running beside spot nodes,
    node pools at their maximum, or the balanced set's dearest member). What a
    comparison row reads (its month, its productive hour, its basis and what is unpriced), without
    pricing the environment a second time at its maximum replicas for a peak no row shows."""
    warnings: list[str] = []
    unpriced: list[str] = []
    productive, paid = _hours(profile, workload)
    lines: list[CostLine] = []
    peak_hour: float | None = None
    if not rules_for(spec.platform).supply.from_catalog:  # priced by the contract, not the catalog
        compute_hour = _contract_lines(spec, workload, productive, lines)
        basis = DEDICATED
    else:
        compute_hour, note, basis, peak_hour, compute_prices = _compute_hourly(spec, profile, catalog, warnings)
        lines.append(CostLine("compute", round(compute_hour * productive, 2), note, prices=compute_prices))
        # Ephemeral disks live as long as the machine; persistent ones are billed all month.
        share = paid / HOURS_PER_MONTH if spec.lifecycle.mode == "ephemeral" else 1.0
        if spec.kube is not None:
            peak_hour = _kube_lines(
                spec, profile, catalog, lines, compute_hour, peak_hour, compute_prices, share, unpriced
            )
        lines.extend(_storage_lines(spec, catalog, share, warnings, unpriced))
        lines.extend(network_lines(spec, workload, share, warnings, catalog))
        if workload.egress_gb_month:
            egress = catalog.egress_price(spec.provider, spec.region)
            if egress is None:
                warnings.append(f"no egress price for {spec.region} in the catalog: data transfer not priced")
            else:
                lines.append(
                    CostLine(
                        item="data transfer",
                        usd_month=round(workload.egress_gb_month * egress.usd_per_gb, 2),
                        note=f"{workload.egress_gb_month:.0f} GB internet egress",
                        prices=(egress_read(spec.provider, spec.region, egress.source),),
                    )
                )
    idle_hours = paid - productive
    if idle_hours > 0:
        lines.insert(
            1,
            CostLine(
                item="idle capacity",
                usd_month=round(compute_hour * idle_hours, 2),
                note=f"{idle_hours:.0f} of {paid:.0f} paid hours unused",
                prices=lines[0].prices,  # the compute's (or the contract's) rate, for the hours unused
            ),
        )
    paid_hours = round(paid, 1)
    peak: dict[str, object] = {}
    if peak_hour is not None:
        # a spot fallback, node pools at their maximum or the set's dearest member: every paid hour
        more = (peak_hour - compute_hour) * paid_hours
        what = "with every node pool at its maximum" if spec.kube is not None else _set_peak_what(spec)
        peak = {"usd_month_peak": round(_total(lines) + more, 2), "peak_what": what}
    return CostEstimate(
        platform=spec.platform,
        offer=spec.offer,
        region=spec.region,
        pricing=spec.pricing,
        basis=basis,
        compute_usd_hour=round(compute_hour, 4),
        paid_hours=paid_hours,
        productive_hours=round(productive, 1),
        lines=lines,
        warnings=warnings,
        unpriced=unpriced,
        **peak,  # built once with its peak, not copied to add it
    )


def _set_peak_what(spec: EnvironmentSpec) -> str:
    """The peak month in words for VM nodes: a spot fallback beside every spot node, on the
    balanced set's dearest member where the set is wider than the chosen shape."""
    held = spec.capacity
    dearest = f" on {held.dearest.machine_type}, the set's dearest" if held and len(held.members) > 1 else ""
    if spec.spot and rules_for(spec.platform).no_spot_fallback:
        return f"with every node spot{dearest}"
    return f"with the on-demand fallback running beside every spot node{dearest}"


class _Pricer:
    """The network catalog as one spec's cloud and region see it (``platforms.base.NetworkPricer``)."""

    def __init__(self, prices: NetworkPrices, provider: str, region: str, hours: float, warnings: list[str]) -> None:
        self.by_item, self.region = prices.in_region(provider, region), region
        self.hours, self.warnings = hours, warnings
        self.read: list[UsedPrice] = []
        """The entries read since the last line was added (``take``): every look-up records one."""

    def price(self, item: str) -> NetworkPrice | None:
        found = self.by_item.get(item)
        if found is not None:
            self.read.append(network_read(item, self.region, found.source))
        return found

    def take(self) -> tuple[UsedPrice, ...]:
        """The entries read for the line being added, once each; the next line starts afresh."""
        taken, self.read = tuple(dict.fromkeys(self.read)), []
        return taken

    def hourly(self, item: str, what: str) -> float | None:
        p = self.price(item)
        if p is None or p.usd_hour is None:
            self.warnings.append(f"no {what} price for {self.region} in the network catalog: {what} not priced")
            return None
        return p.usd_hour


class _Network(NamedTuple):
    """All a spec's network lines read (``network_lines``): the network prices, its billables, its
    platform and region, the share of the month, and, only where a line reads them, the item its
    nodes' addresses are billed as and its load balancer's listeners and GB. Comparison rows of
    many stacks share one (``Catalog.answer``): the egress a stack states is read only by a
    load balancer."""

    prices: Same[NetworkPrices]
    billables: Billables
    platform: Platform
    region: str
    share: float
    node_ip_item: str
    listeners: int
    lb_gb: float


def _network(spec: EnvironmentSpec, workload: Workload, share: float) -> _Network | None:
    """What ``spec``'s network lines read; None where its platform bills no network of its own."""
    b = spec.billables or decide(spec)
    network = rules_for(spec.platform).network  # a node pool's: its VMs' NAT, its Service's load balancer
    if network is None:
        return None
    node_ip_item = (network.spot_node_ip_item if spec.spot else "public-ipv4") if b.node_public_ips else ""
    listeners, gb = 0, 0.0
    if b.load_balancer:
        listeners = 2 if spec.endpoint is not None and spec.endpoint.tls is not None else 1
        gb = float(workload.egress_gb_month)
    return _Network(Same(load_network_prices()), b, spec.platform, spec.region, share, node_ip_item, listeners, gb)


def network_lines(
    spec: EnvironmentSpec, workload: Workload, share: float, warnings: list[str], catalog: Catalog | None = None
) -> list[CostLine]:
    """A cost line per billed network resource of ``spec`` (``fullserver.billables``; ``share``: the
    part of the month it runs), each priced as its platform prices it (``PlatformRules.network``).
    ``catalog``: where given, estimates that share one network (``_Network``) are answered once."""
    asked = _network(spec, workload, share)
    if asked is None:
        return []
    lines, said = _network_lines(asked) if catalog is None else catalog.answer(_network_lines, asked)
    warnings.extend(said)
    return list(lines)


def _network_lines(q: _Network, catalog: Catalog | None = None) -> tuple[tuple[CostLine, ...], tuple[str, ...]]:
    """The lines of ``network_lines`` and the warnings they raise (the catalog's are not read: the
    question holds the network prices)."""
    b = q.billables
    network = rules_for(q.platform).network
    assert network is not None
    warnings: list[str] = []
    pricer = _Pricer(q.prices.of, rules_for(q.platform).provider, q.region, HOURS_PER_MONTH * q.share, warnings)
    hours = pricer.hours
    lines: list[CostLine] = []

    def add(line: tuple[str, float, str] | None) -> None:
        read = pricer.take()
        if line is not None:
            item, usd, note = line
            lines.append(CostLine(item=item, usd_month=round(usd, 2), note=note, prices=read))

    if b.nat:
        add(network.nat_line(pricer, b.machines, b.zones))
    if b.node_public_ips + b.nat_public_ips + b.lb_public_ips:
        usd, parts = 0.0, []
        addresses = [
            (b.node_public_ips, q.node_ip_item, "node"),
            (b.nat_public_ips, "public-ipv4", "NAT"),
            (b.lb_public_ips, "public-ipv4", "load balancer"),
        ]
        for count, address, what in addresses:
            rate = pricer.hourly(address, "public IPv4 address") if count else None
            if rate is not None:
                usd += rate * count * hours
                parts.append(f"{count} {what} x {rate}/h")
        if parts:
            add(("public IPv4 addresses", usd, ", ".join(parts)))
    if b.load_balancer:
        add(network.lb_line(pricer, q.lb_gb, q.listeners))
    if b.health_checks:
        p = pricer.price(network.health_check_item)
        if p is not None:
            add(("health checks", (p.usd_hour or 0) * b.health_checks * hours, f"{b.health_checks}: {p.free or ''}"))
    if b.tier1:
        warnings.append("Tier_1 networking is not in the network catalog: its per-VM hours are not priced")
    if b.alarms:
        p = pricer.price("cloudwatch-alarm")
        if p is None or p.usd_month is None:
            warnings.append(f"no CloudWatch alarm price for {q.region} in the network catalog: alarms not priced")
        else:
            add(("CloudWatch alarms", p.usd_month * b.alarms * q.share, f"{b.alarms} x {p.usd_month}/month"))
    return tuple(lines), tuple(warnings)
