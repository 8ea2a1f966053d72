"""The vocabulary of quotas: what an environment asks of an account, and each quota it needs.

Each platform's rule is a module here (``aws``, ``gcp``, ``tpu``, ``gke``, ``eks``) whose ``quotas(ask, table)`` its
``PlatformRules.quotas`` names; the names, codes and units come from ``table`` (the sourced data
file ``fullserver/catalog/data/quotas.yaml``, loaded by ``fullserver.quotas``), never from code.
The types are here, below the platform modules, so they and the loader share them without a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Literal

from pydantic import BaseModel, ConfigDict

from fullserver.sources import Source

Cloud = str
"""A cloud's provider key (``PlatformRules.provider``, ``fullserver.clouds``): whose quota API reads it."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Quota(_Strict):
    """One quota as the provider names it: ``code`` is what its API is asked for (an AWS quota
    code, a Compute Engine metric, a Cloud Quotas quota ID)."""

    service: str
    code: str
    name: str
    unit: str
    scope: Literal["region", "zone", "global"] = "region"
    source: str
    new_account_zero: bool = False
    """Its default is 0 in a new account or project (as its source states)."""


class AwsVcpuGroup(_Strict):
    """An EC2 vCPU quota group: the instance families (letters before the generation digit)
    whose running vCPUs count against its On-Demand and Spot quotas (keys into ``quotas``)."""

    families: list[str]
    on_demand: str
    spot: str | None = None
    spot_by_family: dict[str, str] = {}
    """Families whose Spot requests count against another quota (P5 apart from P2-P4)."""
    capacity_block_by_family: dict[str, str] = {}


class GcpGpu(_Strict):
    """The regional quota metrics (keys into ``quotas``) one GPU model counts against."""

    on_demand: str
    preemptible: str


class TpuGeneration(_Strict):
    """Cloud TPU quotas of one generation (keys into ``quotas``): zonal and regional, on demand
    and preemptible; ``prefix`` is how its accelerator types start (``v5litepod-``). A pricing
    model whose quota IDs no source confirms is left out (``None``): named nothing, not guessed."""

    prefix: str
    zone: str | None = None
    region: str | None = None
    preemptible_zone: str | None = None
    preemptible_region: str | None = None


class GkeTpuGeneration(_Strict):
    """The Compute Engine quotas (keys into ``quotas``) a GKE TPU slice pool of one generation
    counts its chips against, on demand and Spot: GKE's pools draw on ``compute.googleapis.com``,
    not on the Cloud TPU API quotas ``TpuGeneration`` names."""

    prefix: str
    on_demand: str
    preemptible: str


class CapacityPath(_Strict):
    """A way to get accelerator capacity where its quota starts at 0, for the profiles it fits."""

    name: str
    platforms: list[str]
    fits: list[str]
    """The pricing models (``PricingModel`` values) of the profiles it suits."""
    how: str
    priced: Literal["on-demand", "spot"] | None = None
    """Which catalog price it is billed at, where the catalog has one."""
    families: list[str] = []
    """Only these instance families (empty: every shape of the platforms)."""
    source: str | None = None


class QuotaTable(_Strict):
    """``quotas.yaml``: every quota fullserver names, and the rules that pick them."""

    sources: dict[str, Source]
    capacity_paths: list[CapacityPath] = []
    quotas: dict[str, Quota]
    aws_vcpu_groups: dict[str, AwsVcpuGroup]
    aws_storage: dict[str, str]
    """EBS volume kind -> its storage quota."""
    aws_load_balancers: dict[str, str]
    """The load balancer a serving group builds (``Billables.load_balancer``) -> its quota."""
    aws_other: dict[str, str]
    """Elastic IPs and VPCs (keys into ``quotas``)."""
    gcp_gpus: dict[str, GcpGpu]
    """By the catalog's accelerator name (``L4``, ``A100-40GB``)."""
    gcp_gpu_series: dict[str, str] = {}
    """Machine series (``a3-megagpu``) -> a ``gcp_gpus`` key, where the series counts its GPUs
    against another metric than its accelerator's (A3 Mega's H100s are ``NVIDIA_H100_MEGA_GPUS``)."""
    gcp_cpus: dict[str, str]
    """Machine series prefix (``n1``, ``a2``) -> the CPU quota its vCPUs count against."""
    gcp_disks: dict[str, str]
    """Persistent disk kind -> the quota its GB count against."""
    gcp_other: dict[str, str]
    tpu_generations: dict[str, TpuGeneration]
    gke_tpu_generations: dict[str, GkeTpuGeneration] = {}
    eks_other: dict[str, str] = {}
    """What a created EKS cluster counts against besides its VPC (keys into ``quotas``)."""

    def quota(self, key: str) -> Quota:
        return self.quotas[key]

    @cached_property
    def aws_vcpu_prefixes(self) -> list[tuple[str, AwsVcpuGroup]]:
        """Every family prefix of ``aws_vcpu_groups`` with its group, longest first (as listed
        among equally long ones): the order ``aws.vcpu_group`` tries them in, sorted once per
        table rather than scanned whole for every instance type."""
        prefixes = [(k, g) for g in self.aws_vcpu_groups.values() for k in g.families]
        return sorted(prefixes, key=lambda kg: -len(kg[0]))

    @cached_property
    def aws_vcpu_group_by_family(self) -> dict[str, AwsVcpuGroup | None]:
        """``aws.vcpu_group``'s answer for each instance family it was asked about, kept with the
        table it was read from: every AWS plan asks it, and the families are the catalog's few. An
        empty cache here, filled by ``aws.vcpu_group`` one family at a time; the table is read-only
        data (``fullserver.quotas.load_quota_table``), never copied with other groups."""
        return {}


