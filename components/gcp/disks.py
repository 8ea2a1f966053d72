"""The GCP data disk, the same for a GPU VM and a TPU VM: sized and provisioned as the spec says."""

from typing import Any

import pulumi
import pulumi_gcp as gcp

from components.names import logical
from fullserver import platforms


def gcp_data_disk(
    resource_name: str, *, project: Any, zone: Any, disk: Any, labels: Any, opts: pulumi.ResourceOptions
) -> gcp.compute.Disk:
    """A zonal data disk; IOPS and throughput are provisioned only where the kind provisions them
    (``fullserver.platforms``: Hyperdisk Balanced does; pd-balanced scales with size)."""
    kind = platforms.disk(disk["kind"])
    provisioned = kind is not None and kind.provisioned
    return gcp.compute.Disk(
        logical(gcp.compute.Disk, resource_name),
        project=project,
        zone=zone,
        type=disk["kind"],
        size=disk["size_gib"],
        provisioned_iops=disk.get("iops") if provisioned else None,
        provisioned_throughput=disk.get("throughput_mbps") if provisioned else None,
        labels=labels,
        opts=opts,
    )
