"""Kubernetes accelerator node pools from a stack's resources: GKE node pools
(``gcp:container/nodePool:NodePool``) and EKS managed node groups (``aws:eks/nodeGroup:NodeGroup``),
read like the VM readers (``policy.gcp_nodes``, ``policy.aws_nodes``): a pool's nodes are the VMs
of the platform it is sized as, so its machine type is looked up among that platform's offers.

Design notes: docs/design/policy.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from pulumi_policy import PolicyResource

from fullserver.catalog import Offer
from fullserver.kube.pool import DATA_VOLUME_LABEL
from fullserver.kube.volume import LABEL_IOPS, LABEL_KIND, LABEL_MBPS
from fullserver.platform import Platform
from fullserver.platforms.gcp import DEFAULT_BOOT_DISK_GIB, LOCAL_SSD_GIB
from fullserver.platforms.gke import REGIONAL_DEFAULT_ZONES
from policy.aws_nodes import aws_region, launch_template_disks, launch_template_of
from policy.gcp_nodes import gcp_offer, gcp_shape
from policy.labels import labels_of
from policy.nodes import Disk, DiskReader, Node, NodeReader, TemplateOf, zone_region
from policy.offers import catalog
from policy.offers import offer as offer_of
from policy.resources import as_list, last_segment, number, plain, prop, truthy

GKE_NODE_POOL = "gcp:container/nodePool:NodePool"
EKS_NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
KARPENTER_NODE_POOL = "kubernetes:karpenter.sh/v1:NodePool"
TPU_MACHINE_PREFIXES = ("ct5lp-", "ct5p-", "ct6e-")
TPU_SLICE_PREFIXES = {"ct5lp-": "v5litepod-", "ct5p-": "v5p-", "ct6e-": "v6e-"}
"""GKE TPU machine type -> the Cloud TPU slice types of that generation (``fullserver.platforms.gke``)."""
DEFAULT_VOLUME_KIND = {"gcp": "pd-balanced", "aws": "gp3"}
"""A volume labelled with its size only: the platforms' default data disk kinds (``PlatformRules.default_disk_kind``)."""


def _tpu_slice(machine_type: str, topology: str, nodes: float) -> Offer | None:
    """The Cloud TPU slice a TPU pool's nodes make: its generation, topology and host count."""
    head = next((v for k, v in TPU_SLICE_PREFIXES.items() if machine_type.startswith(k)), None)
    for o in catalog().offers_on(Platform.TPU_VM):
        if head and o.name.startswith(head) and o.topology == topology and o.hosts == nodes:
            return o
    return None


def _data_volume_gib(node_labels: object) -> float:
    """The data volume each pod on the pool's nodes mounts (``DATA_VOLUME_LABEL``; 0 without one)."""
    return number(prop(node_labels, DATA_VOLUME_LABEL)) or 0.0


def _data_volume(node_labels: object, provider: str, per_node: float = 1.0) -> list[Disk]:
    """The pods' data volume as a disk each node carries (none without ``DATA_VOLUME_LABEL``)."""
    gib = _data_volume_gib(node_labels)
    if not gib:
        return []
    kind = str(plain(prop(node_labels, LABEL_KIND)) or DEFAULT_VOLUME_KIND[provider])
    iops = number(prop(node_labels, LABEL_IOPS)) or 0.0
    mbps = number(prop(node_labels, LABEL_MBPS)) or 0.0
    return [Disk(provider, kind, gib, iops, mbps, count=per_node)]


def _zones(location: str, node_locations: object) -> int:
    """The zones a GKE pool's per-zone counts apply in: its ``nodeLocations``, else one for a zonal
    location, else a regional cluster's default (``REGIONAL_DEFAULT_ZONES``)."""
    listed = as_list(node_locations)
    if listed:
        return len(listed)
    return 1 if zone_region(location, Platform.GCP_GPU) else REGIONAL_DEFAULT_ZONES


def _ceiling(autoscaling: object, fixed: object, zones: int = 1) -> float:
    """The pool's most nodes in all: ``totalMaxNodeCount`` as it is; ``maxNodeCount`` and a fixed
    ``nodeCount`` are per zone ("the number of nodes to create in each location"), so times ``zones``."""
    total = number(prop(autoscaling, "totalMaxNodeCount"))
    per_zone = number(prop(autoscaling, "maxNodeCount"))
    if per_zone:
        return per_zone * zones
    if total is not None:
        return total
    return (number(fixed) or 1.0) * zones


