"""The kubeconfig a Pulumi Kubernetes provider uses to apply the workload (``fullserver:deployWorkload``).

No credential is written into it: the client runs the cloud's own credential plugin at each call
(``client.authentication.k8s.io/v1beta1`` exec), with whatever identity runs ``pulumi up``:

* GKE: ``gke-gcloud-auth-plugin`` (the Google Cloud CLI component kubectl needs since GKE 1.26);
  the endpoint is the control plane's address (``https://`` + ``Cluster.endpoint``);
* EKS: ``aws eks get-token --cluster-name <name> --region <region>``; ``Cluster.endpoint`` is
  already a URL.

JSON is a YAML subset, which is what a kubeconfig is.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from fullserver.platforms import pool_member

if TYPE_CHECKING:
    from fullserver.kube.pool import KubePlan

EXEC_API = "client.authentication.k8s.io/v1beta1"


def kubeconfig(name: str, server: str, ca_data: str, command: str, args: list[str]) -> str:
    """One cluster, one user that execs ``command``, one current context."""
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data": ca_data}}],
            "users": [
                {
                    "name": name,
                    "user": {
                        "exec": {"apiVersion": EXEC_API, "command": command, "args": args, "interactiveMode": "Never"}
                    },
                }
            ],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
            "current-context": name,
        },
        sort_keys=True,
    )


def gke_kubeconfig(name: str, endpoint: str, ca_data: str) -> str:
    server = endpoint if endpoint.startswith("https://") else f"https://{endpoint}"
    return kubeconfig(name, server, ca_data, "gke-gcloud-auth-plugin", [])


def eks_kubeconfig(name: str, endpoint: str, ca_data: str, region: str) -> str:
    args = ["eks", "get-token", "--cluster-name", name, "--region", region, "--output", "json"]
    return kubeconfig(name, endpoint, ca_data, "aws", args)


def credentials_hint(plan: KubePlan, project: str | None) -> str:
    """The command that puts the cluster's credentials into the kubeconfig (the member's
    ``PoolRules.credentials_hint``)."""
    location = plan.access.location if plan.access else plan.region
    return pool_member(plan.provider).credentials_hint(plan.cluster_name, location, plan.region, project)
