"""AWS prices from the AWS Price List Bulk API: public JSON over HTTPS, no credentials.

Formats (AWS Billing User Guide, "Reading the price list files"; "Service Region index file"):
see the design notes.

Design notes: docs/design/catalog.md.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal, InvalidOperation
from typing import Any, BinaryIO

from fullserver.catalog.model import CatalogFile, Source
from fullserver.catalog.refresh.http import FetchError, Opener, get_json
from fullserver.catalog.refresh.jsonstream import JsonStream
from fullserver.catalog.refresh.rows import Fetched, Row, date_of
from fullserver.platforms import all_rules

PROVIDER = "aws"
"""The catalog's provider key of the rows this refresh owns."""
SHAPE_PLATFORMS = frozenset(
    r.platform.value for r in all_rules() if r.provider == PROVIDER and "shapes" in r.catalog_forms
)
"""The platforms whose ``shapes`` rows the AWS refreshes price: every AWS platform sold from the catalog's shapes."""

PRICING_HOST = "https://pricing.us-east-1.amazonaws.com"
REGION_INDEX_URL = f"{PRICING_HOST}/offers/v1.0/aws/AmazonEC2/current/region_index.json"
SOURCE_KEY = "aws-price-list-ec2"

LINUX_SHARED = {"operatingSystem": "Linux", "tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used"}
"""Attributes every Linux on-demand instance SKU has."""

IF_PRESENT = {"licenseModel": "No License required", "marketoption": "OnDemand", "operation": "RunInstances"}
"""Attributes checked only where a file has them (older files lack some)."""

GP3_USAGE = {
    # usagetype after "EBS:" -> (catalog field, the Price List unit, units of the catalog's per unit)
    "VolumeUsage.gp3": ("usd_gib_month", "GB-Mo", Decimal(1)),
    "VolumeP-IOPS.gp3": ("usd_iops_month", "IOPS-Mo", Decimal(1)),
    "VolumeP-Throughput.gp3": ("usd_mbps_month", "GiBps-mo", Decimal(1024)),
}
"""The gp3 SKUs of an EC2 offer file, by usage type (Amazon EBS User Guide billing codes)."""
GP3_FREE = {"free_iops": Decimal(3000), "free_mbps": Decimal(125)}
"""What a gp3 volume includes before the IOPS and throughput SKUs bill: "Provioned IOPS for gp3 volumes
over 3,000", "Provisioned throughput for gp3 volumes over 125 MB/s" (Amazon EBS User Guide, "Understand
codes for Amazon EBS in billing and usage reports"); the EC2 API's default gp3 IOPS is 3,000 too."""

RESERVED_TERM = {"OfferingClass": "standard", "PurchaseOption": "No Upfront"}
LEASE_YEARS = {"1yr": 1, "3yr": 3}


@dataclass
class PriceListFile:
    """One region's Price List file (EC2 offers or Savings Plans) and its header members."""

    region: str
    url: str
    version: str = ""
    published: dt.date | None = None


HEADER = ("publicationDate", "version")


def read_header(doc: JsonStream, key: str, out: PriceListFile) -> None:
    """A header member (``HEADER``): ``publicationDate`` as a date (None when not one), ``version``."""
    value = doc.value()
    if key == "publicationDate":
        out.published = date_of(value) if isinstance(value, str) else None
    else:
        out.version = str(value)


def floor_discount(value: Decimal) -> Decimal:
    """A discount rounded down to four places: never more than the source gives."""
    return value.quantize(Decimal("0.0001"), rounding=ROUND_FLOOR)


@dataclass
class RegionOffers(PriceListFile):
    """The figures one region's offer file gives for the instance families asked for."""

    on_demand: dict[str, Decimal] = field(default_factory=dict)
    """Instance type -> USD per hour (Linux, shared tenancy)."""
    reserved: dict[tuple[str, int], Decimal] = field(default_factory=dict)
    """(instance type, years) -> USD per hour, standard class, no upfront."""
    gp3: dict[str, Decimal] = field(default_factory=dict)
    """Catalog gp3 field (``GP3_USAGE``) -> USD per its unit, for the gp3 SKUs the file prices."""
    problems: list[str] = field(default_factory=list)


