"""Serving groups: replicas of the balanced node, each running the model server, behind a load
balancer that health-checks the server itself and an autoscaler that holds requests per replica.

Everything here was decided by the core (``fullserver.serving.ServingSpec``, carried into
``ServingArgs``): the server's port and health path, how long a replica may take to load its
model before a health check judges it, the load balancer's scheme, a replica's request capacity.

* GCP: an instance template, a managed instance group (regional with the ``BALANCED`` target
  shape when spreading zones, which places replicas only where GPUs are obtainable, else zonal)
  with the named port ``http``, one HTTP health check on the server's health path (autohealing,
  with ``initial_delay_sec`` = the model load time, and the load balancer's backends), and
  Google's global external Application Load Balancer (``EXTERNAL_MANAGED``: backend service in
  ``RATE`` mode with ``max_rate_per_instance`` = a replica's capacity, URL map, target HTTP proxy,
  global forwarding rule on port 80). Being global, it needs no proxy-only subnet; its proxies and
  health checks connect from 35.191.0.0/16 and 130.211.0.0/22, which the network's firewall
  admits to the server port (``components.network``). The autoscaler holds the load balancer's
  utilisation (``load_balancing_utilization``): one number per replica whatever its GPU count.
  Zones of the regional group (``distribution_policy_zones``): the zones the catalog lists for the
  shape in the region (``ServingArgs.zones``); without them (the catalog does not source GPU zones
  for every GCP shape) Compute Engine selects the region's zones and the plan warns. Zones can only
  be chosen when the group is created: adding them later replaces the group.
* AWS: an Auto Scaling group from the launch template across the environment's subnets, an
  Application Load Balancer (internet-facing in the public subnets, or internal in the nodes'
  subnets; at least two zones, which the core's ``billables.zones`` guarantees) with its own
  security group, a target group health-checking the server's path (``matcher`` 200) on the
  traffic port, an HTTP listener, the group attached (``target_group_arns``) with
  ``health_check_type = ELB`` and a grace period of the model load time, and target tracking on
  ``ALBRequestCountPerTarget``. The policy depends on the listener: AWS refuses a request-count
  policy whose target group is not yet behind a load balancer.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, cast

import pulumi
import pulumi_aws as aws
import pulumi_gcp as gcp

from components.args import ServingArgs
from components.labels import aws_tags, logical, physical
from fullserver.platforms import gcp as gce

GCP_ZONES_PER_REGION = gce.SERVING_ZONES  # a regional MIG spreads over three zones by default
NAMED_PORT = "http"
HEALTH_TIMEOUT_SECONDS = 5


def endpoint_url(address: str | None, port: int) -> str:
    """``http://<address>[:port]`` once the address is known (``pulumi up``), else what stands in
    for it: the offline plan has no address to show."""
    if not address:
        return "http://<load balancer address, known after pulumi up>"
    return f"http://{address}" if port == 80 else f"http://{address}:{port}"


def call_command(url: str, key_command: list[str] | None) -> str:
    """How a person calls the endpoint once it is up: the model list, with the API key read from
    the cloud's secret store by the caller's own credentials (never printed by fullserver)."""
    if not key_command:
        return f"curl {url}/v1/models"
    read = " ".join(shlex.quote(a) for a in key_command)
    return f'curl -H "Authorization: Bearer $({read})" {url}/v1/models'


GCP_BACKEND_KEEPALIVE_SECONDS = 600
"""How long Google's global external Application Load Balancer keeps an idle connection to a
backend open (its backend HTTP keepalive timeout); the backend should keep it open longer."""
KEEP_ALIVE_MARGIN_SECONDS = 20


def server_keep_alive(request_timeout_seconds: int) -> int:
    """How long the model server keeps an idle connection open: longer than the load balancer
    does (the ALB's idle timeout is the request timeout; Google's backend keepalive is 600 s), so
    the load balancer, never the server, closes it. A server that closes first races the load
    balancer's next request on that connection, which answers 502 (ELB "Connection idle timeout":
    "configure the idle timeout of your application to be larger than the idle timeout configured
    for the load balancer"). vLLM reads it from ``VLLM_HTTP_TIMEOUT_KEEP_ALIVE`` (vLLM PR #18472,
    June 2025; older images keep uvicorn's 5 s whatever it says)."""
    return max(min(request_timeout_seconds, 4000), GCP_BACKEND_KEEPALIVE_SECONDS) + KEEP_ALIVE_MARGIN_SECONDS


