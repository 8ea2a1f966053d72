"""EC2 spot prices from the EC2 API itself (``DescribeSpotPriceHistory``), for the AWS file's shapes.

The Price List publishes no spot prices, so until now the catalog's AWS spot figures came from
third-party snapshots, dated and often missing (issue 13: no us-east-1 spot price for g6.4xlarge,
which made sizing prefer a shape whose price happened to be known). The EC2 API gives them to
anyone with AWS credentials (``ec2:DescribeSpotPriceHistory``; no cost).

Design notes: docs/design/catalog.md.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from fullserver.catalog.model import CatalogFile, Source
from fullserver.catalog.refresh.aws import SHAPE_PLATFORMS
from fullserver.catalog.refresh.rows import Fetched, Row
from fullserver.errors import InputError

SOURCE_KEY = "aws-ec2-spot-price-history"
API_URL = "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeSpotPriceHistory.html"
PRODUCT = "Linux/UNIX"
BATCH = 50
"""Instance types per request: the API caps no count, but a short filter keeps each page small."""

ClientFor = Callable[[str], Any]
"""A region's EC2 client (``boto3.client("ec2", region_name=...)`` or a stubbed one in tests)."""


def boto3_client_for(provider: str, permission: str) -> ClientFor:
    """EC2 clients from boto3 with the default credential chain; without boto3, a one-line error
    naming the ``--provider`` that needs it and the EC2 ``permission`` its credentials need."""
    try:
        import boto3  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        raise InputError(
            "--provider",
            f"{provider} reads the EC2 API, which needs boto3",
            f"pip install 'fullserver[refresh]' (and AWS credentials allowed {permission})",
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
    shapes = sorted(s.name for s in data.shapes if s.platform in SHAPE_PLATFORMS)
    source = Source(
        title="Amazon EC2 API DescribeSpotPriceHistory (Linux/UNIX, effective price now, lowest over the "
        "region's Availability Zones)",
        url=API_URL,
        as_of=now.date(),
        as_of_kind="retrieved",
        note=(
            f"Written by `fullserver catalog refresh --provider aws-spot` at {now.strftime('%Y-%m-%dT%H:%MZ')}: one request "
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


# --- instance types (DescribeInstanceTypes): the shapes' own figures -------------------------------

TYPES_SOURCE_KEY = "aws-ec2-describe-instance-types"
TYPES_API_URL = "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstanceTypes.html"
MIB_PER_GIB = Decimal(1024)


def shape_figures(info: dict[str, Any]) -> tuple[dict[str, Decimal], list[str]]:
    """The catalog figures of one ``InstanceTypeInfo``, and what could not be read.

    vCPUs: ``VCpuInfo.DefaultVCpus``; memory: ``MemoryInfo.SizeInMiB`` / 1024; accelerators: the
    GPUs' or Neuron devices' counts; instance store: its disks, when they are NVMe and all one size
    (count and decimal GB per disk); network: the sum of the network cards' baseline bandwidth (the
    sustained figure; "Up to" bursts are not counted), as the catalog's bandwidth table gives it;
    EFA: ``EfaInfo.MaximumEfaInterfaces`` where EFA is supported, else 0."""
    name = str(info.get("InstanceType", "?"))
    figures: dict[str, Decimal] = {}
    problems: list[str] = []
    vcpus = (info.get("VCpuInfo") or {}).get("DefaultVCpus")
    if isinstance(vcpus, int) and vcpus > 0:
        figures["vcpus"] = Decimal(vcpus)
    mib = (info.get("MemoryInfo") or {}).get("SizeInMiB")
    if isinstance(mib, int) and mib > 0:
        figures["memory_gib"] = (Decimal(mib) / MIB_PER_GIB).normalize()
    devices = [*(info.get("GpuInfo") or {}).get("Gpus", []), *(info.get("NeuronInfo") or {}).get("NeuronDevices", [])]
    if devices:
        figures["accelerator_count"] = Decimal(sum(int(d.get("Count", 0)) for d in devices))
    storage = info.get("InstanceStorageInfo")
    if storage:
        disks = storage.get("Disks") or []
        sizes = {int(d.get("SizeInGB", 0)) for d in disks}
        if storage.get("NvmeSupport") == "unsupported" or any(d.get("Type") != "ssd" for d in disks):
            problems.append(f"{name}: instance store is not NVMe SSD; local NVMe left as it is")
        elif len(sizes) != 1:
            problems.append(f"{name}: instance store disks of different sizes {sorted(sizes)}; left as it is")
        else:
            figures["local_nvme_disks"] = Decimal(sum(int(d.get("Count", 0)) for d in disks))
            figures["local_nvme_disk_gb"] = Decimal(sizes.pop())
    cards = (info.get("NetworkInfo") or {}).get("NetworkCards") or []
    baseline = [c.get("BaselineBandwidthInGbps") for c in cards]
    if baseline and all(isinstance(b, (int, float)) and b > 0 for b in baseline):
        figures["network_gbps"] = Decimal(str(sum(baseline))).normalize()
    else:
        problems.append(f"{name}: no baseline bandwidth per network card; network left as it is")
    network = info.get("NetworkInfo") or {}
    efa = (network.get("EfaInfo") or {}).get("MaximumEfaInterfaces") if network.get("EfaSupported") else 0
    if isinstance(efa, int):
        figures["efa_interfaces"] = Decimal(efa)
    pods = _eni_pods(network)
    if pods is not None:
        figures["pods"] = Decimal(pods)
    return figures, problems


def _eni_pods(network: dict[str, Any]) -> int | None:
    """The pods the VPC CNI addresses without prefix delegation: the default network card's ENIs x
    (IPv4 addresses per ENI - 1) + 2, nodeadm's default ``maxPods`` (amazon-eks-ami
    ``nodeadm/internal/kubelet/eni_max_pods.go``); ``None`` where the API leaves a member out."""
    index = network.get("DefaultNetworkCardIndex", 0)
    cards: list[dict[str, Any]] = network.get("NetworkCards") or []
    card = next((c for c in cards if c.get("NetworkCardIndex") == index), {})
    enis, ips = card.get("MaximumNetworkInterfaces"), network.get("Ipv4AddressesPerInterface")
    if isinstance(enis, int) and isinstance(ips, int) and enis > 0 and ips > 1:
        return enis * (ips - 1) + 2
    return None


def fetch_types(data: CatalogFile, region: str, client: Any, now: dt.datetime) -> Fetched:
    """Shape figures of the file's AWS shapes from ``DescribeInstanceTypes`` in ``region``, and the
    sizes of the families the file tracks that it lacks (reported, never added: a new shape needs
    its accelerator named and its prices, which this API does not give)."""
    shapes = sorted(s.name for s in data.shapes if s.platform in SHAPE_PLATFORMS)
    families = sorted({s.family for s in data.shapes if s.platform in SHAPE_PLATFORMS})
    source = Source(
        title=f"Amazon EC2 API DescribeInstanceTypes ({region})",
        url=TYPES_API_URL,
        as_of=now.date(),
        as_of_kind="retrieved",
        note=(
            f"Written by `fullserver catalog refresh --provider aws-types` at {now.strftime('%Y-%m-%dT%H:%MZ')}: "
            "vcpus = VCpuInfo.DefaultVCpus; memory_gib = MemoryInfo.SizeInMiB / 1024; accelerator_count = GpuInfo "
            "or NeuronInfo device counts; local_nvme_disks / local_nvme_disk_gb = InstanceStorageInfo.Disks (NVMe "
            "SSD, decimal GB per disk); network_gbps = sum of NetworkCards[].BaselineBandwidthInGbps; "
            "efa_interfaces = EfaInfo.MaximumEfaInterfaces (0 without EFA); pods = the default network card's "
            "MaximumNetworkInterfaces x (Ipv4AddressesPerInterface - 1) + 2 (nodeadm's default maxPods)."
        ),
    )
    fetched = Fetched(TYPES_SOURCE_KEY, source, figures_only=True)
    # One listing of the tracked families (a filter, not a list of names: naming a type the region
    # does not offer fails the whole request with InvalidInstanceType).
    paginator = client.get_paginator("describe_instance_types")
    pattern = [f"{family}.*" for family in families]
    offered: dict[str, dict[str, Any]] = {}
    for page in paginator.paginate(Filters=[{"Name": "instance-type", "Values": pattern}]):
        offered |= {str(i["InstanceType"]): i for i in page.get("InstanceTypes", []) if "InstanceType" in i}
    for name in shapes:
        if name not in offered:
            fetched.problems.append(f"{name}: not offered in {region} (DescribeInstanceTypes does not list it)")
            continue
        figures, problems = shape_figures(offered[name])
        fetched.problems += problems
        fetched.rows.append(Row("shapes", (name,), figures))
    fetched.not_in_catalog = sorted(set(offered) - set(shapes))
    return fetched
