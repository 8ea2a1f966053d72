"""Spot nodes as a regional managed instance group over the balanced set (``fullserver.capacity``).

Design notes: docs/design/components.md.
"""

from __future__ import annotations

from typing import Any, cast

import pulumi
import pulumi_gcp as gcp

from components.args import refuse
from components.names import logical, physical
from fullserver.platforms import gcp_capacity as gce


def flexible_group(
    parent: pulumi.Resource,
    name: str,
    *,
    project: pulumi.Input[str] | None,
    region: str,
    nodes: int,
    template: dict[str, Any],
    machine_types: list[str],
    zones: list[str],
    egress: tuple[pulumi.Resource, ...],
) -> gcp.compute.RegionInstanceGroupManager:
    """The spot template and the regional group over ``machine_types`` in ``zones`` (module docstring)."""
    refusal = gce.flexibility_refusal(gce.MIG_TARGET_SHAPE, gce.MIG_REDISTRIBUTION, machine_types)
    if refusal is not None:
        raise refuse(refusal.field, refusal.what, refusal.hint)
    opts = pulumi.ResourceOptions(parent=parent)
    tmpl = gcp.compute.InstanceTemplate(
        logical(gcp.compute.InstanceTemplate, f"{name}-spot"), project=project, region=region, opts=opts, **template
    )
    selections: Any = [
        {"name": f"rank-{rank}-{machine}", "rank": rank, "machine_types": [machine]}
        for rank, machine in enumerate(machine_types)
    ]
    update: Any = {
        # no rolling replacement of running jobs: a template edit reaches new VMs only
        "type": "OPPORTUNISTIC",
        "minimal_action": "REPLACE",
        # a regional group's fixed surge and unavailability are 0 or at least its zone count
        "max_surge_fixed": 0,
        "max_unavailable_fixed": max(len(zones), 1),
        "instance_redistribution_type": gce.MIG_REDISTRIBUTION,
    }
    return gcp.compute.RegionInstanceGroupManager(
        logical(gcp.compute.RegionInstanceGroupManager, f"{name}-spot"),
        project=project,
        region=region,
        base_instance_name=physical(gcp.compute.RegionInstanceGroupManager, name, "baseInstanceName"),
        versions=cast(Any, [{"name": "primary", "instance_template": tmpl.self_link_unique}]),
        target_size=nodes,
        distribution_policy_zones=zones or None,
        distribution_policy_target_shape=gce.MIG_TARGET_SHAPE,
        instance_flexibility_policy={"instance_selections": selections} if len(machine_types) > 1 else None,
        update_policy=update,
        # `up` never waits for spot capacity: the group keeps trying (the plan's capacity steps)
        wait_for_instances=False,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=list(egress)),
    )
