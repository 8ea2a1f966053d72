"""The hardware catalog: every purchasable node shape with its figures, prices and sources.

Data lives in ``data/*.yaml`` (see ``model.py`` for the schema). Loading validates the whole
catalog across files — duplicates, unknown accelerators, unknown sources, impossible values —
and flattens provider quirks into one list of ``Offer``s that sizing can compare:
an AWS instance type, a GCP machine type, a GCP N1 host with N attached GPUs, or a TPU slice.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fullserver.balance import Host
from fullserver.catalog.model import (
    Accelerator,
    CatalogFile,
    CommitmentDiscount,
    EgressPrice,
    Interconnect,
    Platform,
    Shape,
    Source,
    StoragePrice,
    TpuPrice,
)
from fullserver.catalog.network import NOT_SHAPES
from fullserver.errors import InputError
from fullserver.platforms import gcp, rules_for, tpu
from fullserver.platforms.gcp import machine_series
from fullserver.yamlio import parse, read_yaml

DATA_DIR = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class Price:
    """Hourly price of one offer (a whole node, or a whole TPU slice) in one region."""

    region: str
    on_demand: float
    spot: float | None
    source: str
    spot_source: str | None = None
    """The spot figure's source when it is not ``source`` (see ``model.ShapePrice``)."""

    @property
    def spot_from(self) -> str:
        return self.spot_source or self.source


@dataclass(frozen=True)
class Figure:
    value: Any
    unit: str
    source: str


@dataclass(frozen=True)
class Offer:
    """One thing a provider sells that sizing can choose. ``host`` is one node of it."""

    name: str
    platform: Platform
    family: str
    host: Host
    hosts: int = 1
    interconnect: Interconnect = Interconnect.NONE
    efa_interfaces: int = 0
    local_nvme_disks: int = 0
    local_nvme_disk_gib: float = 0.0
    local_nvme_selectable_counts: tuple[int, ...] | None = None
    machine_type: str = ""
    topology: str = ""
    runtime_versions: tuple[str, ...] = ()
    zones: tuple[str, ...] = ()
    prices: dict[str, Price] = field(default_factory=dict)
    figures: dict[str, Figure] = field(default_factory=dict)

    @property
    def accelerator(self) -> str | None:
        return self.host.accelerator

    @property
    def total_accelerators(self) -> int:
        return self.host.accelerator_count * self.hosts

    @functools.cached_property
    def _zones_by_region(self) -> dict[str, tuple[str, ...]]:
        return {}

    def zones_in(self, region: str) -> list[str]:
        """The zones of ``region`` the catalog lists for this offer, in order (none listed: [])."""
        found = self._zones_by_region.get(region)
        if found is None:
            rules = rules_for(self.platform)
            found = self._zones_by_region[region] = tuple(
                sorted(z for z in self.zones if rules.zone_in_region(z, region))
            )
        return list(found)


