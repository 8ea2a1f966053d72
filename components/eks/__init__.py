"""EKS GPU managed node groups (``eks-gpu``): the cluster when one is created, the node groups,
and the registry entry.

Design notes: docs/design/components.md.
"""

from __future__ import annotations

import importlib
import json
from typing import TYPE_CHECKING, Any

import pulumi

from components import aws
from components.aws.boot import aws_secret_command
from components.eks.args import EksArgs, eks_args
from components.entry import PlatformEntry
from fullserver.kube.manifest import default_workload
from fullserver.platform import Platform

if TYPE_CHECKING:
    from fullserver.spec import EnvironmentSpec

__all__ = ["ENTRY", "EksArgs", "EksEnvironment", "autoscaler_tags", "eks_args", "launch_template_inputs"]


def _args(spec: EnvironmentSpec, _catalog: Any, _project: Any) -> EksArgs:
    plan = spec.kube
    assert plan is not None, "an EKS spec carries its KubePlan (fullserver.sizing.kube_spec)"
    access = plan.access
    return eks_args(
        plan,
        access.subnets if access else None,
        private_endpoint=access.private_endpoint if access else False,
        identity=access.identity if access else "pod-identity",
        workload=default_workload(plan, spec),
        deploy_workload=plan.deploy_workload,
        serving_secrets=spec.endpoint.server.secrets if spec.endpoint is not None else None,
        aws_profile=pulumi.Config("aws").get("profile"),  # who deploys: the AWS provider's too
    )


def exports(spec: EnvironmentSpec, inner: pulumi.ComponentResource) -> dict[str, Any]:
    """The cluster, the node groups and the workload's manifests (``kubectl apply -f``)."""
    return {
        "cluster": getattr(inner, "cluster_name", ""),
        "nodePools": getattr(inner, "node_group_names", []),
        "workload": pulumi.Output.from_input(getattr(inner, "workload", "[]")).apply(json.loads),
    }


_LAZY = {"EksEnvironment", "autoscaler_tags", "launch_template_inputs"}


def __getattr__(name: str) -> Any:
    """The component and its helpers, imported (with ``pulumi_aws``) on first use."""
    if name in _LAZY:
        return getattr(importlib.import_module("components.eks.environment"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


ENTRY = PlatformEntry(
    platform=Platform.EKS_GPU,
    component="components.eks.environment:EksEnvironment",
    args_key="eks_gpu",
    args=_args,
    provider=aws.provider,
    secret_command=lambda spec, secret, _project: aws_secret_command(spec.region, secret),  # an SSM parameter
    identity_exports={"instanceRole": "instance_role", "instanceRoleArn": "instance_role_arn"},
    exports=exports,
    mock_region=lambda plan: plan.spec.region,
)
