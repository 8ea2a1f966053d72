"""GKE accelerator node pools (``gke-gpu``, ``gke-tpu``): the cluster when one is created, the pools,
and their registry entries.

Design notes: docs/design/components.md.
"""

from __future__ import annotations

import importlib
import json
from typing import TYPE_CHECKING, Any

import pulumi

from components import gcp
from components.args import refuse
from components.entry import PlatformEntry
from components.gke.args import GkeArgs, gke_args
from fullserver.kube.manifest import default_workload
from fullserver.platform import Platform

if TYPE_CHECKING:
    from fullserver.spec import EnvironmentSpec

__all__ = ["ENTRIES", "GkeArgs", "GkeEnvironment", "gke_args"]


def _args(spec: EnvironmentSpec, _catalog: Any, project: Any) -> GkeArgs:
    plan = spec.kube
    assert plan is not None, "a GKE spec carries its KubePlan (fullserver.sizing.kube_spec)"
    if not project:
        raise refuse("project", "a GKE environment needs its Google Cloud project", "pulumi config set gcp:project ID")
    access = plan.access
    return gke_args(
        plan,
        str(project),
        cluster_location=access.location if access else None,
        private_endpoint=access.private_endpoint if access else False,
        workload=default_workload(plan, spec),
        deploy_workload=plan.deploy_workload,
        serving_secrets=spec.endpoint.server.secrets if spec.endpoint is not None else None,
    )


def exports(spec: EnvironmentSpec, inner: pulumi.ComponentResource) -> dict[str, Any]:
    """The cluster, the pools and the workload's manifests (``kubectl apply -f``)."""
    return {
        "cluster": getattr(inner, "cluster_name", ""),
        "nodePools": getattr(inner, "node_pools", []),
        "workload": pulumi.Output.from_input(getattr(inner, "workload", "[]")).apply(json.loads),
    }


def __getattr__(name: str) -> Any:
    """``GkeEnvironment``, imported (with ``pulumi_gcp``) on first use."""
    if name == "GkeEnvironment":
        return importlib.import_module("components.gke.environment").GkeEnvironment
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _entry(platform: Platform, key: str) -> PlatformEntry:
    return PlatformEntry(
        platform=platform,
        component="components.gke.environment:GkeEnvironment",
        args_key=key,
        args=_args,
        provider=gcp.provider,
        project=gcp.project,
        secret_command=gcp.secret_command,  # the serving API key: a Secret Manager secret, as on gcp-gpu
        identity_exports={"serviceAccount": "service_account"},
        exports=exports,
    )


ENTRIES = {Platform.GKE_GPU: _entry(Platform.GKE_GPU, "gke_gpu"), Platform.GKE_TPU: _entry(Platform.GKE_TPU, "gke_tpu")}
"""One package, two platforms: the registry reads ``ENTRIES`` where a package defines it."""