@dataclass(frozen=True)
class Catalog:
    sources: dict[str, Source]
    accelerators: dict[str, Accelerator]
    offers: list[Offer]
    storage_prices: list[StoragePrice]
    egress_prices: list[EgressPrice]
    commitment_discounts: list[CommitmentDiscount]
    aliases: dict[str, str] = field(default_factory=dict)

    def accelerator(self, name: str, where: str = "fullserver:accelerator") -> Accelerator:
        """Look an accelerator up by name or alias (case-insensitive)."""
        key = self.aliases.get(name.lower())
        if key is None:
            known = ", ".join(sorted(self.accelerators))
            raise InputError(where, f"unknown accelerator '{name}'", f"known accelerators: {known}")
        return self.accelerators[key]

    # Indexes built once per catalog (the catalog is read-only): sizing asks them for every
    # decision, and scanning every offer each time was most of a decision's cost.
    @functools.cached_property
    def _by_platform(self) -> dict[Platform, list[Offer]]:
        out: dict[Platform, list[Offer]] = {}
        for o in self.offers:
            out.setdefault(o.platform, []).append(o)
        return out

    @functools.cached_property
    def _by_name(self) -> dict[str, Offer]:
        return {o.name: o for o in reversed(self.offers)}  # the first of a name wins, as before

    @functools.cached_property
    def _regions(self) -> dict[Platform, frozenset[str]]:
        return {p: frozenset(r for o in offers for r in o.prices) for p, offers in self._by_platform.items()}

    @functools.cached_property
    def slice_types(self) -> frozenset[str]:
        """Names of the offers sold as slices by type (TPU types)."""
        return frozenset(o.name for o in self.offers if rules_for(o.platform).slices)

    @functools.cached_property
    def _by_model(self) -> dict[tuple[Platform, str | None], list[Offer]]:
        out: dict[tuple[Platform, str | None], list[Offer]] = {}
        for o in self.offers:
            out.setdefault((o.platform, o.host.accelerator), []).append(o)
        return out

    @functools.cached_property
    def memo(self) -> dict[Hashable, Any]:
        """Answers derived from this read-only catalog alone and a request (``fullserver.sizing``
        keeps a ranking per question here), kept as long as the catalog is."""
        return {}

    def offers_on(self, platform: Platform, accelerator: str | None = None) -> list[Offer]:
        """The offers of one platform (of one accelerator model when given), in catalog order."""
        if accelerator is None:
            return self._by_platform.get(platform, [])
        return self._by_model.get((platform, accelerator), [])

    def regions(self, platform: Platform) -> set[str]:
        return set(self._regions.get(platform, ()))

    def offer(self, name: str) -> Offer | None:
        return self._by_name.get(name)

    def storage_price(self, provider: str, kind: str, region: str) -> StoragePrice | None:
        return next(
            (p for p in self.storage_prices if (p.provider, p.kind, p.region) == (provider, kind, region)), None
        )

    def egress_price(self, provider: str, region: str) -> EgressPrice | None:
        return next((p for p in self.egress_prices if (p.provider, p.region) == (provider, region)), None)

    def commitment(self, provider: str, family: str, years: int, shape: str | None = None) -> CommitmentDiscount | None:
        """The published discount for ``shape`` of ``family``: an entry naming that exact shape,
        else a family-wide entry (exact family: p5 is not p5en). An entry that names its shapes
        never reaches a shape it does not name (a3-ultragpu-8g is not a3-highgpu-8g)."""
        found: CommitmentDiscount | None = None
        for c in self.commitment_discounts:
            if (c.provider, c.term_years) != (provider, years):
                continue
            if c.shapes:
                if shape is not None and shape in c.shapes:
                    return c
            elif c.applies_to == family and found is None:
                found = c
        return found


def _shape_host(shape: Shape, acc: Accelerator | None) -> Host:
    return Host.of(
        acc,
        shape.accelerator_count,
        vcpus=shape.vcpus,
        memory_gib=shape.memory_gib,
        local_nvme_gib=shape.local_nvme_gib,
        network_gbps=shape.network_gbps,
    )


def _shape_figures(shape: Shape) -> dict[str, Figure]:
    units = {
        "vcpus": "vCPU",
        "memory_gib": "GiB",
        "accelerator_count": "devices",
        "local_nvme_disks": "disks",
        "local_nvme_disk_gb": "GB",
        "local_nvme_disk_gib": "GiB",
        "local_nvme_total_gb": "GB in total (per-disk split not published)",
        "network_gbps": "Gbps",
        "efa_interfaces": "interfaces",
        "interconnect": "",
    }
    return {
        name: Figure(getattr(shape, name), unit, shape.figure_sources.get(name, shape.source))
        for name, unit in units.items()
        if getattr(shape, name) not in (None, 0) or name in ("vcpus", "memory_gib")
    }


