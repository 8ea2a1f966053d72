"""How old the catalog's prices are, and which prices a plan used that are older than a threshold.

Every figure names a source whose ``as_of`` is the date it describes. A plan priced from a figure
months old can be far from today's bill (GPU prices move), so the plan says so: each price it used
whose source is older than ``DEFAULT_MAX_PRICE_AGE_DAYS`` (configurable) becomes a warning naming
the figure, its source, its date and how sure that date is. ``today`` is always passed in, never
read from the clock here, so the answer is reproducible (and testable).

Design notes: docs/design/catalog.md.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from fullserver import clouds
from fullserver.catalog import Catalog, Offer, Same
from fullserver.catalog.model import Source
from fullserver.catalog.network import load_network_prices
from fullserver.clouds import PriceRefresh
from fullserver.platforms import rules_for

DEFAULT_MAX_PRICE_AGE_DAYS = 90
"""A price older than this many days is reported as stale (``--max-price-age-days``)."""

CONTRACT = "stack contract"
"""The source of a declared server's prices: the stack's own ``dedicated:`` contract, which the
stack file dates, not a catalog source (so the age rule passes it by)."""


def price_age_days(source: Source, today: dt.date) -> int:
    """Days from the source's ``as_of`` to ``today`` (negative when the source is dated later)."""
    return (today - source.as_of).days


def source_age_days(catalog: Catalog, key: str, today: dt.date) -> int | None:
    """Age of a source key, ``a+b`` keys included (the oldest part); None for an unknown key."""
    ages = [price_age_days(catalog.sources[k], today) for k in key.split("+") if k in catalog.sources]
    return max(ages) if ages and len(ages) == len(key.split("+")) else None


def source_ages(catalog: Catalog, today: dt.date) -> dict[str, int]:
    """Every source's age in days, for ``catalog --json`` (a figure's age is its source's)."""
    return {key: price_age_days(src, today) for key, src in catalog.sources.items()}


@dataclass(frozen=True)
class UsedPrice:
    """One price a plan used: what it priced, the catalog source it came from, and the refresh provider
    that prices this figure (``--provider``), or "" when none does."""

    what: str
    source: str
    refresh: str = ""


@dataclass(frozen=True)
class StalePrice:
    """A used price older than the threshold, with what a person needs to judge it."""

    what: str
    source: str
    as_of: dt.date
    as_of_kind: str
    age_days: int
    remedy: str = "run `fullserver catalog refresh`"

    def warning(self, max_age_days: int) -> str:
        return (
            f"the {self.what} price is {self.age_days} days old (source {self.source}, as of {self.as_of}, "
            f"{self.as_of_kind}; threshold {max_age_days} days): {self.remedy}"
        )


_WARNING = re.compile(
    r"the (?P<what>.+) price is (?P<age>\d+) days old \(source (?P<source>\S+), "
    r"as of (?P<when>.+?; threshold \d+ days)\): (?P<remedy>.+)",
    re.S,
)
"""``StalePrice.warning``'s sentence, read back (from a plan document, which carries it as text)."""


@dataclass(frozen=True)
class StaleWarning:
    """A stale-price warning read back into its parts, so a report naming many stacks can say
    each source once."""

    what: str
    source: str
    age_days: int
    when: str
    """``2025-01-02, published; threshold 180 days``: the source's date and the threshold."""
    remedy: str


def read_warning(text: str) -> StaleWarning | None:
    """The parts of a stale-price warning; ``None`` for any other warning."""
    m = _WARNING.fullmatch(text)
    if m is None:
        return None
    return StaleWarning(m["what"], m["source"], int(m["age"]), m["when"], m["remedy"])


def remedy(catalog: Catalog, source: str, refresh: str) -> str:
    """What brings a stale figure up to date: the refresh provider that prices it, else its snapshot."""
    if refresh:
        return f"run `fullserver catalog refresh --provider {refresh}`"
    sources = price_sources(catalog)
    oldest = min((k for k in source.split("+") if k in sources), key=lambda k: sources[k].as_of, default=source)
    title = sources[oldest].title if oldest in sources else oldest
    return f"no refresh provider prices it: update source {oldest} from a newer snapshot of {title}"


