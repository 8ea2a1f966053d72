"""AWS GPU, Trainium and Inferentia environments (``AwsGpuEnvironment``), and their registry entry.

Importing this package loads no provider SDK: ``pulumi_aws`` comes with the component module
(``components.aws.environment``) and inside ``provider``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pulumi

from components.aws.args import aws_args
from components.aws.boot import aws_secret_command
from components.entry import PlatformEntry
from fullserver.platform import Platform

if TYPE_CHECKING:
    from fullserver.plan import StackPlan
    from fullserver.spec import EnvironmentSpec


def provider(plan: StackPlan, _project: str | None) -> pulumi.ProviderResource:
    """The environment's explicit provider: its region from the stack's fullserver config, not
    from ``aws:region`` or the deployer's environment; ``aws:profile`` says who deploys."""
    import pulumi_aws

    return pulumi_aws.Provider(
        f"{plan.stack}-aws", region=plan.spec.region, profile=pulumi.Config("aws").get("profile")
    )


def _secret_command(spec: EnvironmentSpec, secret: str, _project: str | None) -> list[str]:
    return aws_secret_command(spec.region, secret)


def _args(spec: EnvironmentSpec, catalog: Any, _project: Any) -> Any:
    return aws_args(spec)


ENTRY = PlatformEntry(
    platform=Platform.AWS_GPU,
    component="components.aws.environment:AwsGpuEnvironment",
    args_key="aws",
    args=_args,
    provider=provider,
    secret_command=_secret_command,
    identity_exports={"instanceRole": "instance_role", "instanceRoleArn": "instance_role_arn"},
    mock_region=lambda plan: plan.spec.region,
)
