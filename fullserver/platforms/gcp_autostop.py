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
    from fullserver.spec import EnvironmentSpec


INSTANCE_STOP = StopWay(
    "gcp-instance-stop",
    "the node stops its own VM (gcloud compute instances stop, local SSDs discarded: Compute Engine "
    "asks for --discard-local-ssd on a VM that has them), with a role on that VM only",
    "local SSDs (/scratch comes back blank) and memory; the boot and data disks stay",
    "gcloud compute instances start for each node",
    ENVIRONMENT_BILLS | {"boot disk", "data disk"},
    restored_by_up=False,
)

STOP_PERMISSIONS = {INSTANCE_STOP.key: ("compute.instances.get", "compute.instances.stop")}
"""The custom role's permissions (IAM "Compute Engine roles and permissions"), bound on each VM."""


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
    base = f"fullserver_autostop_{clean}"
    if clean == environment and len(base) <= 64:
        return base
    return f"{base[:55]}_{hashlib.sha256(environment.encode()).hexdigest()[:8]}"


GROUP_OFF = (
    "spot nodes run in a regional managed instance group over the balanced set, which would recreate "
    "a VM that stopped itself (resizing the group to 0 is not built yet): its TTL ends it"
)
"""Why no agent runs on a spot group's members (``components.gcp.flexible``)."""


def autostop(spec: EnvironmentSpec) -> StopWay | str:
    """A GCP GPU node outside a group is a VM of its own, which stops itself; spot nodes over the
    balanced set are a regional group's members, which must not (``GROUP_OFF``)."""
    if gcp_capacity.in_group(spec):
        return GROUP_OFF
    return INSTANCE_STOP
