"""What a ``KubePlan`` costs per hour and per month: the cluster fee, and the pools at their floor
and their ceiling.

Design notes: docs/design/kubernetes.md.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from fullserver.catalog import Catalog
from fullserver.catalog.staleness import UsedPrice, fee_read, machine_read, storage_read
from fullserver.hourly import hourly_rate
from fullserver.kube.fees import ClusterFees, load_cluster_fees
from fullserver.kube.pool import KubePlan
from fullserver.platforms import pool_member, rules_for
from fullserver.profiles import Profile
from fullserver.rules import HOURS_PER_MONTH, disk_usd_month
from fullserver.spec import EnvironmentSpec


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PoolCost(Frozen):
    pool: str
    node_usd_hour: float
    volume_usd_hour: float = 0.0
    """Each node's pod's data volume, an hour (in ``min_usd_hour``/``max_usd_hour`` too)."""
    min_usd_hour: float
    max_usd_hour: float
    note: str


class KubeCost(Frozen):
    cluster_usd_hour: float
    cluster_note: str
    pools: list[PoolCost]
    hours_per_month: float
    sources: list[str]
    system_usd_hour: float = 0.0
    """A created cluster's system pool, an hour (in the floor and the ceiling alike)."""
    system_note: str = ""
    cluster_prices: tuple[UsedPrice, ...] = ()
    """The entries the fee, the system pool and the pools' data volumes read (each cost line records
    its own for ``fullserver.catalog.staleness``)."""
    system_prices: tuple[UsedPrice, ...] = ()
    pool_prices: tuple[UsedPrice, ...] = ()
    system_disk_usd_hour: float = 0.0
    """... and its nodes' boot disks, an hour (in the floor and the ceiling too)."""
    system_disk_note: str = ""
    system_disk_prices: tuple[UsedPrice, ...] = ()
    unpriced: list[str] = []
    """What the cluster runs that the catalog has no price for (never counted as $0)."""

    @property
    def always_usd_hour(self) -> float:
        """What runs whatever the pools do: the cluster fee, the system pool and its disks."""
        return self.cluster_usd_hour + self.system_usd_hour + self.system_disk_usd_hour

    @property
    def min_usd_hour(self) -> float:
        return self.always_usd_hour + sum(p.min_usd_hour for p in self.pools)

    @property
    def max_usd_hour(self) -> float:
        return self.always_usd_hour + sum(p.max_usd_hour for p in self.pools)

    @property
    def min_usd_month(self) -> float:
        return round(self.min_usd_hour * self.hours_per_month, 2)

    @property
    def max_usd_month(self) -> float:
        return round(self.max_usd_hour * self.hours_per_month, 2)


def cluster_fee(plan: KubePlan, fees: ClusterFees) -> tuple[float, str, list[str]]:
    """The cluster's hourly fee, what it rests on, and its source keys."""
    if not plan.create_cluster:
        return 0.0, f"attached to the existing cluster '{plan.cluster_name}': its fee is not this environment's", []
    fee = fees.fee(rules_for(plan.platform).provider)  # the cloud's key in the fee file
    if fee is None:
        return 0.0, f"no {plan.provider.upper()} cluster fee in the data: unpriced", []
    note = pool_member(plan.provider).fee_note.format(
        usd_hour=fee.usd_hour, free_tier=fee.free_tier_usd_month, applies_to=" and ".join(fee.free_tier_applies_to)
    )
    return fee.usd_hour, note, [fee.source]


def system_pool(plan: KubePlan) -> tuple[str, int]:
    """A created cluster's system pool: its CPU machine type and how many nodes it runs in all
    (GKE: per zone x the pool's zones; EKS: the node group's size). Attached: ``("", 0)``."""
    if not plan.create_cluster:
        return "", 0
    return pool_member(plan.provider).system_pool(plan.zone)


def system_usd_hour(plan: KubePlan, catalog: Catalog) -> tuple[float, str, list[str]]:
    """The system pool an hour, what it rests on, and its price's source key."""
    machine, nodes = system_pool(plan)
    if not nodes:
        return 0.0, "", []
    price = catalog.machine_price(machine, plan.region)
    if price is None:
        return 0.0, f"system pool: {nodes} x {machine} (no {plan.region} price in the catalog: unpriced)", []
    what = f"{nodes} x {machine} on-demand {price.on_demand:.4f}/h (the cluster's own pods; catalog: {price.source})"
    return price.on_demand * nodes, what, [price.source]


