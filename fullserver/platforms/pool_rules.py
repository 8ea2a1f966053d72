"""What every member of the Kubernetes node-pool family answers: ``PoolRules``.

Design notes: docs/design/platforms.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from fullserver.platform import Platform
from fullserver.platforms.base import Refusal
from fullserver.platforms.gke_reserved import Allocatable, NodeResources

if TYPE_CHECKING:  # TLS and the serving spec are the core's, read through Protocols
    from fullserver.platforms.reads import EndpointReads, TlsReads

__all__ = [
    "Allocatable",
    "ClassMember",
    "EndpointRecords",
    "FabricPod",
    "GpuNodes",
    "NodeResources",
    "PoolKey",
    "PoolNodes",
    "PoolRules",
    "SpotFirst",
    "Taint",
]

PoolKey = Literal["gke", "eks"]
"""A member's key: ``KubePlan.provider`` and ``DataVolume.provider`` in the plan JSON."""

Taint = tuple[str, str, str]
"""(key, value, effect), as Kubernetes writes a taint."""


@dataclass(frozen=True)
class GpuNodes:
    """How a member's GPU pool runs its machine's GPUs (``PoolRules.gpu_nodes``)."""

    driver: str
    """What installs the driver: GKE's ``gpu_driver_version``, EKS's AMI type."""
    resource: str
    """The extended resource a pod requests (``nvidia.com/gpu``)."""
    taint: Taint
    accelerator_type: str | None = None
    """The pool's guest accelerator type, where the member names the GPUs apart from the machine."""
    node_selector: Mapping[str, str] = field(default_factory=dict)
    """The labels that pick the accelerator's nodes (none: the environment's own label does)."""
    max_pods: int | None = None
    """The pods per node the member pins (``None``: the member's default), never above what the
    node's pod network addresses (``pinned_pods``)."""


def pinned_pods(pin: int, pods: int | None) -> int:
    """The pods per node a member pins: its own ``pin``, never above the ``pods`` the node's pod
    network addresses (the catalog's figure, e.g. the VPC CNI's ENI-limited one; ``None``: unknown),
    for a pod past that never gets an address and stays in ContainerCreating."""
    return pin if pods is None else min(pin, pods)


@dataclass(frozen=True)
class PoolNodes:
    """What a pool's nodes are: the machine, its accelerators, the driver path, taint, selectors."""

    machine_type: str
    per_node: int
    resource: str
    hosts: int
    taint: Taint
    node_selector: Mapping[str, str]
    driver: str
    accelerator_type: str | None = None
    tpu_topology: str | None = None
    """A multi-host slice's topology (the API refuses it on single-host pools)."""
    tpu_label: str | None = None
    slice_topology: str | None = None
    """A TPU slice's topology label value (every TPU pool, single-host too): set on TPU pools only."""
    compact: bool = False
    max_pods: int | None = None

    @property
    def tpu(self) -> bool:
        return self.slice_topology is not None


@dataclass(frozen=True)
class FabricPod:
    """What a pod takes of a node's scale-out fabric (EKS's EFA interfaces): the device plugin's
    resource, one per interface, and the huge pages the fabric's driver works in, which the node
    pre-allocates and kubelet takes off its allocatable memory (Kubernetes HugePages KEP:
    "Pre-allocated huge pages reduce the amount of allocatable memory on a node")."""

    resource: str
    hugepages_resource: str
    pod_hugepages: str
    """What each pod requests (a Kubernetes quantity)."""
    preallocated_mib: float
    """What the node pre-allocates, off its allocatable memory."""
    attached_needs: str
    """What an attached cluster must already run for pods to get the interfaces."""


@dataclass(frozen=True)
class ClassMember:
    """One step of the fallback a cluster's autoscaler is handed: a machine (its types, its GPU type
    and count), spot or on-demand, and the pool or node group the stack builds for it (``None``: a
    shape of the balanced set with no pool, which only a member that creates pools itself can take:
    GKE's node pool auto-creation)."""

    machine_types: tuple[str, ...]
    spot: bool
    pool: str | None = None
    gpu_type: str | None = None
    gpu_count: int = 0

    @property
    def label(self) -> str:
        kind = "spot" if self.spot else "on-demand"
        where = f"{self.pool}: " if self.pool else ""
        return f"{where}{kind} {', '.join(self.machine_types)}"


def capacity_order(members: Sequence[ClassMember]) -> list[ClassMember]:
    """The order the cost model ranks capacity in, which every member's autoscaler is told: the
    spot members first (the profile's spot share is priced on them), each in the order given (the
    set's cost order), then the on-demand fallback the stack builds, then the rest of the set
    on-demand. One rule for GKE's ComputeClass priorities and EKS's expander priorities."""
    spot = [m for m in members if m.spot]
    built = [m for m in members if not m.spot and m.pool is not None]
    rest = [m for m in members if not m.spot and m.pool is None]
    return [*spot, *built, *rest]


