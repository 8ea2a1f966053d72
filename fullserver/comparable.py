"""What makes two prices comparable: equal accelerator capacity under one pricing model.

``recommend`` priced a TPU v5litepod-8 (8 chips, 128 GiB) against one L4 (24 GiB) and let the
smaller, cheaper row win ties; the plan's "same job elsewhere" put spot prices beside on-demand
ones without a word. Every comparison now says what capacity it priced and on which pricing
model, and sizes its rows to the same capacity where it chooses them.

Design notes: docs/design/core.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fullserver.catalog import Catalog, Offer
from fullserver.catalog.model import Platform
from fullserver.platforms import pool_members, rules_for
from fullserver.profiles import PricingModel, Profile
from fullserver.spec import EnvironmentSpec

if TYPE_CHECKING:  # fullserver.cost labels its prices with this module's names: its lines as the catalog reads them
    from fullserver.catalog.staleness import Billed

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
        (o for o in catalog.offers if o.name in catalog.slice_types and o.accelerator == acc.name),
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


# Node pools beside VMs (issue 38): a pool's nodes are its VM platform's machines, so a stack on
# either side of the line compares with the other where the profile allows it.
_SIZED_AS: dict[Platform, Platform] = {p: vm for r in pool_members() for p, vm in r.sized_as.items()}
"""Each node-pool platform -> the VM platform its nodes are (``PoolRules.sized_as``)."""

FEE_ITEMS = ("cluster fee", "system pool", "system pool disks")
"""The cost lines a node-pool environment pays whatever its pools do (``fullserver.cost``)."""


def _kind(platform: Platform) -> str:
    """What a platform rents: GPUs by the hour (any such platform is comparable), else its own kind."""
    vm = _SIZED_AS.get(platform, platform)
    return "hourly GPUs" if rules_for(vm).hourly_gpus else vm.value


def pool_alternatives(platforms: Sequence[Platform], chosen: Platform) -> tuple[Platform, ...]:
    """The profile's ``platforms`` across the node-pool line from ``chosen``, of its kind: for a VM
    stack the node pools of its accelerators (``gke-tpu`` for a TPU VM, ``eks-gpu`` and ``gke-gpu``
    for GPU VMs); for a node-pool stack the VM platforms and the other cluster platform. VM to VM
    is the comparison's own (``fullserver.plan``)."""
    pools = chosen in _SIZED_AS
    return tuple(p for p in platforms if p is not chosen and (pools or p in _SIZED_AS) and _kind(p) == _kind(chosen))


def fees_stated(spec: EnvironmentSpec, cost: Billed) -> str:
    """A node-pool row's own fees, in words, so that a pool priced beside a VM says what it carries:
    a created cluster's fee and system pool (the environment's alone, every hour it lives), or none
    where it joins an existing cluster (that cluster's bill). "" for a VM."""
    if spec.kube is None:
        return ""
    if not spec.kube.create_cluster:
        return f"no cluster fee or system pool: joins the existing cluster '{spec.kube.cluster_name}', billed with it"
    fees = [f"{line.item} ${line.usd_month:,.2f}" for line in cost.lines if line.item in FEE_ITEMS]
    return f"a cluster of its own, in the price: {', '.join(fees)} a month"
