"""The catalog's data model: machine shapes and prices, each figure with a source and a date.

The YAML files under ``fullserver/catalog/data/`` are parsed into these models. Units are in
field names (``_gib`` = 2**30 bytes, ``_gb`` = 10**9 bytes) because the providers disagree:
AWS states memory in GiB but instance store in decimal GB; GCP's "GB" of memory is GiB and a
local SSD partition is 375 GiB. Figures that cannot be sourced are left out, never guessed.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from fullserver.platform import AcceleratorKind, Interconnect, Platform
from fullserver.platforms import all_rules
from fullserver.sources import Source, check_snapshot_date, commit_pin

__all__ = ["AcceleratorKind", "Interconnect", "Platform", "Source", "check_snapshot_date", "commit_pin"]

GB_PER_GIB = 2**30 / 10**9

Positive = Annotated[float, Field(gt=0)]
NonNegative = Annotated[float, Field(ge=0)]
Count = Annotated[int, Field(ge=0)]


class Strict(BaseModel):
    """Unknown keys are errors: a typo in a data file must not silently drop a figure."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Accelerator(Strict):
    """One accelerator model, e.g. ``H100-80GB``; memory is per device."""

    name: str
    kind: AcceleratorKind
    vendor: str
    memory_gib: Positive
    aliases: list[str] = []
    source: str


def _one_of(what: str, known: set[str]) -> AfterValidator:
    """A name the platform registry knows (``fullserver.platforms``), not a list kept here."""

    def check(value: str) -> str:
        if value not in known:
            raise ValueError(f"unknown {what} '{value}' (known: {', '.join(sorted(known))})")
        return value

    return AfterValidator(check)


ShapePlatform = Annotated[
    str, _one_of("platform", {r.platform.value for r in all_rules() if "shapes" in r.catalog_forms})
]
"""A platform whose offers include machine shapes sold as they are (``PlatformRules.catalog_forms``)."""
CatalogProvider = Annotated[str, _one_of("provider", {r.provider for r in all_rules() if r.catalog_forms})]
"""A provider some platform's catalog offers come from (storage, egress and commitment prices)."""


class Shape(Strict):
    """A machine shape as a provider sells it.

    ``source`` names the default source of every figure; ``figure_sources`` overrides it for the
    fields that come from elsewhere (e.g. ``network_gbps`` from a bandwidth table).
    """

    name: str
    platform: ShapePlatform
    family: str
    accelerator: str | None = None
    accelerator_count: Count = 0
    vcpus: Annotated[int, Field(gt=0)]
    memory_gib: Positive
    local_nvme_disks: Count = 0
    local_nvme_disk_gb: Positive | None = None
    local_nvme_disk_gib: Positive | None = None
    local_nvme_selectable_counts: list[int] | None = None
    local_nvme_total_gb: Positive | None = None
    """Local NVMe known only in total (decimal GB) where no source splits it per disk: carried as
    a total, so the balance counts it, instead of being left out (which read as 0 GiB)."""
    network_gbps: Positive
    efa_interfaces: Count = 0
    pods: Annotated[int, Field(gt=0)] | None = None
    """Pods the cloud's pod network gives addresses to on one machine (AWS: the VPC CNI's
    ENI-limited figure, what nodeadm and Karpenter default maxPods to); a node pins no more."""
    interconnect: Interconnect = Interconnect.NONE
    source: str
    figure_sources: dict[str, str] = {}

    @model_validator(mode="after")
    def _consistent(self) -> Shape:
        if (self.accelerator is None) != (self.accelerator_count == 0):
            raise ValueError("accelerator and accelerator_count must be set together")
        if self.local_nvme_disks and (self.local_nvme_disk_gb is None) == (self.local_nvme_disk_gib is None):
            raise ValueError("local_nvme_disks needs exactly one of local_nvme_disk_gb or local_nvme_disk_gib")
        if self.local_nvme_total_gb is not None and (self.local_nvme_disks or self.local_nvme_disk_gb):
            raise ValueError("local_nvme_total_gb is for a total without a per-disk split: drop it or the split")
        if self.efa_interfaces and self.interconnect is not Interconnect.EFA:
            raise ValueError("efa_interfaces needs interconnect: efa")
        return self

    @property
    def local_nvme_gib(self) -> float:
        if self.local_nvme_total_gb is not None:
            return self.local_nvme_total_gb / GB_PER_GIB
        size = self.local_nvme_disk_gib or (self.local_nvme_disk_gb or 0) / GB_PER_GIB
        return self.local_nvme_disks * size


class ShapePrice(Strict):
    """Hourly price of one shape in one region; spot only where published.

    ``spot_source`` names the spot figure's source when it is not ``source``: a refresh from a
    source without spot prices (the AWS Price List) updates the rest and keeps the spot figure's.
    """

    shape: str
    region: str
    on_demand_usd_hour: Positive
    spot_usd_hour: Positive | None = None
    source: str
    spot_source: str | None = None


class AttachLimit(Strict):
    """The largest host an attachable GPU count allows (GCP N1: vCPU and memory caps per GPU count)."""

    count: Annotated[int, Field(gt=0)]
    max_vcpus: Annotated[int, Field(gt=0)]
    max_memory_gib: Positive


