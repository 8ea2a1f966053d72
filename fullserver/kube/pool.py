"""``KubePlan``: a sized ``EnvironmentSpec`` as Kubernetes node pools on GKE or EKS.

The spec is the VM platform's (``SIZED_AS``): its machine shape, accelerators, zone, local NVMe,
EFA and placement are what the pool's nodes get; nothing is re-sized here. What Kubernetes adds:
see the design notes.

Design notes: docs/design/kubernetes.md.
"""

from __future__ import annotations

import hashlib
import math
import re
from typing import TYPE_CHECKING, Any, NamedTuple

from fullserver.errors import InputError
from fullserver.kube import karpenter
from fullserver.kube.attached import attached_warnings
from fullserver.kube.fabric import fabric_reserved, pod_devices
from fullserver.kube.fallback import SpotFirstPlan, spot_first
from fullserver.kube.model import ClusterAccess, PodShare, Pool, Resources, Taint
from fullserver.kube.model import KubePlan as KubePlan  # re-exported: where callers look
from fullserver.kube.volume import LABEL_GIB, DataVolume
from fullserver.naming import fit_name
from fullserver.platform import Platform, PricingModel
from fullserver.platforms import pool_member, pool_member_of, pool_members, rules_for
from fullserver.platforms.base import Refusal, Request
from fullserver.platforms.kubernetes import STORAGE_CLASS_TYPE
from fullserver.platforms.pool_rules import Allocatable, NodeResources, PoolKey, PoolNodes, PoolRules, pinned_pods
from fullserver.rules import LABEL_ENVIRONMENT

if TYPE_CHECKING:  # the spec carries a KubePlan (``EnvironmentSpec.kube``)
    from fullserver.catalog import Catalog
    from fullserver.spec import EnvironmentSpec


DAEMONSET_ALLOWANCE = NodeResources(cpu_m=500, memory_mib=1024.0, ephemeral_mib=0.0)
"""Room left on every node for the DaemonSets the platform runs there (device plugin, logging,
metadata server, CNI, kube-proxy): fullserver's margin, not a sourced figure; the sized rule is
request = (allocatable - DaemonSet requests) x g / G (reference, section 4)."""

DATA_VOLUME_LABEL = LABEL_GIB
"""A node label on pools whose pods get a data volume: its size in GiB (``KubePlan.node_labels``)."""

_LABEL_VALUE_BAD = re.compile(r"[^A-Za-z0-9._-]+")
LABEL_VALUE_MAX = 63


def label_value(text: str) -> str:
    """A Kubernetes label value: at most 63 of ``[A-Za-z0-9._-]``, alphanumeric at both ends
    (Kubernetes "Labels and Selectors"). A longer text is cut and ends in a digest of the whole,
    so two environments sharing their first 63 characters keep their own nodes apart."""
    value = _LABEL_VALUE_BAD.sub("-", text).strip("._-")
    if len(value) > LABEL_VALUE_MAX:
        digest = hashlib.sha256(text.encode()).hexdigest()[:6]
        value = f"{value[: LABEL_VALUE_MAX - 7].rstrip('._-')}-{digest}"
    return value


SIZED_AS: dict[Platform, Platform] = {p: vm for r in pool_members() for p, vm in r.sized_as.items()}
"""Each node-pool platform -> the VM platform its nodes are sized as (its member's ``sized_as``)."""


def _sized_as(platform: Platform) -> Platform:
    return SIZED_AS[platform]


def _counts(spec: EnvironmentSpec, hosts: int, flex: bool) -> tuple[int, int, bool]:
    """(floor, ceiling, autoscaled) of the accelerator nodes, from the profile's shape of demand."""
    if spec.serving is not None:
        return spec.serving.min_replicas * hosts, spec.serving.max_replicas * hosts, True
    if flex or spec.lifecycle.mode == "ephemeral":
        return 0, hosts, True  # elastic: nodes exist while a Job wants them
    return hosts, hosts, False


def _pool_name(environment: str, role: str, rules: PoolRules) -> str:
    return fit_name(rules.pool_type, f"{environment}-{role}", rules.pool_name_field)


