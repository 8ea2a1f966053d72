"""The names Kubernetes and Helm accept for the objects the node-pool platforms build (``NAME_RULES``),
and the objects a ``yaml/v2:ConfigGroup`` creates, read out of its inputs (``NAME_MEMBERS``).

Shared by every member of the node-pool family (GKE and EKS build the same kinds), so it registers
no platform. Sources: see the design notes.

Design notes: docs/design/platforms.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from fullserver.platforms.base import RFC1035, NameRule

AUTONAME_HEX = 8
"""pulumi-kubernetes' autoname: ``<logical>-`` and eight random hex characters (``NewUniqueHex``)."""

RFC1123 = "a-z0-9-", "a-z0-9", "a-z0-9"
"""A DNS-1123 label's characters: ``[a-z0-9]([-a-z0-9]*[a-z0-9])?``; a subdomain is such labels
joined by ``.`` (``separator``)."""

RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"
SERVICE_TYPE = "kubernetes:core/v1:Service"
JOB_TYPE = "kubernetes:batch/v1:Job"
JOB_TTL_HOURS = 24
"""How long a finished training Job stays (``ttlSecondsAfterFinished``): a working day to read its
status and its pods' logs. Its nodes do not wait for it: finished pods request nothing, so the
pool scales to zero when they end. The TTL-after-finished controller (stable since Kubernetes
1.23, https://kubernetes.io/docs/concepts/workloads/controllers/ttlafterfinished/) deletes it."""
STORAGE_CLASS_TYPE = "kubernetes:storage.k8s.io/v1:StorageClass"
CONFIG_GROUP_TYPE = "kubernetes:yaml/v2:ConfigGroup"
COMPUTE_CLASS_TYPE = "kubernetes:cloud.google.com/v1:ComputeClass"

_NAME = "metadata.name"
_K8S = "Kubernetes object names"
_JOB_DOC = "Kubernetes Jobs"


def _subdomain(kind: str, max_len: int = 253, source: str = _K8S) -> NameRule:
    return NameRule(f"{kind} name", max_len, *RFC1123, source, field=_NAME, autoname_hex=AUTONAME_HEX, separator=".")


NAME_RULES: dict[str, tuple[NameRule, ...]] = {
    RELEASE_TYPE: (
        NameRule(
            "Helm release name",
            53,
            *RFC1123,
            "Helm (chartutil.ValidateReleaseName)",
            autoname_hex=AUTONAME_HEX,
            separator=".",
        ),
    ),
    SERVICE_TYPE: (NameRule("Service name", 63, *RFC1035, _K8S, field=_NAME, autoname_hex=AUTONAME_HEX),),
    JOB_TYPE: (
        _subdomain("Job", 63, _JOB_DOC),
        NameRule("pod subdomain", 63, *RFC1123, _K8S, field="spec.template.spec.subdomain", autoname=False),
    ),
    "kubernetes:apps/v1:Deployment": (_subdomain("Deployment"),),
    "kubernetes:core/v1:Secret": (_subdomain("Secret"),),
    "kubernetes:core/v1:ConfigMap": (_subdomain("ConfigMap"),),
    "kubernetes:core/v1:ServiceAccount": (_subdomain("ServiceAccount"),),
    "kubernetes:autoscaling/v2:HorizontalPodAutoscaler": (_subdomain("HorizontalPodAutoscaler"),),
    STORAGE_CLASS_TYPE: (_subdomain("StorageClass"),),
    "kubernetes:monitoring.googleapis.com/v1:PodMonitoring": (_subdomain("PodMonitoring"),),
    # GKE labels the nodes it makes with the class's name (cloud.google.com/compute-class), so a label
    # value's 63 ("About custom ComputeClasses", https://cloud.google.com/kubernetes-engine/docs/concepts/about-custom-compute-classes)
    COMPUTE_CLASS_TYPE: (_subdomain("ComputeClass", 63),),
    # the Gateway API's and GKE's policy objects take ordinary object names (custom resources: a
    # DNS-1123 subdomain, https://gateway-api.sigs.k8s.io/reference/spec/)
    "kubernetes:gateway.networking.k8s.io/v1:Gateway": (_subdomain("Gateway"),),
    "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute": (_subdomain("HTTPRoute"),),
    "kubernetes:networking.gke.io/v1:HealthCheckPolicy": (_subdomain("HealthCheckPolicy"),),
    "kubernetes:networking.gke.io/v1:GCPBackendPolicy": (_subdomain("GCPBackendPolicy"),),
}


def type_token(manifest: Mapping[str, Any]) -> str:
    """The Pulumi type token of a manifest (``apps/v1`` ``Deployment`` ->
    ``kubernetes:apps/v1:Deployment``; the core group ``v1`` is ``core/v1``)."""
    version = str(manifest.get("apiVersion", ""))
    return f"kubernetes:{version if '/' in version else f'core/{version}'}:{manifest.get('kind', '')}"


def config_group_objects(inputs: Mapping[str, Any]) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """The objects a ``yaml/v2:ConfigGroup`` creates from its ``objs``: (type token, name, manifest).
    The mock runtime does not run the group's provider, so its children are read here."""
    for obj in inputs.get("objs") or ():
        if isinstance(obj, Mapping):
            name = str((obj.get("metadata") or {}).get("name", ""))
            yield type_token(obj), name, obj


NAME_MEMBERS = {CONFIG_GROUP_TYPE: config_group_objects}
"""Component types whose inputs carry the objects they create (``fullserver.naming``)."""
