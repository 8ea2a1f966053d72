"""``GkeArgs``: what ``GkeEnvironment`` takes, built from a ``KubePlan`` (no provider SDK here, so
``components.environment`` can name the type without loading ``pulumi_gcp``).

The plan and the manifests travel as JSON text: the component package's schema (other languages)
then types every input, and the component reads them back with ``KubePlan.model_validate_json``.
"""

import json
from typing import NotRequired, TypedDict

from fullserver.kube import KubePlan
from fullserver.kube.manifest import Manifest


class GkeArgs(TypedDict):
    plan: str
    """``KubePlan`` as JSON (``fullserver.kube``)."""
    project: str
    cluster_location: str
    """Where the cluster lives: the region for a created (regional) cluster; an attached cluster's own."""
    private_endpoint: bool
    """Created clusters: the control plane only on its private address."""
    workload: str
    """The workload's manifests as a JSON list (``fullserver.kube.manifest``), exported for ``kubectl apply``."""
    deploy_workload: bool
    """Apply them to the cluster with pulumi-kubernetes (``components.kube_workload``)."""
    serving_secrets: NotRequired[dict[str, str]]
    """A serving workload's secrets, kind (``api_key``, ``token``) -> the cloud secret's name, read at
    deploy time into the pods' Kubernetes Secret (``fullserver.kube.serve``); only with ``deploy_workload``."""


def gke_args(
    plan: KubePlan,
    project: str,
    *,
    cluster_location: str | None = None,
    private_endpoint: bool = False,
    workload: list[Manifest] | None = None,
    deploy_workload: bool = False,
    serving_secrets: dict[str, str] | None = None,
) -> GkeArgs:
    if plan.provider != "gke":
        raise ValueError(f"{plan.platform.value} is not a GKE plan")
    args = GkeArgs(
        plan=plan.model_dump_json(),
        project=project,
        cluster_location=cluster_location or plan.region,
        private_endpoint=private_endpoint,
        workload=json.dumps(list(workload or [])),
        deploy_workload=deploy_workload,
    )
    if serving_secrets:
        args["serving_secrets"] = dict(serving_secrets)
    return args
