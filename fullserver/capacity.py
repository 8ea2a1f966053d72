"""The balanced set: every shape and zone a stack's capacity may come from, and what the cloud
tries, in order, when the first choice is out.

Design notes: docs/design/core.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field


class _HostReads(Protocol):
    @property
    def vcpus(self) -> int: ...
    @property
    def accelerator_count(self) -> int: ...


class _PriceReads(Protocol):
    @property
    def on_demand(self) -> float: ...
    @property
    def spot(self) -> float | None: ...


class Offer(Protocol):
    """``catalog.offer.Offer`` as a balanced set reads it: the catalog builds on the platforms,
    which read this module, so naming the catalog here closed an import cycle (issue 36)."""

    @property
    def name(self) -> str: ...
    @property
    def machine_type(self) -> str: ...
    @property
    def host(self) -> _HostReads: ...
    @property
    def hosts(self) -> int: ...
    @property
    def accelerator(self) -> str | None: ...
    @property
    def efa_interfaces(self) -> int: ...
    @property
    def pods(self) -> int | None: ...
    @property
    def local_nvme_disks(self) -> int: ...
    @property
    def prices(self) -> Mapping[str, _PriceReads]: ...

    def zones_in(self, region: str) -> list[str]: ...


MAX_SET_SHAPES = 8
"""The most shapes one set names: an Auto Scaling group takes up to 40 instance types
(CloudFormation ``LaunchTemplate`` overrides), and a set wider than a handful is rarely balanced
within the band anyway; the cheapest are kept."""


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CapacityMember(Frozen):
    """One shape of the set with its prices per node-hour in the stack's region."""

    offer: str
    machine_type: str
    vcpus: int
    usd_hour: float
    """The rate sizing ranked it at under the profile's pricing (``fullserver.hourly``)."""
    on_demand_usd_hour: float
    spot_usd_hour: float | None = None
    zones: list[str] = []
    """The region's zones the catalog lists for it ([]: the catalog lists none; the cloud is asked at deploy)."""
    pods: int | None = Field(default=None, exclude=True)
    """Pods its pod network addresses per machine (``Offer.pods``): a node group of the set pins no
    more (``fullserver.kube.pool.network_pods``); carried for the plan, as ``ShapeLimits`` is."""


class CapacityStep(Frozen):
    """One thing the cloud tries, in order, with what a node costs while it runs on it."""

    what: str
    usd_hour_low: float | None = None
    """``None``: nothing runs on the step (a queued request waiting), so no compute is billed."""
    usd_hour_high: float | None = None
    how: str = ""
    """What happens meanwhile, where the step says more than its name (a queue, a preemption)."""


class CapacitySet(Frozen):
    """The balanced set of one stack (module docstring): the chosen shape first, then the others
    cheapest first; the zones any of them is listed in; and the steps its platform builds."""

    band: float
    members: list[CapacityMember]
    zones: list[str] = []
    steps: list[CapacityStep] = []
    used: bool = False
    """The platform hands the whole set to its cloud (else the components build the chosen shape
    alone, and ``steps`` say why)."""
    peak_usd_hour: float | None = None
    """The most one node's hour can cost on the set (``peak_usd_hour``); ``None``: the rate itself."""

    @property
    def machine_types(self) -> list[str]:
        return [m.machine_type for m in self.members]

    @property
    def dearest(self) -> CapacityMember:
        """The member whose hour costs most on demand: what the peak is priced at."""
        return max(self.members, key=lambda m: (m.on_demand_usd_hour, m.spot_usd_hour or 0.0))

    def summary(self, spot: bool) -> str:
        """``spot over 4 shapes x 3 zones``: how wide the request is."""
        zones = f"{len(self.zones)} zones" if self.zones else "every zone offering them"
        kind = "spot" if spot else "on-demand"
        return f"{kind} over {len(self.members)} shape(s) x {zones}"


def launch_compatible(base: Offer, other: Offer, efa_interfaces: int) -> bool:
    """``other`` runs from ``base``'s launch template: the same accelerator and count per node (the
    same image and balance), as many hosts, and with EFA the same interfaces (one per network
    card), and as many local NVMe disks (the boot script assembles that many). A shape that attaches its GPUs to a general-purpose host (offer named apart from its
    machine type: N1 + T4) carries them in the template, not the machine type, so it joins no
    other shape."""
    if other.hosts != base.hosts or other.accelerator != base.accelerator:
        return False
    if other.host.accelerator_count != base.host.accelerator_count:
        return False
    if other.local_nvme_disks != base.local_nvme_disks:  # the template's scratch disks and RAID0
        return False
    if (base.name != base.machine_type or other.name != other.machine_type) and other.name != base.name:
        return False
    return not efa_interfaces or other.efa_interfaces == efa_interfaces


def member(offer: Offer, region: str, usd_hour: float, zone: str | None) -> CapacityMember:
    price = offer.prices[region]
    zones = [zone] if zone else offer.zones_in(region)
    return CapacityMember(
        offer=offer.name,
        machine_type=offer.machine_type,
        vcpus=offer.host.vcpus,
        usd_hour=usd_hour,
        on_demand_usd_hour=price.on_demand,
        spot_usd_hour=price.spot,
        zones=zones,
        pods=offer.pods,
    )


