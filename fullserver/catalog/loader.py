"""Loading the catalog: every data file is checked across the others (duplicates, unknown
accelerators, unknown sources, impossible values) and flattened into one list of ``Offer``s.

Each platform's offers come from the catalog sections its rules name (``PlatformRules.catalog_forms``):
``shapes`` (a machine type sold as it is: an AWS instance type, a GCP machine type),
``attachable_gpus`` (a host with N GPUs attached: a GCP N1 host) and ``tpu_types`` (a TPU slice).
A form reads its section, the platform says whose it is and how its zones are named.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fullserver.balance import Host
from fullserver.catalog.model import (
    Accelerator,
    CatalogFile,
    CommitmentDiscount,
    EgressPrice,
    Interconnect,
    Shape,
    Source,
    StoragePrice,
    TpuPrice,
)
from fullserver.catalog.offer import Catalog, Figure, Offer, Price
from fullserver.errors import InputError
from fullserver.platforms import PlatformRules, all_rules
from fullserver.yamlio import parse


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
        "pods": "pods (ENI-limited)",
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
        self._sources_and_accelerators()
        shapes = self._shapes()
        zones = self._machine_zones(shapes, self.check_source)
        shape_prices = self._shape_prices(shapes)
        parts = _Parts(shapes, shape_prices, zones)
        offers: list[Offer] = []
        for rules in all_rules():  # each platform's offers from the sections it names
            for form in rules.catalog_forms:
                offers.extend(_FORMS[form](self, rules, parts))
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
                self.check_source(where, f"{type(entry).__name__} entry", entry.source)
        offers.sort(key=lambda o: (o.platform.value, o.name))
        machines = {name: shape_prices[name] for name, (_, shape) in shapes.items() if shape.accelerator is None}
        vcpus = {name: shape.vcpus for name, (_, shape) in shapes.items() if shape.accelerator is None}
        return Catalog(
            self.sources, self.accelerators, offers, storage, egress, commitments, self.aliases, machines, vcpus
        )

    def _sources_and_accelerators(self) -> None:
        """Every file's sources and accelerators, each key, name and alias once across files."""
        self.sources: dict[str, Source] = {}
        self.accelerators: dict[str, Accelerator] = {}
        self.aliases: dict[str, str] = {}
        for where, f in self.files:
            for key, src in f.sources.items():
                if key in self.sources:
                    raise InputError(where, f"sources: duplicate source key '{key}'", "use a unique key")
                self.sources[key] = src
            for i, acc in enumerate(f.accelerators):
                for alias in (acc.name, *acc.aliases):
                    if self.aliases.get(alias.lower(), acc.name) != acc.name:
                        raise InputError(
                            where,
                            f"accelerators[{i}]: name or alias '{alias}' is already used by {self.aliases[alias.lower()]}",
                            "each name and alias must be unique",
                        )
                    self.aliases[alias.lower()] = acc.name
                if acc.name in self.accelerators:
                    raise InputError(where, f"accelerators[{i}]: duplicate accelerator '{acc.name}'", "define it once")
                self.accelerators[acc.name] = acc

    def check_source(self, where: str, item: str, *keys: str | None) -> None:
        """Every source ``item`` names is under ``sources:``; an optional one (``spot_source``,
        ``zones_source``: ``None`` when unset) only when set."""
        for key in keys:
            if key is not None and key not in self.sources:
                raise InputError(where, f"{item}: unknown source '{key}'", "add it under sources:")

    def check_acc(self, where: str, item: str, name: str) -> Accelerator:
        if name not in self.accelerators:
            raise InputError(
                where, f"{item}: unknown accelerator '{name}'", f"known: {', '.join(sorted(self.accelerators))}"
            )
        return self.accelerators[name]

    def _shapes(self) -> dict[str, tuple[str, Shape]]:
        """Every machine shape by name, with the file it is in; figures checked for sense."""
        shapes: dict[str, tuple[str, Shape]] = {}
        for where, f in self.files:
            for i, shape in enumerate(f.shapes):
                item = f"shapes[{i}] ({shape.name})"
                if shape.name in shapes:
                    raise InputError(where, f"{item}: duplicate shape", "define each shape once")
                self.check_source(where, item, shape.source, *shape.figure_sources.values())
                for fig in shape.figure_sources:
                    if fig not in Shape.model_fields:
                        raise InputError(
                            where, f"{item}: figure_sources names unknown field '{fig}'", "use a shape field"
                        )
                if shape.accelerator:
                    self.check_acc(where, item, shape.accelerator)
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
        return shapes

    def _shape_prices(self, shapes: dict[str, tuple[str, Shape]]) -> dict[str, dict[str, Price]]:
        """Each shape's price per region, one per shape and region, spot never above on-demand."""
        shape_prices: dict[str, dict[str, Price]] = {name: {} for name in shapes}
        for where, f in self.files:
            for i, p in enumerate(f.shape_prices):
                item = f"shape_prices[{i}] ({p.shape} in {p.region})"
                self.check_source(where, item, p.source, p.spot_source)
                if p.shape not in shapes:
                    raise InputError(where, f"{item}: unknown shape '{p.shape}'", "add the shape or fix the name")
                if p.region in shape_prices[p.shape]:
                    raise InputError(where, f"{item}: duplicate price", "give one price per shape and region")
                if p.spot_usd_hour is not None and p.spot_usd_hour > p.on_demand_usd_hour:
                    raise InputError(where, f"{item}: spot price above on-demand", "check the figures")
                shape_prices[p.shape][p.region] = Price(
                    p.region, p.on_demand_usd_hour, p.spot_usd_hour, p.source, p.spot_source
                )
        return shape_prices

    def _shape_offers(self, rules: PlatformRules, parts: _Parts) -> list[Offer]:
        """The platform's machine shapes that carry accelerators, each sold as it is."""
        offers = []
        for name, (_where, shape) in parts.shapes.items():
            if shape.accelerator is None or shape.platform != rules.platform.value:
                continue
            acc = self.accelerators[shape.accelerator]
            disk_gib = shape.local_nvme_gib / shape.local_nvme_disks if shape.local_nvme_disks else 0.0
            series = _series(name)
            offers.append(
                Offer(
                    name=name,
                    platform=rules.platform,
                    family=shape.family,
                    host=_shape_host(shape, acc),
                    interconnect=shape.interconnect,
                    efa_interfaces=shape.efa_interfaces,
                    pods=shape.pods,
                    local_nvme_disks=shape.local_nvme_disks,
                    local_nvme_disk_gib=disk_gib,
                    local_nvme_selectable_counts=tuple(shape.local_nvme_selectable_counts)
                    if shape.local_nvme_selectable_counts
                    else None,
                    machine_type=name,
                    zones=parts.zones.get(series, ()) if series is not None else (),
                    prices=parts.shape_prices[name],
                    figures=_shape_figures(shape),
                )
            )
        return offers

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

    def _attached(self, rules: PlatformRules, parts: _Parts) -> list[Offer]:
        """Hosts with attachable GPUs (GCP N1): every host within the per-count vCPU/RAM caps."""
        shapes, shape_prices = parts.shapes, parts.shape_prices
        check_acc, check_source = self.check_acc, self.check_source
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
                                platform=rules.platform,
                                family=f"{host.family}+{acc.name}",
                                host=h,
                                machine_type=host.name,
                                zones=tuple(att.zones),
                                prices=prices,
                                figures=figures,
                            )
                        )
        return offers

    def _machine_zones(
        self, shapes: dict[str, tuple[str, Shape]], check_source: Callable[..., None]
    ) -> dict[str, tuple[str, ...]]:
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
                members = [name for name in shapes if _series(name) == mz.series]
                if not members:
                    raise InputError(where, f"{item}: no shape of this series", "fix the series or add its shapes")
                regions = set()
                for zone in mz.zones:
                    region = _ZONE_LISTER.region_of_zone(zone) if _ZONE_LISTER else None
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

    def _tpus(self, rules: PlatformRules, parts: _Parts) -> list[Offer]:
        """TPU slices: price = chips x per-chip price; a region qualifies when a zone of it offers the type."""
        check_acc, check_source = self.check_acc, self.check_source
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
                regions = sorted({r for z in t.zones if (r := rules.region_of_zone(z))})
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
                        platform=rules.platform,
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


@dataclass(frozen=True)
class _Parts:
    """What the forms build offers from: the shapes, their prices and the machine series' zones."""

    shapes: dict[str, tuple[str, Shape]]
    shape_prices: dict[str, dict[str, Price]]
    zones: dict[str, tuple[str, ...]]


_ZONE_LISTER = next((r for r in all_rules() if r.machine_series is not None), None)
"""The platform whose zones the ``machine_zones`` section lists per machine series (Compute Engine)."""


def _series(name: str) -> str | None:
    """The machine series a shape's name is of, as ``machine_zones`` names series (else ``None``)."""
    if _ZONE_LISTER is None or _ZONE_LISTER.machine_series is None:
        return None
    return _ZONE_LISTER.machine_series(name)


_FORMS: dict[str, Callable[[_Loader, PlatformRules, _Parts], list[Offer]]] = {
    "shapes": _Loader._shape_offers,
    "attachable_gpus": _Loader._attached,
    "tpu_types": _Loader._tpus,
}
"""The catalog sections offers are built from (``PlatformRules.catalog_forms`` names them)."""
