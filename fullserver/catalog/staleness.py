"""How old the catalog's prices are, and which prices a plan used that are older than a threshold.

Every figure names a source whose ``as_of`` is the date it describes. A plan priced from a figure
months old can be far from today's bill (GPU prices move), so the plan says so: each price it used
whose source is older than ``DEFAULT_MAX_PRICE_AGE_DAYS`` (configurable) becomes a warning naming
the figure, its source, its date and how sure that date is. ``today`` is always passed in, never
read from the clock here, so the answer is reproducible (and testable).

Combined sources (``a+b``: an N1 host plus its attached GPUs) are as old as their oldest part.

Each warning says what brings the figure up to date: ``fullserver catalog refresh --provider X`` where
a refresh provider prices that very figure, and otherwise the source to update from a newer snapshot
(``catalog refresh`` cannot update A3 Ultra / A4 machine prices, TPU v4, AWS egress, or
GCP commitment discounts, so telling the reader to run it would send them nowhere).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fullserver.catalog import Catalog, Offer
from fullserver.catalog.model import Source
from fullserver.platforms import rules_for

if TYPE_CHECKING:
    from fullserver.plan import StackPlan

DEFAULT_MAX_PRICE_AGE_DAYS = 90
"""A price older than this many days is reported as stale (``--max-price-age-days``)."""


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
    oldest = min(
        (k for k in source.split("+") if k in catalog.sources), key=lambda k: catalog.sources[k].as_of, default=source
    )
    title = catalog.sources[oldest].title if oldest in catalog.sources else oldest
    return f"no refresh provider prices it: update source {oldest} from a newer snapshot of {title}"


def stale_prices(
    catalog: Catalog,
    used: Iterable[UsedPrice],
    today: dt.date,
    max_age_days: int = DEFAULT_MAX_PRICE_AGE_DAYS,
) -> list[StalePrice]:
    """The used prices whose source is more than ``max_age_days`` old, oldest first."""
    out: list[StalePrice] = []
    seen: set[tuple[str, str]] = set()
    for price in used:
        if (price.what, price.source) in seen:
            continue
        seen.add((price.what, price.source))
        parts = [catalog.sources[k] for k in price.source.split("+") if k in catalog.sources]
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


_COMMITMENT = re.compile(r"(\d+)-year commitment")
_STORAGE_ITEMS = ("boot disk", "data disk", "local SSD")


def plan_prices_used(plan: StackPlan, catalog: Catalog) -> list[UsedPrice]:
    """The catalog prices behind a plan's cost lines (none for declared hardware: its contract).

    Read from the spec and the estimate's lines: compute (spot when the plan runs on spot and the
    catalog has a spot price, as ``cost.estimate`` does; the commitment discount when the compute
    line says "N-year commitment"), each priced disk line, and data transfer.
    """
    spec, cost = plan.spec, plan.cost
    rules = rules_for(spec.platform)
    if rules.declared_hardware:
        return []
    used: list[UsedPrice] = []
    offer = catalog.offer(spec.offer)
    price = offer.prices.get(spec.region) if offer else None
    items = {line.item: line for line in cost.lines}
    compute = items.get("compute")
    if offer is not None and price is not None:
        where = f"{spec.offer} in {spec.region}"
        if spec.spot and price.spot is not None:
            used.append(UsedPrice(f"spot {where}", price.spot_from, _offer_refresh(offer, spot=True)))
        else:
            used.append(UsedPrice(f"on-demand {where}", price.source, _offer_refresh(offer, spot=False)))
            match = _COMMITMENT.search(compute.note) if compute else None
            if match:
                years = int(match.group(1))
                disc = catalog.commitment(spec.provider, offer.family, years, offer.name)
                if disc is not None:
                    what = f"{years}-year commitment discount for {offer.family}"
                    used.append(UsedPrice(what, disc.source, _commitment_refresh(spec.provider, disc.source)))
    kinds = {
        "boot disk": spec.boot_disk_kind,
        "data disk": spec.data_disk.kind if spec.data_disk else "",
        "local SSD": rules.local_ssd_price_kind or "",
    }
    for item in _STORAGE_ITEMS:
        if item in items and kinds[item]:
            storage = catalog.storage_price(spec.provider, kinds[item], spec.region)
            if storage is not None:
                what = f"{kinds[item]} storage in {spec.region}"
                used.append(UsedPrice(what, storage.source, _storage_refresh(spec.provider, kinds[item])))
    if "data transfer" in items:
        egress = catalog.egress_price(spec.provider, spec.region)
        if egress is not None:
            refresh = _egress_refresh(spec.provider)
            used.append(UsedPrice(f"internet egress from {spec.region}", egress.source, refresh))
    return list(dict.fromkeys(used))  # a boot and a data disk of one kind use one price


def plan_staleness_warnings(
    plan: StackPlan,
    catalog: Catalog,
    today: dt.date,
    max_age_days: int = DEFAULT_MAX_PRICE_AGE_DAYS,
) -> list[str]:
    """Warnings for the prices ``plan`` used that are older than ``max_age_days`` (the plan command
    adds them to the plan's warnings)."""
    return stale_price_warnings(catalog, plan_prices_used(plan, catalog), today, max_age_days)


def _offer_refresh(offer: Offer, spot: bool) -> str:
    """The ``--provider`` whose refresh prices this offer (see ``fullserver.catalog.refresh``), or ""."""
    cloud = _CLOUD_REFRESH.get(rules_for(offer.platform).provider)
    return cloud.offers(offer, spot) if cloud is not None else ""


def _aws_offer_refresh(offer: Offer, spot: bool) -> str:
    return "aws-spot" if spot else "aws"


def _gcp_offer_refresh(offer: Offer, spot: bool) -> str:
    from fullserver.catalog.refresh import gcp as gcp_skus  # the SKU mapping is the refresh's own table

    if rules_for(offer.platform).slices:  # Cloud TPU slices: the TPU SKUs
        return "tpu" if offer.family in gcp_skus.TPU_SKU_TOKENS else ""
    count = offer.host.accelerator_count
    covered = gcp_skus.refreshes_shape(offer.machine_type or offer.name, offer.family, offer.accelerator, count)
    return "gcp" if covered or offer.family == "n1" else ""


def _aws_disks() -> set[str]:
    return {"gp3"}


def _gcp_disks() -> set[str]:
    from fullserver.catalog.refresh import gcp as gcp_skus

    return set(gcp_skus.DISK_SKU_PREFIXES)


def _no_commitments(source: str) -> str:
    return ""


def _aws_commitments(source: str) -> str:
    """AWS reserved and Savings Plans discounts are refreshed (the Price List's reserved terms, the
    Savings Plans files)."""
    from fullserver.catalog.refresh import savings_plans

    return "aws-savings-plans" if source == savings_plans.SOURCE_KEY else "aws"


@dataclass(frozen=True)
class _CloudRefresh:
    """What the refresh of one cloud's prices re-prices (its ``--provider`` names): the refresh's
    own knowledge of its sources, read from the refresh's SKU tables. Keyed by the cloud's provider
    key (``PlatformRules.provider``), so every platform on a cloud is covered by its refresh."""

    offers: Callable[[Offer, bool], str]
    """The refresh of an offer's price (offer, spot), or ""."""
    storage: str
    """The refresh of its disk prices, for the kinds ``disks`` names."""
    disks: Callable[[], set[str]]
    egress: str = ""
    """The refresh of its egress price ("": not mapped)."""
    commitments: Callable[[str], str] = _no_commitments
    """The refresh of a commitment discount, by its source key ("": not mapped)."""


_CLOUD_REFRESH = {
    "aws": _CloudRefresh(_aws_offer_refresh, "aws", _aws_disks, commitments=_aws_commitments),
    "gcp": _CloudRefresh(_gcp_offer_refresh, "gcp", _gcp_disks, egress="gcp"),
}
"""AWS: the EC2 offer (on-demand, gp3, reserved terms) and the EC2 API's spot prices; the
AWSDataTransfer offer is not mapped. Google Cloud: the Cloud Billing GPU/machine, TPU and disk
SKUs, and egress; commitment prices are not mapped."""


def _storage_refresh(provider: str, kind: str) -> str:
    cloud = _CLOUD_REFRESH.get(provider)
    return cloud.storage if cloud is not None and kind in cloud.disks() else ""


def _egress_refresh(provider: str) -> str:
    cloud = _CLOUD_REFRESH.get(provider)
    return cloud.egress if cloud is not None else ""


def _commitment_refresh(provider: str, source: str) -> str:
    cloud = _CLOUD_REFRESH.get(provider)
    return cloud.commitments(source) if cloud is not None else ""