class AttachableGpu(Strict):
    accelerator: str
    machine_family: str
    limits: list[AttachLimit]
    zones: list[str] = []
    source: str
    zones_source: str | None = None
    """Where the zones come from when not from ``source`` (the limits' table)."""
    network_source: str | None = None
    """Set when the host's own network figure does not hold with this GPU attached: the source
    saying so. Google gives N1 hosts with T4 or V100 GPUs "up to 100 Gbps, based on the
    combination of GPU and vCPU count" instead of the N1 per-vCPU rule; with no per-combination
    figure read, the offer's bandwidth is unpublished (a gap the plan asks for), not the host's."""


class MachineZones(Strict):
    """The zones a machine series is offered in (``a3-highgpu``: every ``a3-highgpu-*`` size),
    across the regions the catalog prices it in. Capacity is zonal: a node or a serving group's
    replicas go only where the series is sold, not to the first zone a region lists."""

    series: str
    zones: list[str]
    source: str


class AcceleratorPrice(Strict):
    """Per-device hourly price of an attachable GPU (added to the host VM's price)."""

    accelerator: str
    region: str
    on_demand_usd_hour: Positive
    spot_usd_hour: Positive | None = None
    source: str
    spot_source: str | None = None  # as in ShapePrice


class TpuType(Strict):
    """A Cloud TPU accelerator type (slice), e.g. ``v5litepod-8`` or ``v5p-128``.

    Host figures are per TPU VM host; a slice has ``hosts`` of them. ``host_memory_gib`` is the
    TPU VM's memory (the machine type's, what the VM's OS gets), not the physical host's DRAM:
    v6e-8 has 1,440 GiB of the 1,536 GiB Google gives as "DRAM per host".
    """

    name: str
    generation: str
    accelerator: str
    chips: Annotated[int, Field(gt=0)]
    hosts: Annotated[int, Field(gt=0)]
    topology: str
    host_vcpus: Annotated[int, Field(gt=0)]
    host_memory_gib: Positive
    host_network_gbps: Positive | None = None
    runtime_versions: list[str]
    zones: list[str]
    source: str
    figure_sources: dict[str, str] = {}

    @model_validator(mode="after")
    def _consistent(self) -> TpuType:
        if self.chips % self.hosts:
            raise ValueError(f"{self.chips} chips do not divide evenly over {self.hosts} hosts")
        dims = [int(d) for d in self.topology.split("x") if d.isdigit()]
        if len(dims) != len(self.topology.split("x")):
            raise ValueError(f"topology {self.topology!r} is not of the form AxB or AxBxC")
        product = 1
        for d in dims:
            product *= d
        if product != self.chips:
            raise ValueError(f"topology {self.topology} has {product} chips, not {self.chips}")
        return self


class TpuPrice(Strict):
    """Per chip-hour price of a TPU generation in one region."""

    generation: str
    region: str
    on_demand_usd_chip_hour: Positive
    spot_usd_chip_hour: Positive | None = None
    source: str
    spot_source: str | None = None  # as in ShapePrice


class StoragePrice(Strict):
    """Block or local storage price in one region; IOPS/throughput above the free baseline."""

    provider: CatalogProvider
    kind: str
    region: str
    usd_gib_month: NonNegative
    usd_iops_month: NonNegative = 0
    usd_mbps_month: NonNegative = 0
    free_iops: NonNegative = 0
    free_mbps: NonNegative = 0
    source: str


class EgressPrice(Strict):
    """Internet egress price per GB (decimal) for the first paid tier, from one region."""

    provider: CatalogProvider
    region: str
    usd_per_gb: NonNegative
    source: str


class CommitmentDiscount(Strict):
    """A published commitment discount, as a fraction off on-demand (e.g. 0.37 for 37%).

    It applies only where its source says: to the exact ``shapes`` the source prices (a GCP
    machine type, an AWS instance type), or, when ``shapes`` is empty, to every offer of the family
    ``applies_to`` names (a TPU generation priced per chip-hour; an AWS family whose every size the
    refresh read). With ``shapes`` set, ``applies_to`` only labels the entry.
    """

    provider: CatalogProvider
    applies_to: str
    term_years: Annotated[int, Field(gt=0)]
    discount: Annotated[float, Field(gt=0, lt=1)]
    shapes: list[str] = []
    source: str


class CatalogFile(Strict):
    """One data file; every section is optional so data can be split by provider."""

    sources: dict[str, Source] = {}
    accelerators: list[Accelerator] = []
    shapes: list[Shape] = []
    shape_prices: list[ShapePrice] = []
    attachable_gpus: list[AttachableGpu] = []
    machine_zones: list[MachineZones] = []
    accelerator_prices: list[AcceleratorPrice] = []
    tpu_types: list[TpuType] = []
    tpu_prices: list[TpuPrice] = []
    storage_prices: list[StoragePrice] = []
    egress_prices: list[EgressPrice] = []
    commitment_discounts: list[CommitmentDiscount] = []