def stale_prices(
    catalog: Catalog,
    used: Iterable[UsedPrice],
    today: dt.date,
    max_age_days: int = DEFAULT_MAX_PRICE_AGE_DAYS,
) -> list[StalePrice]:
    """The used prices whose source is more than ``max_age_days`` old, oldest first."""
    sources = price_sources(catalog)
    out: list[StalePrice] = []
    seen: set[tuple[str, str]] = set()
    for price in used:
        if (price.what, price.source) in seen:
            continue
        seen.add((price.what, price.source))
        parts = [sources[k] for k in price.source.split("+") if k in sources]
        if not parts:
            continue
        oldest = min(parts, key=lambda s: s.as_of)
        age = price_age_days(oldest, today)
        if age > max_age_days:
            fix = remedy(catalog, price.source, price.refresh)
            out.append(StalePrice(price.what, price.source, oldest.as_of, oldest.as_of_kind, age, fix))
    return sorted(out, key=lambda s: (-s.age_days, s.what))


def stale_price_warnings(
    catalog: Catalog,
    used: Iterable[UsedPrice],
    today: dt.date,
    max_age_days: int = DEFAULT_MAX_PRICE_AGE_DAYS,
) -> list[str]:
    """``stale_prices`` as warning lines, the form ``StackPlan.warnings`` holds."""
    return [s.warning(max_age_days) for s in stale_prices(catalog, used, today, max_age_days)]


def price_sources(catalog: Catalog) -> Mapping[str, Source]:
    """Every source a price line can read, by key: the shape catalog's, the network prices' and the
    cluster fees' (``data/*.yaml``). One key names one source across the files (a test holds it)."""
    from fullserver.kube.fees import load_cluster_fees  # the fee file's loader sits beside its users

    return {**load_cluster_fees().sources, **load_network_prices().sources, **catalog.sources}  # the catalog's wins


class BilledLine(Protocol):
    """What the age rule reads of a cost line (``fullserver.cost.CostLine``): read here as this
    shape, so the catalog does not import the cost and plan built on it."""

    @property
    def item(self) -> str: ...
    @property
    def usd_month(self) -> float: ...
    @property
    def prices(self) -> tuple[UsedPrice, ...]: ...


class Billed(Protocol):
    """An estimate's lines (``fullserver.cost.CostEstimate``)."""

    @property
    def lines(self) -> Sequence[BilledLine]: ...


class Priced(Protocol):
    """A plan, as far as its prices' ages go (``fullserver.plan.StackPlan``)."""

    @property
    def cost(self) -> Billed: ...


def plan_prices_used(plan: Priced, catalog: Catalog) -> list[UsedPrice]:
    """Every catalog entry behind a plan's cost lines, as each line's price look-up recorded it
    (``CostLine.prices``): compute, commitments, disks, egress, load balancers, NAT, public
    addresses, cluster fees, system pools, alarms - whatever a line bills, not a list per surface."""
    return list(dict.fromkeys(read for line in plan.cost.lines for read in line.prices))


def undated_lines(lines: Iterable[BilledLine]) -> list[str]:
    """The cost lines that bill money but recorded no price they read: a price added without an
    entry (so without a source and a date) can never go stale in the plan's eyes."""
    return [line.item for line in lines if line.usd_month and not line.prices]


def plan_staleness_warnings(
    plan: Priced,
    catalog: Catalog,
    today: dt.date,
    max_age_days: int = DEFAULT_MAX_PRICE_AGE_DAYS,
) -> list[str]:
    """The one age rule over every price ``plan``'s cost lines read: each older than
    ``max_age_days``, each whose source is secondary, each naming no known source, and each line
    that read none (the plan command adds them to the plan's warnings)."""
    used = [u for u in plan_prices_used(plan, catalog) if u.source != CONTRACT]
    sources = price_sources(catalog)
    unknown = sorted({u.source for u in used if not _parts(sources, u.source)})
    return [
        *stale_price_warnings(catalog, used, today, max_age_days),
        *secondary_warnings(sources, used),
        *(f"price source '{key}' is in no data file: date it under `sources` so its age is checked" for key in unknown),
        *(
            f"the {item} cost line records no price it read: its age cannot be checked"
            for item in undated_lines(plan.cost.lines)
        ),
    ]


def secondary_warnings(sources: Mapping[str, Source], used: Iterable[UsedPrice]) -> list[str]:
    """One line per secondary source a plan's prices rest on (``Source.secondary``): what it is and
    the primary page to confirm the figures against."""
    whats: dict[str, list[str]] = {}
    for price in used:
        for key in price.source.split("+"):
            if key in sources and sources[key].secondary:
                whats.setdefault(key, []).append(price.what)
    return [
        f"the {', '.join(dict.fromkeys(w))} price rests on a secondary source ({key}: {sources[key].secondary})"
        for key, w in sorted(whats.items())
    ]


