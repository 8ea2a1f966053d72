"""What makes two prices comparable: equal accelerator capacity under one pricing model.

``recommend`` priced a TPU v5litepod-8 (8 chips, 128 GiB) against one L4 (24 GiB) and let the
smaller, cheaper row win ties; the plan's "same job elsewhere" put spot prices beside on-demand
ones without a word. Every comparison now says what capacity it priced and on which pricing
model, and sizes its rows to the same capacity where it chooses them.

Capacity is total accelerator memory: the catalog's per-device ``memory_gib`` times devices.
Whether the weights, optimizer state or KV cache fit is what a team sizes by first, and the
catalog states it (with its source) for every GPU and TPU chip. Devices also differ in speed; no
speed equivalence is in the catalog, so rows state their memory ratio and claim nothing more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fullserver.catalog import Catalog, Offer
from fullserver.platforms import rules_for
from fullserver.profiles import PricingModel, Profile
from fullserver.spec import EnvironmentSpec

# The pricing model a price is on, as comparisons label it (``CostEstimate.basis``): an hourly
# rate's (``fullserver.hourly.Rate.basis``: these two or ``reserved N-year``), or the monthly
# contract of a dedicated server.
SPOT = "spot"
ON_DEMAND = "on-demand"
DEDICATED = "dedicated monthly"


@dataclass(frozen=True)
class Capacity:
    """``devices`` accelerators of one model, ``gib`` of accelerator memory in all."""

    accelerator: str
    devices: int
    gib: float

    def describe(self) -> str:
        return f"{self.devices} x {self.accelerator}, {self.gib:g} GiB"

    def ratio_to(self, reference: Capacity) -> float:
        """This capacity over ``reference``: 1.0 is the same job, 2.0 twice the memory."""
        return round(self.gib / reference.gib, 2)


def capacity(accelerator: str, devices: int, catalog: Catalog) -> Capacity:
    acc = catalog.accelerator(accelerator)
    return Capacity(acc.name, devices, acc.memory_gib * devices)


def of_spec(spec: EnvironmentSpec) -> Capacity | None:
    """What one environment holds: every node's (or the slice's) accelerators."""
    if not spec.accelerator or not spec.accelerator_count:
        return None
    devices = spec.accelerator_count * spec.nodes
    return Capacity(spec.accelerator, devices, spec.accelerator_memory_gib * devices)


def units_covering(reference: Capacity, per_unit_gib: float) -> int:
    """The fewest units (nodes or devices) of ``per_unit_gib`` each that hold ``reference``."""
    return max(1, math.ceil(round(reference.gib / per_unit_gib, 6)))


def slice_covering(reference: Capacity, generation: str, catalog: Catalog) -> Offer | None:
    """The smallest slice of a TPU generation holding ``reference`` (the largest if none does)."""
    acc = catalog.accelerator(generation)
    slices = sorted(
        (o for o in catalog.offers if rules_for(o.platform).slices and o.accelerator == acc.name),
        key=lambda o: o.total_accelerators,
    )
    covering = [o for o in slices if o.total_accelerators * acc.memory_gib >= reference.gib]
    return covering[0] if covering else (slices[-1] if slices else None)


def as_on_demand(spec: EnvironmentSpec, profile: Profile) -> tuple[EnvironmentSpec, Profile]:
    """The same environment and profile paid on demand: the basis every cloud shape has."""
    return (
        spec.model_copy(update={"spot": False, "pricing": PricingModel.ON_DEMAND}),
        profile.model_copy(update={"pricing": PricingModel.ON_DEMAND}),
    )
