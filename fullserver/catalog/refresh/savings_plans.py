"""AWS Compute Savings Plans rates from the public Savings Plans price list files (no credentials).

Design notes: docs/design/catalog.md.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, BinaryIO

from fullserver.catalog.model import CatalogFile, ShapePrice, Source
from fullserver.catalog.refresh.aws import (
    HEADER,
    LEASE_YEARS,
    PRICING_HOST,
    PROVIDER,
    SHAPE_PLATFORMS,
    PriceListFile,
    floor_discount,
    read_header,
)
from fullserver.catalog.refresh.http import FetchError, Opener, get_json
from fullserver.catalog.refresh.jsonstream import JsonStream
from fullserver.catalog.refresh.rows import Fetched, Row

OFFER_INDEX_URL = f"{PRICING_HOST}/offers/v1.0/aws/index.json"
SOURCE_KEY = "aws-price-list-savings-plans"
PLAN_FAMILY = "ComputeSavingsPlans"
PURCHASE_OPTION = "No Upfront"
LINUX_OPERATION = "RunInstances"
SERVICE = "AmazonEC2"
TERMS = LEASE_YEARS  # "1yr" / "3yr", as the Price List's reserved terms spell them

_BOX_USAGE = re.compile(r"(?:[A-Z0-9]+-)?BoxUsage:(?P<type>[a-z0-9][a-z0-9.-]*)")
"""``USE1-BoxUsage:p5.48xlarge``: a shared-tenancy instance hour (the prefix names the region)."""


@dataclass
class RegionPlans(PriceListFile):
    """What one region's Savings Plans file gives for the instance types asked for."""

    products: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    """Plan SKU -> (productFamily, purchaseOption, purchaseTerm)."""
    terms: dict[str, int] = field(default_factory=dict)
    """Plan SKU -> years, from ``leaseContractLength``."""
    rates: list[tuple[str, str, Decimal]] = field(default_factory=list)
    """(plan SKU, instance type, USD per hour) of the Linux shared-tenancy rates kept."""
    problems: list[str] = field(default_factory=list)

    def compute_rates(self) -> dict[tuple[str, int], set[Decimal]]:
        """(instance type, years) -> the No Upfront Compute Savings Plan rates found."""
        out: dict[tuple[str, int], set[Decimal]] = {}
        for sku, itype, price in self.rates:
            family, option, term = self.products.get(sku, ("", "", ""))
            if family != PLAN_FAMILY or option != PURCHASE_OPTION:
                continue
            years = self.terms.get(sku)
            if years is None or TERMS.get(term) != years:
                continue  # reported once per plan by read_region_plans
            out.setdefault((itype, years), set()).add(price)
        return out


def _years(lease: Any) -> int | None:
    """``{"duration": 1, "unit": "year"}`` (the CSV writes the same as "1", "year") -> 1."""
    if not isinstance(lease, dict) or str(lease.get("unit", "")).lower() not in ("year", "years"):
        return None
    try:
        return int(str(lease.get("duration")))
    except ValueError:
        return None


def _keep_rate(rate: Any, region: str, wanted: set[str]) -> tuple[str, Decimal] | None:
    """(instance type, USD per hour) when ``rate`` prices a wanted type's Linux shared hour in ``region``."""
    if not isinstance(rate, dict):
        return None
    usage = _BOX_USAGE.fullmatch(str(rate.get("discountedUsageType", "")))
    itype = rate.get("discountedInstanceType") or (usage.group("type") if usage else None)
    if usage is None or itype != usage.group("type") or itype not in wanted:
        return None
    if (
        rate.get("discountedServiceCode") != SERVICE
        or rate.get("discountedOperation") != LINUX_OPERATION
        or rate.get("discountedRegionCode") != region
        or rate.get("unit") != "Hrs"
    ):
        return None
    money = rate.get("discountedRate")
    if not isinstance(money, dict) or money.get("currency") != "USD":
        return None
    try:
        price = Decimal(str(money.get("price")))
    except InvalidOperation:
        return None
    return (str(itype), price) if price.is_finite() and price > 0 else None


