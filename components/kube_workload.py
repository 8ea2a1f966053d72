"""Applying a ``KubePlan``'s workload to its cluster (``fullserver:deployWorkload``): shared by
``components.gke`` and ``components.eks``.

A Pulumi Kubernetes provider on the cluster's kubeconfig (``fullserver.kube.kubeconfig``: the
cloud's credential plugin, no stored token; server-side apply, the v4 default, said explicitly)
and a ``yaml.v2.ConfigGroup`` of the manifests (``fullserver.kube.manifest``), which orders the
objects and waits for them to be ready. It depends on the node pools, so a Job or Deployment is
created once its nodes can exist.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from fullserver.kube.manifest import Manifest


def apply_workload(
    name: str,
    manifests: list[Manifest],
    kubeconfig: pulumi.Input[str],
    parent: pulumi.Resource,
    depends_on: list[pulumi.Resource],
) -> Any:
    """The provider and the ConfigGroup applying ``manifests`` (returns the group)."""
    provider = k8s.Provider(
        f"{name}-k8s",
        kubeconfig=kubeconfig,
        enable_server_side_apply=True,
        opts=pulumi.ResourceOptions(parent=parent),
    )
    return k8s.yaml.v2.ConfigGroup(
        f"{name}-workload",
        objs=manifests,
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=depends_on),
    )