def _parts(sources: Mapping[str, Source], key: str) -> list[Source]:
    """The sources of a key, ``a+b`` included; empty unless every part is known."""
    parts = [sources[k] for k in key.split("+") if k in sources]
    return parts if len(parts) == len(key.split("+")) else []


# --- What each look-up records: the entry it read, and the refresh that re-prices that entry.
# A read is a pure function of its arguments and code tables (never stale); the reads every
# estimate makes (disks, egress, network) are kept by their arguments, a few per catalog entry.


class OfferReads(NamedTuple):
    """An offer's price entries in one region as a rate reads them (``offer_reads``): its spot
    figure (none where it publishes none) and its on-demand one."""

    spot: tuple[UsedPrice, ...]
    on_demand: UsedPrice


class _OfferPlace(NamedTuple):
    """An offer in a region: all its reads depend on (``offer_reads``)."""

    offer: Same[Offer]
    region: str


def offer_reads(offer: Offer, region: str, catalog: Catalog) -> OfferReads:
    """The entries of ``offer`` in ``region`` a rate reads: one answer per offer and region
    (``Catalog.answer``), whichever pricing the rate is on."""
    return catalog.answer(_offer_reads, _OfferPlace(Same(offer), region))


def _offer_reads(q: _OfferPlace, catalog: Catalog) -> OfferReads:
    offer, region = q.offer.of, q.region
    price = offer.prices[region]
    where = f"{offer.name} in {region}"
    spot, on_demand = catalog.answer(_offer_refreshes, q.offer)
    return OfferReads(
        (UsedPrice(f"spot {where}", price.spot_from, spot),) if price.spot is not None else (),
        UsedPrice(f"on-demand {where}", price.source, on_demand),
    )


def _offer_refreshes(q: Same[Offer], catalog: Catalog) -> tuple[str, str]:
    """The refresh providers of an offer's spot and on-demand figures, the same in every region."""
    return _offer_refresh(q.of, spot=True), _offer_refresh(q.of, spot=False)


def commitment_read(provider: str, family: str, years: int, source: str) -> UsedPrice:
    return UsedPrice(f"{years}-year commitment discount for {family}", source, _commitment_refresh(provider, source))


@functools.lru_cache(maxsize=4096)
def storage_read(provider: str, kind: str, region: str, source: str) -> UsedPrice:
    return UsedPrice(f"{kind} storage in {region}", source, _storage_refresh(provider, kind))


@functools.lru_cache(maxsize=4096)
def egress_read(provider: str, region: str, source: str) -> UsedPrice:
    return UsedPrice(f"internet egress from {region}", source, _egress_refresh(provider))


@functools.lru_cache(maxsize=4096)
def network_read(item: str, region: str, source: str) -> UsedPrice:
    """A network catalog entry (``data/network.yaml``): no refresh prices it, so a stale one names
    its source to update."""
    return UsedPrice(f"{item} in {region}", source)


def fee_read(provider: str, item: str, source: str) -> UsedPrice:
    """A cluster fee (``data/kubernetes.yaml``): updated from its source, as the network prices are."""
    return UsedPrice(f"{provider} {item} fee", source)


def machine_read(provider: str, machine: str, region: str, source: str) -> UsedPrice:
    """A CPU-only machine's on-demand price (a created cluster's system pool)."""
    cloud = _refresh_of(provider)
    refresh = cloud.machines(machine) if cloud is not None else ""
    return UsedPrice(f"on-demand {machine} in {region}", source, refresh)


def _offer_refresh(offer: Offer, spot: bool) -> str:
    """The ``--provider`` whose refresh prices this offer (see ``fullserver.catalog.refresh``), or ""."""
    cloud = _refresh_of(rules_for(offer.platform).provider)
    return cloud.offers(offer, spot) if cloud is not None else ""


def _refresh_of(provider: str) -> PriceRefresh | None:
    """What the cloud's price refresh re-prices (``fullserver.clouds``); None on no cloud."""
    found = clouds.cloud(provider)
    return found.price_refresh if found is not None else None


def _storage_refresh(provider: str, kind: str) -> str:
    cloud = _refresh_of(provider)
    return cloud.storage if cloud is not None and kind in cloud.disks() else ""


def _egress_refresh(provider: str) -> str:
    cloud = _refresh_of(provider)
    return cloud.egress if cloud is not None else ""


def _commitment_refresh(provider: str, source: str) -> str:
    cloud = _refresh_of(provider)
    return cloud.commitments(source) if cloud is not None else ""
