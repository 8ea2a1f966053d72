"""GCP compute nodes from a stack's resources: GPU VMs, instance templates (with the machines
their managed groups run) and TPU VMs / queued resources."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pulumi_policy import PolicyResource

from fullserver.catalog import Offer
from fullserver.platform import Platform
from fullserver.platforms.gcp import ATTACHED_GPU_TYPES, DEFAULT_BOOT_DISK_GIB, LOCAL_SSD_GIB, UNSET_DISK_KIND
from policy.labels import labels_of
from policy.nodes import Disk, DiskReader, Node, NodeReader, TemplateOf, disks_gib, referenced, zone_region
from policy.offers import offer as offer_of
from policy.resources import (
    GCP_AUTOSCALER,
    GCP_DISKS,
    GCP_INSTANCE,
    GCP_MIG,
    GCP_REGION_AUTOSCALER,
    GCP_REGION_MIG,
    GCP_TEMPLATES,
    TPU_QUEUED,
    TPU_VM,
    as_list,
    last_segment,
    number,
    plain,
    prop,
    truthy,
)


def gcp_disk(r: PolicyResource) -> Disk:
    """A standalone Compute Engine disk as the budget prices it."""
    return Disk(
        "gcp",
        last_segment(r.props.get("type") or UNSET_DISK_KIND),
        number(r.props.get("size")) or 0.0,
        number(r.props.get("provisionedIops")) or 0.0,
        number(r.props.get("provisionedThroughput")) or 0.0,
    )


def gcp_offer(machine_type: str, accelerators: list[Any]) -> Offer | None:
    """A GCP offer: the machine type itself (A2/A3/G2 bundle their GPUs), or an N1 host + N GPUs of
    a model the core attaches by that accelerator type (``fullserver.platforms.gcp.ATTACHED_GPU_TYPES``)."""
    count = sum(int(number(prop(a, "count")) or 0) for a in accelerators)
    if not count:
        return offer_of(Platform.GCP_GPU, machine_type)
    gpu_type = last_segment(prop(accelerators[0], "type")).lower()
    model = next((m for m, t in ATTACHED_GPU_TYPES.items() if t == gpu_type), None)
    return offer_of(Platform.GCP_GPU, machine_type, (model, count)) if model is not None else None


def _gcp_spot(scheduling: Any) -> bool:
    """Whether GCE ``scheduling`` asks for interruptible capacity (Spot, or the older preemptible flag)."""
    return str(prop(scheduling, "provisioningModel") or "").upper() == "SPOT" or truthy(prop(scheduling, "preemptible"))


def _template_count(template: PolicyResource, resources: Sequence[PolicyResource]) -> float:
    """Machines a managed group runs from a template: the autoscaler's maximum (budgets hold to the
    most a serving group can run, as fullserver plan does), else its target size."""
    count = 0.0
    for mig in resources:
        if mig.resource_type not in (GCP_MIG, GCP_REGION_MIG) or template not in referenced(
            mig, "versions", GCP_TEMPLATES, resources
        ):
            continue
        size = number(mig.props.get("targetSize"))
        for scaler in resources:
            if scaler.resource_type in (GCP_AUTOSCALER, GCP_REGION_AUTOSCALER) and mig in referenced(
                scaler, "target", (GCP_MIG, GCP_REGION_MIG), resources
            ):
                size = number(prop(scaler.props, "autoscalingPolicy", "maxReplicas")) or size
        count += size if size is not None else 1.0
    return count


def gcp_shape(machine_type: str, accelerators: list[Any]) -> str:
    """``a2-highgpu-1g``, or ``n1-standard-8 + 2 x nvidia-tesla-v100`` for a host with attached GPUs."""
    count = sum(int(number(prop(a, "count")) or 0) for a in accelerators)
    name = machine_type or "no machineType"
    return f"{name} + {count} x {last_segment(prop(accelerators[0], 'type'))}" if count else name


def gcp_instance_node(r: PolicyResource, resources: Sequence[PolicyResource]) -> Node:
    """One GPU VM, with its boot disk, local SSDs (``scratchDisks``) and the data disks attached to it."""
    p = r.props
    machine_type, accelerators = last_segment(p.get("machineType")), as_list(p.get("guestAccelerators"))
    offer = gcp_offer(machine_type, accelerators)
    boot = prop(p, "bootDisk", "initializeParams")
    scratch = [number(prop(s, "size")) or LOCAL_SSD_GIB for s in as_list(p.get("scratchDisks"))]
    boot_kind = last_segment(prop(boot, "type") or UNSET_DISK_KIND)
    disks = [Disk("gcp", boot_kind, number(prop(boot, "size")) or DEFAULT_BOOT_DISK_GIB)]
    if scratch:
        disks.append(Disk("gcp", "local-ssd", sum(scratch)))
    attached = disks_gib(referenced(r, "attachedDisks", GCP_DISKS, resources))
    node = Node(
        r,
        Platform.GCP_GPU,
        offer.name if offer is not None else gcp_shape(machine_type, accelerators),
        offer,
        zone_region(p.get("zone"), Platform.GCP_GPU),
        labels_of(p),
        disks=disks,
        attached_gib=attached,
    )
    node.local_nvme_gib = sum(scratch)
    node.spot_count = 1.0 if _gcp_spot(p.get("scheduling")) else 0.0
    return node


def gcp_template_node(r: PolicyResource, resources: Sequence[PolicyResource]) -> Node:
    """An instance template, as the machines its managed groups run (none if no group uses it), with
    the disks each of them gets: boot, data and local SSDs."""
    p = r.props
    machine_type, accelerators = last_segment(p.get("machineType")), as_list(p.get("guestAccelerators"))
    offer = gcp_offer(machine_type, accelerators)
    disks: list[Disk] = []
    local = attached = 0.0
    for d in as_list(p.get("disks")):
        gib = number(prop(d, "diskSizeGb")) or 0.0
        if str(prop(d, "type") or "").upper() == "SCRATCH" or prop(d, "diskType") == "local-ssd":
            local += gib or LOCAL_SSD_GIB
            continue
        kind = last_segment(prop(d, "diskType") or UNSET_DISK_KIND)
        disks.append(
            Disk(
                "gcp",
                kind,
                gib or DEFAULT_BOOT_DISK_GIB,
                number(prop(d, "provisionedIops")) or 0.0,
                number(prop(d, "provisionedThroughput")) or 0.0,
            )
        )
        if not truthy(prop(d, "boot")):
            attached += gib
    if local:
        disks.append(Disk("gcp", "local-ssd", local))
    count = _template_count(r, resources)
    node = Node(
        r,
        Platform.GCP_GPU,
        offer.name if offer is not None else gcp_shape(machine_type, accelerators),
        offer,
        plain(p.get("region")) or None,
        labels_of(p),
        count=count,
        local_nvme_gib=local,
        attached_gib=attached,
        disks=disks,
    )
    node.spot_count = count if _gcp_spot(p.get("scheduling")) else 0.0
    return node


def tpu_nodes(r: PolicyResource, resources: Sequence[PolicyResource]) -> list[Node]:
    """A TPU VM (one node, with its data disks), or a queued resource: one node per node spec."""
    p = r.props
    if r.resource_type == TPU_VM:
        accelerator = str(plain(p.get("acceleratorType")) or "")
        offer = offer_of(Platform.TPU_VM, accelerator)
        attached = disks_gib(referenced(r, "dataDisks", GCP_DISKS, resources))
        shape = offer.name if offer is not None else accelerator or "no acceleratorType"
        node = Node(
            r,
            Platform.TPU_VM,
            shape,
            offer,
            zone_region(p.get("zone"), Platform.TPU_VM),
            labels_of(p),
            attached_gib=attached,
        )
        spot = truthy(prop(p, "schedulingConfig", "spot")) or truthy(prop(p, "schedulingConfig", "preemptible"))
        node.spot_count = 1.0 if spot else 0.0
        return [node]
    nodes = []
    for spec in as_list(prop(p, "tpu", "nodeSpecs")):
        accelerator = str(prop(spec, "node", "acceleratorType") or "")
        offer = offer_of(Platform.TPU_VM, accelerator)
        zone = p.get("zone") or str(prop(spec, "parent") or "").rsplit("/", 1)[-1]
        shape = offer.name if offer is not None else accelerator or "no acceleratorType"
        node = Node(r, Platform.TPU_VM, shape, offer, zone_region(zone, Platform.TPU_VM), labels_of(p))
        node.spot_count = 1.0 if prop(p, "spot") is not None else 0.0
        nodes.append(node)
    return nodes


def _instance(r: PolicyResource, resources: Sequence[PolicyResource], used_templates: set[str]) -> list[Node]:
    return [gcp_instance_node(r, resources)]


def _template(r: PolicyResource, resources: Sequence[PolicyResource], used_templates: set[str]) -> list[Node]:
    return [gcp_template_node(r, resources)]


def _tpu(r: PolicyResource, resources: Sequence[PolicyResource], used_templates: set[str]) -> list[Node]:
    return tpu_nodes(r, resources)


NODE_READERS: dict[str, NodeReader] = {
    GCP_INSTANCE: _instance,
    **dict.fromkeys(GCP_TEMPLATES, _template),
    **dict.fromkeys((TPU_VM, TPU_QUEUED), _tpu),
}
"""The resources that run Compute Engine machines and Cloud TPU slices (``policy.stack_nodes``)."""
LAUNCHERS: dict[str, TemplateOf] = {}
DISK_READERS: dict[str, DiskReader] = dict.fromkeys(
    GCP_DISKS,
    lambda r: (gcp_disk(r), zone_region(r.props.get("zone"), Platform.GCP_GPU) or plain(r.props.get("region"))),
)
"""A persistent disk (zonal or regional) and its region (``policy.budget``)."""
