"""EC2 spot prices from the EC2 API itself (``DescribeSpotPriceHistory``), for the AWS file's shapes.

The Price List publishes no spot prices, so until now the catalog's AWS spot figures came from
third-party snapshots, dated and often missing (issue 13: no us-east-1 spot price for g6.4xlarge,
which made sizing prefer a shape whose price happened to be known). The EC2 API gives them to
anyone with AWS credentials (``ec2:DescribeSpotPriceHistory``; no cost).

What is read: for each region, the Linux/UNIX spot price in effect *now* in every Availability
Zone (a request whose start time is now returns, per zone, the last price change before it, i.e.
the effective price). The catalog's figure is the lowest of those zones, as ``aws.yaml`` documents
its spot column; a zone is where a spot request lands when it names none. Each figure is written
as the row's ``spot_usd_hour`` with this source as its ``spot_source``; on-demand prices and their
source stay (``Fetched.spot_only``).

Credentials and the client come from boto3 (the ``refresh`` extra), read the usual way (environment,
shared config, instance role); nothing here stores or prints them. Tests hand in a client whose
responses botocore validates against the EC2 service model (``botocore.stub.Stubber``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from fullserver.catalog.model import CatalogFile, Source
from fullserver.catalog.refresh.rows import Fetched, Row
from fullserver.errors import InputError

SOURCE_KEY = "aws-ec2-spot-price-history"
API_URL = "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeSpotPriceHistory.html"
PRODUCT = "Linux/UNIX"
BATCH = 50
"""Instance types per request: the API caps no count, but a short filter keeps each page small."""

ClientFor = Callable[[str], Any]
"""A region's EC2 client (``boto3.client("ec2", region_name=...)`` or a stubbed one in tests)."""


def boto3_client_for() -> ClientFor:
    """EC2 clients from boto3 with the default credential chain; a one-line error without boto3."""
    try:
        import boto3  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        raise InputError(
            "--spot",
            "EC2 spot prices need boto3",
            "pip install 'fullserver[refresh]' (and AWS credentials allowed ec2:DescribeSpotPriceHistory)",
        ) from None
    session = boto3.session.Session()
    return lambda region: session.client("ec2", region_name=region)


def lowest_spot_prices(
    client: Any, instance_types: Sequence[str], now: dt.datetime
) -> tuple[dict[str, Decimal], list[str]]:
    """The lowest effective Linux/UNIX spot price per instance type over the region's zones, and
    the lines of anything that could not be used."""
    lowest: dict[str, Decimal] = {}
    problems: list[str] = []
    paginator = client.get_paginator("describe_spot_price_history")
    for start in range(0, len(instance_types), BATCH):
        pages = paginator.paginate(
            InstanceTypes=list(instance_types[start : start + BATCH]),
            ProductDescriptions=[PRODUCT],
            StartTime=now,
            EndTime=now,
        )
        for page in pages:
            for entry in page.get("SpotPriceHistory", []):
                itype = entry.get("InstanceType")
                if entry.get("ProductDescription") != PRODUCT or itype not in instance_types:
                    continue
                try:
                    price = Decimal(str(entry["SpotPrice"]))
                except (KeyError, InvalidOperation):
                    problems.append(f"{itype} in {entry.get('AvailabilityZone', '?')}: unreadable SpotPrice")
                    continue
                if price <= 0:
                    problems.append(
                        f"{itype} in {entry.get('AvailabilityZone', '?')}: SpotPrice {price} is not a price"
                    )
                    continue
                if itype not in lowest or price < lowest[itype]:
                    lowest[itype] = price
    return lowest, problems


def fetch_spot(data: CatalogFile, regions: Iterable[str], client_for: ClientFor, now: dt.datetime) -> Fetched:
    """Spot rows for the file's AWS shapes in ``regions`` (rows the file prices on demand)."""
    shapes = sorted(s.name for s in data.shapes if s.platform == "aws-gpu")
    source = Source(
        title="Amazon EC2 API DescribeSpotPriceHistory (Linux/UNIX, effective price now, lowest over the "
        "region's Availability Zones)",
        url=API_URL,
        as_of=now.date(),
        as_of_kind="retrieved",
        note=(
            f"Written by `fullserver catalog refresh --spot` at {now.strftime('%Y-%m-%dT%H:%MZ')}: one request "
            "per region with StartTime = EndTime = now, which returns each zone's price in effect then. Spot "
            "prices move with supply and demand; this is a snapshot, not a forecast."
        ),
    )
    fetched = Fetched(SOURCE_KEY, source, spot_only=True)
    for region in dict.fromkeys(regions):
        priced = [n for n in shapes if any(p.shape == n and p.region == region for p in data.shape_prices)]
        if not priced:
            fetched.problems.append(f"{region}: the file prices no shape there on demand; refresh the Price List first")
            continue
        prices, problems = lowest_spot_prices(client_for(region), priced, now)
        fetched.problems += [f"{region}: {p}" for p in problems]
        for name in priced:
            price = prices.get(name)
            if price is not None:
                fetched.rows.append(Row("shape_prices", (name, region), {"spot_usd_hour": price.normalize()}))
        unoffered = [n for n in priced if n not in prices]
        if unoffered:
            fetched.problems.append(f"{region}: no spot price for {', '.join(unoffered)} (not offered as spot there)")
    return fetched