def _family(instance_type: str) -> str:
    return instance_type.split(".", 1)[0]


def _is_linux_on_demand(attrs: dict[str, Any], region: str) -> bool:
    if any(attrs.get(k) != v for k, v in LINUX_SHARED.items()):
        return False
    if any(k in attrs and attrs[k] != v for k, v in IF_PRESENT.items()):
        return False
    return bool(attrs.get("regionCode", region) == region)


def _hourly(term: Any) -> Decimal | None:
    """The USD per hour of a term's ``Hrs`` price dimension (None when absent or not a number)."""
    dims = term.get("priceDimensions") if isinstance(term, dict) else None
    if not isinstance(dims, dict):
        return None
    rates = [d for d in dims.values() if isinstance(d, dict) and d.get("unit") == "Hrs"]
    if len(rates) != 1:
        return None
    try:
        return Decimal(str(rates[0]["pricePerUnit"]["USD"]))
    except (KeyError, TypeError, InvalidOperation):
        return None


def _gp3_field(attrs: dict[str, Any], region: str) -> str | None:
    """The catalog gp3 field a product prices (``GP3_USAGE``), or None for any other product."""
    usage = attrs.get("usagetype")
    if attrs.get("volumeApiName") != "gp3" or not isinstance(usage, str) or "EBS:" not in usage:
        return None
    if attrs.get("regionCode", region) != region:
        return None
    found = GP3_USAGE.get(usage.split("EBS:", 1)[1])
    return found[0] if found else None


def _gp3_rates(field_name: str, terms: Any, into: dict[str, set[Decimal]]) -> None:
    """Collect a gp3 SKU's on-demand rates in the catalog's unit (``GP3_USAGE``)."""
    unit, per = next((u, p) for f, u, p in GP3_USAGE.values() if f == field_name)
    for term in terms.values() if isinstance(terms, dict) else ():
        dims = term.get("priceDimensions") if isinstance(term, dict) else None
        for dim in dims.values() if isinstance(dims, dict) else ():
            if not isinstance(dim, dict) or dim.get("unit") != unit:
                continue
            try:
                rate = Decimal(str(dim["pricePerUnit"]["USD"])) / per
            except (KeyError, TypeError, InvalidOperation):
                continue
            if rate > 0:
                into.setdefault(field_name, set()).add(rate)


def read_region_offers(stream: BinaryIO, where: str, region: str, families: set[str]) -> RegionOffers:
    """Stream one region's EC2 offer file and keep the figures of ``families`` (e.g. ``{"p5"}``) and
    of EBS gp3."""
    out = RegionOffers(region=region, url=where)
    skus: dict[str, str] = {}  # SKU -> instance type, for the Linux on-demand SKUs kept
    gp3_skus: dict[str, str] = {}  # SKU -> catalog gp3 field
    prices: dict[str, dict[str, set[Decimal]]] = {"OnDemand": {}, "Reserved": {}}
    gp3_prices: dict[str, set[Decimal]] = {}
    products_seen = False
    doc = JsonStream(stream, where)
    for key in doc.members():
        if key in HEADER:
            read_header(doc, key, out)
        elif key == "products":
            products_seen = True
            for sku in doc.members():
                product = doc.value()
                attrs = product.get("attributes") if isinstance(product, dict) else None
                if not isinstance(attrs, dict):
                    continue
                itype = attrs.get("instanceType")
                if isinstance(itype, str) and _family(itype) in families and _is_linux_on_demand(attrs, region):
                    skus[sku] = itype
                elif (gp3 := _gp3_field(attrs, region)) is not None:
                    gp3_skus[sku] = gp3
        elif key == "terms":
            if not products_seen:
                raise FetchError(where, "'terms' comes before 'products'", "the offer file format changed")
            for term_type in doc.members():
                if term_type not in prices:
                    continue
                for sku in doc.members():
                    if term_type == "OnDemand" and sku in gp3_skus:
                        _gp3_rates(gp3_skus[sku], doc.value(), gp3_prices)
                        continue
                    itype = skus.get(sku)
                    if itype is None:
                        continue  # left unread: skipped
                    _read_terms(term_type, itype, doc.value(), prices[term_type])
    if not products_seen:
        raise FetchError(where, "no 'products' in the offer file", "this is not an AWS Price List offer file")
    for key, found in prices["OnDemand"].items():
        _single(out, out.on_demand, key, found, "on-demand")
    for key, found in prices["Reserved"].items():
        itype, years = key.rsplit("|", 1)
        value = _single(out, None, key, found, "reserved")
        if value is not None:
            out.reserved[(itype, int(years))] = value
    for key, found in gp3_prices.items():
        _single(out, out.gp3, key, found, "gp3")
    return out


