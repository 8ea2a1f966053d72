"""Spot nodes with an on-demand fallback (``components.aws.environment``, module docstring): a spot
group at the node count, an on-demand group at zero, and a CloudWatch alarm that swaps them."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_aws as aws

from components.aws.labels import aws_tags
from components.names import logical

FALLBACK_AFTER_MINUTES = 10


def spot_with_fallback(
    parent: pulumi.Resource,
    name: str,
    region: str,
    lt: aws.ec2.LaunchTemplate,
    subnet_ids: list[pulumi.Output[str]],
    nodes: int,
    tags: dict[str, str],
    instance_types: tuple[list[str], list[str]],
    egress: tuple[pulumi.Resource, ...] = (),
) -> list[aws.autoscaling.Group]:
    """Spot group at the node count, on-demand group at zero, an alarm that swaps them (module docstring).

    ``instance_types``: (spot, on-demand). The spot group may launch any of the first (the
    template's own type first, then the balanced set's others); ``price-capacity-optimized``
    picks the pools least likely to be interrupted among the cheapest, and capacity rebalancing
    replaces a node that receives a rebalance recommendation before it is interrupted. The
    on-demand group takes the second in order (``prioritized``: "the order of instance types in
    the list of launch template overrides" sets the priority, AWS ``InstancesDistribution``; the
    core lists them cheapest on demand first). Both groups wait for the
    subnets' routes to the internet (``egress``), as the serving group does: a node's first boot
    downloads what it runs.
    """
    version = lt.latest_version.apply(str)
    group_tags: Any = [{"key": k, "value": v, "propagate_at_launch": True} for k, v in sorted(tags.items())]
    spot_types, on_demand_types = instance_types
    spot = _spot_group(parent, name, region, lt, version, subnet_ids, nodes, group_tags, spot_types, egress)
    fallback = aws.autoscaling.Group(
        logical(aws.autoscaling.Group, f"{name}-ondemand"),
        region=region,
        min_size=0,
        max_size=nodes,
        desired_capacity=0,
        vpc_zone_identifiers=subnet_ids,
        mixed_instances_policy=_on_demand_mix(lt, version, on_demand_types),
        wait_for_capacity_timeout="0",
        # A return to zero must not kill running jobs (module docstring).
        protect_from_scale_in=True,
        tags=group_tags,
        # The alarm's policies own the desired capacity once created.
        opts=pulumi.ResourceOptions(parent=parent, ignore_changes=["desired_capacity"], depends_on=list(egress)),
    )
    _fallback_alarm(parent, name, region, spot, fallback, nodes, tags)
    return [spot, fallback]


def _on_demand_mix(lt: aws.ec2.LaunchTemplate, version: pulumi.Output[str], instance_types: list[str]) -> Any:
    """All on demand, filled in the overrides' order: ``on_demand_allocation_strategy``
    ``prioritized`` (pulumi_aws 7.51 ``GroupMixedInstancesPolicyInstancesDistributionArgs``; set,
    though it is the default, since it is what the plan says), 100 % on demand above a base of 0."""
    return {
        "instances_distribution": {
            "on_demand_allocation_strategy": "prioritized",
            "on_demand_base_capacity": 0,
            "on_demand_percentage_above_base_capacity": 100,
        },
        "launch_template": {
            "launch_template_specification": {"launch_template_id": lt.id, "version": version},
            "overrides": [{"instance_type": t} for t in dict.fromkeys(instance_types)],
        },
    }


def _spot_group(
    parent: pulumi.Resource,
    name: str,
    region: str,
    lt: aws.ec2.LaunchTemplate,
    version: pulumi.Output[str],
    subnet_ids: list[pulumi.Output[str]],
    nodes: int,
    group_tags: Any,
    instance_types: list[str],
    egress: tuple[pulumi.Resource, ...],
) -> aws.autoscaling.Group:
    mixed: Any = {
        "instances_distribution": {
            "on_demand_base_capacity": 0,
            "on_demand_percentage_above_base_capacity": 0,
            "spot_allocation_strategy": "price-capacity-optimized",
        },
        "launch_template": {
            "launch_template_specification": {"launch_template_id": lt.id, "version": version},
            "overrides": [{"instance_type": t} for t in dict.fromkeys(instance_types)],
        },
    }
    return aws.autoscaling.Group(
        logical(aws.autoscaling.Group, f"{name}-spot"),
        region=region,
        min_size=nodes,
        max_size=nodes,
        desired_capacity=nodes,
        vpc_zone_identifiers=subnet_ids,
        capacity_rebalance=True,
        # `up` never waits for accelerator capacity (the default waits 10 minutes, then fails
        # the update before the fallback below exists): a shortage is the alarm's to handle.
        wait_for_capacity_timeout="0",
        enabled_metrics=[
            aws.autoscaling.Metric.GROUP_IN_SERVICE_INSTANCES,
            aws.autoscaling.Metric.GROUP_DESIRED_CAPACITY,
        ],
        metrics_granularity="1Minute",
        mixed_instances_policy=mixed,
        tags=group_tags,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=list(egress)),
    )


def _fallback_alarm(
    parent: pulumi.Resource,
    name: str,
    region: str,
    spot: aws.autoscaling.Group,
    fallback: aws.autoscaling.Group,
    nodes: int,
    tags: dict[str, str],
) -> None:
    """The policies that set the on-demand group to the node count and back to zero, and the
    alarm on the spot group's in-service count that fires them."""
    opts = pulumi.ResourceOptions(parent=parent)
    scale_out = aws.autoscaling.Policy(
        logical(aws.autoscaling.Policy, f"{name}-fallback-on"),
        region=region,
        autoscaling_group_name=fallback.name,
        policy_type="SimpleScaling",
        adjustment_type="ExactCapacity",
        scaling_adjustment=nodes,
        cooldown=300,
        opts=opts,
    )
    scale_in = aws.autoscaling.Policy(
        logical(aws.autoscaling.Policy, f"{name}-fallback-off"),
        region=region,
        autoscaling_group_name=fallback.name,
        policy_type="SimpleScaling",
        adjustment_type="ExactCapacity",
        scaling_adjustment=0,
        cooldown=300,
        opts=opts,
    )
    aws.cloudwatch.MetricAlarm(
        logical(aws.cloudwatch.MetricAlarm, f"{name}-spot-short"),
        region=region,
        alarm_description=f"spot nodes of {name} below {nodes} for {FALLBACK_AFTER_MINUTES} minutes: run them on-demand",
        namespace="AWS/AutoScaling",
        metric_name="GroupInServiceInstances",
        dimensions={"AutoScalingGroupName": spot.name},
        statistic="Minimum",
        period=60,
        evaluation_periods=FALLBACK_AFTER_MINUTES,
        comparison_operator="LessThanThreshold",
        threshold=nodes,
        treat_missing_data="missing",
        alarm_actions=[scale_out.arn],
        ok_actions=[scale_in.arn],
        tags=aws_tags(tags, f"{name}-spot-short"),
        opts=opts,
    )
