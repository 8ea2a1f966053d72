"""The AWS serving group: an Auto Scaling group of model-server replicas behind an Application
Load Balancer, target tracking on requests per replica (``components.serving``).

Design notes: docs/design/components.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.args import ServingArgs
from components.aws.labels import aws_tags
from components.names import logical
from components.serving import HEALTH_TIMEOUT_SECONDS, lb_endpoint
from fullserver.tls import PLAIN_HTTP_LABEL

TLS_POLICY = "ELBSecurityPolicy-TLS13-1-2-2021-06"
"""The HTTPS listener's security policy: TLS 1.3 and 1.2 only, the policy ELB recommends ("We
recommend the ELBSecurityPolicy-TLS13-1-2-2021-06 security policy, which includes TLS 1.3, and is
backwards compatible with TLS 1.2", ELB user guide, "Security policies for your Application Load
Balancer"; the console's default). Left out, a listener made through the API gets
ELBSecurityPolicy-2016-08, which still accepts TLS 1.0."""


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
    delay = serving["initial_delay_seconds"]
    alb, target_group, listener = _load_balancer(
        name,
        parent,
        region=region,
        vpc_id=vpc_id,
        lb_subnet_ids=lb_subnet_ids,
        lb_security_group_id=lb_security_group_id,
        serving=serving,
        tags=tags,
        internet_gateway=internet_gateway,
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
    return AwsServing(group=group, load_balancer=alb, endpoint=lb_endpoint(serving, alb.dns_name))


def _load_balancer(
    name: str,
    parent: pulumi.Resource,
    *,
    region: str,
    vpc_id: pulumi.Input[str],
    lb_subnet_ids: pulumi.Input[list[str]],
    lb_security_group_id: pulumi.Input[str],
    serving: ServingArgs,
    tags: dict[str, str],
    internet_gateway: pulumi.Resource | None,
) -> tuple[aws.lb.LoadBalancer, aws.lb.TargetGroup, aws.lb.Listener]:
    """The ALB, its target group health-checking the server's path, and the listener forwarding
    to it (``_listeners``)."""
    opts = pulumi.ResourceOptions(parent=parent)
    internal = serving["load_balancer"] == "internal"
    # serving.plainHttp (fullserver.tls.clear_text) is said on the ALB, where the policy pack reads it
    plain = {PLAIN_HTTP_LABEL: "true"} if serving.get("plain_http") else {}
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
        tags=aws_tags({**tags, **plain}, f"{name}-alb"),
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
    return alb, target_group, _listeners(name, opts, region, alb, target_group, serving, tags)


def _listeners(
    name: str,
    opts: pulumi.ResourceOptions,
    region: str,
    alb: aws.lb.LoadBalancer,
    target_group: aws.lb.TargetGroup,
    serving: ServingArgs,
    tags: dict[str, str],
) -> aws.lb.Listener:
    """The listener forwarding to the replicas: HTTP on ``lb_port``; with a certificate, HTTPS on
    its port (pulumi-aws ``lb.Listener``: ``protocol`` HTTPS, ``certificate_arn``, ``ssl_policy``)
    while the HTTP listener answers a permanent redirect to it (pulumi-aws 7.51
    ``ListenerDefaultActionRedirectArgs``: ``status_code`` HTTP_301, ``protocol`` HTTPS, ``port``;
    host, path and query default to the request's), so no request or key crosses the internet in
    clear. pulumi-aws: "Exactly one certificate is required if the protocol is HTTPS"."""
    forward: aws.lb.ListenerDefaultActionArgsDict = {"type": "forward", "target_group_arn": target_group.arn}
    tls = serving.get("tls")
    http_action = forward
    listener = None
    if tls is not None:
        listener = aws.lb.Listener(
            f"{name}-https",
            region=region,
            load_balancer_arn=alb.arn,
            port=tls["port"],
            protocol="HTTPS",
            certificate_arn=tls.get("certificate_arn"),
            ssl_policy=TLS_POLICY,
            default_actions=[forward],
            tags=aws_tags(tags, f"{name}-https"),
            opts=opts,
        )
        http_action = {
            "type": "redirect",
            "redirect": {"protocol": "HTTPS", "port": str(tls["port"]), "status_code": "HTTP_301"},
        }
    http = aws.lb.Listener(
        f"{name}-http",
        region=region,
        load_balancer_arn=alb.arn,
        port=serving["lb_port"],
        protocol="HTTP",
        default_actions=[http_action],
        tags=aws_tags(tags, f"{name}-http"),
        opts=opts,
    )
    return listener or http
