"""Placement: a stack wider than a region, ranked over every platform x region x shape, then pinned.

Design notes: docs/design/core.md.
"""

from __future__ import annotations

import functools
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from fullserver.catalog import Catalog
from fullserver.catalog.model import Platform
from fullserver.catalog.network import DATA_DIR, GIB, LOCATIONS_FILE
from fullserver.clouds import all_clouds
from fullserver.cost import estimate
from fullserver.errors import InputError, NothingFits
from fullserver.kube import SIZED_AS
from fullserver.kube.access import KUBE_KEYS
from fullserver.platforms import rules_for
from fullserver.profiles import Profile
from fullserver.sizing import complete_spec, size
from fullserver.sources import Source
from fullserver.workload import CONFIG_NAMESPACE, DATASET_LOCATION, Workload, platforms_for
from fullserver.yamlio import parse, read_yaml

LOCATION_KEY = f"{CONFIG_NAMESPACE}:location"
DATASET_KEY = f"{CONFIG_NAMESPACE}:datasetLocation"
PIN_COMMAND = "fullserver plan --pin"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RegionPlace(_Strict):
    """A region's cloud (the catalog's provider key) and continent."""

    provider: str
    continent: str
    source: str


class NamedLocation(_Strict):
    what: str
    regions: list[str] = Field(min_length=1)


class InterRegionPrice(_Strict):
    """Moving data to another region of the same cloud, from ``from_`` ('*': any region); with
    ``within``, only when both ends are on that continent. Per decimal GB or per GiB, as the source says."""

    provider: str
    from_: str = Field(alias="from")
    within: str | None = None
    usd_per_gb: float | None = Field(default=None, ge=0)
    usd_per_gib: float | None = Field(default=None, ge=0)
    source: str

    @model_validator(mode="after")
    def _one_unit(self) -> InterRegionPrice:
        if (self.usd_per_gb is None) == (self.usd_per_gib is None):
            raise ValueError("give one of usd_per_gb and usd_per_gib")
        return self

    @property
    def per_gb(self) -> float:
        """USD per decimal GB (``datasetGib`` is converted to GB before it is priced)."""
        return self.usd_per_gb if self.usd_per_gb is not None else float(self.usd_per_gib or 0) / GIB


class LocationsFile(_Strict):
    sources: dict[str, Source]
    regions: dict[str, RegionPlace]
    locations: dict[str, NamedLocation]
    inter_region: list[InterRegionPrice]

    @model_validator(mode="after")
    def _references(self) -> LocationsFile:
        """Every source named is listed, every location's region is one of ``regions``, and no
        location is named like a region (a name would mean two things)."""
        cited = [r.source for r in self.regions.values()] + [p.source for p in self.inter_region]
        for source in cited:
            if source not in self.sources:
                raise ValueError(f"source '{source}' is not in sources")
        for name, loc in self.locations.items():
            if name in self.regions:
                raise ValueError(f"location '{name}' is named like a region")
            unknown = [r for r in loc.regions if r not in self.regions]
            if unknown:
                raise ValueError(f"location '{name}' names regions not in regions: {', '.join(unknown)}")
        return self

    def inter_region_price(self, provider: str, source: str, target: str) -> InterRegionPrice | None:
        """The first row that prices ``source`` -> ``target`` on ``provider`` (rows run from specific to general)."""
        ends = {self.regions[source].continent, self.regions[target].continent}
        for row in self.inter_region:
            if row.provider == provider and row.from_ in (source, "*") and (row.within is None or ends == {row.within}):
                return row
        return None


@functools.cache
def load_locations(path: Path = DATA_DIR / LOCATIONS_FILE) -> LocationsFile:
    return parse(LocationsFile, read_yaml(path), str(path))


def regions_of(names: list[str], data: LocationsFile) -> list[str]:
    """The regions ``names`` stand for, in order and once each: a location's, or a region itself."""
    out: list[str] = []
    for name in names:
        if name in data.locations:
            out.extend(data.locations[name].regions)
        elif name in data.regions:
            out.append(name)
        else:
            raise InputError(
                LOCATION_KEY,
                f"'{name}' is neither a location nor a known region",
                f"use one of {', '.join(data.locations)}, or a region of {LOCATIONS_FILE}",
            )
    return list(dict.fromkeys(out))


class DatasetHome(_Strict):
    """Where the dataset lives: a region, and the bucket URL when one was given."""

    provider: str
    region: str
    url: str | None = None