def _read_terms(term_type: str, itype: str, terms: Any, into: dict[str, set[Decimal]]) -> None:
    if not isinstance(terms, dict):
        return
    for term in terms.values():
        rate = _hourly(term)
        if rate is None or rate <= 0:
            continue
        if term_type == "OnDemand":
            into.setdefault(itype, set()).add(rate)
            continue
        attrs = term.get("termAttributes") or {}
        years = LEASE_YEARS.get(attrs.get("LeaseContractLength", ""))
        if years and all(attrs.get(k) == v for k, v in RESERVED_TERM.items()):
            into.setdefault(f"{itype}|{years}", set()).add(rate)


def _single(
    out: RegionOffers, into: dict[str, Decimal] | None, key: str, found: set[Decimal], what: str
) -> Decimal | None:
    """The one price found, or None and a problem line when SKUs disagree."""
    if len(found) != 1:
        out.problems.append(
            f"{out.region} {key.replace('|', ' ')}: {len(found)} different {what} prices "
            f"({', '.join(sorted(str(p) for p in found))}); not used"
        )
        return None
    (value,) = found
    if into is not None:
        into[key] = value
    return value


def region_urls(opener: Opener, regions: Iterable[str]) -> tuple[dict[str, str], list[str]]:
    """Each region's current offer-file URL from the region index, and the regions it lacks."""
    index = get_json(opener, REGION_INDEX_URL)
    listed = index.get("regions") if isinstance(index, dict) else None
    if not isinstance(listed, dict):
        raise FetchError(REGION_INDEX_URL, "no 'regions' in the region index", "the index format changed")
    urls: dict[str, str] = {}
    missing: list[str] = []
    for region in regions:
        entry = listed.get(region)
        path = entry.get("currentVersionUrl") if isinstance(entry, dict) else None
        if isinstance(path, str) and path.startswith("/"):
            urls[region] = PRICING_HOST + path
        else:
            missing.append(region)
    return urls, missing