def resource_label(suffixes: list[str | None]) -> str:
    """``app/<alb>/<id>/targetgroup/<tg>/<id>``: the ALB's and the target group's ARN suffixes,
    which ``ALBRequestCountPerTarget`` names its target group by (known once both exist)."""
    return "/".join(s or "" for s in suffixes)


@dataclass(frozen=True)
class AwsServing:
    group: aws.autoscaling.Group
    load_balancer: aws.lb.LoadBalancer
    endpoint: pulumi.Output[str]


def aws_serving_group(
    name: str,
    parent: pulumi.Resource,
    *,
    region: str,
    launch_template: aws.ec2.LaunchTemplate,
    vpc_id: pulumi.Input[str],
    subnet_ids: list[pulumi.Output[str]],
    lb_subnet_ids: pulumi.Input[list[str]],
    lb_security_group_id: pulumi.Input[str],
    serving: ServingArgs,
    tags: dict[str, str],
    internet_gateway: pulumi.Resource | None = None,
    egress: tuple[pulumi.Resource, ...] = (),
) -> AwsServing:
    """ALB, target group, listener, Auto Scaling group and its request-count target tracking.

    An internet-facing ALB waits for ``internet_gateway`` (EC2 refuses one in a VPC without it,
    and on destroy the gateway detaches only once the ALB's public addresses are gone); the group
    waits for the nodes' routes to the internet (``egress``): a replica's first boot pulls the
    server image, and AWS runs user data on the first boot only."""
    opts = pulumi.ResourceOptions(parent=parent)
    delay = serving["initial_delay_seconds"]
    internal = serving["load_balancer"] == "internal"
    alb = aws.lb.LoadBalancer(
        logical(aws.lb.LoadBalancer, f"{name}-alb"),
        region=region,
        load_balancer_type="application",
        internal=internal,
        subnets=lb_subnet_ids,
        security_groups=[lb_security_group_id],
        # streamed generations run for minutes; the ALB's limit is 4,000 s
        idle_timeout=min(serving["request_timeout_seconds"], 4000),
        drop_invalid_header_fields=True,
        tags=aws_tags(tags, f"{name}-alb"),
        opts=pulumi.ResourceOptions(
            parent=parent,
            depends_on=[internet_gateway] if internet_gateway is not None and not internal else [],
        ),
    )
    target_group = aws.lb.TargetGroup(
        logical(aws.lb.TargetGroup, f"{name}-tg"),
        region=region,
        vpc_id=vpc_id,
        port=serving["port"],
        protocol="HTTP",
        target_type="instance",
        deregistration_delay=serving["drain_seconds"],
        health_check={
            "enabled": True,
            "protocol": "HTTP",
            "port": "traffic-port",
            "path": serving["health_path"],
            "matcher": "200",
            "interval": serving["health_interval_seconds"],
            "timeout": HEALTH_TIMEOUT_SECONDS,
            "healthy_threshold": serving["healthy_threshold"],
            "unhealthy_threshold": serving["unhealthy_threshold"],
        },
        tags=aws_tags(tags, f"{name}-tg"),
        opts=opts,
    )
    listener = aws.lb.Listener(
        f"{name}-http",
        region=region,
        load_balancer_arn=alb.arn,
        port=serving["lb_port"],
        protocol="HTTP",
        default_actions=[{"type": "forward", "target_group_arn": target_group.arn}],
        tags=aws_tags(tags, f"{name}-http"),
        opts=opts,
    )
    group = aws.autoscaling.Group(
        logical(aws.autoscaling.Group, f"{name}-serving"),
        region=region,
        min_size=serving["min_replicas"],
        max_size=serving["max_replicas"],
        desired_capacity=serving["min_replicas"],
        vpc_zone_identifiers=subnet_ids,
        launch_template={"id": launch_template.id, "version": launch_template.latest_version.apply(str)},
        target_group_arns=[target_group.arn],
        # `up` never waits for GPU capacity or for the model to load (the default waits 10 minutes
        # for min_size instances, and fails the update when a zone is short of the type).
        wait_for_capacity_timeout="0",
        # a replica that stops answering the health path is replaced, after its model had time to load
        health_check_type="ELB",
        health_check_grace_period=delay,
        default_instance_warmup=delay,
        instance_refresh={
            "strategy": "Rolling",
            "preferences": {"min_healthy_percentage": 100, "max_healthy_percentage": 200},
        },
        tags=[{"key": k, "value": v, "propagate_at_launch": True} for k, v in sorted(tags.items())],
        # The target-tracking policy owns the desired capacity once the group exists.
        opts=pulumi.ResourceOptions(parent=parent, ignore_changes=["desired_capacity"], depends_on=list(egress)),
    )
    target = round(serving["requests_per_second"] * 60 * serving["target_utilisation"], 1)
    aws.autoscaling.Policy(
        logical(aws.autoscaling.Policy, f"{name}-requests-target"),
        region=region,
        autoscaling_group_name=group.name,
        policy_type="TargetTrackingScaling",
        estimated_instance_warmup=delay,
        target_tracking_configuration={
            "target_value": target,
            "predefined_metric_specification": {
                "predefined_metric_type": "ALBRequestCountPerTarget",
                "resource_label": pulumi.Output.all(alb.arn_suffix, target_group.arn_suffix).apply(resource_label),
            },
        },
        opts=pulumi.ResourceOptions(parent=parent, depends_on=[listener]),
    )
    port = serving["lb_port"]
    endpoint = alb.dns_name.apply(lambda dns: endpoint_url(dns, port))
    return AwsServing(group=group, load_balancer=alb, endpoint=endpoint)


