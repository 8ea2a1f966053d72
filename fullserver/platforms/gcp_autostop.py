"""How an idle gcp environment stops itself (``PlatformRules.autostop``, ``fullserver.autostop``):
the stop ways its nodes' agent takes and the permissions each needs, apart from the platform's
other rules."""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

from fullserver.autostop.way import ENVIRONMENT_BILLS, StopWay
from fullserver.platforms import gcp_capacity

if TYPE_CHECKING:
    from fullserver.platforms.reads import SpecReads


INSTANCE_STOP = StopWay(
    "gcp-instance-stop",
    "the node stops its own VM (gcloud compute instances stop, local SSDs discarded: Compute Engine "
    "asks for --discard-local-ssd on a VM that has them), with a role on that VM only",
    "local SSDs (/scratch comes back blank) and memory; the boot and data disks stay",
    "gcloud compute instances start for each node",
    ENVIRONMENT_BILLS | {"boot disk", "data disk"},
    restored_by_up=False,
)

GROUP_TO_ZERO = StopWay(
    "gcp-group-to-zero",
    "the node resizes its own regional managed instance group to 0 (gcloud compute instance-groups "
    "managed resize --size 0), with a role on that group only: the group deletes its VMs and recreates none",
    "the VMs and all their disks (boot, data and local SSD: the template's disks are deleted with them): "
    "everything not in Cloud Storage",
    "pulumi up --refresh sets the group's target size back",
    ENVIRONMENT_BILLS,
    restored_by_up=True,
)

STOP_PERMISSIONS = {
    INSTANCE_STOP.key: ("compute.instances.get", "compute.instances.stop"),
    GROUP_TO_ZERO.key: (
        "compute.instanceGroupManagers.get",
        "compute.instanceGroupManagers.update",
        "compute.regionOperations.get",
    ),
}
"""The custom role's permissions per way (IAM "Compute Engine roles and permissions"): a VM's stop,
bound on each VM; a regional group's resize (``regionInstanceGroupManagers.resize`` asks for
``compute.instanceGroupManagers.update`` on the group; gcloud reads the group and waits on the
resize's region operation), bound on the project under ``group_condition``."""


STOP_ROLE_PREFIX = "fullserver_autostop_"
"""Every stop role's id starts so (``stop_role_id``); the policy pack finds the roles by it."""
GROUP_RESOURCE = "instanceGroupManagers/"
"""The part of a regional group's ``resource.name`` before its name (``group_resource_name``)."""


def group_resource_name(project: str, region: str, group: str) -> str:
    """A regional group's name as IAM Conditions read it (``resource.name``; IAM "Resource attributes
    for IAM Conditions", Compute Engine: ``projects/PROJECT/regions/REGION/instanceGroupManagers/NAME``)."""
    return f"projects/{project}/regions/{region}/{GROUP_RESOURCE}{group}"


def group_condition(project: str, region: str, group: str) -> dict[str, str]:
    """The binding's condition: the group itself, and the operations of its region (the resize's,
    which gcloud polls). Only names are matched, never "any other type", so a type IAM does not
    name the way we expect falls outside the grant rather than inside it."""
    return {
        "title": f"fullserver autostop {group}"[:100],
        "description": "this environment's own managed instance group, and its region's operations",
        "expression": (
            f'resource.name == "{group_resource_name(project, region, group)}" || '
            f'resource.name.startsWith("projects/{project}/regions/{region}/operations/")'
        ),
    }


STOPPED_STATES = frozenset({"STOPPING", "TERMINATED", "SUSPENDING", "SUSPENDED"})
"""A VM's ``current_status`` (pulumi-gcp ``compute.Instance``: PROVISIONING, STAGING, RUNNING,
STOPPING, SUSPENDING, SUSPENDED, REPAIRING, TERMINATED) that is not running, nor about to: a stopped
VM reads TERMINATED."""


def start_argv(name: str, zone: str, project: str) -> list[str]:
    """How ``fullserver start`` starts one stopped VM, argv (https://cloud.google.com/sdk/gcloud/
    reference/compute/instances/start: ``INSTANCE_NAMES --zone``, and the gcloud-wide ``--project``)."""
    return ["gcloud", "compute", "instances", "start", name, "--zone", zone, "--project", project]


def stop_role_id(environment: str) -> str:
    """The stop role's id: ``fullserver_autostop_`` and the environment in the characters IAM takes
    (3-64 of ``[a-zA-Z0-9_.]``), with a digest where the name had to change. Custom roles are soft
    deleted: the provider undeletes one of the same id within 7 days of a destroy, but from 7 to 37
    days after it the id is taken (pulumi-gcp ``projects.IAMCustomRole`` warning): docs/autostop.md."""
    clean = re.sub(r"[^a-zA-Z0-9_]", "_", environment)
    base = f"{STOP_ROLE_PREFIX}{clean}"
    if clean == environment and len(base) <= 64:
        return base
    return f"{base[:55]}_{hashlib.sha256(environment.encode()).hexdigest()[:8]}"


KEEPS_DATA = (
    "its nodes are a stateful group's, which keeps /data: resizing it to 0 would delete the data disks "
    "and its VMs cannot be stopped, so nothing stops it when idle"
)
"""Why a group holding stateful disks is never stopped (``autostop``); sizing keeps nodes with /data
and autostop out of such a group (``gcp_capacity.STOPPED_WITH_DATA``), so only autostop off meets it."""


def autostop(spec: SpecReads) -> StopWay | str:
    """A GCP GPU node outside a group is a VM of its own, which stops itself; a group's member must
    not (the group would recreate it), so it sets its group's size to 0 (``gcp_capacity.in_group``).
    Never a group with stateful disks: resizing it deletes them (``KEEPS_DATA``), whatever asks."""
    if gcp_capacity.stateful_disks(spec):
        return KEEPS_DATA
    return GROUP_TO_ZERO if gcp_capacity.in_group(spec) else INSTANCE_STOP
