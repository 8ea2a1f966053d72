"""Karpenter on a created EKS cluster (``fullserver:nodeProvisioner: karpenter``): its node role and
access entry, the interruption queue and the EventBridge rules feeding it, the controller's role and
Helm release on the system node group, and the environment's EC2NodeClass and NodePool
(``fullserver.kube.karpenter`` builds their bodies). Inputs follow aws/karpenter-provider-aws v1.14.1's
getting-started template and chart (``fullserver.platforms.eks_karpenter``) and pulumi-aws 7.51.1 /
pulumi-kubernetes 4.34.2 (``sqs.Queue``, ``sqs.QueuePolicy``, ``cloudwatch.EventRule``/``EventTarget``,
``eks.AccessEntry``, ``apiextensions.CustomResource``). Destroy: the NodePool depends on the release
and the EC2NodeClass, so it goes first and Karpenter terminates its nodes while it still runs."""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_aws as aws

from components.aws.labels import aws_tags
from components.eks.controller import Chart, Controller, Site, controller_release
from components.eks.device_plugins import GPU_PRESENT
from components.names import logical
from fullserver.kube import KubePlan
from fullserver.kube import karpenter as core
from fullserver.platforms import eks_karpenter as k

CONTROLLER_REPLICAS = 1
"""One replica: the chart's two (``replicas: 2``) keep apart by a required hostname anti-affinity, and a
created cluster has one system node (``eks.SYSTEM_NODES``); the NodePool's own nodes are excluded by the
chart's ``karpenter.sh/nodepool DoesNotExist`` affinity (``charts/karpenter/values.yaml`` at v1.14.1)."""


def _trust_ec2() -> str:
    statement = {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


def node_role(name: str, plan: KubePlan, cluster: aws.eks.Cluster, parent: pulumi.Resource) -> tuple[Any, list[Any]]:
    """``KarpenterNodeRole``: EC2 assumes it, the template's four managed policies, and an
    ``EC2_LINUX`` access entry so the nodes join an API-authenticated cluster as ``system:nodes``."""
    opts = pulumi.ResourceOptions(parent=parent)
    tags = dict(plan.cloud_labels)
    role = aws.iam.Role(
        logical(aws.iam.Role, f"{name}-karpenter-node"),
        assume_role_policy=_trust_ec2(),
        tags=aws_tags(tags, f"{name}-karpenter-node"),
        opts=opts,
    )
    waits: list[Any] = [
        aws.iam.RolePolicyAttachment(
            f"{name}-karpenter-node-{arn.rsplit('/', 1)[-1]}", role=role.name, policy_arn=arn, opts=opts
        )
        for arn in k.NODE_POLICIES
    ]
    waits.append(
        aws.eks.AccessEntry(
            f"{name}-karpenter-node",
            cluster_name=cluster.name,
            principal_arn=role.arn,
            type=k.ACCESS_ENTRY_TYPE,
            tags=aws_tags(tags, f"{name}-karpenter-node"),
            opts=opts,
        )
    )
    return role, waits


def interruption_queue(name: str, plan: KubePlan, parent: pulumi.Resource) -> tuple[Any, list[Any]]:
    """The queue (``k.RETENTION_SECONDS``, SQS-managed encryption), its policy and one EventBridge
    rule per event (``k.EVENTS``) with the queue as its target."""
    opts = pulumi.ResourceOptions(parent=parent)
    tags = dict(plan.cloud_labels)
    queue = aws.sqs.Queue(
        logical(aws.sqs.Queue, f"{name}-karpenter"),
        message_retention_seconds=k.RETENTION_SECONDS,
        sqs_managed_sse_enabled=True,
        tags=aws_tags(tags, f"{name}-karpenter"),
        opts=opts,
    )
    waits: list[Any] = [
        aws.sqs.QueuePolicy(
            f"{name}-karpenter",
            queue_url=queue.url,
            policy=queue.arn.apply(lambda arn: json.dumps(k.queue_policy(arn))),
            opts=opts,
        )
    ]
    for event, pattern in k.EVENTS.items():
        rule = aws.cloudwatch.EventRule(
            logical(aws.cloudwatch.EventRule, f"{name}-karpenter-{event}"),
            event_pattern=json.dumps(pattern),
            tags=aws_tags(tags, f"{name}-karpenter-{event}"),
            opts=opts,
        )
        waits.append(
            aws.cloudwatch.EventTarget(
                f"{name}-karpenter-{event}",
                rule=rule.name,
                arn=queue.arn,
                target_id="KarpenterInterruptionQueueTarget",
                opts=opts,
            )
        )
    return queue, waits


CONTROLLER = Controller("karpenter", "karpenter", k.NAMESPACE, k.SERVICE_ACCOUNT)
CHART = Chart(k.CHART, k.CHART_VERSION, None, k.RELEASE)
"""An OCI chart: no Helm repository."""


def karpenter(site: Site) -> Any:
    """Everything above (module doc); returns the NodePool, which the workload waits on."""
    import pulumi_kubernetes as k8s  # only for created EKS clusters and applied workloads

    name, plan, parent, provider = site.name, site.plan, site.parent, site.provider
    role, joined = node_role(name, plan, site.cluster, parent)
    queue, events = interruption_queue(name, plan, parent)
    policy = pulumi.Output.all(site.cluster.name, site.cluster.arn, role.arn, queue.arn).apply(
        lambda v: json.dumps(k.controller_policy(str(v[0]), plan.region, *map(str, v[1:])), separators=(",", ":"))
    )
    values = {
        "settings": {"clusterName": site.cluster.name, "interruptionQueue": queue.name},
        "replicas": CONTROLLER_REPLICAS,
    }
    release = controller_release(site, CONTROLLER, CHART, policy, values, events)
    body = role.name.apply(lambda r: core.node_class(plan, str(r), dict(sorted(plan.cloud_labels.items()))))
    node_class = k8s.apiextensions.CustomResource(
        f"{name}-karpenter-nodeclass",
        api_version="karpenter.k8s.aws/v1",
        kind="EC2NodeClass",
        metadata={"name": core.object_name(plan.environment)},
        spec=body.apply(lambda b: b["spec"]),
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=[release, *joined]),
    )
    pool = core.node_pool(plan, {**plan.node_labels, **GPU_PRESENT})
    return k8s.apiextensions.CustomResource(
        f"{name}-karpenter-nodepool",
        api_version=pool["apiVersion"],
        kind=pool["kind"],
        metadata=pool["metadata"],
        spec=pool["spec"],
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=[release, node_class]),
    )
