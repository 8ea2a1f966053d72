"""The GCP data disk, the same for a GPU VM and a TPU VM: sized and provisioned as the spec says."""

from typing import Any

import pulumi
import pulumi_gcp as gcp

from components.names import logical
from fullserver import platforms


def provisioned(disk: Any) -> dict[str, Any]:
    """The disk's provisioned IOPS and throughput where its kind provisions them (Hyperdisk
    Balanced does), else none (pd-balanced's performance scales with its size): a zonal disk and a
    serving template's data disk alike."""
    kind = platforms.disk(disk["kind"])
    if kind is None or not kind.provisioned:
        return {"provisioned_iops": None, "provisioned_throughput": None}
    return {"provisioned_iops": disk.get("iops"), "provisioned_throughput": disk.get("throughput_mbps")}


def gcp_data_disk(
    resource_name: str, *, project: Any, zone: Any, disk: Any, labels: Any, opts: pulumi.ResourceOptions
) -> gcp.compute.Disk:
    """A zonal data disk; IOPS and throughput are provisioned only where the kind provisions them
    (``fullserver.platforms``: Hyperdisk Balanced does; pd-balanced scales with size)."""
    return gcp.compute.Disk(
        logical(gcp.compute.Disk, resource_name),
        project=project,
        zone=zone,
        type=disk["kind"],
        size=disk["size_gib"],
        **provisioned(disk),
        labels=labels,
        opts=opts,
    )