@dataclass(frozen=True)
class SpotFirst:
    """How a member's autoscaler is told to grow the spot pool before its on-demand fallback, so
    the profile's spot share (``cost.spot_share``) is what the plan prices and the cluster does.
    Every callable takes the members in ``capacity_order``."""

    line: Callable[[Sequence[ClassMember]], str]
    """The members -> the plan's line: what the cloud tries, in order, on a stockout, and what enforces it."""
    attached_needs: Callable[[Sequence[ClassMember]], str] | None = None
    """The members -> what an attached cluster must run for the order to hold."""
    class_label: str = ""
    """The node label (and ``NoSchedule`` taint key) that binds the pools to a compute class,
    which the pods select: GKE's custom ComputeClass; "" where the member has none."""
    compute_class: Callable[[str, Sequence[ClassMember], dict[str, str]], dict[str, Any]] | None = None
    """(class name, members, labels) -> the compute class object the workload's manifests start with."""


def _no_gaps(platform: Platform, machine_type: str, nodes: int) -> list[str]:
    return []


@dataclass(frozen=True)
class TlsFront:
    """How a member terminates TLS in front of the pods where its LoadBalancer Service cannot (GKE's
    passthrough NLB): the objects in front, and what becomes of the Service behind them."""

    objects: Callable[[str, str, dict[str, str], EndpointReads, list[str]], list[dict[str, Any]]]
    """(environment, Service name, labels, endpoint, domains) -> the objects in front of the Service."""
    service: Callable[[dict[str, Any], dict[str, str]], tuple[dict[str, Any], dict[str, str]]]
    """(the Service's spec, its annotations) -> the same behind the front (no load balancer of its own)."""
    attached_needs: str
    """What an attached cluster must have for the objects in front (the plan's warning)."""


@dataclass(frozen=True)
class EndpointRecords:
    """Where a member's controller records the load balancer's endpoint groups it made for a Service
    (GKE's NEG controller: a ``ServiceNetworkEndpointGroup``), each kept by a finalizer until the
    cloud's groups are deleted. Destroy waits for them before the cluster goes (``components.kube_negs``):
    a group left behind blocks the subnet's deletion."""

    group: str
    version: str
    plural: str
    service_label: str
    """The label naming the Service a record belongs to."""
    delete: Callable[[str], str]
    """(a group's self link) -> the command that deletes it, for a person when destroy could not wait."""