def balanced_set(
    chosen: tuple[Offer, float],
    feasible: Sequence[tuple[Offer, float]],
    region: str,
    zone: str | None,
    band: float,
    efa_interfaces: int,
) -> CapacitySet:
    """The chosen shape and every feasible one (``(offer, rate)``, cheapest first) within ``band``
    over the chosen shape's rate that takes its launch template (``launch_compatible``), at most
    ``MAX_SET_SHAPES``; zones: the pinned one, else every zone of ``region`` listed for a member."""
    base, rate = chosen
    members = [member(base, region, rate, zone)]
    for offer, usd in feasible:
        if len(members) >= MAX_SET_SHAPES:
            break
        if offer.machine_type == base.machine_type or usd > rate * (1 + band) + 1e-9:
            continue
        if launch_compatible(base, offer, efa_interfaces):
            members.append(member(offer, region, usd, zone))
    zones = sorted({z for m in members for z in m.zones})
    return CapacitySet(band=band, members=members, zones=zones)


def price_range(values: Sequence[float | None]) -> tuple[float | None, float | None]:
    """The lowest and highest known value (``None``, ``None`` when none is known)."""
    known = [v for v in values if v is not None]
    return (min(known), max(known)) if known else (None, None)


def shapes_text(members: Sequence[CapacityMember]) -> str:
    """``g6.4xlarge, g6.8xlarge``: the set's types in the order the cloud is given them."""
    return ", ".join(m.machine_type for m in members)


def spot_range(members: Sequence[CapacityMember]) -> tuple[float | None, float | None]:
    return price_range([m.spot_usd_hour for m in members])


def on_demand_range(members: Sequence[CapacityMember]) -> tuple[float | None, float | None]:
    return price_range([m.on_demand_usd_hour for m in members])


def single_shape(found: CapacitySet, what: str, usd_hour: float) -> CapacitySet:
    """The set as a platform builds it when it builds the chosen shape alone: one step, ``what``
    (where it launches and why nothing else is tried), at ``usd_hour`` a node."""
    chosen = found.members[0]
    return found.model_copy(
        update={"members": [chosen], "zones": chosen.zones, "steps": [CapacityStep(what=what, usd_hour_low=usd_hour)]}
    )


def in_use(found: CapacitySet, steps: list[CapacityStep], spot: bool, fallback: bool) -> CapacitySet:
    """The set as a platform hands it whole to its cloud: ``used``, with its ``steps`` and its peak
    (``peak_usd_hour``), in one copy of ``found``."""
    return found.model_copy(
        update={"steps": steps, "used": True, "peak_usd_hour": peak_usd_hour(found, spot, fallback)}
    )


def peak_usd_hour(found: CapacitySet, spot: bool, fallback: bool) -> float | None:
    """The most one node's hour can cost on the set handed whole to its cloud (``in_use``): its
    dearest member's spot hour (and, where an on-demand fallback may run beside every spot node,
    that member's on-demand hour as well); ``None`` for one shape on demand (the rate itself)."""
    if len(found.members) < 2 and not spot:
        return None
    dear = found.dearest
    if not spot:
        return dear.on_demand_usd_hour
    spot_hour = dear.spot_usd_hour if dear.spot_usd_hour is not None else dear.on_demand_usd_hour
    return spot_hour + (dear.on_demand_usd_hour if fallback else 0.0)


def _usd(low: float | None, high: float | None) -> str:
    if low is None:
        return ""
    return f"${low:,.2f}" if high is None or abs(high - low) < 0.005 else f"${low:,.2f}-{high:,.2f}"


def headline(found: CapacitySet, spot: bool) -> str:
    """The set in one line: ``spot over 4 shapes x 3 zones, then on-demand`` (the plan's head)."""
    if not found.used:
        return f"{found.members[0].machine_type} alone ({len(found.members)} shape)"
    then = ", then on-demand" if len(found.steps) > 1 and found.steps[1].usd_hour_low is not None else ""
    return found.summary(spot) + then


def capacity_rows(found: CapacitySet) -> list[tuple[str, str, str]]:
    """What the cloud tries on a stockout, a row a step: (order, what, USD/hour a node), then the
    expected rate sizing ranked the chosen shape at, and the peak at the set's dearest member."""
    rows = [
        (str(i), f"{step.what}: {step.how}" if step.how else step.what, _usd(step.usd_hour_low, step.usd_hour_high))
        for i, step in enumerate(found.steps, 1)
    ]
    chosen = found.members[0]
    rows.append(
        (
            "expected",
            f"{chosen.machine_type} at the profile's pricing (what the cost lines bill)",
            _usd(chosen.usd_hour, None),
        )
    )
    if found.peak_usd_hour is not None:
        rows.append(
            (
                "at most",
                f"every node on {found.dearest.machine_type}, the set's dearest (budgets hold to it)",
                _usd(found.peak_usd_hour, None),
            )
        )
    return rows