def dataset_home(text: str | None, data: LocationsFile) -> DatasetHome | None:
    """``datasetLocation`` read: the region's cloud must agree with the bucket's scheme (s3: AWS, gs: GCP)."""
    if text is None:
        return None
    match = DATASET_LOCATION.fullmatch(text)
    assert match is not None  # Workload checked the form
    region = match["region"]
    place = data.regions.get(region)
    if place is None:
        raise InputError(
            DATASET_KEY, f"region '{region}' is not in {LOCATIONS_FILE}", "name a region of AWS or GCP listed there"
        )
    scheme = {c.bucket_scheme: c.key for c in all_clouds()}.get(match["scheme"] or "", place.provider)
    if scheme != place.provider:
        raise InputError(
            DATASET_KEY,
            f"{match['scheme']}:// is a {scheme} bucket, but {region} is a {place.provider} region",
            "give the bucket's own region after '@'",
        )
    return DatasetHome(provider=place.provider, region=region, url=text.rpartition("@")[0] or None)


def transfer_usd(
    home: DatasetHome | None, provider: str, region: str, gib: int, catalog: Catalog, data: LocationsFile
) -> tuple[float | None, str]:
    """What moving the dataset to ``region`` costs once (``None``: no price in the catalog), and how
    it is priced. In its own region it is free; to another region of its cloud it pays that cloud's
    inter-region rate; to the other cloud it leaves through its region's internet egress."""
    if home is None or gib == 0:
        return 0.0, ""
    if home.region == region:
        return 0.0, f"dataset in {region}: no transfer"
    gb = gib * GIB
    if home.provider == provider:
        row = data.inter_region_price(provider, home.region, region)
        if row is None:
            return None, f"no inter-region price from {home.region} in {LOCATIONS_FILE}"
        return gb * row.per_gb, f"{gib:,} GiB {home.region} -> {region} at {row.per_gb:.4f}/GB ({row.source})"
    egress = catalog.egress_price(home.provider, home.region)
    if egress is None:
        return None, f"no internet egress price from {home.region} in the catalog"
    return gb * egress.usd_per_gb, f"{gib:,} GiB {home.region} -> {region} over the internet at {egress.usd_per_gb}/GB"


class PlaceOption(BaseModel):
    """One platform in one region, as sized and priced there."""

    model_config = ConfigDict(frozen=True)

    platform: Platform
    region: str
    offer: str
    nodes: int
    usd_month: float
    transfer_usd: float | None
    transfer_note: str = ""
    complete: bool = True
    """False when a cost line or the transfer has no price: a lower bound, ranked after every whole one."""

    @property
    def total(self) -> float:
        return self.usd_month + (self.transfer_usd or 0.0)

    def describe(self) -> str:
        bound = "" if self.complete else " (a lower bound: a price is missing)"
        return f"{self.platform.value} in {self.region} ({self.offer}, {self.nodes} node(s)) ${self.total:,.2f}/month{bound}"


class Placement(BaseModel):
    """The ranked options of a stack's location, cheapest first, and whether the stack is pinned."""

    model_config = ConfigDict(frozen=True)

    location: list[str]
    regions: list[str]
    options: list[PlaceOption] = Field(min_length=1)
    skipped: list[str] = []
    """Why a platform x region of the location has no option (no price, nothing fits)."""
    dataset: str | None = None
    pinned: bool = False
    """Whether the stack names its region (pinned) or is planned on the winner."""
    pinned_option: PlaceOption | None = None
    """The option at the pin, when it is one of the location's (what the pin costs now)."""

    @property
    def winner(self) -> PlaceOption:
        return self.options[0]

    @property
    def runner_up(self) -> PlaceOption | None:
        return self.options[1] if len(self.options) > 1 else None

    def verdict(self) -> str:
        """The choice in one line: the winner, the runner-up and the difference."""
        w, r = self.winner, self.runner_up
        line = f"cheapest of {len(self.options)} option(s) in {', '.join(self.location)}: {w.describe()}"
        if r is not None:
            gap = r.total - w.total
            pct = f", +{gap / w.total:.1%}" if w.total else ""
            line += f"; runner-up {r.describe()}, +${gap:,.2f}/month{pct}"
        return line