@dataclass(frozen=True, kw_only=True)
class PoolRules:
    """Everything the node-pool core asks one member (module doc)."""

    key: PoolKey
    sized_as: Mapping[Platform, Platform]
    """Each of the member's platforms -> the VM platform its nodes are sized as."""
    # --- names and labels
    cluster_type: str
    """The cluster's resource type token (its physical name rule, ``fullserver.naming``)."""
    pool_type: str
    pool_name_field: str
    """The pool's resource type token and the field that carries its physical name."""
    spot_label: str
    spot_value: str
    """The label spot nodes carry and its value on them (pods prefer such nodes)."""
    # --- the nodes
    gpu_nodes: Callable[[str, str | None], GpuNodes | Refusal]
    """(machine type, accelerator) -> how the member's GPU pool runs them, or why it cannot."""
    allocatable: Callable[[int, float, int, float, float, int | None], Allocatable]
    """(vCPUs, memory GiB, local disks that hold ephemeral storage, GiB each, boot disk GiB, pods the
    node's pod network addresses or ``None``) -> the node's capacity and what kubelet and the system
    keep of it: the member's formulas."""
    tpu_nodes: Callable[[str, int, int, str], PoolNodes | Refusal] | None = None
    """(TPU type, chips, hosts, topology) -> a slice's pool, or why not; ``None``: no TPU pools."""
    local_ssd_ephemeral: frozenset[Platform] = frozenset()
    """The member's platforms whose nodes keep ephemeral storage on their local SSDs
    (``KubePlan.local_ssd_count``); elsewhere it is the boot disk, or the instance store below."""
    instance_store_raid0: bool = False
    """The node's instance store is one RAID0 array for kubelet and containerd (EKS's nodeadm
    ``localStorage``), and its ephemeral storage."""
    efa: bool = False
    """The nodes get the spec's EFA interfaces (an EKS launch template's network interfaces); a
    member without them says so in ``vm_gaps``."""
    fabric_pod: FabricPod | None = None
    """What each pod requests of those interfaces (with ``efa``)."""
    spot_first: SpotFirst | None = None
    """How the autoscaler is told to try the spot pool first (``None``: the member has no fallback pool)."""
    spot_alternatives: bool = False
    """A spot pool also runs the spec's balanced alternative shapes (an EKS managed node group
    takes several instance types: more spot capacity pools)."""
    kube_reserved: Callable[[int, int | None], dict[str, str]] | None = None
    """(vCPUs, pods the node's pod network addresses) -> the kubelet reservation pinned into the
    node's config, so allocatable is what ``allocatable`` says (EKS's nodeadm); ``None``: the
    member's own is already known."""
    vm_gaps: Callable[[Platform, str, int], list[str]] = _no_gaps
    """(platform, machine type, nodes) -> what the pool's nodes lack that the VM platform's get."""
    fixed_nodes: Callable[[int, int | None], int] | None = None
    """(nodes, zones or ``None`` for the regional default) -> the nodes a fixed pool builds, where
    a count is per zone (GKE's ``node_count``); ``None``: a fixed pool builds its count."""
    unzoned_fixed: Callable[[str, int, int], str] | None = None
    """(the pool's name, or "" for the plan's line, nodes built, nodes planned) -> the warning of a
    fixed pool without a zone that builds more than planned (with ``fixed_nodes``)."""
    flex_start_warnings: Callable[[int, bool, bool, bool], list[str]] | None = None
    """(nodes, TPU, attached, compact) -> a flex-start pool's caveats; ``None``: no flex-start."""
    # --- the cluster
    system_pool: Callable[[str | None], tuple[str, int]]
    """The pool's zone -> a created cluster's untainted system pool: machine type and nodes in all."""
    system_disk: tuple[str, int]
    """Each system node's boot disk as the component builds it: (disk kind, GiB)."""
    fee_note: str
    """What the cluster fee rests on (``{usd_hour}``, ``{free_tier}``, ``{applies_to}``)."""
    credentials_hint: Callable[[str, str, str, str | None, bool], str]
    """(cluster, location, region, project, through the DNS endpoint) -> the command that writes
    the cluster's kubeconfig."""
    connect: Callable[[str, str, str, str, bool], str]
    """(cluster, location, region, project, through the DNS endpoint) -> the command itself (the
    component's ``connect`` export)."""
    api_ranges_max: int
    """The most CIDR ranges a created cluster's public API endpoint admits (``controlPlaneSourceRanges``)."""
    api_without_ranges: str
    """Who reaches a created cluster's API when the stack lists no ranges (the plan's line)."""
    dns_endpoint: bool = False
    """A created cluster without ranges keeps an IAM-guarded DNS endpoint that answers from any
    network (GKE's), and the kubeconfig points there; without it (EKS) the API is private only."""
    applied_through_api: tuple[str, ...] = ()
    """What ``pulumi up`` applies through a created cluster's API server besides the workload."""
    attached_needs: tuple[str, ...] = ()
    """What an attached cluster must already run for any of the pools' pods (one line each)."""
    attached_volume_needs: str = ""
    """... and for the pods' data volumes (the CSI driver)."""
    attached_autoscaler: str = ""
    """... for pools with a range to grow in ("": the cloud scales pools itself)."""
    attached_load_balancer: str = ""
    """... for the serving LoadBalancer Service ("": the cloud's own controller serves it)."""
    attached_metrics_server: str = ""
    """... for the serving HPA's CPU metric ("": every cluster of the member has it)."""
    # --- the pods' data volume
    volume_provisioner: str
    volume_parameters: Callable[[str, int | None, int | None], dict[str, str]]
    """(disk kind, IOPS, MB/s) -> the StorageClass parameters (strings, as Kubernetes takes them)."""
    delete_volume: Callable[[str, str], str]
    """(a PersistentVolume's ``volumeHandle``, the region) -> the command that deletes that disk, for
    a person when destroy could not wait it out (``components.kube_volumes``)."""
    endpoint_records: EndpointRecords | None = None
    """Where the member records a Service's endpoint groups (``None``: it makes none that outlive the
    Service's own deletion)."""
    # --- serving
    service_annotations: Callable[[str, str, TlsReads | None, int, int], dict[str, str]]
    """(scheme, health path, TLS, request timeout s, port) -> the LoadBalancer Service's annotations."""
    pod_metric: str
    """vLLM's queue-size gauge as the member's custom-metrics adapter names it."""
    pod_metrics_install: str
    """What a cluster needs to serve that metric (the plan's advice without ``podMetrics``)."""
    read_secret: Callable[[str, str], list[str]]
    """(region, secret) -> the command that prints a cloud secret's value with the caller's credentials."""
    service_spec: Mapping[str, str] = field(default_factory=dict)
    """Fields the LoadBalancer Service's ``spec`` adds on the member."""
    pod_monitoring: Callable[[str, dict[str, str], dict[str, str], str], dict[str, Any]] | None = None
    """(name, labels, selector, port) -> the object that scrapes the pods' metric, where the
    manifests carry it; ``None``: the cluster's own Prometheus scrapes the pods' annotations."""
    tls_front: TlsFront | None = None
    """With TLS, the objects that terminate it in front of a ``ClusterIP`` Service (GKE's Gateway);
    ``None``: the LoadBalancer Service's own listener does (``service_annotations``, EKS)."""
