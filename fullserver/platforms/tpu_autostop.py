"""How an idle tpu environment stops itself (``PlatformRules.autostop``, ``fullserver.autostop``):
the stop ways its nodes' agent takes and the permissions each needs, apart from the platform's
other rules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fullserver.autostop.way import ENVIRONMENT_BILLS, StopWay

if TYPE_CHECKING:
    from fullserver.platforms.reads import SpecReads


# Cloud TPU API ``nodes.stop``: "only available with single TPU nodes"; a multi-host TPU is
# deleted instead. Cloud TPU has no per-node IAM and is not among the services that read IAM
# Conditions' resource attributes (IAM "Resource attributes for IAM Conditions"), so the grant is
# a custom role of just these permissions on the project (components.gcp.autostop).
TPU_STOP = StopWay(
    "tpu-stop",
    "the node stops its own TPU VM (gcloud compute tpus tpu-vm stop)",
    "running work and memory; the data disk stays (Cloud TPU does not document what a stop keeps of "
    "the TPU VM's own boot disk: keep work on the data disk or in Cloud Storage)",
    "gcloud compute tpus tpu-vm start",
    ENVIRONMENT_BILLS | {"data disk"},
    restored_by_up=False,
)
TPU_DELETE = StopWay(
    "tpu-delete",
    "the node deletes its own TPU VM (gcloud compute tpus tpu-vm delete): a multi-host TPU cannot be stopped",
    "the TPU VM and its boot disks: everything not in Cloud Storage or on the data disk",
    "pulumi up --refresh creates the TPU VM again",
    ENVIRONMENT_BILLS | {"data disk"},
    restored_by_up=True,
)
STOP_PERMISSIONS = {
    TPU_STOP.key: ("tpu.nodes.get", "tpu.nodes.stop", "tpu.operations.get"),
    TPU_DELETE.key: ("tpu.nodes.get", "tpu.nodes.delete", "tpu.operations.get"),
}
"""The custom role's permissions per way (IAM "Cloud TPU roles and permissions")."""

STOPPED_STATES = frozenset({"STOPPING", "STOPPED", "PREEMPTED", "TERMINATED"})
"""A TPU node's ``state`` (pulumi-gcp ``tpu.V2Vm``; Cloud TPU API ``Node.State``) that is not
running, nor about to."""


def start_argv(node: str, zone: str, project: str) -> list[str]:
    """How ``fullserver start`` starts one stopped single-host TPU VM, argv (https://cloud.google.com/
    sdk/gcloud/reference/compute/tpus/tpu-vm/start: ``TPU --zone``, and the gcloud-wide ``--project``);
    a deleted multi-host one is created again by ``pulumi up --refresh``."""
    return ["gcloud", "compute", "tpus", "tpu-vm", "start", node, "--zone", zone, "--project", project]


def autostop(spec: SpecReads) -> StopWay | str:
    """A single-host TPU VM stops, a multi-host one is deleted; fullserver's queued slice carries no
    startup script (``components.tpu.queued`` passes gcloud none), so no agent runs on it."""
    if spec.tpu is not None and spec.tpu.queued:
        return "fullserver's queued TPU slice carries no startup script, so no agent runs on it: its TTL ends it"
    return TPU_DELETE if spec.tpu is not None and spec.tpu.hosts > 1 else TPU_STOP
