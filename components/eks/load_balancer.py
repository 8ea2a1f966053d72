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
from components.eks.trust import service_account_role
from components.names import physical
from fullserver.kube import KubePlan

NAMESPACE = "kube-system"
SERVICE_ACCOUNT = "aws-load-balancer-controller"
CHART = ("aws-load-balancer-controller", "3.5.0", "https://aws.github.io/eks-charts")
"""(chart, version, repository): the newest release at the controller repository's snapshot (2026-08-17)."""
POLICY_FILE = Path(__file__).resolve().parent / "data" / "aws-load-balancer-controller-v3.5.0-iam-policy.json"


def controller_policy() -> str:
    """The controller's IAM policy document for the pinned release (as its install guide gives it)."""
    return json.dumps(json.loads(POLICY_FILE.read_text()))


def lb_controller(
    name: str,
    plan: KubePlan,
    cluster: aws.eks.Cluster,
    oidc: aws.iam.OpenIdConnectProvider | None,
    vpc_id: pulumi.Input[str],
    system_group: pulumi.Input[str],
    provider: pulumi.ProviderResource,
    parent: pulumi.Resource,
    after: list[pulumi.Resource],
) -> Any:
    """The role, its policy, its credentials' wiring and the Helm release (module doc); ``oidc``:
    IRSA's provider, else Pod Identity."""
    import pulumi_kubernetes as k8s  # only for created EKS clusters and applied workloads

    chart, version, repo = CHART
    child = pulumi.ResourceOptions(parent=parent)
    tags = dict(plan.cloud_labels)
    service_account, waits = service_account_role(
        f"{name}-lb-controller", tags, oidc, cluster, NAMESPACE, SERVICE_ACCOUNT, controller_policy(), child
    )
    service_account["create"] = True
    waits += after
    return k8s.helm.v3.Release(
        f"{name}-aws-load-balancer-controller",
        name=physical(k8s.helm.v3.Release, chart),  # named after its chart (components.names)
        chart=chart,
        version=version,
        repository_opts={"repo": repo},
        namespace=NAMESPACE,
        values={
            "clusterName": cluster.name,
            "region": plan.region,
            "vpcId": vpc_id,
            "serviceAccount": service_account,
            "nodeSelector": {"eks.amazonaws.com/nodegroup": system_group},
        },
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=waits, delete_before_replace=True),
    )


METRICS_SERVER_ADDON = "metrics-server"


def metrics_server(
    name: str, plan: KubePlan, cluster: aws.eks.Cluster, parent: pulumi.Resource, after: list[Any]
) -> Any:
    """The Metrics Server EKS add-on (module doc): the HPA's resource metrics."""
    return aws.eks.Addon(
        f"{name}-metrics-server",
        cluster_name=cluster.name,
        addon_name=METRICS_SERVER_ADDON,
        tags=aws_tags(dict(plan.cloud_labels), METRICS_SERVER_ADDON),
        opts=pulumi.ResourceOptions(parent=parent, depends_on=after),
    )
