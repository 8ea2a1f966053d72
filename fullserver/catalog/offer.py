"""What the loaded catalog is: ``Offer``s (one thing a provider sells that sizing can choose, with
its ``Price`` per region and the ``Figure``s it was built from) and the ``Catalog`` of them with its
look-ups. ``fullserver.catalog.loader`` builds it from the data files.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from fullserver.balance import Host
from fullserver.catalog import memo as _memo
from fullserver.catalog.model import (
    Accelerator,
    CommitmentDiscount,
    EgressPrice,
    Interconnect,
    Platform,
    Source,
    StoragePrice,
)
from fullserver.errors import FullserverError, InputError
from fullserver.platforms import rules_for


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
    pods: int | None = None
    """Pods its pod network addresses per machine (``catalog.model.Shape.pods``; None: not published)."""
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


T = TypeVar("T")
Q = TypeVar("Q", bound=Hashable)
_UNKNOWN = object()


@dataclass(frozen=True, slots=True)
class _Refused:
    """A refusal ``Catalog.answer`` keeps (apart from any error a work returns as its value)."""

    error: FullserverError


@dataclass(frozen=True)
class Catalog:
    sources: dict[str, Source]
    accelerators: dict[str, Accelerator]
    offers: list[Offer]
    storage_prices: list[StoragePrice]
    egress_prices: list[EgressPrice]
    commitment_discounts: list[CommitmentDiscount]
    aliases: dict[str, str] = field(default_factory=dict)
    machine_prices: dict[str, dict[str, Price]] = field(default_factory=dict)
    """CPU-only machine types' prices per region (shapes without accelerators: N1 hosts, a created
    cluster's system pool). Never offers, so sizing never picks them for an accelerator request;
    what a Kubernetes cluster's own CPU nodes cost (``fullserver.kube.cost``, the budget policy)."""
    machine_vcpus: dict[str, int] = field(default_factory=dict)
    """CPU-only machine types' vCPUs (a created cluster's system pool: the quotas it counts against)."""

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
        return {o.name: o for o in reversed(self.offers)}  # the first of a name wins

    @functools.cached_property
    def _regions(self) -> dict[Platform, frozenset[str]]:
        return {p: frozenset(r for o in offers for r in o.prices) for p, offers in self._by_platform.items()}

    @functools.cached_property
    def slice_types(self) -> frozenset[str]:
        """Names of the offers sold as slices by type (TPU types)."""
        return frozenset(o.name for o in self.offers if rules_for(o.platform).supply.named_by_type)

    @functools.cached_property
    def _by_model(self) -> dict[tuple[Platform, str | None], list[Offer]]:
        out: dict[tuple[Platform, str | None], list[Offer]] = {}
        for o in self.offers:
            out.setdefault((o.platform, o.host.accelerator), []).append(o)
        return out

    @functools.cached_property
    def memo(self) -> dict[Hashable, Any]:
        """Answers derived from this read-only catalog and one question (``answer``), kept as long
        as the catalog is; cleared, every question is worked out afresh."""
        return {}

    def answer(self, work: Callable[[Q, Catalog], T], question: Q) -> T:
        """``work(question, self)``, worked out once per ``work`` and ``question`` and kept in
        ``memo`` (at most ``MEMO_LIMIT`` answers: past it they are dropped and worked out afresh).

        ``work`` is a module-level function of the frozen ``question`` and this catalog alone, and
        returns an immutable value (``fullserver.catalog.memo``): what it reads is what the key holds.
        A refusal (a ``FullserverError`` it raises) is an answer too: kept without its traceback,
        whose frames would hold the memo in a cycle, and raised afresh to each caller."""
        memo = self.memo
        key = (work, question)
        found = memo.get(key, _UNKNOWN)
        if found is _UNKNOWN:
            try:
                found = work(question, self)
            except FullserverError as exc:
                found = _Refused(exc.with_traceback(None))
            if len(memo) >= _memo.MEMO_LIMIT:
                memo.clear()
            memo[key] = found
        if type(found) is _Refused:
            raise found.error.afresh()
        answer: T = found
        return answer

    def offers_on(self, platform: Platform, accelerator: str | None = None) -> list[Offer]:
        """The offers of one platform (of one accelerator model when given), in catalog order."""
        if accelerator is None:
            return self._by_platform.get(platform, [])
        return self._by_model.get((platform, accelerator), [])

    def regions(self, platform: Platform) -> set[str]:
        return set(self._regions.get(platform, ()))

    def offer(self, name: str) -> Offer | None:
        return self._by_name.get(name)

    def machine_price(self, name: str, region: str) -> Price | None:
        """A CPU-only machine type's price in ``region`` (``machine_prices``), else ``None``."""
        return self.machine_prices.get(name, {}).get(region)

    @functools.cached_property
    def _storage_by_key(self) -> dict[tuple[str, str, str], StoragePrice]:
        return {(p.provider, p.kind, p.region): p for p in reversed(self.storage_prices)}  # the first wins

    @functools.cached_property
    def _egress_by_key(self) -> dict[tuple[str, str], EgressPrice]:
        return {(p.provider, p.region): p for p in reversed(self.egress_prices)}  # the first wins

    def storage_price(self, provider: str, kind: str, region: str) -> StoragePrice | None:
        return self._storage_by_key.get((provider, kind, region))

    def egress_price(self, provider: str, region: str) -> EgressPrice | None:
        return self._egress_by_key.get((provider, region))

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
