"""Serving groups: the same balanced node behind a managed group that scales on GPU utilisation.

Inference traffic varies, so ``realtime-inference`` runs ``min..max`` replicas of the node the
core sized, and the autoscaler holds the profile's ``target_utilisation`` of *GPU* utilisation:
CPU utilisation says little about a GPU-bound inference server.

* AWS: an Auto Scaling group from the launch template across the environment's subnets (one per
  zone when the profile spreads zones), rolling instance refresh, and target tracking on
  ``CWAgent/nvidia_smi_utilization_gpu`` averaged over the group (the CloudWatch agent config in
  ``components.startup``). Health: EC2 status checks (no load balancer is part of the
  environment; put one in front and switch ``health_check_type`` to ELB).
* GCP: an instance template, a managed instance group (regional with the ``BALANCED`` target shape
  when spreading zones, which places replicas only where GPUs are obtainable, else zonal), an
  HTTP health check for autohealing, and an autoscaler on the Ops Agent's
  ``agent.googleapis.com/gpu/utilization`` (0-100 per instance).
  Zones of the regional group (``distribution_policy_zones``): the zones the catalog lists for the
  shape in the region (``ServingArgs.zones``). The catalog does not yet source GPU zones for GCP
  GPU shapes (``fullserver/catalog/data/gcp.yaml``: "Zones per GPU were not sourced"), so for them
  no zones are set and Compute Engine selects the region's zones itself; the plan warns, because
  a zone without the GPU then holds no replica (BALANCED creates VMs only where it can) and the
  spread is narrower than it looks. Zones can only be chosen when the group is created: adding
  them later replaces the group.

Replicas need 10-15 minutes to boot, load drivers and pull a model, hence the long warm-up and
cool-down periods.
"""

from __future__ import annotations

from typing import Any, cast

import pulumi
import pulumi_aws as aws
import pulumi_gcp as gcp

from components.args import ServingArgs
from fullserver.platforms import gcp as gce

DEFAULT_PORT = 8000
DEFAULT_HEALTH_PATH = "/health"
WARMUP_SECONDS = 900
GCP_ZONES_PER_REGION = gce.SERVING_ZONES  # a regional MIG spreads over three zones by default


def aws_serving_group(
    name: str,
    parent: pulumi.Resource,
    *,
    region: str,
    launch_template: aws.ec2.LaunchTemplate,
    subnet_ids: list[pulumi.Output[str]],
    serving: ServingArgs,
    tags: dict[str, str],
) -> aws.autoscaling.Group:
    opts = pulumi.ResourceOptions(parent=parent)
    group = aws.autoscaling.Group(
        f"{name}-serving",
        region=region,
        min_size=serving["min_replicas"],
        max_size=serving["max_replicas"],
        desired_capacity=serving["min_replicas"],
        vpc_zone_identifiers=subnet_ids,
        launch_template={"id": launch_template.id, "version": launch_template.latest_version.apply(str)},
        health_check_type="EC2",
        health_check_grace_period=WARMUP_SECONDS,
        default_instance_warmup=WARMUP_SECONDS,
        instance_refresh={
            "strategy": "Rolling",
            "preferences": {"min_healthy_percentage": 100, "max_healthy_percentage": 200},
        },
        tags=[{"key": k, "value": v, "propagate_at_launch": True} for k, v in sorted(tags.items())],
        # The target-tracking policy owns the desired capacity once the group exists.
        opts=pulumi.ResourceOptions(parent=parent, ignore_changes=["desired_capacity"]),
    )
    aws.autoscaling.Policy(
        f"{name}-gpu-target",
        region=region,
        autoscaling_group_name=group.name,
        policy_type="TargetTrackingScaling",
        estimated_instance_warmup=WARMUP_SECONDS,
        target_tracking_configuration={
            "target_value": round(serving["target_utilisation"] * 100, 1),
            "customized_metric_specification": {
                "namespace": "CWAgent",
                "metric_name": "nvidia_smi_utilization_gpu",
                "statistic": "Average",
                "metric_dimensions": [{"name": "AutoScalingGroupName", "value": group.name}],
            },
        },
        opts=opts,
    )
    return group


