"""The kubeconfig a Pulumi Kubernetes provider uses to apply the workload (``fullserver:deployWorkload``).

No credential is written into it: the client runs the cloud's own credential plugin at each call
(``client.authentication.k8s.io/v1beta1`` exec), with whatever identity runs ``pulumi up``:
see the design notes.

Design notes: docs/design/kubernetes.md.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from fullserver.kube.access import through_dns
from fullserver.platforms import pool_member

if TYPE_CHECKING:
    from fullserver.kube.pool import KubePlan

EXEC_API = "client.authentication.k8s.io/v1beta1"


def kubeconfig(name: str, server: str, ca_data: str | None, command: str, args: list[str]) -> str:
    """One cluster, one user that execs ``command``, one current context; ``ca_data`` ``None``:
    the server's certificate is verified against the system's roots."""
    cluster = {"server": server} | ({} if ca_data is None else {"certificate-authority-data": ca_data})
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": cluster}],
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


def gke_kubeconfig(name: str, endpoint: str, ca_data: str, *, dns: bool = False) -> str:
    """``dns``: ``endpoint`` is the cluster's DNS endpoint (no cluster CA: module doc)."""
    server = endpoint if endpoint.startswith("https://") else f"https://{endpoint}"
    return kubeconfig(name, server, None if dns else ca_data, "gke-gcloud-auth-plugin", [])


def eks_kubeconfig(name: str, endpoint: str, ca_data: str, region: str, profile: str | None = None) -> str:
    """``profile``: the named AWS profile the token is asked with, the one that deployed (and so
    administers) a created cluster; none: the caller's default credentials."""
    args = ["eks", "get-token", "--cluster-name", name, "--region", region, "--output", "json"]
    return kubeconfig(name, endpoint, ca_data, "aws", [*args, *(["--profile", profile] if profile else [])])


def credentials_hint(plan: KubePlan, project: str | None) -> str:
    """The command that puts the cluster's credentials into the kubeconfig (the member's
    ``PoolRules.credentials_hint``)."""
    location = plan.access.location if plan.access else plan.region
    member = pool_member(plan.provider)
    return member.credentials_hint(plan.cluster_name, location, plan.region, project, through_dns(plan))


def connect_command(plan: KubePlan, location: str, project: str) -> str:
    """The command that writes the cluster's kubeconfig, pointed at the endpoint that answers
    (``through_dns``): the components' ``connect`` export."""
    return pool_member(plan.provider).connect(plan.cluster_name, location, plan.region, project, through_dns(plan))
