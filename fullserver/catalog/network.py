"""Network prices (``data/network.yaml``): load balancers, NAT, public IPv4 addresses, health checks.

Kept apart from the shape catalog's files because its rows price resources, not machines; the
shape loader skips the file (``NETWORK_FILE``). Every row names a source of the file, like the
shape catalog's, and a region of ``*`` means the source gives one price for every region.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from fullserver.errors import InputError
from fullserver.platforms import all_rules
from fullserver.sources import Source
from fullserver.yamlio import parse, read_yaml

NETWORK_FILE = "network.yaml"
QUOTAS_FILE = "quotas.yaml"
"""The quotas a stack needs (``fullserver.quotas``): not a shape file either."""
KUBERNETES_FILE = "kubernetes.yaml"
"""Kubernetes cluster fees (``fullserver.kube.fees``): not a shape file either."""
IMAGES_FILE = "images.yaml"
"""The default boot images and their publishers' end-of-patch dates (``fullserver.images``)."""
RESOURCES_FILE = "resources.yaml"
"""The resource-type ledger: each type's name rule, price and quota (``fullserver.ledger``)."""
LOCATIONS_FILE = "locations.yaml"
"""Locations wider than a region and inter-region transfer prices (``fullserver.placement``)."""
NOT_SHAPES = (NETWORK_FILE, QUOTAS_FILE, KUBERNETES_FILE, IMAGES_FILE, RESOURCES_FILE, LOCATIONS_FILE)
"""The data files the shape catalog's loader and refresh skip."""
DATA_DIR = Path(__file__).resolve().parent / "data"

Item = Literal[
    "alb",
    "alb-lcu",
    "alb-health-check",
    "nlb",
    "nlb-lcu",
    "nlb-health-check",
    "nat-gateway",
    "nat-gateway-data",
    "public-ipv4",
    "public-ipv4-spot",
    "forwarding-rule",
    "lb-data",
    "health-check",
    "cloud-nat-vm",
    "cloud-nat-data",
    "cloudwatch-alarm",
]
GIB = 1.073741824
"""Decimal GB in a GiB: prices per GiB are stored as the page gives them and converted here."""


NETWORK_PROVIDERS = frozenset(r.provider for r in all_rules() if r.network is not None)
"""The providers whose platforms bill a network (``PlatformRules.network``)."""


def _network_provider(value: str) -> str:
    if value not in NETWORK_PROVIDERS:
        raise ValueError(f"unknown provider '{value}' (known: {', '.join(sorted(NETWORK_PROVIDERS))})")
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NetworkPrice(_Strict):
    """One resource's price in one region (or ``*``): per hour, per month, or per unit of data."""

    provider: Annotated[str, AfterValidator(_network_provider)]
    item: Item
    region: str
    usd_hour: Annotated[float, Field(ge=0)] | None = None
    usd_per_gb: Annotated[float, Field(ge=0)] | None = None
    usd_month: Annotated[float, Field(ge=0)] | None = None
    unit: Literal["GB", "GiB"] = "GB"
    gb_per_unit_hour: Annotated[float, Field(gt=0)] | None = None
    """Data one billing unit covers per hour (an ALB LCU: 1 GB processed)."""
    max_units: Annotated[int, Field(gt=0)] | None = None
    """The most units the price holds for (Cloud NAT: gateways serving up to 32 VMs)."""
    free: str = ""
    """Why an item costs nothing (its source lists no charge for it)."""
    source: str

    @model_validator(mode="after")
    def _one_price(self) -> NetworkPrice:
        if sum(x is not None for x in (self.usd_hour, self.usd_per_gb, self.usd_month)) != 1:
            raise ValueError("give exactly one of usd_hour, usd_per_gb and usd_month")
        if self.usd_hour == 0 and not self.free:
            raise ValueError("a zero price must say why the item is free ('free:')")
        return self

    @property
    def usd_per_decimal_gb(self) -> float:
        """The data price per decimal GB (what ``egressGbMonth`` counts)."""
        assert self.usd_per_gb is not None
        return self.usd_per_gb / GIB if self.unit == "GiB" else self.usd_per_gb


class NetworkFile(_Strict):
    sources: dict[str, Source]
    prices: list[NetworkPrice]

    @model_validator(mode="after")
    def _sourced(self) -> NetworkFile:
        for p in self.prices:
            if p.source not in self.sources:
                raise ValueError(f"price {p.provider}/{p.item}/{p.region} names unknown source '{p.source}'")
        return self


class NetworkPrices:
    """Look-ups of ``NetworkFile``: a region's own price, else the every-region one."""

    def __init__(self, data: NetworkFile) -> None:
        self.sources = data.sources
        self._by_key: dict[tuple[str, str, str], NetworkPrice] = {
            (p.provider, p.item, p.region): p for p in data.prices
        }

        self._in_region: dict[tuple[str, str], dict[str, NetworkPrice]] = {}

    def price(self, provider: str, item: Item, region: str) -> NetworkPrice | None:
        return self._by_key.get((provider, item, region)) or self._by_key.get((provider, item, "*"))

    def in_region(self, provider: str, region: str) -> dict[str, NetworkPrice]:
        """Every item's ``price`` in one provider's region, by item, worked out once per region:
        each estimate looks up a handful of items in its spec's region, and a comparison prices
        several specs, so the two look-ups of ``price`` are not repeated for each. Regions are the
        catalog's, so the map stays as small as the network file."""
        found = self._in_region.get((provider, region))
        if found is None:
            prices = ((item, self.price(provider, item, region)) for item in get_args(Item))
            found = self._in_region[provider, region] = {item: p for item, p in prices if p is not None}
        return found

    def dearest(self, provider: str, item: Item) -> NetworkPrice | None:
        """The item's highest hourly price in any region (a guard that knows no region errs high)."""
        found = [
            p for (pv, it, _), p in self._by_key.items() if (pv, it) == (provider, item) and p.usd_hour is not None
        ]
        return max(found, key=lambda p: p.usd_hour or 0.0) if found else None


@functools.lru_cache(maxsize=4)
def load_network_prices(path: Path = DATA_DIR / NETWORK_FILE) -> NetworkPrices:
    """Load and validate the network price file (cached: the data is read-only)."""
    try:
        return NetworkPrices(parse(NetworkFile, read_yaml(path), str(path)))
    except FileNotFoundError:
        raise InputError(str(path), "missing", "reinstall fullserver") from None
