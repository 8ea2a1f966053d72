"""``KubePlan``, the sized node pools, as a value: what the spec carries and the kube modules read.

Apart from its builder (``fullserver.kube.pool``), so the spec and the modules reading a plan import
it without importing the builder, which reads the spec (issue 36: no import cycle through the core).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from fullserver.kube.volume import DataVolume
from fullserver.platform import Platform
from fullserver.platforms import owners, pool_member, rules_for
from fullserver.platforms.pool_rules import PoolKey
from fullserver.profiles import Stage

Provisioner = Literal["cluster-autoscaler", "karpenter"]
"""What grows an EKS cluster's accelerator nodes (``fullserver:nodeProvisioner``)."""

Identity = Literal["pod-identity", "irsa"]


class ClusterAccess(BaseModel):
    """Where the pools' cluster is and how it is reached (``KubePlan.access``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    location: str
    """The cluster's location: GKE's region or zone (``container.Cluster.location``); EKS's region."""
    private_endpoint: bool = False
    """A created cluster's control plane answers only on its private address."""
    identity: Identity = "pod-identity"
    """EKS: how pods get AWS credentials on a created cluster."""
    provisioner: Provisioner = "cluster-autoscaler"
    """EKS: what grows the accelerator nodes (``fullserver:nodeProvisioner``, ``fullserver.kube.karpenter``)."""
    subnets: list[str] = []
    """EKS, attached: the node groups' subnets (empty: the cluster's own)."""
    api_ranges: list[str] = []
    """A created cluster: the CIDR ranges its public API endpoint admits (``controlPlaneSourceRanges``)."""
    api_open: bool = False
    """A created cluster: its public API endpoint admits the whole internet (``controlPlaneOpenToInternet``)."""

    @property
    def zonal(self) -> bool:
        """A cluster in one zone (``zonal``)."""
        return zonal(self.location)


def zonal(location: str) -> bool:
    """Whether a cluster's location (``ClusterAccess.location``) is one zone, where its pools' nodes
    default to: in the zone form of the platforms whose clusters have one (``clusterLocation``: GKE's)."""
    return any(rules_for(p).region_of_zone(location) is not None for p in owners("clusterLocation"))


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Taint(Frozen):
    key: str
    value: str
    effect: Literal["NoSchedule", "NoExecute", "PreferNoSchedule"]


class Resources(Frozen):
    """CPU in millicores, memory and ephemeral storage in MiB."""

    cpu_m: int
    memory_mib: int
    ephemeral_mib: int

    @property
    def quantities(self) -> dict[str, str]:
        """As a Kubernetes resource list."""
        return {
            "cpu": f"{self.cpu_m}m",
            "memory": f"{self.memory_mib}Mi",
            "ephemeral-storage": f"{self.ephemeral_mib}Mi",
        }

    def fits_in(self, other: Resources) -> bool:
        return (
            self.cpu_m <= other.cpu_m
            and self.memory_mib <= other.memory_mib
            and self.ephemeral_mib <= other.ephemeral_mib
        )


class PodShare(Frozen):
    """What one pod requests (and is limited to): its accelerators and their share of the host."""

    accelerators: int
    resources: Resources
    devices: dict[str, str] = {}
    """Other resources the pod takes of its node, requests equal to limits: its node's EFA interfaces
    and the huge pages their driver works in (``PoolRules.fabric_pod``)."""


class Pool(Frozen):
    """One node pool / managed node group."""

    role: Literal["accelerators", "spot", "on-demand"]
    name: str
    """The physical name, valid for the provider (``fullserver.naming.fit_name``)."""
    spot: bool
    min_nodes: int
    max_nodes: int
    autoscaled: bool
    """Else fixed at ``max_nodes``."""


