"""The AWS Load Balancer Controller on a created EKS cluster that serves: it turns the serving
workload's LoadBalancer Service (``fullserver.kube.serve``: ``aws-load-balancer-type: external``,
IP targets) into a Network Load Balancer. EKS runs no such controller itself (EKS user guide,
"Route TCP and UDP traffic with Network Load Balancers": install the AWS Load Balancer Controller;
without it the in-tree provider would build a Classic/instance-mode load balancer from a Service it
leaves alone here).

Design notes: docs/design/components.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pulumi
import pulumi_aws as aws

from components.aws.labels import aws_tags
from components.eks.controller import Chart, Controller, Site, controller_release
from fullserver.kube import KubePlan

NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "aws-load-balancer-controller"
CHART = Chart("aws-load-balancer-controller", "3.5.0", "https://aws.github.io/eks-charts")
"""The newest release at the controller repository's snapshot (2026-08-17)."""
LB_CONTROLLER = Controller("lb-controller", "aws-load-balancer-controller", NAMESPACE, SERVICE_ACCOUNT)
POLICY_FILE = Path(__file__).resolve().parent / "data" / "aws-load-balancer-controller-v3.5.0-iam-policy.json"


def controller_policy() -> str:
    """The controller's IAM policy document for the pinned release (as its install guide gives it)."""
    return json.dumps(json.loads(POLICY_FILE.read_text()))


def lb_controller(site: Site, vpc_id: pulumi.Input[str]) -> Any:
    """The role, its policy, its credentials' wiring and the Helm release (module doc), the
    service account created by the chart."""
    values = {
        "clusterName": site.cluster.name,
        "region": site.plan.region,
        "vpcId": vpc_id,
        "serviceAccount": {"create": True},
        # Its Service webhook (failurePolicy Fail) would refuse every Service created while its own
        # pods are not ready, the charts' installed beside it included (aws-load-balancer-controller
        # #4140); the workload's Service names the controller by its annotations and needs no mutation.
        "enableServiceMutatorWebhook": False,
    }
    return controller_release(site, LB_CONTROLLER, CHART, controller_policy(), values)


METRICS_SERVER_ADDON = "metrics-server"


def metrics_server(
    name: str, plan: KubePlan, cluster: aws.eks.Cluster, parent: pulumi.Resource, after: list[Any]
) -> Any:
    """The Metrics Server EKS add-on: the HPA's CPU metric (EKS deploys no Metrics Server itself)."""
    return aws.eks.Addon(
        f"{name}-metrics-server",
        cluster_name=cluster.name,
        addon_name=METRICS_SERVER_ADDON,
        tags=aws_tags(dict(plan.cloud_labels), METRICS_SERVER_ADDON),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=after),
    )
