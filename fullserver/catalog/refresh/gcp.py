"""GCP and Cloud TPU prices from the Cloud Billing Catalog API (JSON over HTTPS, an API key).

Design notes: docs/design/catalog.md.
"""

from __future__ import annotations

import datetime as dt
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from fullserver.catalog.model import CatalogFile, Source
from fullserver.catalog.refresh.http import FetchError, Opener, pages
from fullserver.catalog.refresh.rows import Fetched, Row, date_of

COMPUTE_SERVICE_ID = "6F81-5844-456A"
API = "https://cloudbilling.googleapis.com/v1"
GCP_SOURCE_KEY = "gcp-cloud-billing-catalog"
PROVIDER = "gcp"
"""The catalog's provider key of the rows this refresh owns (its disk prices)."""
TPU_SOURCE_KEY = "tpu-cloud-billing-catalog"
MAX_PAGES = 100
GIB_PER_GB = Decimal("1.073741824")

GPU_SKU_NAMES = {
    # catalog accelerator -> the words before " GPU" in its SKU descriptions
    "T4": "Nvidia Tesla T4",
    "P4": "Nvidia Tesla P4",
    "P100": "Nvidia Tesla P100",
    "V100-16GB": "Nvidia Tesla V100",
    "A100-40GB": "Nvidia Tesla A100",
    "A100-80GB": "Nvidia Tesla A100 80GB",
    "L4": "Nvidia L4",
    "H100-80GB": "Nvidia H100 80GB",
    "H100-80GB-Mega": "Nvidia H100 80GB Mega",  # a3-megagpu's GPUs: their own SKUs, not a catalog accelerator
}
SERIES_SKU_NAMES = {"n1": "N1 Predefined Instance", "a2": "A2 Instance", "g2": "G2 Instance", "a3": "A3 Instance"}
MACHINE_SKU_PARTS: dict[tuple[str, str], tuple[str, str]] = {
    # (machine-type prefix, catalog accelerator) -> (series whose core and RAM SKUs it bills, GPU SKU component).
    # From Cyclenerd/google-cloud-pricing-cost-calculator build/mapping.csv and build/gcp.yml (dac31281,
    # 2026-08-20): A2 Ultra = "A2 Instance Core/Ram" + "Nvidia Tesla A100 80GB GPU running"; a3-highgpu and
    # a3-megagpu = "A3 Instance Core/Ram" + "Nvidia H100 80GB [Mega] GPU running". Their bundled Local SSD is a
    # separate SKU (SSD backed Local Storage) that the catalog prices as local-ssd storage, never in the shape
    # price, so the sum below is the catalog's figure. A3 Ultra (H200) and A4 (B200) are not in the mapping.
    ("a2-highgpu-", "A100-40GB"): ("a2", "A100-40GB"),
    ("a2-megagpu-", "A100-40GB"): ("a2", "A100-40GB"),
    ("a2-ultragpu-", "A100-80GB"): ("a2", "A100-80GB"),
    ("a3-highgpu-", "H100-80GB"): ("a3", "H100-80GB"),
    ("a3-megagpu-", "H100-80GB"): ("a3", "H100-80GB-Mega"),
}
TPU_SKU_TOKENS = {"v5e": ("tpuv5e", "tpuv5lite"), "v5p": ("tpuv5p",), "v6e": ("tpuv6e",)}
DISK_SKU_PREFIXES = {
    "pd-balanced": "balanced pd capacity",
    "pd-ssd": "ssd backed pd capacity",
    "local-ssd": "ssd backed local storage",
}
EXCLUDED_WORDS = (
    "commitment",
    "reserved",
    "sole tenancy",
    "dws",
    "calendar",
    "flex",
    "custom",
    "extended",
    "premium",
    "virtual workstation",
    "regional",
    "confidential",
)
EXCLUDED_EGRESS_DESTINATIONS = ("china", "australia")
UNITS = {"gpu": "h", "core": "h", "ram": "GiBy.h", "tpu": "h", "disk": "GiBy.mo", "egress": "GiBy"}


@dataclass(frozen=True)
class Sku:
    """The parts of one SKU a refresh uses; ``price`` is the first non-zero tier's unit price."""

    sku_id: str
    description: str
    family: str
    group: str
    usage: str
    regions: tuple[str, ...]
    unit: str
    price: Decimal
    effective: str

    @property
    def spot(self) -> bool:
        d = self.description.lower()
        return self.usage == "Preemptible" or "preemptible" in d or "spot" in d


def skus_url(service: str, api_key: str, page_token: str = "", page_size: int = 5000) -> str:
    query = {"key": api_key, "currencyCode": "USD", "pageSize": str(page_size)}
    if page_token:
        query["pageToken"] = page_token
    return f"{API}/services/{service}/skus?{urllib.parse.urlencode(query)}"


