"""What a ``KubePlan`` costs per hour and per month: the cluster fee, and the pools at their floor
and their ceiling.

A created cluster's own part (fee, system pool, its disks) depends on its platform and place
alone, so the catalog keeps one answer per place (``Catalog.answer``); the pools are the plan's.
Design notes: docs/design/kubernetes.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from fullserver.catalog import Catalog, Same
from fullserver.catalog.staleness import UsedPrice, fee_read, machine_read, storage_read
from fullserver.hourly import hourly_rate
from fullserver.kube.fees import ClusterFees, load_cluster_fees
from fullserver.kube.pool import KubePlan
from fullserver.platform import Platform
from fullserver.platforms import pool_member, rules_for
from fullserver.profiles import Profile
from fullserver.rules import HOURS_PER_MONTH, disk_usd_month
from fullserver.spec import EnvironmentSpec


@dataclass(frozen=True, slots=True)
class PoolCost:
    """One pool at its floor and ceiling. Plain frozen values, not a model: made from figures the
    estimate computed, read only by ``fullserver.cost`` (nothing to validate, nothing dumped)."""

    pool: str
    node_usd_hour: float
    min_usd_hour: float
    max_usd_hour: float
    note: str
    volume_usd_hour: float = 0.0
    """Each node's pod's data volume, an hour (in ``min_usd_hour``/``max_usd_hour`` too)."""


@dataclass(frozen=True, slots=True)
class ClusterCost:
    """What the environment's cluster costs whatever its pools do: the fee, and a created
    cluster's system pool and its boot disks (an attached cluster's are its owner's: 0)."""

    usd_hour: float
    note: str
    sources: tuple[str, ...] = ()
    """The source keys of the fee, the system pool and its disks, in that order."""
    prices: tuple[UsedPrice, ...] = ()
    """The entries the fee read (each cost line records its own for ``fullserver.catalog.staleness``)."""
    system_usd_hour: float = 0.0
    """A created cluster's system pool, an hour (in the floor and the ceiling alike)."""
    system_note: str = ""
    system_prices: tuple[UsedPrice, ...] = ()
    system_disk_usd_hour: float = 0.0
    """... and its nodes' boot disks, an hour (in the floor and the ceiling too)."""
    system_disk_note: str = ""
    system_disk_prices: tuple[UsedPrice, ...] = ()
    unpriced: tuple[str, ...] = ()
    """What the cluster runs that the catalog has no price for (never counted as $0)."""

    @property
    def always_usd_hour(self) -> float:
        """What runs whatever the pools do: the cluster fee, the system pool and its disks."""
        return self.usd_hour + self.system_usd_hour + self.system_disk_usd_hour


@dataclass(frozen=True, slots=True)
class KubeCost:
    """The cluster's own part and each pool's range (plain values, as ``PoolCost``)."""

    cluster: ClusterCost
    pools: tuple[PoolCost, ...]
    hours_per_month: float
    pool_prices: tuple[UsedPrice, ...] = ()
    """The entries the pools' data volumes read."""

    @property
    def min_usd_hour(self) -> float:
        return self.cluster.always_usd_hour + sum([p.min_usd_hour for p in self.pools])

    @property
    def max_usd_hour(self) -> float:
        return self.cluster.always_usd_hour + sum([p.max_usd_hour for p in self.pools])

    @property
    def max_usd_month(self) -> float:
        return round(self.max_usd_hour * self.hours_per_month, 2)


def cluster_cost(plan: KubePlan, catalog: Catalog, fees: ClusterFees | None = None) -> ClusterCost:
    """The cluster's own part (``ClusterCost``): an attached cluster's is its owner's; a created
    one's is the catalog's answer for its platform and place (``_created``), the same for every
    stack that creates one there."""
    if not plan.create_cluster:
        return ClusterCost(
            0.0, f"attached to the existing cluster '{plan.cluster_name}': its fee is not this environment's"
        )
    place = _Place(Same(fees or load_cluster_fees()), plan.platform, plan.provider, plan.region, plan.zone)
    return catalog.answer(_created, place)


class _Place(NamedTuple):
    """All a created cluster's own part depends on: the fee data, its platform, its node-pool
    member (``KubePlan.provider``), region and zone (a regional GKE cluster runs a system node in
    each of the region's zones). A named tuple, as ``hourly.RateQuestion`` is: built and hashed by
    the interpreter, for every node-pool estimate."""

    fees: Same[ClusterFees]
    platform: Platform
    member: str
    region: str
    zone: str | None


