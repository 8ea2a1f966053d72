"""Google Kubernetes Engine accelerator node pools (``gke-gpu``, ``gke-tpu``): everything fullserver
knows about them.

Design notes: docs/design/platforms.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fullserver.capacity import CapacityStep
from fullserver.platform import AcceleratorKind, Platform, PricingModel
from fullserver.platforms import gcp, tpu
from fullserver.platforms.base import GPU_SERVING, RFC1035, NameRule, PlatformRules, Refusal, Request
from fullserver.platforms.capacity import SpotQuestion, spot_step
from fullserver.platforms.gke_flex import (  # re-exported: GKE flex-start pools
    FLEX_START_MIN_VERSION as FLEX_START_MIN_VERSION,
)
from fullserver.platforms.gke_flex import flex_not_spot
from fullserver.platforms.gke_flex import flex_start_warnings as flex_start_warnings
from fullserver.platforms.gke_reserved import (
    GIB_MIB as GIB_MIB,
)
from fullserver.platforms.gke_reserved import (
    LOCAL_SSD_OVERHEAD_KIB as LOCAL_SSD_OVERHEAD_KIB,
)
from fullserver.platforms.gke_reserved import (
    MEMORY_EVICTION_MIB as MEMORY_EVICTION_MIB,
)
from fullserver.platforms.gke_reserved import (  # re-exported: GKE's node reservations
    MIB as MIB,
)
from fullserver.platforms.gke_reserved import (
    NODEFS_EVICTION_RATIO as NODEFS_EVICTION_RATIO,
)
from fullserver.platforms.gke_reserved import (
    Allocatable as Allocatable,
)
from fullserver.platforms.gke_reserved import (
    NodeResources as NodeResources,
)
from fullserver.platforms.gke_reserved import (
    allocatable as allocatable,
)
from fullserver.platforms.gke_reserved import (
    boot_disk_os_mib as boot_disk_os_mib,
)
from fullserver.platforms.gke_reserved import (
    bracketed as bracketed,
)
from fullserver.platforms.gke_reserved import (
    cpu_reserved_m as cpu_reserved_m,
)
from fullserver.platforms.gke_reserved import (
    kernel_reserved_mib as kernel_reserved_mib,
)
from fullserver.platforms.gke_reserved import (
    local_ssd_overhead_mib as local_ssd_overhead_mib,
)
from fullserver.platforms.gke_reserved import (
    memory_reserved_mib as memory_reserved_mib,
)
from fullserver.platforms.kubernetes import JOB_TTL_HOURS
from fullserver.platforms.network.kube import GKE_NETWORK
from fullserver.platforms.quota import gcp as gcp_quota
from fullserver.platforms.quota import gke as gke_quota
from fullserver.platforms.supply import SLICES

# --- names ---------------------------------------------------------------------------------------
# GKE cluster names: lowercase RFC 1035 labels; the API refuses longer ones with "Cluster.name
# must be less than 40 characters" (quoted in cloudnative-pg/cloudnative-pg#8714, 2025-10-02), so
# at most 39 here, although the console's wording ("a lowercase letter followed by up to 40 ...",
# GitLab issue 22655) reads longer. Node pool names: "GKE's 40-character limit for NodePool.name"
# (GoogleCloudPlatform/magic-modules#18477, 2026-07-30, which shortened the provider's generated
# suffix to fit it). Both are set by the program (``fit_name``), never autonamed, so the limit is
# the whole name.
CLUSTER_TYPE = "gcp:container/cluster:Cluster"
NODE_POOL_TYPE = "gcp:container/nodePool:NodePool"
NAME_RULES: dict[str, tuple[NameRule, ...]] = {
    CLUSTER_TYPE: (NameRule("GKE cluster name", 39, *RFC1035, "GKE clusters.create", autoname=False),),
    NODE_POOL_TYPE: (NameRule("GKE node pool name", 40, *RFC1035, "GKE nodePools.create", autoname=False),),
}

# --- GPUs ------------------------------------------------------------------------------------------
GPU_RESOURCE = "nvidia.com/gpu"
GPU_TAINT = (GPU_RESOURCE, "present", "NoSchedule")
"""GKE's own GPU taint, as the API reports it (``nvidia.com/gpu=present:NO_SCHEDULE``), declared on
every GPU pool as Cluster Toolkit does: GKE adds it only when the cluster has a non-GPU pool."""
ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
SPOT_LABEL = "cloud.google.com/gke-spot"
"""GKE labels spot nodes ``cloud.google.com/gke-spot=true`` (GKE "Spot VMs")."""
COMPUTE_CLASS_LABEL = "cloud.google.com/compute-class"
"""Pods select a custom ComputeClass with this node selector; a manually created Standard pool
serves the class only with this node label and a ``NoSchedule`` taint of the same key and value
(GKE "About custom ComputeClasses", section on manually created node pools:
``--node-labels="cloud.google.com/compute-class=COMPUTE_CLASS"``,
``--node-taints="cloud.google.com/compute-class=COMPUTE_CLASS:NoSchedule"``)."""
COMPUTE_CLASS_MIN_VERSION = "1.30.3-gke.1451000"
"""Custom ComputeClasses in Standard and Autopilot: "version 1.30.3-gke.1451000 and later"
(GKE "About custom ComputeClasses")."""
GPU_DRIVER = "LATEST"
"""``gpu_driver_installation_config.gpu_driver_version``: set explicitly (the server-side default
changed in GKE 1.30 and caused perma-diffs, magic-modules#11152). ``LATEST`` as xpk passes it;
``DEFAULT`` is Cluster Toolkit's; both install GKE's driver and device plugin on COS."""
IMAGE_TYPE = "COS_CONTAINERD"

GUEST_ACCELERATORS: dict[str, str] = {
    # Compute Engine machine series -> the GKE guest-accelerator type (the GPU models' Compute
    # Engine names, as the catalog's accelerator aliases carry them).
    "g2-standard": "nvidia-l4",
    "a2-highgpu": "nvidia-tesla-a100",
    "a2-megagpu": "nvidia-tesla-a100",
    "a2-ultragpu": "nvidia-a100-80gb",
    "a3-highgpu": "nvidia-h100-80gb",
    "a3-megagpu": "nvidia-h100-mega-80gb",
    "a3-ultragpu": "nvidia-h200-141gb",
    "a4-highgpu": "nvidia-b200",
}


def guest_accelerator(machine_type: str, accelerator: str | None) -> str | None:
    """The GKE accelerator type of a GPU machine type (N1 hosts take attached GPUs by model)."""
    found = GUEST_ACCELERATORS.get(gcp.machine_series(machine_type))
    if found is None and machine_type.startswith("n1-") and accelerator is not None:
        found = gcp.ATTACHED_GPU_TYPES.get(accelerator)
    return found


# --- node counts -------------------------------------------------------------------------------------
REGIONAL_DEFAULT_ZONES = 3
"""A regional cluster's node pools span three zones of its region unless ``node_locations`` says
otherwise (GKE "Regional clusters"), and a pool's initial size is per zone: "NUM_NODES: the
number of nodes to create in each location" (GKE "Autoscaling a cluster"; pulumi-gcp node_pool.py:
``initial_node_count`` "In regional or multi-zonal clusters, this is the number of nodes per
zone")."""


def initial_nodes_per_zone(total_min: int, zones: int | None) -> int:
    """``initial_node_count`` for a pool whose floor is ``total_min`` nodes in all: per zone, so a
    pool in one zone starts at its floor and one spread over the region's zones starts at the
    floor divided among them (rounded up), not the floor in every zone."""
    return math.ceil(total_min / (zones or REGIONAL_DEFAULT_ZONES))


def fixed_pool_nodes(total: int, zones: int | None) -> tuple[int, int]:
    """(``node_count``, nodes built in all) of a fixed pool meant to run ``total`` nodes over
    ``zones`` zones (``None``: no ``node_locations``, so the regional default). ``node_count`` is
    per zone ("the number of nodes to create in each location"), so a regional pool given the
    total would run it three times over. The count per zone is the total divided among the zones,
    rounded up, and the plan prices what that builds (``ceil(total / zones) x zones``).

    Why not pin the pool to one zone instead: a GKE pool's plan has no zone only when the catalog
    lists none for its machine series in the region (sizing takes the first listed one otherwise),
    and a zone cannot be made up from the region's name (us-east1 has no ``-a`` zone), so there is
    no zone known to sell the machine to pin it to. With ``fullserver:zone`` set the pool is pinned
    there and ``node_count`` is the total."""
    spread = zones or REGIONAL_DEFAULT_ZONES
    per_zone = math.ceil(total / spread)
    return per_zone, per_zone * spread


# --- a created cluster's system pool ----------------------------------------------------------------
SYSTEM_POOL_MACHINE_TYPE = "e2-standard-4"
SYSTEM_POOL_NODES_PER_ZONE = 1
SYSTEM_POOL_DISK_GIB = 50
SYSTEM_POOL_DISK_KIND = "pd-balanced"
"""A cluster fullserver creates gets one untainted pool besides the accelerator pools: every
accelerator pool is tainted (``nvidia.com/gpu``/``google.com/tpu``) and may sit at zero, and GKE's
own Deployments (kube-dns, konnectivity-agent, metrics-server) tolerate no such taint
(kubernetes/kubernetes#57659: GKE manages kube-dns's tolerations itself), so without it they never
schedule and a multi-host slice's pods cannot resolve each other. xpk creates its clusters the same
way, with a CPU "system node pool" (AI-Hypercomputer/xpk: ``--default-pool-cpu-machine-type`` ->
Cluster Toolkit ``system_node_pool_machine_type``). One e2-standard-4 per zone of the pool is
fullserver's choice, not a sourced size; ``node_count`` is per zone (pulumi-gcp node_pool.py)."""


# --- TPUs ------------------------------------------------------------------------------------------
TPU_RESOURCE = "google.com/tpu"
TPU_TAINT = (TPU_RESOURCE, "present", "NoSchedule")
"""Declared by fullserver on every TPU pool. GKE gives TPU slice nodes this same taint
("TPU slice nodes are given a taint, google.com/tpu=present:NoSchedule", skypilot-org/skypilot:
sky/provision/kubernetes, quoting GKE "About TPUs in GKE", section "How TPUs work"; the GKE page
itself was not readable here in full), and ``gcloud ... --node-taints=google.com/tpu=present:NoSchedule``
on TPU pools is common practice; declaring it keeps the pool tainted whatever GKE does. xpk's
workloads tolerate the key ``google.com/tpu``."""
TPU_ACCELERATOR_LABEL = "cloud.google.com/gke-tpu-accelerator"
TPU_TOPOLOGY_LABEL = "cloud.google.com/gke-tpu-topology"
MULTI_HOST_MAX_PODS = 15
"""xpk sets max pods per node 15 on multi-host TPU pools."""


@dataclass(frozen=True)
class TpuGeneration:
    accelerator_label: str
    machine_prefix: str
    """``{prefix}{chips}t``: ``ct5lp-hightpu-4t``."""
    single_host_chips: tuple[int, ...]
    """Chips per VM of the single-host machine types."""


TPU_GENERATIONS: dict[str, TpuGeneration] = {
    # xpk system_characteristics.py; v5e's 1t/8t and v6e's 8t from the Cloud TPU catalog's VM types
    # (fullserver/catalog/data/tpu.yaml) and vllm-project/ci-infra#525.
    "v5e": TpuGeneration("tpu-v5-lite-podslice", "ct5lp-hightpu-", (1, 4, 8)),
    "v5p": TpuGeneration("tpu-v5p-slice", "ct5p-hightpu-", (4,)),
    "v6e": TpuGeneration("tpu-v6e-slice", "ct6e-standard-", (1, 4, 8)),
}
MULTI_HOST_CHIPS_PER_VM = 4
"""Four chips per VM whenever a slice spans more than one host (xpk)."""


def tpu_generation(accelerator_type: str) -> str | None:
    """``v5litepod-16`` -> ``v5e``, ``v5p-64`` -> ``v5p``, ``v6e-16`` -> ``v6e`` (else ``None``)."""
    head = accelerator_type.split("-", 1)[0]
    return {"v5litepod": "v5e", "v5p": "v5p", "v6e": "v6e"}.get(head)


@dataclass(frozen=True)
class TpuPoolShape:
    machine_type: str
    accelerator_label: str
    topology: str
    nodes: int
    chips_per_node: int

    @property
    def multi_host(self) -> bool:
        return self.nodes > 1


def tpu_pool_shape(accelerator_type: str, chips: int, hosts: int, topology: str) -> TpuPoolShape | None:
    """The GKE node pool of one Cloud TPU slice type, or ``None`` where GKE pools here take none."""
    generation = tpu_generation(accelerator_type)
    if generation is None:
        return None
    gen = TPU_GENERATIONS[generation]
    per_vm = chips // hosts if hosts else chips
    if hosts > 1 and per_vm != MULTI_HOST_CHIPS_PER_VM:
        return None
    if hosts == 1 and per_vm not in gen.single_host_chips:
        return None
    return TpuPoolShape(f"{gen.machine_prefix}{per_vm}t", gen.accelerator_label, topology, hosts, per_vm)


# --- spot TPU pools: what GKE tries, in order (the plan's "spot capacity" table) ------------------
# GKE "About TPUs in GKE": Spot VMs are supported for TPUs; a multi-host slice pool is atomic, and
# when one VM of it fails or is terminated GKE recreates the whole group. GKE "Spot VMs": a 30 s
# termination notice, graceful node shutdown. The order spot-then-on-demand is the pools' custom
# ComputeClass (``gke_pool.compute_class``); that GKE moves to the next priority at once on a
# stockout except for TPUs is a third-party reading of Google's troubleshooting page
# (shared reference capacity.md section 4), so the plan does not promise when.


def tpu_pool_spot_steps(q: SpotQuestion) -> tuple[CapacityStep, ...]:
    """A spot TPU pool and its on-demand fallback pool: the order, the rates, what a preemption does."""
    nodes = f"{q.hosts} nodes" if q.hosts > 1 else "1 node"
    whole = "the whole slice at once (a multi-host pool is 0 or all of its nodes)" if q.hosts > 1 else "the node"
    spot = spot_step(
        f"the spot pool grows: {q.shape} ({nodes})",
        q.spot_usd_hour,
        f"when the workload's pods are pending the cluster autoscaler creates {whole}; on a stockout it retries",
    )
    fallback = spot_step(
        f"the on-demand pool grows: {q.shape} ({nodes})",
        q.on_demand_usd_hour,
        "the ComputeClass's next priority, when the spot pool cannot grow (for TPU pools GKE does not promise "
        "at once); it shrinks when its pods end",
    )
    lost = (
        "GKE recreates the whole slice (one preempted VM takes the group)" if q.hosts > 1 else "GKE replaces the node"
    )
    preempted = spot_step(
        "a spot node is preempted",
        None,
        f"30 s notice; {lost} and the pods are scheduled again when it is back: checkpoint to Cloud Storage",
    )
    return (spot, fallback, preempted)


# --- rules -----------------------------------------------------------------------------------------
def tpu_slice_shape(req: Request) -> Refusal | None:
    """GKE TPU pools here take v5e, v5p and v6e slices (ct5lp-, ct5p-, ct6e- machine types)."""
    if tpu_generation(req.shape) is not None:
        return None
    return Refusal(
        "accelerator",
        "tpu.accelerator_type",
        f"{req.shape} has no GKE TPU node pool machine type here (ct5lp-, ct5p- and ct6e- only)",
        "use a v5litepod-, v5p- or v6e- type, or the tpu-vm platform",
    )


SIZED_AS = {Platform.GKE_GPU: Platform.GCP_GPU, Platform.GKE_TPU: Platform.TPU_VM}
"""The VM platform whose shapes, prices and zones a GKE pool's nodes are."""

KUBE_OPTIONS = {
    "cluster": "a Kubernetes cluster to attach the node pool to",
    "flexStart": "GKE flex-start (Dynamic Workload Scheduler) node pools",
    "deployWorkload": "the workload manifest applied to the cluster",
    "privateEndpoint": "a created cluster's control plane on its private address only",
    "controlPlaneSourceRanges": "the CIDR ranges a created cluster's Kubernetes API admits",
    "controlPlaneOpenToInternet": "a created cluster's Kubernetes API open to the whole internet",
}
"""The stack keys of the node-pool platforms; which way in (created, attached) takes each is
``fullserver.kube.access``."""
GKE_OPTIONS = {**KUBE_OPTIONS, "clusterLocation": "an existing GKE cluster's region or zone"}
"""GKE's own: a cluster lives in a region or in one zone (an EKS cluster in its region)."""


IDENTITY_LACKED = "applies only to eks-gpu; GKE pods get Google credentials through Workload Identity"
SUBNETS_LACKED = "applies only to eks-gpu; a GKE pool's nodes are in its cluster's subnetwork"
PROVISIONER_LACKED = "applies only to eks-gpu; GKE's own autoscaler grows its pools, ordered by a ComputeClass"

_PRICING = frozenset({PricingModel.SPOT_WITH_FALLBACK, PricingModel.ON_DEMAND, PricingModel.RESERVED})

POOLS_SCALE_TO_ZERO = (
    "node pools scale to zero when their pods end (the autoscaler removes empty nodes): no idle agent is needed;"
    f" a finished training Job is removed {JOB_TTL_HOURS} h after it ends"
)
"""Why a node pool runs no idle agent (``PlatformRules.autostop``): GKE's and EKS's alike."""


def pools_stop(_spec: object) -> str:
    return POOLS_SCALE_TO_ZERO


GPU_RULES = PlatformRules(
    platform=Platform.GKE_GPU,
    short="gke-gpu",
    components="components.gke",
    order=50,
    core="fullserver.kube",
    policy_reader="policy.kube_nodes",
    provider="gcp",
    accelerator_kinds=frozenset({AcceleratorKind.GPU}),
    pricing=_PRICING,
    options={**GKE_OPTIONS, **GPU_SERVING},  # serving: a LoadBalancer Service (fullserver.kube.serve)
    lacks={"clusterIdentity": IDENTITY_LACKED, "subnets": SUBNETS_LACKED, "nodeProvisioner": PROVISIONER_LACKED},
    compact_placement=True,  # a COMPACT placement policy on the pool
    network=GKE_NETWORK,
    disk_kinds=gcp.DISKS,
    family_disk_kinds=(gcp.HYPERDISK_ONLY,),
    default_disk_kind="pd-balanced",
    default_boot_disk_gib=100.0,  # GKE's default node boot disk
    local_ssd_gib=gcp.LOCAL_SSD_GIB,
    local_ssd_price_kind="local-ssd",
    project=gcp.PROJECT,
    zone_form=gcp.ZONES,
    zone_from_catalog=True,
    region_peers=gcp.REGION_PEERS,
    rules=(flex_not_spot, gcp.data_disk_kind),
    quotas=gcp_quota.quotas,  # a GKE node is a Compute Engine VM: the GPU VM's quotas, pool by pool
    autostop=pools_stop,
)

TPU_RULES = PlatformRules(
    platform=Platform.GKE_TPU,
    short="gke-tpu",
    components="components.gke",
    order=60,
    core="fullserver.kube",
    policy_reader="policy.kube_nodes",
    provider="gcp",
    accelerator_kinds=frozenset({AcceleratorKind.TPU}),
    pricing=_PRICING,
    options=GKE_OPTIONS,
    lacks={"clusterIdentity": IDENTITY_LACKED, "subnets": SUBNETS_LACKED, "nodeProvisioner": PROVISIONER_LACKED},
    supply=SLICES,
    compact_placement=True,
    disk_kinds=gcp.DISKS,
    family_disk_kinds=(tpu.HYPERDISK_ONLY,),
    default_disk_kind="pd-balanced",
    default_boot_disk_gib=100.0,
    project=gcp.PROJECT,
    zone_form=gcp.ZONES,
    zone_from_catalog=True,
    region_peers=gcp.REGION_PEERS,
    rules=(tpu.zone_needed, tpu_slice_shape, flex_not_spot),
    spot_steps=tpu_pool_spot_steps,
    multi_node=tpu.MULTISLICE,
    network=GKE_NETWORK,
    quotas=gke_quota.tpu_quotas,
    autostop=pools_stop,
)

PLATFORMS = (GPU_RULES, TPU_RULES)
"""What this module registers (``fullserver.platforms`` finds every module's)."""
