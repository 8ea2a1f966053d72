"""Applying a ``KubePlan``'s workload to its cluster (``fullserver:deployWorkload``): shared by
``components.gke`` and ``components.eks``.

Design notes: docs/design/components.md.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.kube_negs import EndpointGroupsGone
from components.kube_volumes import DataVolumesGone
from fullserver.kube.manifest import NAMESPACE, Manifest
from fullserver.kube.model import KubePlan
from fullserver.kube.serve import SECRET_VARIABLES, lb_service_name, secret_name
from fullserver.platforms import pool_member

SecretReader = Callable[[str], pulumi.Output[str]]
"""A cloud secret's value by its name (the platform's invoke), kept secret."""


def _workload_name(manifests: list[Manifest]) -> str:
    for m in manifests:
        if m.get("kind") in ("Deployment", "Job"):
            return str(m["metadata"]["name"])
    return "workload"


def ingress_address(status: Any) -> str:
    """``status.loadBalancer.ingress[0]``'s IP or host name (a dict or an output type; "" before it exists)."""
    if status is None:
        return ""
    lb = status.get("load_balancer") or status.get("loadBalancer") if isinstance(status, dict) else status.load_balancer
    ingress = (lb.get("ingress") if isinstance(lb, dict) else getattr(lb, "ingress", None)) if lb else None
    if not ingress:
        return ""
    first = ingress[0]
    if isinstance(first, dict):
        return str(first.get("ip") or first.get("hostname") or "")
    return str(getattr(first, "ip", None) or getattr(first, "hostname", None) or "")


def serving_secret(
    name: str,
    workload: str,
    secrets: dict[str, str],
    read: SecretReader,
    labels: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> k8s.core.v1.Secret:
    """The pods' Secret: each serving secret's value (``secrets``: kind -> the cloud secret's name)
    under the variable the server reads it as, never in plain text.

    Written as ``data`` (base64), not ``stringData``: the provider applies server-side, and
    Kubernetes' Secret docs warn that "The stringData field for a Secret does not work well with
    server-side apply" (a write-only field the API server folds into ``data``, so the field
    manager never owns what it wrote: a key dropped later stays)."""
    values: dict[str, pulumi.Output[str]] = {
        SECRET_VARIABLES[kind]: pulumi.Output.secret(read(cloud).apply(_base64))
        for kind, cloud in sorted(secrets.items())
    }
    return k8s.core.v1.Secret(
        f"{name}-serving-secret",
        metadata={"name": secret_name(workload), "namespace": NAMESPACE, "labels": labels},
        type="Opaque",
        data=values,
        opts=opts,
    )


def _base64(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


def _destroy_waits(
    name: str, manifests: list[Manifest], kubeconfig: pulumi.Input[str], plan: KubePlan, opts: pulumi.ResourceOptions
) -> list[pulumi.Resource]:
    """What destroy waits for between the workload and the nodes, the drivers and the cluster: the
    pods' data volumes (``components.kube_volumes``) and, where the member's controller records
    them, the Services' load-balancer endpoint groups (``components.kube_negs``)."""
    waits: list[pulumi.Resource] = []
    volume = plan.data_volume
    if volume is not None:
        waits.append(
            DataVolumesGone(
                f"{name}-volumes",
                kubeconfig=kubeconfig,
                storage_class=volume.storage_class,
                pool=volume.provider,
                region=plan.region,
                cluster=plan.cluster_name,
                opts=opts,
            )
        )
    services = [m["metadata"] for m in manifests if m.get("kind") == "Service"]
    if services and pool_member(plan.provider).endpoint_records is not None:
        waits.append(
            EndpointGroupsGone(
                f"{name}-endpoint-groups",
                kubeconfig=kubeconfig,
                namespace=str(services[0].get("namespace") or NAMESPACE),
                services=[str(m["name"]) for m in services],
                pool=plan.provider,
                cluster=plan.cluster_name,
                opts=opts,
            )
        )
    return waits


def apply_workload(
    name: str,
    manifests: list[Manifest],
    kubeconfig: pulumi.Input[str],
    parent: pulumi.Resource,
    depends_on: list[pulumi.Resource],
    secrets: dict[str, str] | None = None,
    read: SecretReader | None = None,
    *,
    plan: KubePlan | None = None,
) -> pulumi.Output[str]:
    """The provider, the serving Secret (``secrets`` read by ``read``) and the ConfigGroup applying
    ``manifests``; returns the LoadBalancer Service's address ("" without one). With ``plan``, the
    group waits on destroy's waits (``_destroy_waits``), which wait on ``depends_on``."""
    provider = k8s.Provider(
        f"{name}-k8s",
        kubeconfig=kubeconfig,
        enable_server_side_apply=True,
        opts=pulumi.ResourceOptions(parent=parent),
    )
    waits = list(depends_on)
    if plan is not None:
        waits += _destroy_waits(
            name, manifests, kubeconfig, plan, pulumi.ResourceOptions(parent=parent, depends_on=depends_on)
        )
    if secrets and read is not None:
        labels = {"app.kubernetes.io/managed-by": "fullserver"}
        opts = pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=depends_on)
        waits.append(serving_secret(name, _workload_name(manifests), secrets, read, labels, opts))
    group = k8s.yaml.v2.ConfigGroup(
        f"{name}-workload",
        objs=manifests,
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=waits),
    )
    service = lb_service_name(manifests)
    if service is None:
        return pulumi.Output.from_input("")
    # The read's id waits on the group's output: a read with a known id runs during previews too
    # (pulumi's ReadStep: "Unlike most steps, Read steps run during previews. The only time we can't
    # run is if the ID we are given is unknown"), and before the first up the Service does not exist,
    # so a literal id failed every first preview on an attached cluster. Unknown until the group is
    # applied, the id skips that read; once the group exists the read finds the Service.
    found = k8s.core.v1.Service.get(
        f"{name}-endpoint",
        group.resources.apply(lambda _: f"{NAMESPACE}/{service}"),
        opts=pulumi.ResourceOptions(parent=parent, provider=provider, depends_on=[group]),
    )
    return found.status.apply(ingress_address)