def _created(q: _Place, catalog: Catalog) -> ClusterCost:
    provider = rules_for(q.platform).provider  # the cloud's key in the fee file and the catalog
    member = pool_member(q.member)
    fee, note, fee_sources = cluster_fee(q.fees.of, provider, q.member)
    machine, nodes = member.system_pool(q.zone)
    system_usd, system_note, system_sources = system_usd_hour(machine, nodes, q.region, catalog)
    kind, gib = member.system_disk
    disk_usd, disk_note, disk_sources = system_disk_usd_hour(provider, kind, gib, nodes, q.region, catalog)
    return ClusterCost(
        usd_hour=fee,
        note=note,
        sources=(*fee_sources, *system_sources, *disk_sources),
        prices=tuple(fee_read(provider, "cluster", s) for s in fee_sources),
        system_usd_hour=round(system_usd, 6),
        system_note=system_note,
        system_prices=tuple(machine_read(provider, machine, q.region, s) for s in system_sources),
        system_disk_usd_hour=round(disk_usd, 6),
        system_disk_note=disk_note,
        system_disk_prices=tuple(storage_read(provider, kind, q.region, s) for s in disk_sources),
        unpriced=(f"system pool boot disks ({disk_note.split(' (')[0]})",) if disk_note and not disk_usd else (),
    )


def cluster_fee(fees: ClusterFees, provider: str, member: str) -> tuple[float, str, tuple[str, ...]]:
    """A created cluster's hourly fee on ``provider`` (the cloud's key in the fee file), what it
    rests on, and its source keys."""
    fee = fees.fee(provider)
    if fee is None:
        return 0.0, f"no {member.upper()} cluster fee in the data: unpriced", ()
    note = pool_member(member).fee_note.format(
        usd_hour=fee.usd_hour, free_tier=fee.free_tier_usd_month, applies_to=" and ".join(fee.free_tier_applies_to)
    )
    return fee.usd_hour, note, (fee.source,)


def system_usd_hour(machine: str, nodes: int, region: str, catalog: Catalog) -> tuple[float, str, tuple[str, ...]]:
    """The system pool (``nodes`` x ``machine``, ``PoolRules.system_pool``) an hour, what it rests
    on, and its price's source key."""
    if not nodes:
        return 0.0, "", ()
    price = catalog.machine_price(machine, region)
    if price is None:
        return 0.0, f"system pool: {nodes} x {machine} (no {region} price in the catalog: unpriced)", ()
    what = f"{nodes} x {machine} on-demand {price.on_demand:.4f}/h (the cluster's own pods; catalog: {price.source})"
    return price.on_demand * nodes, what, (price.source,)


def system_disk_usd_hour(
    provider: str, kind: str, gib: int, nodes: int, region: str, catalog: Catalog
) -> tuple[float, str, tuple[str, ...]]:
    """The system pool's boot disks an hour (``PoolRules.system_disk``: ``kind``, ``gib`` each), what
    they are with their price's catalog entry, and its source key; a kind without a price: 0 and
    the note says so."""
    if not nodes:
        return 0.0, "", ()
    what = f"{nodes} x {gib} GiB {kind}"
    price = catalog.storage_price(provider, kind, region)
    if price is None:
        return 0.0, f"{what} (no {region} price in the catalog: unpriced)", ()
    usd = disk_usd_month(price, gib * nodes, 0, 0, disks=nodes) / HOURS_PER_MONTH
    return usd, f"{what} at {price.usd_gib_month}/GiB-month (catalog: {price.source}, {region})", (price.source,)


def kube_cost(
    plan: KubePlan,
    spec: EnvironmentSpec,
    profile: Profile,
    catalog: Catalog,
    fees: ClusterFees | None = None,
) -> KubeCost:
    """The cluster's own part and each pool at its floor and ceiling (see the module doc)."""
    volume_usd, volume_what, volume_reads = volume_usd_hour(plan, spec, catalog)
    offer = catalog.offer(spec.offer)
    if offer is None:
        raise ValueError(f"{spec.offer} is not in the catalog")
    price = offer.prices[spec.region]
    per_node = 1 / plan.nodes_per_replica if spec.tpu is not None else 1.0  # a TPU node: its share of the slice
    first = bool(plan.spot_first)  # the autoscaler grows the spot pool first (fullserver.kube.fallback)
    pools = []
    for pool in plan.pools:
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
        cluster=cluster_cost(plan, catalog, fees),
        pools=tuple(pools),
        hours_per_month=profile.cost.hours_per_month,
        pool_prices=volume_reads,
    )


def volume_usd_hour(
    plan: KubePlan, spec: EnvironmentSpec, catalog: Catalog
) -> tuple[float, str, tuple[UsedPrice, ...]]:
    """One pod's data volume an hour, how the pool's note names it (none: 0 and "") and the entry
    its price read (``KubeCost.pool_prices``)."""
    volume = plan.data_volume
    if volume is None:
        return 0.0, "", ()
    provider = spec.provider
    price = catalog.storage_price(provider, volume.kind, spec.region)
    what = f" + a {volume.size_gib} GiB {volume.kind} data volume per node"
    if price is None:  # the estimate's data line names the missing price
        return 0.0, f"{what} (unpriced)", ()
    usd = disk_usd_month(price, volume.size_gib, volume.iops or 0, volume.throughput_mbps or 0) / HOURS_PER_MONTH
    return usd, what, (storage_read(provider, volume.kind, spec.region, price.source),)