def cluster_name(environment: str, provider: str) -> str:
    """The physical name of a cluster the member ``provider`` creates for ``environment``."""
    return fit_name(pool_member(provider).cluster_type, environment)


def _resources(node: NodeResources) -> Resources:
    return Resources(
        cpu_m=math.floor(node.cpu_m),
        memory_mib=math.floor(node.memory_mib),
        ephemeral_mib=math.floor(node.ephemeral_mib),
    )


def _refused(refusal: Refusal) -> InputError:
    return InputError(f"fullserver:{refusal.key}", refusal.what, refusal.hint)


def _refuse(spec: EnvironmentSpec, platform: Platform, flex_start: bool) -> PoolRules:
    """The pool's member, once the spec and options are ones the platform takes."""
    where = "fullserver:platform"
    rules = pool_member_of(platform)
    if rules is None:
        raise InputError(where, f"{platform.value} is not a Kubernetes node-pool platform")
    if spec.platform is not _sized_as(platform):
        raise InputError(
            where,
            f"{platform.value} pools are sized as {_sized_as(platform).value}, not {spec.platform.value}",
            "plan the workload for the VM platform first",
        )
    if flex_start and rules.flex_start_warnings is None:
        raise InputError("fullserver:flexStart", "flex-start is GKE's (Dynamic Workload Scheduler)", "remove it")
    refusal = rules_for(platform).refusal(
        Request(
            shape=spec.tpu.accelerator_type if spec.tpu else spec.machine_type,
            hosts=spec.tpu.hosts if spec.tpu else 1,
            spot=spec.pricing is PricingModel.SPOT_WITH_FALLBACK or spec.spot,
            reservation=spec.reservation,
            zone=spec.zone,
            queued=flex_start,
            queued_asked=flex_start,
        )
    )
    if refusal is not None:
        raise _refused(refusal)
    return rules


def _nodes(spec: EnvironmentSpec, rules: PoolRules) -> PoolNodes:
    """A TPU slice's pool (the member's ``tpu_nodes``), or a GPU pool: the sized machine run as the
    member runs its GPUs (``gpu_nodes``: GKE's driver, EKS's NVIDIA AMI)."""
    if spec.tpu is not None:  # sized as a TPU VM: only a member with TPU pools (_refuse)
        assert rules.tpu_nodes is not None
        tpu = spec.tpu
        found = rules.tpu_nodes(tpu.accelerator_type, spec.accelerator_count * tpu.hosts, tpu.hosts, tpu.topology)
        if isinstance(found, Refusal):
            raise _refused(found)
        return found
    gpu = rules.gpu_nodes(spec.machine_type, spec.accelerator)
    if isinstance(gpu, Refusal):
        raise _refused(gpu)
    return PoolNodes(
        machine_type=spec.machine_type,
        per_node=spec.accelerator_count,
        resource=gpu.resource,
        hosts=spec.nodes,
        taint=gpu.taint,
        node_selector=dict(gpu.node_selector),
        driver=gpu.driver,
        accelerator_type=gpu.accelerator_type,
        compact=spec.network.compact_placement,
        max_pods=gpu.max_pods,
    )


def _pools(spec: EnvironmentSpec, rules: PoolRules, hosts: int, flex_start: bool) -> list[Pool]:
    """Spot with an on-demand fallback pool, or one pool; elastic from zero, serving's range, or fixed."""
    floor, ceiling, autoscaled = _counts(spec, hosts, flex_start)
    if rules.fixed_nodes is not None and not autoscaled:  # a count per zone: the plan holds what is built
        floor = ceiling = rules.fixed_nodes(ceiling, 1 if spec.zone else None)
    if spec.pricing is PricingModel.SPOT_WITH_FALLBACK and not flex_start:
        return [
            Pool(
                role="spot",
                name=_pool_name(spec.environment, "spot", rules),
                spot=True,
                min_nodes=floor,
                max_nodes=ceiling,
                autoscaled=True,
            ),
            Pool(
                role="on-demand",
                name=_pool_name(spec.environment, "ondemand", rules),
                spot=False,
                min_nodes=0,
                max_nodes=ceiling,
                autoscaled=True,
            ),
        ]
    return [
        Pool(
            role="accelerators",
            name=_pool_name(spec.environment, "tpu" if spec.tpu else "gpu", rules),
            spot=False,
            min_nodes=floor,
            max_nodes=ceiling,
            autoscaled=autoscaled,
        )
    ]