class KubePlan(Frozen):
    platform: Platform
    provider: PoolKey
    """The node-pool member (``PoolRules.key``): what the plan JSON carries, never compared."""
    environment: str
    profile: str
    stage: Stage
    purpose: str
    owner: str
    region: str
    zone: str | None
    cluster_name: str
    """The cluster the pools join: the one ``fullserver:cluster`` names, or the one created."""
    create_cluster: bool
    access: ClusterAccess | None = None  # the cluster's location and way in (fullserver.kube.access)
    protect: bool
    """Persistent, protected environments: the created cluster keeps deletion protection."""
    machine_type: str
    instance_types: list[str] = []
    """EKS spot pools (and a Karpenter NodePool): the balanced set's types (more capacity pools)."""
    zones: list[str] = []
    """The balanced set's zones (a Karpenter NodePool's ``topology.kubernetes.io/zone``); []: any."""
    provisioner: Provisioner = "cluster-autoscaler"
    """EKS: what grows the accelerator nodes (``fullserver:nodeProvisioner``): the Cluster Autoscaler
    over managed node groups, or Karpenter's NodePool (``fullserver.kube.karpenter``), no groups."""
    accelerator: str | None
    accelerator_type: str | None
    """GKE's guest accelerator type (GPU pools only)."""
    accelerators_per_node: int
    accelerator_resource: str
    driver: str
    """GKE: ``gpu_driver_version`` (``""`` for TPU pools, which need none); EKS: the AMI type."""
    boot_disk_gib: int
    boot_disk_kind: str
    local_ssd_count: int = 0
    """GKE: local SSDs as the node's ephemeral storage (``ephemeral_storage_local_ssd_config``)."""
    instance_store_raid0: bool = False
    """EKS: the instance store as one RAID0 array for kubelet and containerd (nodeadm)."""
    efa_interfaces: int = 0
    compact_placement: bool = False
    tpu_topology: str | None = None
    """Multi-host TPU slices only: the API refuses it on single-host pools."""
    tpu_accelerator_label: str | None = None
    tpu_slice_topology: str | None = None
    """The slice's topology label value (every TPU pool, single-host too)."""
    flex_start: bool = False
    """GKE flex-start without queued provisioning: pending pods get nodes (``gke.FLEX_START_MIN_VERSION``)."""
    max_run_hours: float | None = None
    deploy_workload: bool = False
    """``fullserver:deployWorkload``: the components apply the workload's manifests to the cluster."""
    data_volume: DataVolume | None = None
    """Each workload pod's data volume, the VM's data disk as a generic ephemeral volume
    (``fullserver.kube.volume``): one per pod, one pod per node."""
    max_pods: int | None = None
    kube_reserved: dict[str, str] = {}
    """EKS: pinned into the NodeConfig so allocatable is what ``node_allocatable`` says."""
    labels: dict[str, str]
    """Kubernetes node labels: profile, stage, owner, environment, lifecycle, expiry."""
    cloud_labels: dict[str, str]
    """The cloud resources' own labels/tags (the environment's labels)."""
    taints: list[Taint]
    node_selector: dict[str, str]
    """The accelerator's labels (GKE) and the environment's own label (every pool)."""
    pools: list[Pool]
    node_capacity: Resources
    node_reserved: Resources
    node_allocatable: Resources
    pod: PodShare
    pods_per_node: int = 1
    nodes_per_replica: int
    min_replicas: int = 1
    max_replicas: int = 1
    spot_label: str = ""
    """The label spot nodes carry (GKE ``cloud.google.com/gke-spot``, EKS's capacity type)."""
    spot_first: str = ""
    """How the autoscaler is told to grow the spot pool before its on-demand fallback (``fullserver.kube.fallback``)."""
    compute_class: str | None = None
    """GKE: the ComputeClass that orders the pools; they carry its label and taint, the pods select it."""
    warnings: list[str] = []
    """What the pools build beyond the plan (a fixed pool without a zone), the VM platform's gaps and
    what an attached cluster must run. The profile's balance is the node's shape, judged by sizing
    (``fullserver.sizing.rank.assess``): what kubelet keeps of a node is not the workload's loss."""

    @property
    def node_labels(self) -> dict[str, str]:
        """The pools' Kubernetes node labels: the plan's, and the data volume each pod there gets
        (``DataVolume.node_labels``: its size, which the balance policy counts as the node's attached
        storage, and its kind, IOPS and throughput, by which the budget policy prices it)."""
        how = pool_member(self.provider).spot_first
        bound = {how.class_label: self.compute_class} if how is not None and self.compute_class else {}
        if self.data_volume is None:
            return {**self.labels, **bound}
        return {**self.labels, **self.data_volume.node_labels(), **bound}

    @property
    def min_nodes(self) -> int:
        return sum(p.min_nodes for p in self.pools)

    @property
    def max_nodes(self) -> int:
        return sum(p.max_nodes for p in self.pools)