@dataclass(frozen=True)
class GcpServing:
    instance_group: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    base_instance_name: str
    """What the group names its replicas after (``<base>-`` and four random characters)."""
    zone: str | None
    """A zonal group's zone; ``None`` for a regional group."""


def _gcp_load_balancer(
    name: str,
    opts: pulumi.ResourceOptions,
    *,
    project: pulumi.Input[str] | None,
    instance_group: pulumi.Input[str],
    health_check: gcp.compute.HealthCheck,
    serving: ServingArgs,
) -> pulumi.Output[str]:
    """The global external Application Load Balancer in front of the group; returns the endpoint."""
    backend = gcp.compute.BackendService(
        logical(gcp.compute.BackendService, f"{name}-backend"),
        project=project,
        load_balancing_scheme="EXTERNAL_MANAGED",
        protocol="HTTP",
        port_name=NAMED_PORT,
        timeout_sec=serving["request_timeout_seconds"],
        connection_draining_timeout_sec=serving["drain_seconds"],
        health_checks=health_check.id,
        backends=[
            {
                "group": instance_group,
                "balancing_mode": "RATE",
                "max_rate_per_instance": serving["requests_per_second"],
                "capacity_scaler": 1.0,
            }
        ],
        opts=opts,
    )
    url_map = gcp.compute.URLMap(
        logical(gcp.compute.URLMap, f"{name}-urls"), project=project, default_service=backend.id, opts=opts
    )
    proxy = gcp.compute.TargetHttpProxy(
        logical(gcp.compute.TargetHttpProxy, f"{name}-proxy"), project=project, url_map=url_map.id, opts=opts
    )
    rule = gcp.compute.GlobalForwardingRule(
        logical(gcp.compute.GlobalForwardingRule, f"{name}-lb"),
        project=project,
        target=proxy.id,
        load_balancing_scheme="EXTERNAL_MANAGED",
        ip_protocol="TCP",
        port_range=str(serving["lb_port"]),
        opts=opts,
    )
    port = serving["lb_port"]
    endpoint: pulumi.Output[str] = rule.ip_address.apply(lambda ip: endpoint_url(ip, port))
    return endpoint