def node_reservations(
    platform: Platform,
    vcpus: int,
    memory_gib: float,
    local_disks: int,
    local_disk_gib: float,
    boot_disk_gib: float,
    efa_interfaces: int = 0,
    pods: int | None = None,
) -> Allocatable:
    """A node's capacity and what kubelet and the system keep of it (the member's formulas):
    ephemeral storage on the local SSDs (a GKE GPU node) or the instance-store RAID0 (an EKS node)
    where the member keeps it there, else the boot disk; with fabric interfaces, the huge pages
    their driver pre-allocates, which kubelet takes off allocatable memory (``PoolRules.fabric_pod``)."""
    rules = pool_member_of(platform)
    if rules is None:
        raise ValueError(f"{platform.value} is not a Kubernetes node-pool platform")
    local = local_disks if platform in rules.local_ssd_ephemeral or rules.instance_store_raid0 else 0
    return fabric_reserved(
        rules, rules.allocatable(vcpus, memory_gib, local, local_disk_gib, boot_disk_gib, pods), efa_interfaces
    )


def pod_share(reserved: Allocatable) -> NodeResources:
    """One pod's share of a node taking all its accelerators: allocatable less ``DAEMONSET_ALLOWANCE``."""
    return reserved.allocatable.minus(DAEMONSET_ALLOWANCE)


class NodeAsk(NamedTuple):
    """What a pool node's reservations and the workload pod's share of it depend on (``node_room``):
    the node-pool platform, the machine's size and the disks, EFA interfaces and pods sizing gives
    it, in ``node_reservations``' order. Sizing asks it of every offer a pool ranks
    (``fullserver.sizing.rank``) and a plan of the node it builds: one answer per question."""

    platform: Platform
    vcpus: int
    memory_gib: float
    local_disks: int
    local_disk_gib: float
    boot_disk_gib: float
    efa_interfaces: int
    pods: int | None


class NodeRoom(NamedTuple):
    """A node's capacity and reservations (``node_reservations``) and the workload pod's share."""

    reserved: Allocatable
    share: NodeResources


def node_room(q: NodeAsk, catalog: Catalog | None = None) -> NodeRoom:
    """The node's reservations and what is left for one pod (``pod_share``); kept once per question
    and catalog where asked through ``Catalog.answer``."""
    reserved = node_reservations(*q)
    return NodeRoom(reserved, pod_share(reserved))


def _node_resources(
    spec: EnvironmentSpec,
    platform: Platform,
    rules: PoolRules,
    nodes: PoolNodes,
    types: list[str],
    efa: int,
    catalog: Catalog | None,
) -> dict[str, Any]:
    """What a plan states of a node's resources: the pods it pins (the fewest its network addresses
    over ``types``), what kubelet and the system keep, what is left, and the workload pod's share,
    or why no pod fits."""
    pods = network_pods(spec, types)
    asked = NodeAsk(
        platform,
        spec.vcpus,
        spec.memory_gib,
        spec.local_nvme_disks,
        spec.local_nvme_disk_gib,
        spec.boot_disk_gib,
        spec.network.efa_interfaces,
        pods,
    )
    reserved, share = node_room(asked) if catalog is None else catalog.answer(node_room, asked)
    if min(share.cpu_m, share.memory_mib, share.ephemeral_mib) <= 0:
        raise InputError(
            "fullserver:accelerator",
            f"{nodes.machine_type} leaves no room for a workload pod after the node's reservations",
            "use a larger shape",
        )
    return {
        "max_pods": None if nodes.max_pods is None else pinned_pods(nodes.max_pods, pods),
        "kube_reserved": rules.kube_reserved(spec.vcpus, pods) if rules.kube_reserved is not None else {},
        "node_capacity": _resources(reserved.capacity),
        "node_reserved": _resources(reserved.reserved),
        "node_allocatable": _resources(reserved.allocatable),
        "pod": PodShare(accelerators=nodes.per_node, resources=_resources(share), devices=pod_devices(rules, efa)),
    }


