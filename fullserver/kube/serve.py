"""A serving profile on node pools: the load balancer in front of the Deployment, the API key the
pods read, and the metric the HorizontalPodAutoscaler holds (``fullserver.kube.manifest.serving``
builds the objects from these).

Design notes: docs/design/kubernetes.md.
"""

from __future__ import annotations

import math
import shlex
from typing import TYPE_CHECKING, Any

from fullserver.platforms import pool_member, pool_members, rules_for
from fullserver.tls import ClearText, clear_text

if TYPE_CHECKING:
    from fullserver.kube.pool import KubePlan
    from fullserver.serving import ServingSpec
    from fullserver.tls import Tls

SECRET_VARIABLES = {"api_key": "VLLM_API_KEY", "token": "HF_TOKEN"}
"""What the model server reads each serving secret as (the VM path's ``components.startup``)."""
SECRET_ANNOTATION = "fullserver/secret"
HOST_ANNOTATION = "fullserver/host"
"""On the Service when the stack names ``serving.domains``: the endpoint's host (the first)."""
PLAIN_HTTP_ANNOTATION = "fullserver/plain-http"
"""On an internet-facing Service without TLS whose stack set ``serving.plainHttp: true``: what the
component and the policy pack read (``clear_text_of``) to tell an accepted risk from an oversight."""
AWAIT_ANNOTATION = "pulumi.com/timeoutSeconds"
"""How long ``pulumi up`` waits for an object to be ready (pulumi-kubernetes ``pkg/metadata``
``TimeoutDuration``). Its default for a Deployment and a Service is 10 minutes ("If the Service has
not reached a Ready state after 10 minutes, it will time out", pulumi-kubernetes' Service and
Deployment docs), and a LoadBalancer Service is ready only when its endpoints are (no "not ready"
endpoints, then an external address): both wait for a model server that loads for longer."""
NODE_AND_IMAGE_SECONDS = 20 * 60
"""Before the model loads: a GPU node from zero (the autoscaler's scale-up, the node's boot and its
driver) and the model server's image pull (vLLM's images are several GB). An allowance, not a
measured figure: too long only delays the report of a pod that never becomes ready."""


def await_seconds(load_seconds: int) -> str:
    """``AWAIT_ANNOTATION``'s value for a server that loads its model in ``load_seconds``."""
    return str(NODE_AND_IMAGE_SECONDS + load_seconds)


HPA_CPU_NOTE = "CPU utilisation: every cluster has it; set fullserver:serving.podMetrics for vLLM's queue size"


def service_annotations(
    provider: str,
    scheme: str,
    health_path: str,
    tls: Tls | None = None,
    request_timeout_seconds: int = 0,
    lb_port: int = 80,
) -> dict[str, str]:
    """The LoadBalancer Service's annotations for the member and the scheme (module doc; the
    member's ``PoolRules.service_annotations``: on EKS with ``serving.certificateArn`` the NLB's TLS
    listener, without it the plain TCP listener's idle timeout)."""
    return pool_member(provider).service_annotations(scheme, health_path, tls, request_timeout_seconds, lb_port)


def service_ports(lb_port: int, tls: Tls | None) -> list[dict[str, Any]]:
    """Port 80 to the server's named port; with TLS (EKS) only the TLS port: an L4 listener cannot
    answer the redirect the VM path's port 80 gives, and plain HTTP would carry the API key in clear."""
    port, name = (tls.port, "https") if tls is not None else (lb_port, "http")
    return [{"name": name, "port": port, "targetPort": "http", "protocol": "TCP"}]


def endpoint_of(manifests: list[dict[str, Any]], address: str | None) -> str:
    """The endpoint clients call once the load balancer has ``address``: ``https://<first domain>``
    behind a Gateway (its ``HTTPRoute``'s hostnames) or when the Service names its host
    (``HOST_ANNOTATION``), ``https://<address>`` with a TLS port, else ``http://<address>``
    (``None``: what stands in for it before ``pulumi up``)."""
    for m in manifests:
        if m.get("kind") == "HTTPRoute" and m["spec"].get("hostnames"):
            return f"https://{m['spec']['hostnames'][0]}"
    for m in manifests:
        if m.get("kind") != "Service" or (m.get("spec") or {}).get("type") != "LoadBalancer":
            continue
        host = ((m.get("metadata") or {}).get("annotations") or {}).get(HOST_ANNOTATION)
        https = any(p.get("name") == "https" for p in m["spec"].get("ports", []))
        scheme = "https" if https else "http"
        if host:
            return f"https://{host}"
        return f"{scheme}://{address}" if address else f"{scheme}://<load balancer address, known after pulumi up>"
    return ""


def _member_scheme(annotations: dict[str, str]) -> tuple[str, str] | None:
    """(cloud, scheme) of a LoadBalancer Service by the annotations a member writes: each member's
    internal scheme is the annotations its internal Service has and its external one lacks."""
    for member in pool_members():
        external = set(member.service_annotations("external", "/", None, 0, 80).items())
        internal = set(member.service_annotations("internal", "/", None, 0, 80).items())
        if not {k for k, _ in external | internal} & set(annotations):
            continue
        cloud = rules_for(next(iter(member.sized_as.values()))).provider
        return cloud, "internal" if internal - external <= set(annotations.items()) else "external"
    return None