def read_region_plans(stream: BinaryIO, where: str, region: str, instance_types: set[str]) -> RegionPlans:
    """Stream one region's Savings Plans file and keep the rates of ``instance_types``."""
    out = RegionPlans(region=region, url=where)
    doc = JsonStream(stream, where)
    seen_products = seen_terms = False
    for key in doc.members():
        if key in HEADER:
            read_header(doc, key, out)
        elif key == "regionCode":
            code = doc.value()
            if code != region:
                raise FetchError(where, f"the file is for region '{code}', not {region}", "check the region index")
        elif key == "products":
            seen_products = True
            for _ in doc.elements():
                product = doc.value()
                if not isinstance(product, dict) or not isinstance(product.get("attributes"), dict):
                    continue
                attrs = product["attributes"]
                out.products[str(product.get("sku"))] = (
                    str(product.get("productFamily", "")),
                    str(attrs.get("purchaseOption", "")),
                    str(attrs.get("purchaseTerm", "")),
                )
        elif key == "terms":
            seen_terms = True
            for kind in doc.members():
                if kind == "savingsPlan":
                    for _ in doc.elements():
                        _read_term(doc, out, instance_types)
    if not (seen_products and seen_terms):
        raise FetchError(where, "no 'products' or 'terms' in the file", "this is not a Savings Plans price list file")
    for sku, years in out.terms.items():
        family, option, term = out.products.get(sku, ("", "", ""))
        if family == PLAN_FAMILY and option == PURCHASE_OPTION and TERMS.get(term) != years:
            out.problems.append(
                f"{region} plan {sku}: leaseContractLength {years} years but purchaseTerm '{term}'; not used"
            )
    return out


def _read_term(doc: JsonStream, out: RegionPlans, instance_types: set[str]) -> None:
    """One ``terms.savingsPlan`` entry: its SKU and term, and its rates walked one at a time."""
    sku: str | None = None
    years: int | None = None
    kept: list[tuple[str, Decimal]] = []
    for key in doc.members():
        if key == "sku":
            sku = str(doc.value())
        elif key == "leaseContractLength":
            years = _years(doc.value())
        elif key == "rates":
            for _ in doc.elements():
                found = _keep_rate(doc.value(), out.region, instance_types)
                if found:
                    kept.append(found)
    if sku is None or years is None:
        if kept:
            out.problems.append(f"{out.region}: a plan without a SKU or a term in years prices {kept[0][0]}; not used")
        return
    out.terms[sku] = years
    out.rates += [(sku, itype, price) for itype, price in kept]


def region_file_url(opener: Opener, region: str) -> str:
    """The current Savings Plans file of ``region``: offer index -> region index -> versionUrl."""
    index = get_json(opener, OFFER_INDEX_URL)
    ec2 = index.get("offers", {}).get(SERVICE) if isinstance(index, dict) else None
    path = ec2.get("currentSavingsPlanIndexUrl") if isinstance(ec2, dict) else None
    if not isinstance(path, str) or not path.startswith("/"):
        raise FetchError(
            OFFER_INDEX_URL, "no offers.AmazonEC2.currentSavingsPlanIndexUrl in the offer index", "the format changed"
        )
    region_index_url = PRICING_HOST + path
    listed = get_json(opener, region_index_url)
    regions = listed.get("regions") if isinstance(listed, dict) else None
    if not isinstance(regions, list):
        raise FetchError(region_index_url, "no 'regions' list in the region index", "the index format changed")
    urls = [r.get("versionUrl") for r in regions if isinstance(r, dict) and r.get("regionCode") == region]
    if len(urls) != 1 or not isinstance(urls[0], str) or not urls[0].startswith("/"):
        raise FetchError(
            region_index_url,
            f"{'no' if not urls else len(urls)} Savings Plans file for region {region}",
            "name a region AWS sells Savings Plans in (--region)",
        )
    return PRICING_HOST + urls[0]


