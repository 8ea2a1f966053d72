"""HTTPS in front of a GKE serving pool: a Gateway with a Certificate Manager certificate.

A GKE ``LoadBalancer`` Service is a passthrough Network Load Balancer, which cannot terminate TLS.
So with ``fullserver:serving.domains`` the model server sits behind GKE's Gateway controller
instead (GKE "Deploying Gateways", "Secure a Gateway"): see the design notes.

Design notes: docs/design/platforms.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fullserver.platforms import gcp
from fullserver.platforms.base import RFC1035, NameRule
from fullserver.platforms.name_rule import fit_to

if TYPE_CHECKING:
    from fullserver.platforms.reads import EndpointReads

GATEWAY_CLASS = "gke-l7-global-external-managed"
GATEWAY_API = "gateway.networking.k8s.io/v1"
POLICY_API = "networking.gke.io/v1"
CERTMAP_ANNOTATION = "networking.gke.io/certmap"
NEG_ANNOTATION = "cloud.google.com/neg"
NEG_VALUE = json.dumps({"ingress": True})
"""Container-native load balancing (GKE "Container-native load balancing through Ingress": the
Service annotation that asks for NEGs; the default on VPC-native clusters since 1.17.6-gke.7,
said explicitly so an attached cluster's defaults do not decide it)."""
GATEWAY_CHANNEL = "CHANNEL_STANDARD"
"""pulumi-gcp ``container.Cluster.gateway_api_config.channel``: the Gateway API's standard CRDs."""
ATTACHED_GATEWAY = (
    "the attached GKE cluster must have the Gateway API enabled (gcloud container clusters update CLUSTER "
    "--gateway-api=standard) and be VPC-native with HTTP load balancing: the endpoint's HTTPS Gateway needs them"
)

CERTIFICATE = "gcp:certificatemanager/certificate:Certificate"
CERTIFICATE_MAP = "gcp:certificatemanager/certificateMap:CertificateMap"
CERTIFICATE_MAP_ENTRY = "gcp:certificatemanager/certificateMapEntry:CertificateMapEntry"
GLOBAL_ADDRESS = "gcp:compute/globalAddress:GlobalAddress"
# pulumi-gcp 10.2 certificatemanager.Certificate.name: "1-64 characters long, and match the regular
# expression [a-zA-Z][a-zA-Z0-9_-]*". Maps and entries state only their resource path there; they
# are held to the same form, and every name here is a lowercase RFC 1035 label within 63, which
# fits both.
_SOURCE = "pulumi-gcp certificatemanager.Certificate.name"
NAME_RULES: dict[str, tuple[NameRule, ...]] = {
    t: (NameRule(f"{t.rsplit(':', 1)[1]} name", 63, *RFC1035, _SOURCE),)
    for t in (CERTIFICATE, CERTIFICATE_MAP, CERTIFICATE_MAP_ENTRY)
}


def fit_name(type_token: str, text: str) -> str:
    """``text`` fitted to the ``name`` rule of ``type_token`` (Compute Engine's, or this module's):
    read here, not through ``fullserver.naming``, which reads every platform's rules, this one's too."""
    rule = next(r for r in {**gcp.NAME_RULES, **NAME_RULES}[type_token] if r.field == "name")
    return fit_to(rule, text)


@dataclass(frozen=True)
class GatewayNames:
    """The cloud names the manifests and the component share: the manifests name the address and
    the map before ``pulumi up`` builds them."""

    address: str
    certificate: str
    certificate_map: str
    entries: tuple[str, ...]
    """One certificate map entry per domain (its ``hostname``)."""


def gateway_names(environment: str, domains: list[str]) -> GatewayNames:
    """Names the APIs accept for any environment name (fitted as ``fullserver.naming.fit_name`` does)."""
    return GatewayNames(
        address=fit_name(GLOBAL_ADDRESS, f"{environment}-gateway"),
        certificate=fit_name(CERTIFICATE, f"{environment}-cert"),
        certificate_map=fit_name(CERTIFICATE_MAP, f"{environment}-certmap"),
        entries=tuple(fit_name(CERTIFICATE_MAP_ENTRY, f"{environment}-entry{i}") for i in range(len(domains))),
    )


def _meta(name: str, labels: dict[str, str], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": labels}
    if annotations:
        meta["annotations"] = annotations
    return meta


def _target(service: str) -> dict[str, str]:
    return {"group": "", "kind": "Service", "name": service}


def front(
    environment: str, service: str, labels: dict[str, str], endpoint: EndpointReads, domains: list[str]
) -> list[dict[str, Any]]:
    """The Gateway, its route to ``service`` (port ``endpoint.lb_port``) and the policies that
    check the server's health and keep long generations open (module doc)."""
    names = gateway_names(environment, domains)
    tls_port = endpoint.tls.port if endpoint.tls is not None else 443
    gateway = {
        "apiVersion": GATEWAY_API,
        "kind": "Gateway",
        "metadata": _meta(service, labels, {CERTMAP_ANNOTATION: names.certificate_map}),
        "spec": {
            "gatewayClassName": GATEWAY_CLASS,
            "listeners": [{"name": "https", "protocol": "HTTPS", "port": tls_port}],
            "addresses": [{"type": "NamedAddress", "value": names.address}],
        },
    }
    route = {
        "apiVersion": GATEWAY_API,
        "kind": "HTTPRoute",
        "metadata": _meta(service, labels),
        "spec": {
            "parentRefs": [{"name": service, "sectionName": "https"}],
            "hostnames": list(domains),
            "rules": [{"backendRefs": [{"name": service, "port": endpoint.lb_port}]}],
        },
    }
    health = {
        "apiVersion": POLICY_API,
        "kind": "HealthCheckPolicy",
        "metadata": _meta(service, labels),
        "spec": {
            "default": {
                "checkIntervalSec": endpoint.health_interval_seconds,
                "healthyThreshold": endpoint.healthy_threshold,
                "unhealthyThreshold": endpoint.unhealthy_threshold,
                "config": {
                    "type": "HTTP",
                    "httpHealthCheck": {
                        "portSpecification": "USE_SERVING_PORT",
                        "requestPath": endpoint.server.health_path,
                    },
                },
            },
            "targetRef": _target(service),
        },
    }
    backend = {
        "apiVersion": POLICY_API,
        "kind": "GCPBackendPolicy",
        "metadata": _meta(service, labels),
        "spec": {
            "default": {
                "timeoutSec": endpoint.request_timeout_seconds,
                "connectionDraining": {"drainingTimeoutSec": endpoint.drain_seconds},
            },
            "targetRef": _target(service),
        },
    }
    return [gateway, route, health, backend]


def fronted_service(spec: dict[str, Any], annotations: dict[str, str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The Service behind the Gateway: ``ClusterIP`` (no load balancer of its own) with NEGs."""
    kept = {k: v for k, v in spec.items() if k not in ("type", "externalTrafficPolicy")}
    return {"type": "ClusterIP", **kept}, {NEG_ANNOTATION: NEG_VALUE, **annotations}


@dataclass(frozen=True)
class Front:
    """What a workload's Gateway asks the cloud for (read back from the manifests by the component)."""

    names: GatewayNames
    domains: tuple[str, ...]


def front_of(manifests: list[dict[str, Any]], environment: str) -> Front | None:
    """The Gateway's names and domains among ``manifests``, or ``None`` without one."""
    route = next((m for m in manifests if m.get("kind") == "HTTPRoute"), None)
    if route is None:
        return None
    domains = [str(d) for d in route["spec"]["hostnames"]]
    return Front(gateway_names(environment, domains), tuple(domains))
