"""The idle agent's stop on Compute Engine (``fullserver.platforms.gcp`` ``INSTANCE_STOP``), and the
grant both Compute Engine and Cloud TPU nodes get (``components.tpu.autostop``: the TPU's stop).

The node calls the API on itself with ``--async`` (the call returns before the VM goes down): a GPU
VM finds its own name and zone on the metadata server, a TPU VM is told its node id and zone. The
grant is a custom role holding only the permissions of the way (the platform's ``STOP_PERMISSIONS``),
bound to the nodes' service account on each VM (``compute.InstanceIAMMember``), or, for Cloud TPU,
which has neither per-node IAM nor IAM Conditions on resource names, on the project.
"""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp

from fullserver.platforms import gcp_autostop as gce

_VM = """#!/bin/sh
# fullserver: stop this VM (its service account holds a role on this VM only)
set -eu
md() { curl -fsS -H 'Metadata-Flavor: Google' "http://metadata.google.internal/computeMetadata/v1/instance/$1"; }
name="$(md name)"; zone="$(md zone)"
exec gcloud compute instances stop "$name" --zone "${zone##*/}" --discard-local-ssd=__DISCARD__ --async --quiet
"""


def vm_stop_script(local_ssds: int) -> str:
    """A GPU VM's stop; Compute Engine asks whether to discard local SSDs on a VM with them
    (gcloud compute instances stop, ``--discard-local-ssd``): they are scratch, discarded."""
    return _VM.replace("__DISCARD__", "true" if local_ssds else "false")


def stop_role(
    name: str,
    parent: pulumi.Resource,
    permissions: tuple[str, ...],
    environment: str,
    project: pulumi.Input[str] | None,
) -> gcp.projects.IAMCustomRole:
    """The custom role of the way's permissions (its platform's ``STOP_PERMISSIONS``), one per
    environment. Custom roles are project-wide: a stack deployed from another's plan (the same
    environment under another stack name) gets its stack in the id, so the two never share one."""
    stack = pulumi.get_stack()
    key = environment if stack == environment else f"{environment}_{stack}"
    return gcp.projects.IAMCustomRole(
        f"{name}-autostop",
        project=project,
        role_id=gce.stop_role_id(key),
        title=f"fullserver autostop {environment}"[:100],
        description="lets an idle node of this environment stop itself, and nothing else",
        permissions=list(permissions),
        opts=pulumi.ResourceOptions(parent=parent),
    )


def member(sa: gcp.serviceaccount.Account) -> pulumi.Output[str]:
    return sa.email.apply(lambda email: f"serviceAccount:{email}")


def grant_on_vms(
    name: str,
    parent: pulumi.Resource,
    role: gcp.projects.IAMCustomRole,
    sa: gcp.serviceaccount.Account,
    instances: list[gcp.compute.Instance],
) -> None:
    """The role on each VM, for the nodes' account: a node can stop the environment's VMs only."""
    for i, inst in enumerate(instances):
        gcp.compute.InstanceIAMMember(
            f"{name}-autostop-{i}",
            project=inst.project,
            zone=inst.zone,
            instance_name=inst.name,
            role=role.name,
            member=member(sa),
            opts=pulumi.ResourceOptions(parent=parent),
        )


def grant_on_project(
    name: str, parent: pulumi.Resource, role: gcp.projects.IAMCustomRole, sa: gcp.serviceaccount.Account
) -> None:
    """Cloud TPU: the role on the project (module docstring)."""
    gcp.projects.IAMMember(
        f"{name}-autostop",
        project=role.project,
        role=role.name,
        member=member(sa),
        opts=pulumi.ResourceOptions(parent=parent),
    )
