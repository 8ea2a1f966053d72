"""The idle agent's stop on Compute Engine (``fullserver.platforms.gcp_autostop`` ``INSTANCE_STOP``,
``GROUP_TO_ZERO``), and the grant Compute Engine and Cloud TPU nodes get (``components.tpu.autostop``).

A GPU VM stops itself (``--async``), found by its name and zone on the metadata server; a group's
member resizes its group to 0, found by its ``created-by``; a TPU VM is told its node. The grant is
a custom role of the way's permissions (``STOP_PERMISSIONS``) for the nodes' account: on each VM,
on the project under a condition naming the group, or (Cloud TPU) on the project. docs/autostop.md.
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


def stop_script(way: str, local_ssds: int) -> str:
    """The stop command the agent runs, for the plan's way."""
    if way == gce.GROUP_TO_ZERO.key:
        return group_stop_script()
    if way != gce.INSTANCE_STOP.key:
        raise ValueError(f"no Compute Engine stop for autostop way '{way}'")
    return vm_stop_script(local_ssds)


def vm_stop_script(local_ssds: int) -> str:
    """A GPU VM's stop; Compute Engine asks whether to discard local SSDs on a VM with them
    (gcloud compute instances stop, ``--discard-local-ssd``): they are scratch, discarded."""
    return _VM.replace("__DISCARD__", "true" if local_ssds else "false")


_GROUP = """#!/bin/sh
# fullserver: resize this VM's own regional managed instance group to 0 (its service account holds
# a role on that group only); the group then deletes its VMs, this one included
set -eu
md() { curl -fsS -H 'Metadata-Flavor: Google' "http://metadata.google.internal/computeMetadata/v1/instance/$1"; }
# a group's member: projects/NUMBER/regions/REGION/instanceGroupManagers/NAME
group="$(md attributes/created-by)"
case "$group" in
  projects/*/regions/*/instanceGroupManagers/*) ;;
  *) echo "not a member of a regional managed instance group (created-by: '$group')" >&2; exit 1 ;;
esac
region="${group#*/regions/}"; region="${region%%/*}"
exec gcloud compute instance-groups managed resize "${group##*/}" --size 0 --region "$region" --quiet
"""


def group_stop_script() -> str:
    """A regional group member's stop: its group, read from the metadata server's ``created-by``
    (set by the group on each VM it creates), resized to 0 (https://cloud.google.com/sdk/gcloud/
    reference/compute/instance-groups/managed/resize: ``NAME --size --region``). The template is
    made before the group, so it cannot name it: the node asks."""
    return _GROUP


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


def grant_on_group(
    name: str,
    parent: pulumi.Resource,
    role: gcp.projects.IAMCustomRole,
    sa: gcp.serviceaccount.Account,
    group: gcp.compute.RegionInstanceGroupManager,
    region: str,
) -> None:
    """The role on the project, conditioned on the group's own name (pulumi-gcp has no per-group IAM
    resource; IAM Conditions read ``resource.name`` for Compute Engine): ``gce.group_condition``."""
    gcp.projects.IAMMember(
        f"{name}-autostop",
        project=role.project,
        role=role.name,
        member=member(sa),
        condition=pulumi.Output.all(role.project, group.name).apply(
            lambda pn: gcp.projects.IAMMemberConditionArgs(**gce.group_condition(str(pn[0]), region, str(pn[1])))
        ),
        opts=pulumi.ResourceOptions(parent=parent),
    )