def list_skus(opener: Opener, api_key: str, service: str = COMPUTE_SERVICE_ID) -> list[dict[str, Any]]:
    """Every public SKU of ``service``, following ``nextPageToken`` to the last page."""
    skus: list[dict[str, Any]] = []
    for page in pages(opener, lambda token: skus_url(service, api_key, token), MAX_PAGES):
        if not isinstance(page, dict) or not isinstance(page.get("skus", []), list):
            raise FetchError(f"{API}/services/{service}/skus", "no 'skus' list in the response", "not the SKU API")
        skus.extend(s for s in page.get("skus", []) if isinstance(s, dict))
    return skus


def _money(price: Any) -> Decimal | None:
    if not isinstance(price, dict):
        return None
    try:
        return Decimal(str(price.get("units") or 0)) + Decimal(int(price.get("nanos") or 0)).scaleb(-9)
    except (InvalidOperation, ValueError, TypeError):
        return None


def parse_sku(raw: dict[str, Any]) -> Sku | None:
    """The SKU's current price (the last pricingInfo entry), or None if it gives none."""
    infos = raw.get("pricingInfo")
    if not isinstance(infos, list) or not infos or not isinstance(infos[-1], dict):
        return None
    info = infos[-1]
    expr = info.get("pricingExpression") or {}
    tiers = expr.get("tieredRates") or []
    price = next(
        (p for t in tiers if isinstance(t, dict) and (p := _money(t.get("unitPrice"))) is not None and p > 0), None
    )
    if price is None:
        return None
    category = raw.get("category") or {}
    return Sku(
        sku_id=str(raw.get("skuId", "")),
        description=str(raw.get("description", "")),
        family=str(category.get("resourceFamily", "")),
        group=str(category.get("resourceGroup", "")),
        usage=str(category.get("usageType", "")),
        regions=tuple(str(r) for r in raw.get("serviceRegions") or []),
        unit=str(expr.get("usageUnit", "")),
        price=price,
        effective=str(info.get("effectiveTime", "")),
    )


Component = tuple[
    str, str
]  # ("gpu", "T4"), ("core", "n1"), ("ram", "a2"), ("tpu", "v5e"), ("disk", "pd-ssd"), ("egress", "")


def classify(sku: Sku) -> Component | None:
    """Which catalog component a SKU prices, from its description; None for everything else."""
    if sku.usage not in ("OnDemand", "Preemptible"):
        return None
    d = sku.description.lower()
    if any(word in d for word in EXCLUDED_WORDS):
        return None
    if sku.group == "PremiumInternetEgress":
        if "internet" in d and " to " in d and "ingress" not in d:
            destination = d.rsplit(" to ", 1)[1]
            if not any(x in destination for x in EXCLUDED_EGRESS_DESTINATIONS):
                return ("egress", "")
        return None
    for acc, name in GPU_SKU_NAMES.items():
        if f"{name.lower()} gpu" in d:
            return ("gpu", acc)
    for series, name in SERIES_SKU_NAMES.items():
        for part in ("core", "ram"):
            if f"{name.lower()} {part}" in d:
                return (part, series)
    squashed = d.replace(" ", "").replace("-", "")
    for generation, tokens in TPU_SKU_TOKENS.items():
        if any(t in squashed for t in tokens):
            return ("tpu", generation)
    for kind, prefix in DISK_SKU_PREFIXES.items():
        if d.startswith(prefix):
            return ("disk", kind)
    return None


