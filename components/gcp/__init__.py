"""Compute Engine GPU environments (``GcpGpuEnvironment``), their registry entry, and the Google
Cloud pieces TPU environments share (network, identity, data disk, boot metadata).

Importing this package loads no provider SDK: ``pulumi_gcp`` comes with the component module
(``components.gcp.environment``) and inside ``provider``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import pulumi

from components.entry import PlatformEntry
from components.gcp.args import gcp_args
from components.gcp.boot import gcp_secret_command
from fullserver.platform import Platform
from fullserver.platforms import gcp

if TYPE_CHECKING:
    from fullserver.plan import StackPlan
    from fullserver.spec import EnvironmentSpec


def provider(plan: StackPlan, project: str | None) -> pulumi.ProviderResource:
    """The environment's explicit provider: its project, region and zone from the stack's config,
    not from ``gcp:region`` or the deployer's environment. An explicit provider reads no ``gcp:*``
    config of its own, so the settings that say *who* deploys are forwarded
    (``gcp:credentials``, ``gcp:impersonateServiceAccount``)."""
    import pulumi_gcp

    config = pulumi.Config("gcp")
    return pulumi_gcp.Provider(
        f"{plan.stack}-gcp",
        project=project,
        region=plan.spec.region,
        zone=plan.spec.zone,
        credentials=config.get_secret("credentials"),
        impersonate_service_account=config.get("impersonateServiceAccount"),
    )


def project() -> str | None:
    """The stack's ``gcp:project``, else the variable pulumi-gcp reads it from (``gcp.PROJECT``), so
    a GKE stack whose project is only in ``GOOGLE_CLOUD_PROJECT`` builds as the plan said it would."""
    found = gcp.PROJECT.of({gcp.PROJECT.key: pulumi.Config("gcp").get("project")}, os.environ)
    return found[0] if found else None


def secret_command(_spec: EnvironmentSpec, secret: str, project: str | None) -> list[str]:
    """A Secret Manager secret read in the stack's project."""
    return [*gcp_secret_command(secret), f"--project={project}"]


def _args(spec: EnvironmentSpec, catalog: Any, project: Any) -> Any:
    return gcp_args(spec, project)


ENTRY = PlatformEntry(
    platform=Platform.GCP_GPU,
    component="components.gcp.environment:GcpGpuEnvironment",
    args_key="gcp",
    args=_args,
    provider=provider,
    project=project,
    secret_command=secret_command,
    identity_exports={"serviceAccount": "service_account"},
)