def gcp_serving_group(
    name: str,
    parent: pulumi.Resource,
    *,
    project: pulumi.Input[str] | None,
    region: str,
    zone: str | None,
    template: dict[str, Any],
    serving: ServingArgs,
    egress: tuple[pulumi.Resource, ...] = (),
) -> GcpServing:
    """Instance template, health check, managed group, load balancer and autoscaler.

    The group waits for the nodes' way out (``egress``: Cloud NAT for replicas without an
    external address): a replica's startup script installs the container runtime where missing
    and pulls the server image."""
    opts = pulumi.ResourceOptions(parent=parent)
    group_opts = pulumi.ResourceOptions(parent=parent, depends_on=list(egress))
    port = serving["port"]
    delay = serving["initial_delay_seconds"]
    tmpl = gcp.compute.InstanceTemplate(
        logical(gcp.compute.InstanceTemplate, f"{name}-template"), project=project, region=region, opts=opts, **template
    )
    hc = gcp.compute.HealthCheck(
        logical(gcp.compute.HealthCheck, f"{name}-health"),
        project=project,
        check_interval_sec=serving["health_interval_seconds"],
        timeout_sec=HEALTH_TIMEOUT_SECONDS,
        healthy_threshold=serving["healthy_threshold"],
        unhealthy_threshold=serving["unhealthy_threshold"],
        http_health_check={"port": port, "request_path": serving["health_path"]},
        opts=opts,
    )
    versions: Any = [{"name": "primary", "instance_template": tmpl.self_link_unique}]
    healing: Any = {"health_check": hc.id, "initial_delay_sec": delay}
    named_ports: Any = [{"name": NAMED_PORT, "port": port}]
    policy: Any = {
        "min_replicas": serving["min_replicas"],
        "max_replicas": serving["max_replicas"],
        # a new replica serves nothing until its model is loaded
        "cooldown_period": delay,
        "mode": "ON",
        "load_balancing_utilization": {"target": serving["target_utilisation"]},
    }
    # The group names its instances base + "-" + 4 characters, in the project's zones.
    base = physical(gcp.compute.RegionInstanceGroupManager, name, "baseInstanceName")
    regional = serving["spread_zones"] or not zone
    if regional:
        zones = list(serving.get("zones", []))
        if not zones:
            pulumi.log.warn(
                f"{name}: no zones are known for this shape in {region}; Compute Engine picks the serving group's "
                "zones, and zones without the GPU hold no replica",
                resource=parent,
            )
        mig = gcp.compute.RegionInstanceGroupManager(
            logical(gcp.compute.RegionInstanceGroupManager, f"{name}-mig"),
            project=project,
            region=region,
            base_instance_name=base,
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
            opts=group_opts,
        )
        gcp.compute.RegionAutoscaler(
            logical(gcp.compute.RegionAutoscaler, f"{name}-autoscaler"),
            project=project,
            region=region,
            target=mig.id,
            autoscaling_policy=policy,
            opts=opts,
        )
        group: pulumi.Output[str] = mig.instance_group
    else:
        zmig = gcp.compute.InstanceGroupManager(
            logical(gcp.compute.InstanceGroupManager, f"{name}-mig"),
            project=project,
            zone=zone,
            base_instance_name=base,
            versions=versions,
            named_ports=named_ports,
            auto_healing_policies=healing,
            update_policy=cast(
                Any,
                {"type": "PROACTIVE", "minimal_action": "REPLACE", "max_surge_fixed": 1, "max_unavailable_fixed": 0},
            ),
            wait_for_instances=False,
            opts=group_opts,
        )
        gcp.compute.Autoscaler(
            logical(gcp.compute.Autoscaler, f"{name}-autoscaler"),
            project=project,
            zone=zone,
            target=zmig.id,
            autoscaling_policy=policy,
            opts=opts,
        )
        group = zmig.instance_group
    endpoint = _gcp_load_balancer(name, opts, project=project, instance_group=group, health_check=hc, serving=serving)
    return GcpServing(instance_group=group, endpoint=endpoint, base_instance_name=base, zone=None if regional else zone)