def _data_volume(spec: EnvironmentSpec, provider: PoolKey) -> DataVolume | None:
    """The spec's data disk as each pod's data volume (``fullserver.kube.volume``)."""
    disk = spec.data_disk
    if disk is None:
        return None
    return DataVolume(
        provider=provider,
        # cluster-wide: named for the environment, fitted to the StorageClass's DNS-1123 subdomain
        storage_class=fit_name(STORAGE_CLASS_TYPE, f"fullserver-{spec.environment}-data", "metadata.name"),
        kind=disk.kind,
        size_gib=disk.size_gib,
        iops=disk.iops,
        throughput_mbps=disk.throughput_mbps,
    )


def _warnings(spec: EnvironmentSpec, platform: Platform, rules: PoolRules, nodes: PoolNodes) -> list[str]:
    """A fixed pool without a zone that builds more nodes than planned, and the VM platform's gaps."""
    warnings: list[str] = []
    if rules.fixed_nodes is not None and rules.unzoned_fixed is not None and spec.zone is None:
        built = rules.fixed_nodes(nodes.hosts, None)
        if not _counts(spec, nodes.hosts, False)[2] and built > nodes.hosts:
            warnings.append(rules.unzoned_fixed("", built, nodes.hosts))
    return warnings + rules.vm_gaps(platform, nodes.machine_type, spec.nodes)


def _applied_by_hand(deploy_workload: bool, serving: bool, volume: bool) -> list[str]:
    """A workload applied with kubectl is deleted with kubectl: what its controllers made (the load
    balancer, the pods' disks) outlives a destroy that takes the cluster from under it, and a load
    balancer left behind blocks the network's deletion."""
    left = [*(["its load balancer"] if serving else []), *(["its pods' data volumes"] if volume else [])]
    if deploy_workload or not left:
        return []
    return [
        "fullserver:deployWorkload is off, so the workload you apply with kubectl is deleted with kubectl "
        f"(kubectl delete -f, with the manifests of pulumi stack output workload) before pulumi destroy: "
        f"{' and '.join(left)} would outlive the cluster"
    ]


def _notes(
    rules: PoolRules, pools: list[Pool], nodes: PoolNodes, flex: bool, cluster: str | None, volume: DataVolume | None
) -> list[str]:
    """The pools' own warnings: a fixed pool without a zone that builds more nodes than planned
    (``PoolRules.fixed_nodes``), flex-start's caveats, what an attached cluster must run."""
    attached = bool(cluster)
    unzoned = rules.unzoned_fixed
    spread = (
        [unzoned(p.name, p.max_nodes, nodes.hosts) for p in pools if not p.autoscaled and p.max_nodes > nodes.hosts]
        if unzoned is not None
        else []
    )
    flex_notes = (
        rules.flex_start_warnings(nodes.hosts, nodes.tpu, attached, nodes.compact)
        if flex and rules.flex_start_warnings is not None
        else []
    )
    return [*spread, *flex_notes, *attached_warnings(rules, attached, volume)]