def fetch(data: CatalogFile, region: str, opener: Opener, today: dt.date) -> Fetched:
    """No Upfront Compute Savings Plan discounts, 1 and 3 years, for the file's AWS shapes priced
    on demand in ``region`` (one row per shape and term, for that shape only)."""
    shapes = sorted(s.name for s in data.shapes if s.platform in SHAPE_PLATFORMS)
    on_demand = {p.shape: p for p in data.shape_prices if p.region == region and p.shape in shapes}
    url = region_file_url(opener, region)
    with opener(url) as stream:
        plans = read_region_plans(stream, url, region, set(on_demand))
    rows, problems = _discounts(data, region, shapes, on_demand, plans.compute_rates())
    used = sorted({on_demand[str(r.ident[1])].source for r in rows})
    source = Source(
        title="AWS Price List Bulk API - Savings Plans price list (AWSComputeSavingsPlan), Compute Savings Plans, "
        "No Upfront",
        url=OFFER_INDEX_URL,
        as_of=plans.published or today,
        as_of_kind="published" if plans.published else "retrieved",
        note=(
            f"Written by `fullserver catalog refresh --provider aws-savings-plans` on {today.isoformat()}. File "
            f"read: {url} (version {plans.version or '?'}, publicationDate {plans.published or 'not stated'}). "
            "Rates: terms.savingsPlan of products with productFamily ComputeSavingsPlans and purchaseOption No "
            "Upfront, purchaseTerm 1yr / 3yr agreeing with leaseContractLength; rates with discountedServiceCode "
            "AmazonEC2, discountedOperation RunInstances (Linux), usage type BoxUsage (shared tenancy), "
            f"discountedRegionCode {region}, unit Hrs, USD. Discount = 1 - rate / the catalog's on-demand price of "
            f"the same shape in {region} (source {', '.join(used) or 'none'} when written), rounded down to 4 "
            "places; each row applies to its one shape only."
        ),
    )
    fetched = Fetched(SOURCE_KEY, source, rows=rows, problems=plans.problems + problems)
    fetched.scope = {
        ("commitment_discounts", ("aws", n, str(y))) for n in on_demand for y in sorted(set(TERMS.values()))
    }
    return fetched


def _discounts(
    data: CatalogFile,
    region: str,
    shapes: list[str],
    on_demand: dict[str, ShapePrice],
    found: dict[tuple[str, int], set[Decimal]],
) -> tuple[list[Row], list[str]]:
    """One row per priced shape and term with exactly one usable rate; a problem line for the rest."""
    rows: list[Row] = []
    problems: list[str] = []
    claimed = {
        (name, c.term_years): c.applies_to
        for c in data.commitment_discounts
        if c.provider == PROVIDER and c.applies_to not in c.shapes
        for name in c.shapes
    }
    unpriced = [n for n in shapes if n not in on_demand]
    if unpriced:
        problems.append(f"{region}: no on-demand price in the file for {', '.join(unpriced)}; no discount")
    for name in sorted(on_demand):
        od = Decimal(str(on_demand[name].on_demand_usd_hour))
        for years in sorted(set(TERMS.values())):
            rates = found.get((name, years), set())
            what = f"{region} {name} {years}-year"
            if not rates:
                problems.append(f"{what}: no No Upfront Compute Savings Plan rate (Linux, shared); no discount")
                continue
            if len(rates) > 1:
                shown = ", ".join(str(r) for r in sorted(rates))
                problems.append(f"{what}: {len(rates)} different Compute Savings Plan rates ({shown}); not used")
                continue
            (rate,) = rates
            discount = floor_discount(1 - rate / od)
            if not 0 < discount < 1:
                problems.append(f"{what}: rate {rate}/h is not below on-demand {od}/h; not used")
            elif (name, years) in claimed:
                problems.append(
                    f"{what}: the file's entry '{claimed[(name, years)]}' already lists this shape; not added"
                )
            else:
                rows.append(
                    Row("commitment_discounts", ("aws", name, years), {"discount": discount}, {"shapes": [name]})
                )
    return rows, problems


__all__ = ["OFFER_INDEX_URL", "SOURCE_KEY", "RegionPlans", "fetch", "read_region_plans", "region_file_url"]