class PriceIndex:
    """Prices by (component, region, spot), from every SKU classified; disagreements kept for the report."""

    def __init__(self, raw_skus: Iterable[dict[str, Any]]) -> None:
        self.prices: dict[tuple[Component, str, bool], dict[Decimal, list[str]]] = {}
        self.unusable: set[tuple[Component, str]] = set()
        self._problems: dict[str, str] = {}  # problem line -> the kind of component it is about
        self.count = 0
        self.effective: list[dt.date] = []
        for raw in raw_skus:
            sku = parse_sku(raw)
            if sku is None:
                continue
            self.count += 1
            component = classify(sku)
            if component is None:
                continue
            expected = UNITS[component[0]]
            if sku.unit != expected:
                line = f"SKU {sku.sku_id} '{sku.description}': unit '{sku.unit}', expected '{expected}'; not used"
                self.problem(component, line)
                self.unusable.update((component, region) for region in sku.regions)
                continue
            if (day := date_of(sku.effective)) is not None:
                self.effective.append(day)
            for region in sku.regions:
                found = self.prices.setdefault((component, region, sku.spot), {})
                found.setdefault(sku.price, []).append(sku.sku_id)

    def problem(self, component: Component, line: str) -> None:
        self._problems.setdefault(line, component[0])

    def problems(self, kinds: Iterable[str]) -> list[str]:
        """The problem lines about components of ``kinds`` (a TPU refresh does not list GPU SKUs)."""
        wanted = set(kinds)
        return [line for line, kind in self._problems.items() if kind in wanted]

    def one(self, component: Component, region: str, spot: bool = False) -> Decimal | None:
        """The single price of a component in a region; None (and a problem line) if SKUs disagree."""
        found = self.prices.get((component, region, spot))
        if not found:
            return None
        if len(found) > 1:
            detail = ", ".join(f"{p} ({'/'.join(ids)})" for p, ids in sorted(found.items()))
            kind = "spot" if spot else "on-demand"
            self.problem(component, f"{component[0]} {component[1]} {region} {kind}: SKUs disagree: {detail}; not used")
            return None
        return next(iter(found))

    def seen(self, component: Component, region: str) -> bool:
        """Whether any SKU priced the component there (even if the prices could not be used)."""
        return bool(self.prices.get((component, region, False))) or (component, region) in self.unusable

    def highest(self, component: Component, region: str) -> Decimal | None:
        found = self.prices.get((component, region, False))
        return max(found) if found else None


def _regions(data: CatalogFile, extra: Iterable[str], sections: Iterable[str]) -> list[str]:
    seen: dict[str, None] = {}
    for name in sections:
        for row in getattr(data, name):
            seen.setdefault(row.region, None)
    for region in extra:
        seen.setdefault(region, None)
    return list(seen)


def _source(index: PriceIndex, today: dt.date, what: str) -> Source:
    effective = (
        f"SKU effectiveTime {min(index.effective)} to {max(index.effective)}" if index.effective else "no effectiveTime"
    )
    return Source(
        title=f"Cloud Billing Catalog API - Compute Engine SKUs (services/{COMPUTE_SERVICE_ID}/skus): {what}",
        url=f"{API}/services/{COMPUTE_SERVICE_ID}/skus",
        as_of=today,
        as_of_kind="retrieved",
        note=(
            f"Written by `fullserver catalog refresh` on {today.isoformat()} from {index.count} priced SKUs "
            f"(list prices in USD; no time range requested, so the latest pricing, at most 12 hours old; "
            f"{effective}). as_of is the day the API was read. Matched by description, OnDemand and Preemptible "
            "usage only (commitments, reservations, sole tenancy, DWS, custom and regional SKUs excluded); the "
            "first non-zero tier of the last pricingInfo entry; a component whose SKUs disagree is not used."
        ),
    )


def fetch_gcp(
    data: CatalogFile, raw_skus: list[dict[str, Any]], today: dt.date, regions: Iterable[str] = ()
) -> Fetched:
    """Rows of gcp.yaml: attachable GPU prices, machine prices of N1, G2 and the types
    ``MACHINE_SKU_PARTS`` maps (A2 Standard and Ultra, A3 High and Mega), disks and egress."""
    index = PriceIndex(raw_skus)
    sections = ("shape_prices", "accelerator_prices", "storage_prices", "egress_prices")
    where = _regions(data, regions, sections)
    fetched = Fetched(GCP_SOURCE_KEY, _source(index, today, "GPUs, machine cores and memory, disks, egress"))

    attachable = sorted(
        {a.accelerator for a in data.attachable_gpus} | {p.accelerator for p in data.accelerator_prices}
    )
    for acc in attachable:
        if acc not in GPU_SKU_NAMES:
            fetched.problems.append(f"accelerator {acc}: no SKU description mapped; not refreshed")
            continue
        for region in where:
            values = _od_spot(index, ("gpu", acc), region, "on_demand_usd_hour", "spot_usd_hour")
            _put(fetched, Row("accelerator_prices", (acc, region), {}), values, index.seen(("gpu", acc), region))

    skipped: list[str] = []
    for shape in data.shapes:
        parts = _shape_parts(shape.name, shape.family, shape.accelerator, shape.accelerator_count)
        if parts is None:
            skipped.append(shape.name)
            continue
        for region in where:
            values = {}
            for spot, field in ((False, "on_demand_usd_hour"), (True, "spot_usd_hour")):
                total = _sum(index, parts, shape.vcpus, shape.memory_gib, shape.accelerator_count, region, spot)
                if total is not None:
                    values[field] = total
            if "on_demand_usd_hour" not in values or values.get("spot_usd_hour", 0) > values["on_demand_usd_hour"]:
                values.pop("spot_usd_hour", None)
            if "on_demand_usd_hour" not in values:
                values = {}
            _put(fetched, Row("shape_prices", (shape.name, region), {}), values, index.seen(("core", parts[0]), region))
    if skipped:
        fetched.problems.append(
            "not refreshed (no core, RAM and GPU SKUs mapped for the machine type): " + ", ".join(skipped)
        )

    kinds = sorted({p.kind for p in data.storage_prices if p.provider == PROVIDER})
    for kind in kinds:
        if kind not in DISK_SKU_PREFIXES:
            fetched.problems.append(f"storage {kind}: no SKU description mapped; not refreshed")
            continue
        for region in where:
            price = index.one(("disk", kind), region)
            values = {"usd_gib_month": price} if price is not None else {}
            _put(fetched, Row("storage_prices", ("gcp", kind, region), {}), values, index.seen(("disk", kind), region))

    for region in where:
        per_gib = index.highest(("egress", ""), region)
        values = {}
        if per_gib is not None:
            values["usd_per_gb"] = (per_gib / GIB_PER_GB).quantize(Decimal("0.00001"), rounding=ROUND_HALF_UP)
        _put(fetched, Row("egress_prices", ("gcp", region), {}), values, False)
    fetched.problems += index.problems(("gpu", "core", "ram", "disk", "egress"))
    return fetched