def _scheduling(
    spec: EnvironmentSpec,
    rules: PoolRules,
    nodes: PoolNodes,
    pools: list[Pool],
    labels: dict[str, str],
    attached: bool,
    types: list[str],
) -> tuple[list[Taint], dict[str, str], SpotFirstPlan]:
    """The pools' taints, the pods' node selector (the accelerator's labels and the environment's own,
    wherever else the cluster runs the same accelerator) and the order the autoscaler grows the pools
    in (``fullserver.kube.fallback``): where a compute class orders them, the pools carry its label and
    ``NoSchedule`` taint and the pods select it. Its notes carry what an attached cluster must run for
    the order and for the pods' fabric interfaces. ``types``: the plan's (``_instance_types``), which
    only a spot pool reads, and there is one only where they are the spot pool's."""
    gpu = nodes.accelerator_type
    machine = (nodes.machine_type, types, gpu, nodes.per_node)
    order = spot_first(rules, [(p.name, p.spot) for p in pools], machine, spec.environment, attached)
    taints = [Taint(key=nodes.taint[0], value=nodes.taint[1], effect=nodes.taint[2])]
    selector = {**nodes.node_selector, LABEL_ENVIRONMENT: labels[LABEL_ENVIRONMENT]}
    if order.compute_class is not None and rules.spot_first is not None:
        taints.append(Taint(key=rules.spot_first.class_label, value=order.compute_class, effect="NoSchedule"))
        selector[rules.spot_first.class_label] = order.compute_class
    fabric = rules.fabric_pod if attached and rules.efa and spec.network.efa_interfaces else None
    notes = [*order.attached, *([fabric.attached_needs] if fabric is not None else [])]
    return taints, selector, SpotFirstPlan(order.line, order.compute_class, notes)


def _node_labels(spec: EnvironmentSpec) -> dict[str, str]:
    """The environment's labels (profile, environment, owner, lifecycle, TTL or expiry) and its stage."""
    labels = {k: label_value(v) for k, v in spec.labels.items()}
    labels["fullserver-stage"] = label_value(spec.stage.value)
    return labels


def network_pods(spec: EnvironmentSpec, machine_types: list[str]) -> int | None:
    """The fewest pods the pod network addresses on any of ``machine_types`` (the spec's shape and
    its set, ``Offer.pods``): what a node group that may run any of them pins at most; ``None``
    where the catalog gives none of them."""
    known = {spec.machine_type: spec.shape_limits.pods if spec.shape_limits else None}
    known |= {o.machine_type: o.pods for o in spec.alternative_shapes}
    if spec.capacity is not None:
        known |= {m.machine_type: m.pods for m in spec.capacity.members}
    figures = [p for t in machine_types if (p := known.get(t)) is not None]
    return min(figures) if figures else None


def _instance_types(spec: EnvironmentSpec, rules: PoolRules, machine_type: str, every: bool = False) -> list[str]:
    """The pools' machine type, and for a spot pool of a member that takes several (or ``every``
    pool: a Karpenter NodePool's) the balanced set's types (``fullserver.capacity``), the shapes the
    plan's capacity table lists (``PoolRules.spot_alternatives``)."""
    if rules.spot_alternatives and (every or spec.pricing is PricingModel.SPOT_WITH_FALLBACK):
        if spec.capacity is not None:
            return [machine_type, *(t for t in spec.capacity.machine_types if t != machine_type)]
        return [machine_type, *(o.machine_type for o in spec.alternative_shapes)]
    return [machine_type]


def _karpenter(plan: KubePlan, spec: EnvironmentSpec, attached: bool, expander_needs: list[str]) -> KubePlan:
    """The plan under Karpenter (``fullserver:nodeProvisioner``): one NodePool over the set's types
    and zones in place of the node groups' expander line, no spot-label preference (the NodePool
    orders spot first itself), and on an attached cluster the NodePool it must already run in place
    of the Cluster Autoscaler's needs. EFA interfaces, a placement group and a reservation stay the
    node groups' (the EC2NodeClass here names none of them)."""
    if plan.efa_interfaces or plan.compact_placement or spec.reservation is not None:
        raise InputError(
            "fullserver:nodeProvisioner",
            "karpenter: fullserver's EC2NodeClass builds no EFA interfaces, placement group or capacity reservation",
            "use cluster-autoscaler (managed node groups) for this shape",
        )
    zones = spec.capacity.zones if spec.capacity is not None else []
    where = [spec.zone] if spec.zone else list(zones)
    plan = plan.model_copy(update={"provisioner": karpenter.KARPENTER, "zones": where, "spot_label": ""})
    warnings = [w for w in plan.warnings if w not in expander_needs]
    warnings += [karpenter.attached_needs(plan)] if attached else []
    return plan.model_copy(update={"spot_first": karpenter.order_line(plan), "warnings": warnings})