@dataclass(frozen=True, slots=True)
class QuotaNeed:
    """One quota an environment needs, at the most it can reach (every node of the serving
    group's maximum replicas): what ``plan --json`` carries and ``fullserver quota`` checks. A
    plain dataclass: every plan makes several from the quota table's own validated entries, and a
    model cost three times as much to build; the plan dumps it as it dumped the model."""

    cloud: Cloud
    service: str
    code: str
    name: str
    scope: str
    """Where the quota applies: the region, the zone, or ``global``."""
    amount: float
    unit: str
    why: str
    """How the amount is made up, in words (``2 x p5.48xlarge x 192 vCPUs``)."""
    source: str
    new_account_zero: bool = False


@dataclass(frozen=True)
class Pool:
    """One node pool of a node-pool platform, at the most: its nodes, and whether they draw on
    the preemptible (Spot) quotas: Spot nodes and GKE flex-start nodes do."""

    machines: int
    spot: bool


@dataclass(frozen=True)
class SystemMachines:
    """A created cluster's CPU-only system pool: every node runs all month."""

    shape: str
    machines: int
    vcpus: int
    """Per machine (the catalog's; 0 where it has none)."""
    disk_kind: str = ""
    disk_gib: float = 0


@dataclass(frozen=True)
class QuotaAsk:
    """What an environment asks of its account, from the plan's spec (``fullserver.quotas``)."""

    shape: str
    """Instance type, machine type or TPU accelerator type."""
    region: str
    zone: str | None
    machines: int
    """Machines at the most: nodes x the serving group's maximum replicas (a TPU slice is one)."""
    vcpus: int
    """Per machine."""
    accelerator: str | None
    accelerators: int
    """Per machine."""
    spot: bool
    capacity_block: bool = False
    disk_gib: dict[str, float] = field(default_factory=dict)
    """Block storage per machine, by disk kind (boot and data disks)."""
    local_ssds: int = 0
    local_ssd_gib: float = 0
    node_public_ips: int = 0
    """Machines holding an external address of their own (at the most)."""
    nat_public_ips: int = 0
    """The NAT's addresses (an AWS Elastic IP; Cloud NAT's automatically allocated address)."""
    load_balancer: str = ""
    network: bool = True
    """The stack builds its own network (VPC)."""
    nat_gateways: int = 0
    """NAT gateways the stack builds (AWS: one, in the nodes' zone)."""
    pools: tuple[Pool, ...] = ()
    """Node-pool platforms: each accelerator pool at the most (``machines`` is their sum); empty
    on the VM platforms, whose ``machines`` all run at ``spot``."""
    system: SystemMachines | None = None
    """A created cluster's system pool (``None``: no cluster created, or a VM platform)."""
    cluster: bool = False
    """The stack creates a Kubernetes cluster."""
    reservation: bool = False
    """The accelerators come from a named reservation."""
    slice_type: str = ""
    """A TPU slice's accelerator type (``v5litepod-16``), where ``shape`` is its host's machine type."""

    @property
    def accelerator_pools(self) -> tuple[Pool, ...]:
        """The pools the accelerators run in: a VM platform's machines are one."""
        return self.pools or (Pool(self.machines, self.spot),)


def merged(needs: list[QuotaNeed]) -> list[QuotaNeed]:
    """One line per quota and place: the amounts of needs on the same quota added up (a system
    pool's vCPUs and an on-demand pool's on one CPU quota), their reasons joined, first-named order."""
    out: dict[tuple[str, str, str], QuotaNeed] = {}
    for n in needs:
        key = (n.service, n.code, n.scope)
        seen = out.get(key)
        if seen is None:
            out[key] = n
            continue
        amount = round(seen.amount + n.amount, 2)
        out[key] = replace(seen, amount=amount, why=f"{seen.why}; {n.why}")
    return list(out.values())


def need(table: QuotaTable, key: str, ask: QuotaAsk, amount: float, why: str, cloud: Cloud) -> QuotaNeed:
    """``amount`` of the quota ``key`` names, placed in the ask's region or zone."""
    q = table.quota(key)
    # tests in turn, not a dict of the three places built per call: each plan names several
    if q.scope == "region":
        scope = ask.region
    elif q.scope == "zone":
        scope = ask.zone or ask.region
    else:
        scope = "global"
    return QuotaNeed(
        cloud=cloud,
        service=q.service,
        code=q.code,
        name=q.name,
        scope=scope,
        amount=amount,
        unit=q.unit,
        why=why,
        source=q.source,
        new_account_zero=q.new_account_zero,
    )