class _Loader:
    """Collects every file, then checks references across them before building offers."""

    def __init__(self, files: list[tuple[str, dict[str, Any]]]) -> None:
        self.files = [(where, parse(CatalogFile, data, where)) for where, data in files]

    def build(self) -> Catalog:
        sources: dict[str, Source] = {}
        accelerators: dict[str, Accelerator] = {}
        aliases: dict[str, str] = {}
        for where, f in self.files:
            for key, src in f.sources.items():
                if key in sources:
                    raise InputError(where, f"sources: duplicate source key '{key}'", "use a unique key")
                sources[key] = src
            for i, acc in enumerate(f.accelerators):
                for alias in (acc.name, *acc.aliases):
                    if aliases.get(alias.lower(), acc.name) != acc.name:
                        raise InputError(
                            where,
                            f"accelerators[{i}]: name or alias '{alias}' is already used by {aliases[alias.lower()]}",
                            "each name and alias must be unique",
                        )
                    aliases[alias.lower()] = acc.name
                if acc.name in accelerators:
                    raise InputError(where, f"accelerators[{i}]: duplicate accelerator '{acc.name}'", "define it once")
                accelerators[acc.name] = acc

        def check_source(where: str, item: str, *keys: str | None) -> None:
            """Every source ``item`` names is under ``sources:``; an optional one (``spot_source``,
            ``zones_source``: ``None`` when unset) only when set."""
            for key in keys:
                if key is not None and key not in sources:
                    raise InputError(where, f"{item}: unknown source '{key}'", "add it under sources:")

        def check_acc(where: str, item: str, name: str) -> Accelerator:
            if name not in accelerators:
                raise InputError(
                    where, f"{item}: unknown accelerator '{name}'", f"known: {', '.join(sorted(accelerators))}"
                )
            return accelerators[name]

        shapes: dict[str, tuple[str, Shape]] = {}
        for where, f in self.files:
            for i, shape in enumerate(f.shapes):
                item = f"shapes[{i}] ({shape.name})"
                if shape.name in shapes:
                    raise InputError(where, f"{item}: duplicate shape", "define each shape once")
                check_source(where, item, shape.source, *shape.figure_sources.values())
                for fig in shape.figure_sources:
                    if fig not in Shape.model_fields:
                        raise InputError(
                            where, f"{item}: figure_sources names unknown field '{fig}'", "use a shape field"
                        )
                if shape.accelerator:
                    check_acc(where, item, shape.accelerator)
                if shape.memory_gib / shape.vcpus > 64:
                    raise InputError(
                        where,
                        f"{item}: {shape.memory_gib} GiB for {shape.vcpus} vCPUs is implausible",
                        "check the units (GiB, not MiB)",
                    )
                counts = shape.local_nvme_selectable_counts
                if counts and (max(counts) > shape.local_nvme_disks or counts != sorted(set(counts))):
                    raise InputError(
                        where,
                        f"{item}: local_nvme_selectable_counts must be ascending and at most local_nvme_disks",
                        "fix the list",
                    )
                shapes[shape.name] = (where, shape)

        zones = self._machine_zones(shapes, check_source)
        offers: list[Offer] = []
        shape_prices: dict[str, dict[str, Price]] = {name: {} for name in shapes}
        for where, f in self.files:
            for i, p in enumerate(f.shape_prices):
                item = f"shape_prices[{i}] ({p.shape} in {p.region})"
                check_source(where, item, p.source, p.spot_source)
                if p.shape not in shapes:
                    raise InputError(where, f"{item}: unknown shape '{p.shape}'", "add the shape or fix the name")
                if p.region in shape_prices[p.shape]:
                    raise InputError(where, f"{item}: duplicate price", "give one price per shape and region")
                if p.spot_usd_hour is not None and p.spot_usd_hour > p.on_demand_usd_hour:
                    raise InputError(where, f"{item}: spot price above on-demand", "check the figures")
                shape_prices[p.shape][p.region] = Price(
                    p.region, p.on_demand_usd_hour, p.spot_usd_hour, p.source, p.spot_source
                )

        for name, (_where, shape) in shapes.items():
            if shape.accelerator is None:
                continue
            acc = accelerators[shape.accelerator]
            disk_gib = shape.local_nvme_gib / shape.local_nvme_disks if shape.local_nvme_disks else 0.0
            offers.append(
                Offer(
                    name=name,
                    platform=Platform(shape.platform),
                    family=shape.family,
                    host=_shape_host(shape, acc),
                    interconnect=shape.interconnect,
                    efa_interfaces=shape.efa_interfaces,
                    local_nvme_disks=shape.local_nvme_disks,
                    local_nvme_disk_gib=disk_gib,
                    local_nvme_selectable_counts=tuple(shape.local_nvme_selectable_counts)
                    if shape.local_nvme_selectable_counts
                    else None,
                    machine_type=name,
                    zones=zones.get(machine_series(name), ()),
                    prices=shape_prices[name],
                    figures=_shape_figures(shape),
                )
            )
        offers.extend(self._attached(shapes, shape_prices, check_acc, check_source))
        offers.extend(self._tpus(check_acc, check_source))

        storage = [p for _, f in self.files for p in f.storage_prices]
        egress = [p for _, f in self.files for p in f.egress_prices]
        commitments = [c for _, f in self.files for c in f.commitment_discounts]
        self._check_commitments(shapes, offers)
        for where, f in self.files:
            sourced: list[StoragePrice | EgressPrice | CommitmentDiscount | Accelerator] = [
                *f.storage_prices,
                *f.egress_prices,
                *f.commitment_discounts,
                *f.accelerators,
            ]
            for entry in sourced:
                check_source(where, f"{type(entry).__name__} entry", entry.source)
        offers.sort(key=lambda o: (o.platform.value, o.name))
        return Catalog(sources, accelerators, offers, storage, egress, commitments, aliases)

    def _check_commitments(self, shapes: dict[str, tuple[str, Shape]], offers: list[Offer]) -> None:
        """A discount must reach something, and only what its source names: every shape it lists
        exists, a family-wide one names a family that exists, and no two entries claim the same
        shape and term (the one applied would depend on file order)."""
        families = {o.family for o in offers}
        claimed: dict[tuple[str, str, int], str] = {}
        for where, f in self.files:
            for i, c in enumerate(f.commitment_discounts):
                item = f"commitment_discounts[{i}] ({c.applies_to}, {c.term_years} years)"
                for name in c.shapes:
                    if name not in shapes:
                        raise InputError(where, f"{item}: unknown shape '{name}'", "list shapes the catalog defines")
                    key = (c.provider, name, c.term_years)
                    if key in claimed:
                        raise InputError(
                            where, f"{item}: {name} already has a discount ({claimed[key]})", "give one per shape"
                        )
                    claimed[key] = c.applies_to
                if not c.shapes and c.applies_to not in families:
                    raise InputError(
                        where,
                        f"{item}: no offer of family '{c.applies_to}'",
                        "name an existing family, or list the exact shapes under shapes:",
                    )

    def _attached(
        self,
        shapes: dict[str, tuple[str, Shape]],
        shape_prices: dict[str, dict[str, Price]],
        check_acc: Any,
        check_source: Any,
    ) -> list[Offer]:
        """GCP N1 hosts with attachable GPUs: every host within the per-count vCPU/RAM caps."""
        gpu_prices: dict[tuple[str, str], Price] = {}
        for where, f in self.files:
            for i, p in enumerate(f.accelerator_prices):
                item = f"accelerator_prices[{i}] ({p.accelerator} in {p.region})"
                check_acc(where, item, p.accelerator)
                check_source(where, item, p.source, p.spot_source)
                if (p.accelerator, p.region) in gpu_prices:
                    raise InputError(where, f"{item}: duplicate price", "give one price per accelerator and region")
                gpu_prices[(p.accelerator, p.region)] = Price(
                    p.region, p.on_demand_usd_hour, p.spot_usd_hour, p.source, p.spot_source
                )
        offers: list[Offer] = []
        for where, f in self.files:
            for i, att in enumerate(f.attachable_gpus):
                item = f"attachable_gpus[{i}] ({att.accelerator})"
                acc = check_acc(where, item, att.accelerator)
                check_source(where, item, att.source, att.zones_source, att.network_source)
                hosts = [s for _, s in shapes.values() if s.family == att.machine_family and s.accelerator is None]
                if not hosts:
                    raise InputError(
                        where, f"{item}: no shapes of family '{att.machine_family}'", "add the host machine types"
                    )
                for limit in att.limits:
                    for host in hosts:
                        if host.vcpus > limit.max_vcpus or host.memory_gib > limit.max_memory_gib:
                            continue
                        prices: dict[str, Price] = {}
                        for region, vm in shape_prices[host.name].items():
                            gpu = gpu_prices.get((acc.name, region))
                            if gpu is None:
                                continue
                            spot = None
                            if vm.spot is not None and gpu.spot is not None:
                                spot = vm.spot + limit.count * gpu.spot
                            source = f"{vm.source}+{gpu.source}"
                            prices[region] = Price(
                                region,
                                vm.on_demand + limit.count * gpu.on_demand,
                                spot,
                                source,
                                f"{vm.spot_from}+{gpu.spot_from}" if spot is not None else None,
                            )
                        h = _shape_host(host, None).model_copy(
                            update={
                                "accelerator": acc.name,
                                "accelerator_count": limit.count,
                                "accelerator_memory_gib": acc.memory_gib,
                                "network_gbps": host.network_gbps if att.network_source is None else None,
                            }
                        )
                        figures = _shape_figures(host)
                        figures["accelerator_count"] = Figure(limit.count, "devices (attached)", att.source)
                        if att.network_source is not None:
                            figures["network_gbps"] = Figure(
                                None, "Gbps (not published for this combination)", att.network_source
                            )
                        offers.append(
                            Offer(
                                name=f"{host.name}+{limit.count}x{acc.name}",
                                platform=Platform.GCP_GPU,
                                family=f"{host.family}+{acc.name}",
                                host=h,
                                machine_type=host.name,
                                zones=tuple(att.zones),
                                prices=prices,
                                figures=figures,
                            )
                        )
        return offers

    def _machine_zones(self, shapes: dict[str, tuple[str, Shape]], check_source: Any) -> dict[str, tuple[str, ...]]:
        """Zones per machine series; every series names shapes the catalog has, each zone is a GCP
        zone, and every region a shape of the series is priced in has one of them (else the shape
        could be chosen there but never built)."""
        priced: dict[str, list[str]] = {}  # shape -> the regions it is priced in, read once
        for _, f in self.files:
            for price in f.shape_prices:
                priced.setdefault(price.shape, []).append(price.region)
        out: dict[str, tuple[str, ...]] = {}
        for where, f in self.files:
            for i, mz in enumerate(f.machine_zones):
                item = f"machine_zones[{i}] ({mz.series})"
                check_source(where, item, mz.source)
                if mz.series in out:
                    raise InputError(where, f"{item}: duplicate series", "list each series once")
                members = [name for name in shapes if machine_series(name) == mz.series]
                if not members:
                    raise InputError(where, f"{item}: no shape of this series", "fix the series or add its shapes")
                regions = set()
                for zone in mz.zones:
                    region = gcp.RULES.region_of_zone(zone)
                    if region is None:
                        raise InputError(where, f"{item}: '{zone}' is not a zone", "write zones as us-central1-a")
                    regions.add(region)
                for name in members:
                    for region in priced.get(name, []):
                        if region not in regions:
                            raise InputError(
                                where,
                                f"{item}: {name} is priced in {region} but no zone there is listed",
                                f"add the {region} zones that sell {mz.series}, or drop the price",
                            )
                out[mz.series] = tuple(sorted(set(mz.zones)))
        return out

    def _tpus(self, check_acc: Any, check_source: Any) -> list[Offer]:
        """TPU slices: price = chips x per-chip price; a region qualifies when a zone of it offers the type."""
        chip_prices: dict[tuple[str, str], TpuPrice] = {}
        for where, f in self.files:
            for i, p in enumerate(f.tpu_prices):
                item = f"tpu_prices[{i}] ({p.generation} in {p.region})"
                check_source(where, item, p.source, p.spot_source)
                if (p.generation, p.region) in chip_prices:
                    raise InputError(where, f"{item}: duplicate price", "give one price per generation and region")
                chip_prices[(p.generation, p.region)] = p
        offers: list[Offer] = []
        seen: set[str] = set()
        for where, f in self.files:
            for i, t in enumerate(f.tpu_types):
                item = f"tpu_types[{i}] ({t.name})"
                if t.name in seen:
                    raise InputError(where, f"{item}: duplicate TPU type", "define each type once")
                seen.add(t.name)
                acc = check_acc(where, item, t.accelerator)
                check_source(where, item, t.source, *t.figure_sources.values())
                per_host = t.chips // t.hosts
                regions = sorted({r for z in t.zones if (r := tpu.RULES.region_of_zone(z))})
                prices: dict[str, Price] = {}
                for region in regions:
                    cp = chip_prices.get((t.generation, region))
                    if cp is not None:
                        spot = cp.spot_usd_chip_hour
                        prices[region] = Price(
                            region,
                            cp.on_demand_usd_chip_hour * t.chips,
                            spot * t.chips if spot else None,
                            cp.source,
                            cp.spot_source,
                        )
                overrides = t.figure_sources
                offers.append(
                    Offer(
                        name=t.name,
                        platform=Platform.TPU_VM,
                        family=t.generation,
                        host=Host.of(
                            acc,
                            per_host,
                            vcpus=t.host_vcpus,
                            memory_gib=t.host_memory_gib,
                            local_nvme_gib=0.0,
                            network_gbps=t.host_network_gbps,  # None: not published, never 0
                        ),
                        hosts=t.hosts,
                        interconnect=Interconnect.ICI,
                        machine_type=t.name,
                        topology=t.topology,
                        runtime_versions=tuple(t.runtime_versions),
                        zones=tuple(t.zones),
                        prices=prices,
                        figures={
                            name: Figure(getattr(t, name), unit, overrides.get(name, t.source))
                            for name, unit in (
                                ("chips", "chips"),
                                ("hosts", "hosts"),
                                ("topology", ""),
                                ("host_vcpus", "vCPU per host"),
                                ("host_memory_gib", "GiB per host"),
                                ("host_network_gbps", "Gbps per host"),
                                ("runtime_versions", ""),
                                ("zones", ""),
                            )
                            if getattr(t, name) is not None
                        },
                    )
                )
        return offers


@functools.lru_cache(maxsize=8)
def _load_directory(directory: Path) -> Catalog:
    # network.yaml (prices of load balancers, NAT, addresses) and quotas.yaml are read apart
    paths = sorted(p for p in directory.glob("*.yaml") if p.name not in NOT_SHAPES)
    if not paths:
        raise InputError(str(directory), "no catalog data files", "add data/*.yaml files")
    return _Loader([(str(p), read_yaml(p)) for p in paths]).build()


class _CatalogLoader:
    """``load_catalog(directory)``: load and validate every ``*.yaml`` under ``directory`` (the
    shipped data by default), cached once per directory however it is named (``load_catalog()``
    and ``load_catalog(DATA_DIR)`` are one load, not two); the data is read-only."""

    def __call__(self, directory: Path = DATA_DIR) -> Catalog:
        return _load_directory(directory.resolve())

    def cache_clear(self) -> None:
        _load_directory.cache_clear()

    def cache_info(self) -> Any:
        return _load_directory.cache_info()


load_catalog = _CatalogLoader()


def catalog_from_data(files: list[tuple[str, dict[str, Any]]]) -> Catalog:
    """Build a catalog from already-parsed data files (``(name, data)`` pairs); validated the same way."""
    return _Loader(files).build()