def fetch(
    data: CatalogFile, regions: list[str], opener: Opener, today: dt.date, commitment_region: str | None = None
) -> Fetched:
    """Price the file's AWS shapes in ``regions`` and derive the reserved discounts per family.

    ``commitment_region`` (default: us-east-1 if refreshed, else the first region) is where the
    reserved-to-on-demand ratios are taken; the catalog holds one discount per family.
    """
    shapes = [s for s in data.shapes if s.platform in SHAPE_PLATFORMS]
    families = {s.family for s in shapes}
    urls, missing = region_urls(opener, regions)
    offers: list[RegionOffers] = []
    for region in regions:
        if region not in urls:
            continue
        with opener(urls[region]) as stream:
            offers.append(read_region_offers(stream, urls[region], region, families))

    published = [o.published for o in offers if o.published]
    as_of = min(published) if published else today
    files = "; ".join(
        f"{o.region}: version {o.version or '?'}, published {o.published or 'date not stated'}" for o in offers
    )
    source = Source(
        title="AWS Price List Bulk API - AmazonEC2 offer files (Linux on-demand, standard no-upfront reserved, EBS gp3)",
        url=REGION_INDEX_URL,
        as_of=as_of,
        as_of_kind="published" if published else "retrieved",
        note=(
            f"Written by `fullserver catalog refresh` on {today.isoformat()}. Files read: {files}. as_of is the "
            "oldest publicationDate among them. On-demand: the SKU with operatingSystem Linux, tenancy Shared, "
            "preInstalledSw NA, capacitystatus Used (licenseModel No License required, marketoption OnDemand, "
            "operation RunInstances where present), terms.OnDemand priceDimensions unit Hrs, pricePerUnit USD. "
            "Commitment discounts: 1 - reserved (standard, No Upfront) / on-demand hourly, the smallest over "
            f"the family's catalog sizes in {home_region(regions, commitment_region)}, rounded down. "
            "Spot prices are not in the Price List: rows keep the spot figure with its own spot_source. "
            "EBS gp3: the volumeApiName gp3 SKUs' on-demand rates, EBS:VolumeUsage.gp3 (GB-Mo), "
            "EBS:VolumeP-IOPS.gp3 (IOPS-Mo) and EBS:VolumeP-Throughput.gp3 (GiBps-mo / 1024 = per MB/s-month); "
            "free_iops 3000 and free_mbps 125 are the baselines the Amazon EBS User Guide's billing codes "
            "state (charged only over 3,000 IOPS and 125 MB/s), not figures of the file."
        ),
    )
    fetched = Fetched(SOURCE_KEY, source)
    fetched.problems += [f"{r}: not in the AmazonEC2 region index; not refreshed" for r in missing]
    offered: set[str] = set()
    for o in offers:
        fetched.problems += o.problems
        offered |= set(o.on_demand)
        for shape in shapes:
            fetched.scope.add(("shape_prices", (shape.name, o.region)))
            price = o.on_demand.get(shape.name)
            if price is not None:
                fetched.rows.append(Row("shape_prices", (shape.name, o.region), {"on_demand_usd_hour": price}))
        _gp3_row(o, fetched)
    names = {s.name for s in shapes}
    fetched.not_in_catalog = sorted(offered - names)
    if offers:
        fetched.shapes_gone = sorted(names - offered)
    fetched.rows += _commitments(shapes, offers, home_region(regions, commitment_region), fetched)
    return fetched


def _gp3_row(offers: RegionOffers, fetched: Fetched) -> None:
    """The region's gp3 row when the file prices all three gp3 SKUs; gone when it prices none; kept
    as it is (and reported) when it prices only some."""
    key = ("storage_prices", ("aws", "gp3", offers.region))
    wanted = {f for f, _, _ in GP3_USAGE.values()}
    if set(offers.gp3) == wanted:
        fetched.rows.append(Row("storage_prices", ("aws", "gp3", offers.region), {**offers.gp3, **GP3_FREE}))
        fetched.scope.add(key)
    elif not offers.gp3:
        fetched.scope.add(key)
    else:
        fetched.problems.append(
            f"{offers.region} gp3: no price for {', '.join(sorted(wanted - set(offers.gp3)))}; the row is not refreshed"
        )


def home_region(regions: list[str], chosen: str | None) -> str:
    """The one region a per-region source is read in: the one asked for, else us-east-1 when the
    file prices it (or prices nothing), else the file's first."""
    if chosen:
        return chosen
    return "us-east-1" if "us-east-1" in regions or not regions else regions[0]


def _commitments(shapes: list[Any], offers: list[RegionOffers], region: str, fetched: Fetched) -> list[Row]:
    where = next((o for o in offers if o.region == region), None)
    if where is None:
        return []
    rows: list[Row] = []
    for family in sorted({s.family for s in shapes}):
        for years in (1, 3):
            fetched.scope.add(("commitment_discounts", ("aws", family, str(years))))
            ratios = [
                1 - where.reserved[(s.name, years)] / where.on_demand[s.name]
                for s in shapes
                if s.family == family and (s.name, years) in where.reserved and s.name in where.on_demand
            ]
            if not ratios:
                continue
            discount = floor_discount(min(ratios))
            if 0 < discount < 1:
                rows.append(Row("commitment_discounts", ("aws", family, years), {"discount": discount}))
    return rows


__all__ = ["REGION_INDEX_URL", "SOURCE_KEY", "RegionOffers", "fetch", "read_region_offers", "region_urls"]
