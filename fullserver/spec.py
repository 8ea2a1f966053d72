"""The environment spec: everything the Pulumi components need, decided by sizing.

Components execute a spec; they never choose sizes. The spec is plain data so it can be printed
by ``fullserver plan``, compared in tests and passed into components as a serialisable dict.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer, model_validator

from fullserver.balance import BalanceReport
from fullserver.capacity import CapacitySet
from fullserver.catalog.model import AcceleratorKind, Interconnect, Platform
from fullserver.errors import InputError
from fullserver.kube.model import KubePlan
from fullserver.platforms import disk, rules_for
from fullserver.profiles import Lifecycle, PricingModel, Purpose, Serving, Stage
from fullserver.serving import ServingSpec
from fullserver.workload import Dedicated


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DataDisk(Frozen):
    """A block-storage volume; IOPS/throughput are provisioned where the disk kind allows it."""

    kind: str
    size_gib: int
    iops: int | None = None
    throughput_mbps: int | None = None

    @model_validator(mode="after")
    def _fits_its_kind(self) -> DataDisk:
        """A disk larger than its kind allows fails ``pulumi up`` at the provider, after other
        resources exist; sizing makes the disk from the dataset (the balance's attached storage is
        a few TiB at most), so the stack's ``datasetGib`` is named. Each kind's largest volume is
        its platform's (``fullserver.platforms``)."""
        kind = disk(self.kind)
        most = kind.max_gib if kind is not None else None
        if most is not None and self.size_gib > most:
            raise InputError(
                "fullserver:datasetGib",
                f"needs a {self.size_gib:,} GiB data disk (the dataset with the profile's headroom), "
                f"but a {self.kind} volume holds at most {most:,} GiB",
                "stream the dataset from object storage and set datasetGib to what must sit on disk",
            )
        return self


class TpuSpec(Frozen):
    accelerator_type: str
    topology: str
    runtime_version: str
    hosts: int
    queued: bool

    @property
    def multi_host(self) -> bool:
        return self.hosts > 1


class NetworkSpec(Frozen):
    interconnect: Interconnect = Interconnect.NONE
    efa_interfaces: int = 0
    compact_placement: bool = False
    public_ip: bool = False
    ssh_source_ranges: list[str] = []
    ssh_public_keys: list[str] = []
    """OpenSSH public key lines installed for the nodes' login user (``fullserver:sshPublicKeys``)."""
    gbps_per_node: float = 0


class Billables(Frozen):
    """The network resources billed beside the machines (``fullserver.billables`` decides them):
    the components build exactly these and the plan prices each one."""

    machines: int = 0
    """Machines the estimate runs (nodes, times the serving group's minimum replicas), and a
    created cluster's system nodes, which use its NAT as well."""
    nat: bool = False
    """Nodes without public addresses reach the internet through a NAT gateway (AWS: one, with an
    Elastic IP) or Cloud NAT (GCP, priced per VM using it)."""
    node_public_ips: int = 0
    """Machines holding a public IPv4 address (billed per address-hour)."""
    nat_public_ips: int = 0
    """The NAT gateway's Elastic IP (AWS) or Cloud NAT's automatically allocated address (GCP)."""
    load_balancer: str = ""
    """"alb" (AWS Application Load Balancer), "gcp-global-external" (Google's global external
    Application Load Balancer: one global forwarding rule), a node pool's LoadBalancer Service's
    "gke-passthrough-nlb" (one regional forwarding rule) or "nlb" (an AWS Network Load Balancer),
    or "" (none)."""
    lb_public_ips: int = 0
    """An internet-facing ALB or NLB holds one public IPv4 address per zone it spans."""
    health_checks: int = 0
    tier1: bool = False
    """Per-VM Tier_1 egress (GCP): multi-node environments on machine types that take it
    (``fullserver.platforms.gcp.tier1_eligible``; never a GPU series). Billed per VM-hour."""
    alarms: int = 0
    """CloudWatch alarms: two per target-tracking policy (Auto Scaling creates them), one for the
    spot group's on-demand fallback."""
    zones: int = 1
    """Zones the environment's AWS subnets span: an ALB needs two or more."""


class NearMiss(Frozen):
    offer: str
    usd_hour: float | None
    reason: str