def system_disk_usd_hour(plan: KubePlan, catalog: Catalog) -> tuple[float, str, list[str]]:
    """The system pool's boot disks an hour (``PoolRules.system_disk``), what they are with their
    price's catalog entry, and its source key; a kind without a price: 0 and the note says so."""
    _, nodes = system_pool(plan)
    if not nodes:
        return 0.0, "", []
    kind, gib = pool_member(plan.provider).system_disk
    what = f"{nodes} x {gib} GiB {kind}"
    price = catalog.storage_price(rules_for(plan.platform).provider, kind, plan.region)
    if price is None:
        return 0.0, f"{what} (no {plan.region} price in the catalog: unpriced)", []
    usd = disk_usd_month(price, gib * nodes, 0, 0, disks=nodes) / HOURS_PER_MONTH
    return usd, f"{what} at {price.usd_gib_month}/GiB-month (catalog: {price.source}, {plan.region})", [price.source]


def kube_cost(
    plan: KubePlan,
    spec: EnvironmentSpec,
    profile: Profile,
    catalog: Catalog,
    fees: ClusterFees | None = None,
) -> KubeCost:
    """The cluster fee and each pool at its floor and ceiling (see the module doc)."""
    fees = fees or load_cluster_fees()
    fee, note, sources = cluster_fee(plan, fees)
    system_usd, system_note, system_sources = system_usd_hour(plan, catalog)
    provider = rules_for(plan.platform).provider
    machine = system_pool(plan)[0]
    volume = plan.data_volume
    volume_price = catalog.storage_price(spec.provider, volume.kind, spec.region) if volume is not None else None
    disk_usd, disk_note, disk_sources = system_disk_usd_hour(plan, catalog)
    volume_usd, volume_what = volume_usd_hour(plan, spec, catalog)
    offer = catalog.offer(spec.offer)
    if offer is None:
        raise ValueError(f"{spec.offer} is not in the catalog")
    price = offer.prices[spec.region]
    per_node = 1 / plan.nodes_per_replica if spec.tpu is not None else 1.0  # a TPU node: its share of the slice
    pools = []
    for pool in plan.pools:
        first = bool(plan.spot_first)  # the autoscaler grows the spot pool first (fullserver.kube.fallback)
        if pool.role == "spot":
            usd = (price.spot if price.spot is not None else price.on_demand) * per_node
            what = "spot" if price.spot is not None else "on-demand (no spot price published)"
            what += ", grown first" if first else ""
        elif pool.role == "on-demand":
            usd, what = price.on_demand * per_node, "on-demand fallback" + (", grown when spot is out" if first else "")
        else:
            rate = hourly_rate(offer, spec.region, profile, catalog)
            usd, what = rate.usd * per_node, rate.note
        pools.append(
            PoolCost(
                pool=pool.name,
                node_usd_hour=round(usd, 6),
                volume_usd_hour=round(volume_usd, 6),
                min_usd_hour=round((usd + volume_usd) * pool.min_nodes, 6),
                max_usd_hour=round((usd + volume_usd) * pool.max_nodes, 6),
                note=f"{what}; {pool.min_nodes}-{pool.max_nodes} x {plan.machine_type}{volume_what}",
            )
        )
    return KubeCost(
        cluster_usd_hour=fee,
        cluster_note=note,
        pools=pools,
        hours_per_month=profile.cost.hours_per_month,
        sources=sources + system_sources + disk_sources,
        system_usd_hour=round(system_usd, 6),
        system_note=system_note,
        cluster_prices=tuple(fee_read(provider, "cluster", s) for s in sources),
        system_prices=tuple(machine_read(provider, machine, plan.region, s) for s in system_sources),
        pool_prices=(
            (storage_read(spec.provider, volume.kind, spec.region, volume_price.source),)
            if volume is not None and volume_price is not None
            else ()
        ),
        system_disk_usd_hour=round(disk_usd, 6),
        system_disk_note=disk_note,
        system_disk_prices=tuple(storage_read(provider, _disk_kind(plan), plan.region, s) for s in disk_sources),
        unpriced=[f"system pool boot disks ({disk_note.split(' (')[0]})"] if disk_note and not disk_usd else [],
    )


def _disk_kind(plan: KubePlan) -> str:
    return pool_member(plan.provider).system_disk[0]


def volume_usd_hour(plan: KubePlan, spec: EnvironmentSpec, catalog: Catalog) -> tuple[float, str]:
    """One pod's data volume an hour, and how the pool's note names it (none: 0 and "")."""
    volume = plan.data_volume
    if volume is None:
        return 0.0, ""
    price = catalog.storage_price(spec.provider, volume.kind, spec.region)
    what = f" + a {volume.size_gib} GiB {volume.kind} data volume per node"
    if price is None:  # the estimate's data line names the missing price
        return 0.0, f"{what} (unpriced)"
    usd = disk_usd_month(price, volume.size_gib, volume.iops or 0, volume.throughput_mbps or 0) / HOURS_PER_MONTH
    return usd, what
