"""One way to install a controller on a created EKS cluster: its service account's IAM role (Pod
Identity or IRSA, as the cluster uses: ``components.eks.trust``) with its policy, then a Helm
release of its pinned chart on the system node group that depends on that wiring, so the
controller never starts without its permissions and destroy removes it before them. The Cluster
Autoscaler, the AWS Load Balancer Controller and Karpenter keep only their own chart, values,
policy and extra resources; the device plugins share ``chart_release`` (no role)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import pulumi
import pulumi_aws as aws

from components.eks.trust import service_account_role
from components.names import physical
from fullserver.kube import KubePlan

NODEGROUP_LABEL = "eks.amazonaws.com/nodegroup"
"""The label EKS puts on a managed node group's nodes (its name; EKS user guide,
managed-node-update-behavior.adoc): selects the system group, the one untainted group always up."""


class Chart(NamedTuple):
    """A pinned chart: name (or ``oci://`` reference), version, Helm repository (None for an OCI
    chart) and the release's name (None: the chart's name, as ``components.names`` fits it)."""

    chart: str
    version: str
    repo: str | None = None
    release: str | None = None


@dataclass(frozen=True)
class Controller:
    """Who a controller runs as and what its resources are called: ``role`` names the IAM role,
    its policy and association (``<stack>-<role>``), ``resource`` the Helm release's resource;
    ``account_at``: where the chart's values take the service account (name, IRSA annotation)."""

    role: str
    resource: str
    namespace: str
    service_account: str
    account_at: tuple[str, ...] = ("serviceAccount",)


@dataclass(frozen=True)
class Site:
    """Where a created cluster's controllers go: its plan, cluster, IRSA provider (None: Pod
    Identity), system node group, Kubernetes provider, parent and what every release waits for."""

    name: str
    plan: KubePlan
    cluster: aws.eks.Cluster
    oidc: aws.iam.OpenIdConnectProvider | None
    system_group: pulumi.Input[str]
    provider: pulumi.ProviderResource
    parent: pulumi.Resource
    after: Sequence[pulumi.Resource]


def chart_release(
    resource: str,
    chart: Chart,
    namespace: str,
    values: dict[str, Any],
    provider: pulumi.ProviderResource,
    parent: pulumi.Resource,
    after: Sequence[pulumi.Resource],
) -> Any:
    """A pinned chart released through the cluster's provider, named after its chart (Helm refuses a
    generated name past 53 characters) and deleted before its replacement is created (two copies would claim
    the same service account)."""
    import pulumi_kubernetes as k8s  # only for created EKS clusters and applied workloads

    return k8s.helm.v3.Release(
        resource,
        name=physical(k8s.helm.v3.Release, chart.release or chart.chart),  # components.names
        chart=chart.chart,
        version=chart.version,
        repository_opts={"repo": chart.repo} if chart.repo is not None else None,
        namespace=namespace,
        values=values,
        opts=pulumi.ResourceOptions(
            parent=parent, provider=provider, depends_on=list(after), delete_before_replace=True
        ),
    )


def controller_release(
    site: Site,
    controller: Controller,
    chart: Chart,
    policy: pulumi.Input[str],
    values: dict[str, Any],
    waits: Sequence[pulumi.Resource] = (),
) -> Any:
    """The controller's role with ``policy`` inline and its credentials' wiring, then its release
    (module doc) with the chart's own ``values``, the service account's merged in at
    ``controller.account_at`` and the system group's ``nodeSelector`` added. The release also
    waits for ``waits`` (the controller's own resources) and ``site.after``."""
    account, wiring = service_account_role(
        f"{site.name}-{controller.role}",
        dict(site.plan.cloud_labels),
        site.oidc,
        site.cluster,
        controller.namespace,
        controller.service_account,
        policy,
        pulumi.ResourceOptions(parent=site.parent),
    )
    return chart_release(
        f"{site.name}-{controller.resource}",
        chart,
        controller.namespace,
        {**merged(values, controller.account_at, account), "nodeSelector": {NODEGROUP_LABEL: site.system_group}},
        site.provider,
        site.parent,
        [*wiring, *waits, *site.after],
    )


def merged(values: dict[str, Any], path: tuple[str, ...], more: dict[str, Any]) -> dict[str, Any]:
    """``values`` with ``more`` merged into the map at ``path`` (made where missing), copied."""
    if not path:
        return {**values, **more}
    head, *rest = path
    return {**values, head: merged(values.get(head, {}), tuple(rest), more)}
