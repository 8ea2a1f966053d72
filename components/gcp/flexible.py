"""Spot or on-demand nodes as a regional managed instance group over the balanced set
(``fullserver.capacity``, ``fullserver.platforms.gcp_capacity``); an on-demand group keeps each
node's data disk across a VM's recreation (its stateful policy).

Design notes: docs/design/components.md.
"""

from __future__ import annotations

from typing import Any, cast

import pulumi
import pulumi_gcp as gcp

from components.args import refuse
from components.names import logical, physical
from fullserver.platforms import gcp as gcp_rules
from fullserver.platforms import gcp_capacity as gce


def _update_policy(zones: int, stateful: bool) -> Any:
    """No rolling replacement of running jobs: a template edit reaches new VMs only. A stateful
    group recreates a VM under its own name (``gce.STATEFUL_REPLACEMENT``)."""
    policy: dict[str, Any] = {
        "type": "OPPORTUNISTIC",
        "minimal_action": "REPLACE",
        # a regional group's fixed surge and unavailability are 0 or at least its zone count (the
        # three Compute Engine spreads it over where the catalog names no zones: ``gcp_rules.SERVING_ZONES``)
        "max_surge_fixed": 0,
        "max_unavailable_fixed": zones or gcp_rules.SERVING_ZONES,
        "instance_redistribution_type": gce.MIG_REDISTRIBUTION,
    }
    if stateful:
        policy["replacement_method"] = gce.STATEFUL_REPLACEMENT
    return policy


def flexible_group(
    parent: pulumi.Resource,
    name: str,
    *,
    kind: str,
    project: pulumi.Input[str] | None,
    region: str,
    nodes: int,
    template: dict[str, Any],
    machine_types: list[str],
    zones: list[str],
    stateful_disks: list[str],
    protect: bool,
    egress: tuple[pulumi.Resource, ...],
) -> gcp.compute.RegionInstanceGroupManager:
    """The ``kind`` ("spot", "ondemand") template and the regional group over ``machine_types`` in
    ``zones``; ``stateful_disks``: the template's device names the group keeps, deleted with their
    VM's permanent deletion (``gce.STATEFUL_DELETE_RULE``). ``protect``: the group (and with it the
    disks it holds) is protected as single VMs and their disks would be (a persistent profile)."""
    update = _update_policy(len(zones), bool(stateful_disks))
    policy = gce.GroupPolicy(
        target_shape=gce.MIG_TARGET_SHAPE,
        redistribution=update["instance_redistribution_type"],
        machine_types=tuple(machine_types),
        stateful_disks=tuple(stateful_disks),
        replacement=update.get("replacement_method", "SUBSTITUTE"),
        max_unavailable=update["max_unavailable_fixed"],
    )
    refusal = gce.flexibility_refusal(policy)
    if refusal is not None:
        raise refuse(refusal.field, refusal.what, refusal.hint)
    opts = pulumi.ResourceOptions(parent=parent)
    tmpl = gcp.compute.InstanceTemplate(
        logical(gcp.compute.InstanceTemplate, f"{name}-{kind}"), project=project, region=region, opts=opts, **template
    )
    selections: Any = [
        {"name": f"rank-{rank}-{machine}", "rank": rank, "machine_types": [machine]}
        for rank, machine in enumerate(machine_types)
    ]
    # pulumi-gcp RegionInstanceGroupManagerStatefulDisk: {device_name, delete_rule}
    kept: Any = [{"device_name": d, "delete_rule": gce.STATEFUL_DELETE_RULE} for d in stateful_disks]
    return gcp.compute.RegionInstanceGroupManager(
        logical(gcp.compute.RegionInstanceGroupManager, f"{name}-{kind}"),
        project=project,
        region=region,
        base_instance_name=physical(gcp.compute.RegionInstanceGroupManager, name, "baseInstanceName"),
        versions=cast(Any, [{"name": "primary", "instance_template": tmpl.self_link_unique}]),
        target_size=nodes,
        distribution_policy_zones=zones or None,
        distribution_policy_target_shape=gce.MIG_TARGET_SHAPE,
        instance_flexibility_policy={"instance_selections": selections} if len(machine_types) > 1 else None,
        stateful_disks=kept or None,
        update_policy=update,
        # `up` never waits for capacity: the group keeps trying (the plan's capacity steps)
        wait_for_instances=False,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=list(egress), protect=protect),
    )