def kube_plan(
    spec: EnvironmentSpec,
    platform: Platform,
    *,
    cluster: str | None = None,
    flex_start: bool = False,
    max_run_hours: float | None = None,
    deploy_workload: bool = False,
    provisioner: karpenter.Provisioner = "cluster-autoscaler",
    access: ClusterAccess | None = None,
    catalog: Catalog | None = None,
) -> KubePlan:
    """The node pools of ``platform`` (``gke-gpu``, ``gke-tpu``, ``eks-gpu``) for ``spec``, which
    the core sized for the VM platform the pool's nodes are. ``cluster``: attach to that cluster
    (``fullserver:cluster``); else one is created. ``flex_start``: GKE flex-start nodes for pending
    pods, without queued provisioning (``fullserver:flexStart``; ``gke.FLEX_START_MIN_VERSION`` says
    why), at most ``max_run_hours`` per node. ``provisioner``: what grows EKS's nodes (``_karpenter``).
    ``access``: the cluster's location and way in, as the plan carries it (``fullserver.kube.access``).
    ``catalog``: where given, what rows of many stacks share (``node_room``) is kept in its memo."""
    rules = _refuse(spec, platform, flex_start)
    nodes = _nodes(spec, rules)
    labels = _node_labels(spec)
    efa = spec.network.efa_interfaces if rules.efa else 0
    types = _instance_types(spec, rules, nodes.machine_type, provisioner == karpenter.KARPENTER)
    volume = _data_volume(spec, rules.key)
    serving = spec.serving
    pools = _pools(spec, rules, nodes.hosts, flex_start)
    taints, node_selector, order = _scheduling(spec, rules, nodes, pools, labels, cluster is not None, types)
    plan = KubePlan(  # under Karpenter, turned into its NodePool's plan (_karpenter)
        platform=platform,
        provider=rules.key,
        environment=spec.environment,
        profile=spec.profile,
        stage=spec.stage,
        purpose=spec.purpose.value,
        owner=spec.owner,
        region=spec.region,
        zone=spec.zone,
        cluster_name=cluster or cluster_name(spec.environment, rules.key),
        create_cluster=cluster is None,
        access=access,
        protect=spec.lifecycle.protect,
        machine_type=nodes.machine_type,
        instance_types=types,
        accelerator=spec.accelerator,
        accelerator_type=nodes.accelerator_type,
        accelerators_per_node=nodes.per_node,
        accelerator_resource=nodes.resource,
        driver=nodes.driver,
        boot_disk_gib=spec.boot_disk_gib,
        boot_disk_kind=spec.boot_disk_kind,
        local_ssd_count=spec.local_nvme_disks if platform in rules.local_ssd_ephemeral else 0,
        instance_store_raid0=rules.instance_store_raid0 and spec.local_nvme_disks > 0,
        efa_interfaces=efa,
        compact_placement=nodes.compact and not (flex_start and not nodes.tpu),
        tpu_topology=nodes.tpu_topology,
        tpu_accelerator_label=nodes.tpu_label,
        tpu_slice_topology=nodes.slice_topology,
        flex_start=flex_start,
        max_run_hours=max_run_hours if flex_start else None,
        deploy_workload=deploy_workload,
        data_volume=volume,
        labels=labels,
        cloud_labels=dict(spec.labels),
        taints=taints,
        node_selector=node_selector,
        pools=pools,
        **_node_resources(spec, platform, rules, nodes, types, efa, catalog),
        nodes_per_replica=nodes.hosts,
        min_replicas=serving.min_replicas if serving else 1,
        max_replicas=serving.max_replicas if serving else 1,
        spot_label=rules.spot_label,
        spot_first=order.line,
        compute_class=order.compute_class,
        warnings=_warnings(spec, platform, rules, nodes)
        + _applied_by_hand(deploy_workload, serving is not None, volume is not None)
        + _notes(rules, pools, nodes, flex_start, cluster, volume)
        + order.attached,
    )
    return _karpenter(plan, spec, cluster is not None, order.attached) if provisioner == karpenter.KARPENTER else plan