def movable_platforms(profile: Profile, workload: Workload, catalog: Catalog) -> list[Platform]:
    """The platforms a location may put the stack on: the stack's own, else the profile's that offer
    the accelerator and take the stack's keys. Rented servers stay where they are, and a node pool
    is the stack's choice (``fullserver:platform`` or a Kubernetes key), as in ``size``."""
    kube_keys = not set(KUBE_KEYS).isdisjoint(workload.platform_keys())
    return [
        p
        for p in platforms_for(profile, workload, catalog)
        if rules_for(p).supply.from_catalog
        and workload.takes_keys(p)
        and (p not in SIZED_AS or workload.platform is not None or kube_keys)
    ]


def _option(
    profile: Profile, workload: Workload, catalog: Catalog, environment: str, cost_of_move: tuple[float | None, str]
) -> PlaceOption:
    """``workload`` (one platform, one region) sized and priced as a region-bound stack is."""
    spec = complete_spec(size(profile, workload, catalog, environment), workload, catalog)
    cost = estimate(spec, profile, workload, catalog)
    usd, note = cost_of_move
    return PlaceOption(
        platform=spec.platform,
        region=spec.region,
        offer=spec.offer,
        nodes=spec.nodes,
        usd_month=cost.usd_month,
        transfer_usd=None if usd is None else round(usd, 2),
        transfer_note=note,
        complete=cost.complete and usd is not None,
    )


def place(profile: Profile, workload: Workload, catalog: Catalog, environment: str) -> Placement:
    """Every allowed platform x region of the stack's location, sized and priced, cheapest first.

    Ties keep the profile's platform order, then the location's region order. A stack already
    pinned (``region`` set) is ranked all the same, so the plan can say what its pin costs now.
    """
    assert workload.location is not None
    data = load_locations()
    regions = regions_of(workload.location, data)
    home = dataset_home(workload.dataset_location, data)
    # A pinned stack's platform is part of its pin: the location is ranked on the profile's platforms.
    platforms = movable_platforms(
        profile, workload.model_copy(update={"platform": None}) if workload.region else workload, catalog
    )
    if not platforms:
        raise InputError(LOCATION_KEY, "no cloud platform of the profile can take the stack", "set fullserver:region")
    options: list[PlaceOption] = []
    skipped: list[str] = []
    for region in regions:
        provider = data.regions[region].provider
        for platform in (p for p in platforms if rules_for(p).provider == provider):
            move = transfer_usd(home, provider, region, workload.dataset_gib, catalog, data)
            variant = workload.model_copy(update={"region": region, "platform": platform, "zone": None})
            try:
                options.append(_option(profile, variant, catalog, environment, move))
            except (InputError, NothingFits) as exc:
                skipped.append(f"{platform.value} in {region}: {exc.what}")
    if not options:
        raise NothingFits(LOCATION_KEY, f"nothing fits in {', '.join(workload.location)}: {'; '.join(skipped)}")
    order = {p: i for i, p in enumerate(platforms)}
    where = {r: i for i, r in enumerate(regions)}
    options.sort(key=lambda o: (not o.complete, round(o.total, 2), order[o.platform], where[o.region]))
    return Placement(
        location=list(workload.location),
        regions=regions,
        options=options,
        skipped=skipped,
        dataset=workload.dataset_location,
        pinned=bool(workload.region),
        pinned_option=_pinned(workload, options) if workload.region else None,
    )


def _pinned(workload: Workload, options: list[PlaceOption]) -> PlaceOption | None:
    """The cheapest option at the stack's pin (its region, and its platform when set); ``None``
    when the pin is outside the location's options."""
    same = [o for o in options if o.region == workload.region and workload.platform in (None, o.platform)]
    return same[0] if same else None


def placed(
    profile: Profile, workload: Workload, catalog: Catalog, environment: str
) -> tuple[Workload, Placement | None]:
    """The workload to plan: a pinned or region-bound stack as it is; an unpinned one on the winner."""
    if workload.location is None:
        return workload, None
    placement = place(profile, workload, catalog, environment)
    if workload.region:
        return workload, placement
    winner = placement.winner
    return workload.model_copy(update={"region": winner.region, "platform": winner.platform}), placement


def check_pinned(placement: Placement | None, stack: str) -> None:
    """``pulumi up`` builds only a pinned place: a location is a question for the plan, never for up."""
    if placement is None or placement.pinned:
        return
    w = placement.winner
    raise InputError(
        LOCATION_KEY,
        f"is not pinned: the plan would choose {w.platform.value} in {w.region}, and up never chooses a place",
        f"run `{PIN_COMMAND} {stack}` and commit the stack file",
    )