def clear_text_of(manifests: list[dict[str, Any]]) -> ClearText | None:
    """``fullserver.tls.clear_text`` on a workload's manifests as they will be applied (the component
    before applying them, the policy pack on the applied group): each LoadBalancer Service's scheme,
    whether it listens with TLS (a port named ``https``), and ``PLAIN_HTTP_ANNOTATION``. A Service
    no member's annotations describe is left to its cluster's own defaults and not judged."""
    for m in manifests:
        if m.get("kind") != "Service" or (m.get("spec") or {}).get("type") != "LoadBalancer":
            continue
        annotations = {str(k): str(v) for k, v in ((m.get("metadata") or {}).get("annotations") or {}).items()}
        found = _member_scheme(annotations)
        if found is None:
            continue
        https = any(p.get("name") == "https" for p in m["spec"].get("ports", []))
        verdict = clear_text(*found, https, annotations.get(PLAIN_HTTP_ANNOTATION) == "true")
        if verdict is not None:
            return verdict
    return None


def secret_name(workload: str) -> str:
    """The Kubernetes Secret the pods read the serving secrets from."""
    return f"{workload}-serving"


def secret_env(workload: str, kinds: list[str]) -> list[dict[str, Any]]:
    """The container's environment: each serving secret by ``secretKeyRef`` (never its value)."""
    name = secret_name(workload)
    return [
        {"name": SECRET_VARIABLES[k], "valueFrom": {"secretKeyRef": {"name": name, "key": SECRET_VARIABLES[k]}}}
        for k in sorted(kinds)
    ]


def lb_service_name(manifests: list[dict[str, Any]]) -> str | None:
    """The LoadBalancer Service among the workload's manifests (the endpoint), if any."""
    for m in manifests:
        if m.get("kind") == "Service" and m.get("spec", {}).get("type") == "LoadBalancer":
            return str(m["metadata"]["name"])
    return None


def manual_endpoint(manifests: list[dict[str, Any]]) -> str:
    """The endpoint of manifests applied by hand (no ``deployWorkload``): where its address is
    read; "" for a workload without a LoadBalancer Service or a Gateway."""
    if any(m.get("kind") == "HTTPRoute" for m in manifests):
        return endpoint_of(manifests, None)
    service = lb_service_name(manifests)
    if service is None:
        return ""
    return endpoint_of(manifests, f"<address of Service {service}: kubectl get service {service} --namespace default>")


def read_command(provider: str, region: str, secret: str) -> list[str]:
    """The command that prints a cloud secret's value with the caller's credentials."""
    return pool_member(provider).read_secret(region, secret)


def create_secret_command(plan: KubePlan, workload: str, secrets: dict[str, str]) -> str:
    """How to create the pods' Secret when the manifests are applied by hand (the value is read
    from the cloud's store by the caller's shell, never written anywhere by fullserver)."""
    literals = " ".join(
        f'--from-literal={SECRET_VARIABLES[kind]}="$({shlex.join(read_command(plan.provider, plan.region, cloud))})"'
        for kind, cloud in sorted(secrets.items())
    )
    return f"kubectl create secret generic {secret_name(workload)} --namespace default {literals}"


def queue_target(endpoint: ServingSpec) -> int:
    """Requests waiting per pod the HPA holds: what a replica serves in a second at its target utilisation."""
    return max(1, math.floor(endpoint.replica_requests_per_second * endpoint.target_utilisation))


def hpa_metrics(provider: str, endpoint: ServingSpec) -> list[dict[str, Any]]:
    """The HPA's metric (module doc): vLLM's queue size per pod with ``podMetrics`` (as the
    member's adapter names it, ``PoolRules.pod_metric``), else CPU."""
    if endpoint.pod_metrics:
        name = pool_member(provider).pod_metric
        return [
            {
                "type": "Pods",
                "pods": {
                    "metric": {"name": name},
                    "target": {"type": "AverageValue", "averageValue": str(queue_target(endpoint))},
                },
            }
        ]
    return [
        {
            "type": "Resource",
            "resource": {
                "name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": round(endpoint.target_utilisation * 100)},
            },
        }
    ]


def serving_warnings(plan: KubePlan, endpoint: ServingSpec) -> list[str]:
    """What the plan says of a serving pool: the HPA's metric, and what an attached cluster must run."""
    rules = pool_member(plan.provider)
    out = []
    if not endpoint.pod_metrics:
        out.append(
            f"the {plan.provider.upper()} HorizontalPodAutoscaler holds CPU utilisation, a poor signal for a GPU "
            f"server; for vLLM's queue size install {rules.pod_metrics_install}, then set fullserver:serving.podMetrics: true"
        )
    if not plan.create_cluster:
        fronted = rules.tls_front is not None and endpoint.tls is not None
        out += [rules.tls_front.attached_needs] if rules.tls_front is not None and fronted else []
        out += [rules.attached_load_balancer] if rules.attached_load_balancer else []
        out += [rules.attached_metrics_server] if rules.attached_metrics_server and not endpoint.pod_metrics else []
    return out