def fetch_tpu(
    data: CatalogFile, raw_skus: list[dict[str, Any]], today: dt.date, regions: Iterable[str] = ()
) -> Fetched:
    """Rows of tpu.yaml: per chip-hour prices of the TPU generations priced in Compute Engine."""
    index = PriceIndex(raw_skus)
    where = _regions(data, regions, ("tpu_prices",))
    fetched = Fetched(TPU_SOURCE_KEY, _source(index, today, "Cloud TPU v5e, v5p and v6e per chip-hour"))
    generations = sorted({t.generation for t in data.tpu_types} | {p.generation for p in data.tpu_prices})
    for generation in generations:
        if generation not in TPU_SKU_TOKENS:
            fetched.problems.append(
                f"TPU {generation}: priced in the Cloud TPU service per device, not mapped; rows left as they are"
            )
            continue
        for region in where:
            values = _od_spot(index, ("tpu", generation), region, "on_demand_usd_chip_hour", "spot_usd_chip_hour")
            seen = index.seen(("tpu", generation), region)
            _put(fetched, Row("tpu_prices", (generation, region), {}), values, seen)
    fetched.problems += index.problems(("tpu",))
    return fetched


def _put(fetched: Fetched, row: Row, values: dict[str, Decimal], skus_found: bool) -> None:
    """Record a looked-for row: priced; or gone when no SKU prices it at all. A row whose SKUs were
    found but could not be used (they disagree, or have another unit) is neither: it stays as it
    is, and the problem is reported."""
    if values:
        fetched.rows.append(Row(row.section, row.ident, values))
    if values or not skus_found:
        fetched.scope.add(row.key)


def _od_spot(index: PriceIndex, component: Component, region: str, od: str, spot: str) -> dict[str, Decimal]:
    values: dict[str, Decimal] = {}
    price = index.one(component, region)
    if price is None:
        return values
    values[od] = price
    spot_price = index.one(component, region, spot=True)
    if spot_price is not None and spot_price > price:
        index.problem(component, f"{component[0]} {component[1]} {region}: spot {spot_price} above on-demand {price}")
    elif spot_price is not None:
        values[spot] = spot_price
    return values


def refreshes_shape(name: str, family: str, accelerator: str | None, count: int) -> bool:
    """Whether ``fetch_gcp`` prices this machine type (the staleness warning says so, or names the snapshot)."""
    return _shape_parts(name, family, accelerator, count) is not None


def _shape_parts(name: str, family: str, accelerator: str | None, count: int) -> tuple[str, str | None] | None:
    """(series, GPU) whose SKUs add up to the machine's price, or None when not mapped."""
    if family == "n1" and accelerator is None:
        return ("n1", None)
    if family == "g2" and accelerator == "L4":
        return ("g2", "L4")
    return next(
        (parts for (prefix, acc), parts in MACHINE_SKU_PARTS.items() if name.startswith(prefix) and accelerator == acc),
        None,
    )


def _sum(
    index: PriceIndex,
    parts: tuple[str, str | None],
    vcpus: int,
    memory_gib: float,
    gpus: int,
    region: str,
    spot: bool,
) -> Decimal | None:
    series, gpu = parts
    core = index.one(("core", series), region, spot)
    ram = index.one(("ram", series), region, spot)
    if core is None or ram is None:
        return None
    total = core * vcpus + ram * Decimal(str(memory_gib))
    if gpu is not None:
        price = index.one(("gpu", gpu), region, spot)
        if price is None:
            return None
        total += price * gpus
    return total