def gcp_serving_group(
    name: str,
    parent: pulumi.Resource,
    *,
    project: pulumi.Input[str] | None,
    region: str,
    zone: str | None,
    template: dict[str, Any],
    serving: ServingArgs,
) -> pulumi.Output[str]:
    """Instance template, health check, managed group and autoscaler; returns the group's instance group URL."""
    opts = pulumi.ResourceOptions(parent=parent)
    port = serving.get("port", DEFAULT_PORT)
    tmpl = gcp.compute.InstanceTemplate(f"{name}-template", project=project, region=region, opts=opts, **template)
    hc = gcp.compute.HealthCheck(
        f"{name}-health",
        project=project,
        check_interval_sec=10,
        timeout_sec=5,
        healthy_threshold=2,
        unhealthy_threshold=3,
        http_health_check={"port": port, "request_path": serving.get("health_path", DEFAULT_HEALTH_PATH)},
        opts=opts,
    )
    versions: Any = [{"name": "primary", "instance_template": tmpl.self_link_unique}]
    healing: Any = {"health_check": hc.id, "initial_delay_sec": WARMUP_SECONDS}
    named_ports: Any = [{"name": "http", "port": port}]
    policy: Any = {
        "min_replicas": serving["min_replicas"],
        "max_replicas": serving["max_replicas"],
        "cooldown_period": WARMUP_SECONDS,
        "mode": "ON",
        "metrics": [
            {
                "name": "agent.googleapis.com/gpu/utilization",
                "target": round(serving["target_utilisation"] * 100, 1),
                "type": "GAUGE",
            }
        ],
    }
    if serving["spread_zones"] or not zone:
        zones = list(serving.get("zones", []))
        if not zones:
            pulumi.log.warn(
                f"{name}: no zones are known for this shape in {region}; Compute Engine picks the serving group's "
                "zones, and zones without the GPU hold no replica",
                resource=parent,
            )
        mig = gcp.compute.RegionInstanceGroupManager(
            f"{name}-mig",
            project=project,
            region=region,
            base_instance_name=f"{name}",
            versions=versions,
            named_ports=named_ports,
            auto_healing_policies=healing,
            distribution_policy_target_shape="BALANCED",
            distribution_policy_zones=zones or None,
            update_policy=cast(
                Any,
                {
                    "type": "PROACTIVE",
                    "minimal_action": "REPLACE",
                    # a regional group's fixed surge is 0 or at least its zone count
                    "max_surge_fixed": len(zones) or GCP_ZONES_PER_REGION,
                    "max_unavailable_fixed": 0,
                    "instance_redistribution_type": "NONE",
                },
            ),
            wait_for_instances=False,
            opts=opts,
        )
        gcp.compute.RegionAutoscaler(
            f"{name}-autoscaler", project=project, region=region, target=mig.id, autoscaling_policy=policy, opts=opts
        )
        group: pulumi.Output[str] = mig.instance_group
        return group
    zmig = gcp.compute.InstanceGroupManager(
        f"{name}-mig",
        project=project,
        zone=zone,
        base_instance_name=f"{name}",
        versions=versions,
        named_ports=named_ports,
        auto_healing_policies=healing,
        update_policy=cast(
            Any, {"type": "PROACTIVE", "minimal_action": "REPLACE", "max_surge_fixed": 1, "max_unavailable_fixed": 0}
        ),
        wait_for_instances=False,
        opts=opts,
    )
    gcp.compute.Autoscaler(
        f"{name}-autoscaler", project=project, zone=zone, target=zmig.id, autoscaling_policy=policy, opts=opts
    )
    zgroup: pulumi.Output[str] = zmig.instance_group
    return zgroup