class ShapeOption(Frozen):
    """Another shape that passes the same balance with the same accelerators, and its hourly price
    under the spec's pricing: what a spot request may fall back on when the chosen shape's spot
    capacity is out (an AWS Auto Scaling group's instance-type overrides)."""

    offer: str
    machine_type: str
    usd_hour: float
    pods: int | None = Field(default=None, exclude=True)
    """Pods its pod network addresses per machine (``Offer.pods``): a node group of it pins no more
    (``fullserver.kube.pool.network_pods``); carried for the plan, as ``ShapeLimits`` is."""


class ShapeLimits(Frozen):
    """What the chosen shape takes, as the catalog gives it, carried so that the components check
    their args against it without reading the catalog again."""

    max_local_ssds: int
    """Local SSDs the shape has (or takes at most)."""
    local_ssd_counts: list[int] | None = None
    """The counts of local SSDs it can be built with, where only some are allowed (GCP)."""
    efa_interfaces: int = 0
    """EFA interfaces the shape has (AWS; 0 elsewhere)."""
    pods: int | None = None
    """Pods its pod network addresses per machine (``Offer.pods``; None: not published)."""


class EnvironmentSpec(Frozen):
    environment: str
    profile: str
    stage: Stage
    purpose: Purpose
    framework: str
    owner: str
    platform: Platform
    region: str
    zone: str | None
    offer: str
    machine_type: str
    accelerator: str | None
    accelerator_count: int
    accelerator_memory_gib: float
    vcpus: int
    memory_gib: float
    nodes: int
    pricing: PricingModel
    spot: bool
    lifecycle: Lifecycle
    boot_disk_gib: int
    boot_disk_kind: str = ""
    data_disk: DataDisk | None = None
    local_nvme_disks: int = 0
    local_nvme_disk_gib: float = 0
    scratch_raid0: bool = False
    network: NetworkSpec = NetworkSpec()
    tpu: TpuSpec | None = None
    serving: Serving | None = None
    endpoint: ServingSpec | None = None
    """The serving path the components build for ``serving`` (``fullserver.serving``)."""
    billables: Billables | None = None
    """Network resources billed beside the machines (``fullserver.billables``)."""
    image: str | None = None
    reservation: str | None = None
    capacity_block: bool = False
    dedicated: Dedicated | None = None
    labels: dict[str, str] = {}
    autostop_minutes: int = 0
    """Idle minutes before the nodes stop themselves, 0: never (``workload.autostop_minutes_for``):
    what the plan prices and what a platform's node layout may depend on (``gcp_capacity.mig_reason``)."""
    balance: BalanceReport
    near_misses: list[NearMiss] = []
    alternative_shapes: list[ShapeOption] = []
    """Balanced alternatives to ``offer`` (cheapest first), filled for spot specs only."""
    capacity: CapacitySet | None = None
    """The balanced set and what the cloud tries on a stockout (``fullserver.capacity``); ``None``
    where the platform states none (dumped only where there is one)."""
    warnings: list[str] = []
    shape_limits: ShapeLimits | None = Field(default=None, exclude=True)
    """The chosen shape's limits (``None``: declared servers); not dumped, so plan output is unchanged."""
    accelerator_kind: AcceleratorKind | None = Field(default=None, exclude=True)
    """The accelerator's kind (GPU, TPU, Trainium, Inferentia), as the catalog names it; not dumped."""
    kube: KubePlan | None = None
    """Kubernetes node-pool platforms (``gke-gpu``, ``gke-tpu``, ``eks-gpu``): the pools the sized
    VM shape becomes (``fullserver.kube``); dumped only where there is one, so other plans' output
    is unchanged."""

    @model_serializer(mode="wrap")
    def _without_empty_kube(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and data.get("kube", 0) is None:
            del data["kube"]
        if isinstance(data, dict) and data.get("capacity", 0) is None:
            del data["capacity"]
        return data

    @property
    def provider(self) -> str:
        """The catalog's provider key of the platform (``PlatformRules.provider``)."""
        return rules_for(self.platform).provider

    @property
    def replicas(self) -> int:
        """Copies of the environment that run: a serving group's minimum, else one."""
        return self.serving.min_replicas if self.serving else 1

    @property
    def machines(self) -> int:
        """Machines billed: every node of every replica (disks, addresses and NAT count them)."""
        return self.nodes * self.replicas