def gke_pool_node(r: PolicyResource) -> Node:
    """A GKE node pool as its nodes: machine type, GPUs, local SSDs, spot, labels, count."""
    p = r.props
    config = p.get("nodeConfig") or {}
    machine_type = str(plain(prop(config, "machineType")) or "")
    accelerators = as_list(prop(config, "guestAccelerators"))
    tpu = machine_type.startswith(TPU_MACHINE_PREFIXES)
    location = last_segment(p.get("location"))
    count = _ceiling(p.get("autoscaling"), p.get("nodeCount"), _zones(location, p.get("nodeLocations")))
    topology = str(plain(prop(p.get("placementPolicy"), "tpuTopology")) or "")
    hosts = 1.0
    if tpu:  # a multi-host slice: one slice offer, priced whole
        offer = _tpu_slice(machine_type, topology, count)
        hosts, count = (count, 1.0) if offer is not None else (1.0, count)
    else:
        offer = offer_of(Platform.GCP_GPU, machine_type) or gcp_offer(machine_type, accelerators)
    local = (number(prop(config, "ephemeralStorageLocalSsdConfig", "localSsdCount")) or 0.0) * LOCAL_SSD_GIB
    disks = [  # every host's boot disk, a TPU slice's too
        Disk(
            "gcp",
            str(plain(prop(config, "diskType")) or "pd-balanced"),
            number(prop(config, "diskSizeGb")) or DEFAULT_BOOT_DISK_GIB,
            count=hosts,
        )
    ]
    if local:
        disks.append(Disk("gcp", "local-ssd", local))
    disks += _data_volume(prop(config, "labels"), "gcp", hosts)
    platform = Platform.TPU_VM if tpu else Platform.GCP_GPU
    node = Node(
        r,
        platform,
        machine_type if tpu else (offer.name if offer is not None else gcp_shape(machine_type, accelerators)),
        offer,
        zone_region(location, platform) or location or None,
        labels_of({"labels": prop(config, "resourceLabels")}),
        count=count,
        local_nvme_gib=local if local else None,
        attached_gib=_data_volume_gib(prop(config, "labels")),
        disks=disks,
        why_unpriced="a GKE TPU pool that is no whole catalog slice" if tpu and offer is None else "",
    )
    node.spot_count = count if truthy(prop(config, "spot")) else 0.0
    return node


def eks_group_node(r: PolicyResource, region: str | None, template: PolicyResource | None = None) -> Node:
    """An EKS managed node group as its nodes: the (first) instance type, capacity type, tags, count,
    and each node's root volume: ``diskSize``, else its launch template's (``template``: the
    components size it there, as a group with a launch template may not set ``diskSize``)."""
    p = r.props
    types = [str(plain(t)) for t in as_list(p.get("instanceTypes"))]
    offer = offer_of(Platform.AWS_GPU, types[0]) if types else None
    count = number(prop(p.get("scalingConfig"), "maxSize")) or 1.0
    disk = number(p.get("diskSize"))
    root = [Disk("aws", "gp3", disk)] if disk else launch_template_disks(template)[0]
    node = Node(
        r,
        Platform.AWS_GPU,
        offer.name if offer is not None else (types[0] if types else "no instanceTypes"),
        offer,
        region,
        labels_of(p),
        count=count,
        attached_gib=_data_volume_gib(p.get("labels")),
        disks=root + _data_volume(p.get("labels"), "aws"),  # and the pods' volumes
    )
    node.spot_count = count if str(plain(p.get("capacityType")) or "").upper() == "SPOT" else 0.0
    return node


def karpenter_node(r: PolicyResource, region: str | None) -> Node:
    """A Karpenter NodePool as the nodes it may launch: its first allowed instance type (the set's
    chosen shape, ``fullserver.kube.karpenter.requirements``), ``limits.nodes`` of them, spot when
    ``karpenter.sh/capacity-type`` allows it, and its template's labels."""
    spec = r.props.get("spec") or {}
    template = prop(spec, "template") or {}
    wanted = {
        str(plain(prop(q, "key"))): as_list(prop(q, "values")) for q in as_list(prop(template, "spec", "requirements"))
    }
    types = [str(plain(t)) for t in wanted.get("node.kubernetes.io/instance-type", [])]
    offer = offer_of(Platform.AWS_GPU, types[0]) if types else None
    count = number(prop(spec, "limits", "nodes")) or 1.0
    labels = prop(template, "metadata", "labels")
    node = Node(
        r,
        Platform.AWS_GPU,
        offer.name if offer is not None else (types[0] if types else "no instance-type requirement"),
        offer,
        region,
        labels_of({"labels": labels}),
        count=count,
        attached_gib=_data_volume_gib(labels),
        disks=_data_volume(labels, "aws"),
    )
    spot = "spot" in [str(plain(v)) for v in wanted.get("karpenter.sh/capacity-type", [])]
    node.spot_count = count if spot else 0.0
    return node


def _karpenter(r: PolicyResource, resources: Sequence[PolicyResource], used_templates: set[str]) -> list[Node]:
    """The NodePool's region: its stack's AWS resources' (a Kubernetes object names none)."""
    region = next((found for x in resources if x.resource_type.startswith("aws:") and (found := aws_region(x))), None)
    return [karpenter_node(r, region)]


def _pool(r: PolicyResource, resources: Sequence[PolicyResource], used_templates: set[str]) -> list[Node]:
    return [gke_pool_node(r)]


def _group(r: PolicyResource, resources: Sequence[PolicyResource], used_templates: set[str]) -> list[Node]:
    return [eks_group_node(r, aws_region(r), launch_template_of(r, resources))]


NODE_READERS: dict[str, NodeReader] = {GKE_NODE_POOL: _pool, EKS_NODE_GROUP: _group, KARPENTER_NODE_POOL: _karpenter}
"""GKE node pools, EKS managed node groups and Karpenter NodePools (``policy.stack_nodes``)."""
LAUNCHERS: dict[str, TemplateOf] = {EKS_NODE_GROUP: launch_template_of}
"""A node group's launch template is read with it (its root volume: ``eks_group_node``), not as a node."""
DISK_READERS: dict[str, DiskReader] = {}
