"""The workload a ``KubePlan``'s pools run, as Kubernetes objects (plain dicts, apply-ready).

Design notes: docs/design/kubernetes.md.
"""

from __future__ import annotations

from typing import Any

from fullserver.kube import serve
from fullserver.kube.fallback import fallback_members
from fullserver.kube.pool import KubePlan
from fullserver.kube.volume import mount, pod_volume, storage_class
from fullserver.naming import fit_name
from fullserver.platforms import pool_member
from fullserver.platforms.kubernetes import JOB_TTL_HOURS, SERVICE_TYPE
from fullserver.serving import ServingSpec
from fullserver.spec import EnvironmentSpec
from fullserver.tls import Tls

Manifest = dict[str, Any]

NAMESPACE = "default"


def workload_name(plan: KubePlan) -> str:
    """The name every object of the workload shares (and its ``app.kubernetes.io/name`` label):
    the environment's, fitted to the strictest rule among them, a Service's RFC 1035 label
    (``fullserver.platforms.kubernetes``), with room for the ``-<index>`` an Indexed Job's pods add
    to it as their hostnames. A name that already fits is kept; another gets a digest of the whole
    (``fullserver.naming``), so ``Team_ML.Serve.v2`` and ``team-ml-serve-v2`` stay apart."""
    last = plan.nodes_per_replica - 1
    room = len(f"-{last}") if last > 0 else 0
    return fit_name(SERVICE_TYPE, plan.environment, "metadata.name", room=room)


def _labels(plan: KubePlan, app: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": app, "app.kubernetes.io/managed-by": "fullserver", **plan.labels}


def resources(plan: KubePlan) -> dict[str, dict[str, str]]:
    """The pod's requests and limits: equal (Guaranteed QoS), accelerators in both, and the node's
    fabric interfaces and huge pages where it has them (``PodShare.devices``: Kubernetes requires
    requests equal to limits for extended resources and huge pages alike)."""
    quantities = {
        **plan.pod.resources.quantities,
        plan.accelerator_resource: str(plan.pod.accelerators),
        **plan.pod.devices,
    }
    return {"requests": dict(quantities), "limits": dict(quantities)}


def tolerations(plan: KubePlan) -> list[dict[str, str]]:
    return [{"key": t.key, "operator": "Exists", "effect": t.effect} for t in plan.taints]


def _affinity(plan: KubePlan) -> dict[str, Any] | None:
    if not any(p.spot for p in plan.pools):
        return None
    value = pool_member(plan.provider).spot_value
    term = {"matchExpressions": [{"key": plan.spot_label, "operator": "In", "values": [value]}]}
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "preference": term}]}}


def pod_spec(plan: KubePlan, container: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """The pod: its share of the node, tolerations, node selector, spot preference and data volume."""
    volume = plan.data_volume
    if volume is not None:
        labels = _labels(plan, workload_name(plan))
        container = {**container, "volumeMounts": [*container.get("volumeMounts", []), mount(volume)]}
        extra = {**extra, "volumes": [*extra.get("volumes", []), pod_volume(volume, labels)]}
    spec: dict[str, Any] = {
        "nodeSelector": dict(plan.node_selector),
        "tolerations": tolerations(plan),
        "containers": [{**container, "resources": resources(plan)}],
        **extra,
    }
    affinity = _affinity(plan)
    if affinity is not None:
        spec["affinity"] = affinity
    return spec


TPU_WORKER_WEBHOOK = (
    "GKE automatically injects these environment variables by using a mutating webhook when a Job is created with "
    "the completionMode: Indexed, subdomain, parallelism > 1, and requesting google.com/tpu properties"
)
"""GKE "Deploy TPU workloads in GKE Standard" (kubernetes-engine/docs/how-to/tpus, as archived
2023-09-04 and quoted in abatilo/gke-tpu-env-injector's README) on ``TPU_WORKER_ID`` and
``TPU_WORKER_HOSTNAMES``, which libtpu reads to form a multi-host slice. A multi-host TPU Job here
has all four (``training_job``), so the manifest sets neither: a second definition of a name in a
container's ``env`` "hides" the first (the API server warns), and which one the webhook's would
be is GKE's to say. xpk, Google's own tool, relies on the same injection: it sets neither variable
(AI-Hypercomputer/xpk @367c8382, no ``TPU_WORKER`` anywhere in its source)."""


def training_job(plan: KubePlan, image: str, command: list[str]) -> list[Manifest]:
    """A Job running ``command`` in ``image`` on every node of one replica, removed by Kubernetes
    ``JOB_TTL_HOURS`` after it finishes (what ``pulumi refresh`` then does: docs/kubernetes.md)."""
    name = workload_name(plan)
    labels = _labels(plan, name)
    container: dict[str, Any] = {"name": "train", "image": image, "command": command}
    nodes = plan.nodes_per_replica
    extra: dict[str, Any] = {"restartPolicy": "Never"}
    out: list[Manifest] = []
    job_spec: dict[str, Any] = {
        "backoffLimit": 0,
        "completions": nodes,
        "parallelism": nodes,
        "ttlSecondsAfterFinished": JOB_TTL_HOURS * 3600,
    }
    if nodes > 1:
        job_spec["completionMode"] = "Indexed"
        extra["subdomain"] = name
        if plan.tpu_topology is not None:  # GKE injects the TPU worker variables (TPU_WORKER_WEBHOOK)
            extra["hostNetwork"] = True
            extra["dnsPolicy"] = "ClusterFirstWithHostNet"
        out.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
                "spec": {"clusterIP": "None", "selector": {"job-name": name}},
            }
        )
    job_spec["template"] = {"metadata": {"labels": labels}, "spec": pod_spec(plan, container, **extra)}
    out.insert(
        0,
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
            "spec": job_spec,
        },
    )
    return out


def _server_container(plan: KubePlan, endpoint: ServingSpec, name: str) -> dict[str, Any]:
    """The model server's container: its port, probes on the health path, ``/dev/shm``, and the
    serving secrets by ``secretKeyRef`` (``fullserver.kube.serve``)."""
    server = endpoint.server
    probe = {"httpGet": {"path": server.health_path, "port": server.port}, "periodSeconds": 10}
    container: dict[str, Any] = {
        "name": "server",
        "image": server.image,
        "args": list(server.args),
        "ports": [{"containerPort": server.port, "name": "http"}],
        "readinessProbe": {**probe, "failureThreshold": 3},
        "livenessProbe": {**probe, "failureThreshold": 6},
        # No liveness verdict while the model loads: the profile's load time, in 10 s periods.
        "startupProbe": {**probe, "failureThreshold": max(1, endpoint.health_initial_delay_seconds // 10)},
        "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
    }
    if server.secrets:
        container["env"] = serve.secret_env(name, list(server.secrets))
    return container


def _load_balancer(plan: KubePlan, endpoint: ServingSpec, name: str, labels: dict[str, str]) -> list[Manifest]:
    """The LoadBalancer Service: port 80 to the server's port, the provider's annotations
    (``fullserver.kube.serve``); with TLS on a member whose load balancer cannot terminate it, a
    ``ClusterIP`` Service behind the member's objects in front (``PoolRules.tls_front``)."""
    tls = endpoint.tls
    front = pool_member(plan.provider).tls_front
    if tls is not None and front is not None:
        service = _service(plan, endpoint, name, labels, None)
        service["spec"], service["metadata"]["annotations"] = front.service(
            service["spec"], {serve.AWAIT_ANNOTATION: serve.await_seconds(endpoint.health_initial_delay_seconds)}
        )
        return [service, *front.objects(plan.environment, name, labels, endpoint, list(tls.domains))]
    return [_service(plan, endpoint, name, labels, tls)]


def _service(plan: KubePlan, endpoint: ServingSpec, name: str, labels: dict[str, str], tls: Tls | None) -> Manifest:
    """The Service of type LoadBalancer on ``tls`` (``None``: plain port 80)."""
    spec: dict[str, Any] = {
        "type": "LoadBalancer",
        "selector": {"app.kubernetes.io/name": name},
        "ports": serve.service_ports(endpoint.lb_port, tls),
    }
    spec.update(pool_member(plan.provider).service_spec)
    annotations = serve.service_annotations(
        plan.provider,
        endpoint.load_balancer,
        endpoint.server.health_path,
        tls,
        endpoint.request_timeout_seconds,
        endpoint.lb_port,
    )
    if tls is not None and tls.host:
        annotations[serve.HOST_ANNOTATION] = tls.host
    if endpoint.plain_http and endpoint.load_balancer == "external":  # accepted in clear: said for the policy pack
        annotations[serve.PLAIN_HTTP_ANNOTATION] = "true"
    # Ready once its endpoints are: pulumi up waits as long as for the Deployment (serve.AWAIT_ANNOTATION).
    annotations[serve.AWAIT_ANNOTATION] = serve.await_seconds(endpoint.health_initial_delay_seconds)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels, "annotations": annotations},
        "spec": spec,
    }


def _autoscaler(plan: KubePlan, endpoint: ServingSpec, name: str, labels: dict[str, str]) -> Manifest:
    """The HPA over the profile's replica range, on ``serve.hpa_metrics``."""
    metrics = serve.hpa_metrics(plan.provider, endpoint)
    note = "vLLM queue size per pod" if endpoint.pod_metrics else serve.HPA_CPU_NOTE
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": labels,
            "annotations": {"fullserver/metric": note},
        },
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": plan.min_replicas,
            "maxReplicas": plan.max_replicas,
            "metrics": metrics,
            # A replica took the model's load time to come up: none is removed on a dip shorter than
            # that (the HPA's window is at most an hour; the load time is held to it, fullserver.serving).
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": min(endpoint.health_initial_delay_seconds, 3600)}},
        },
    }


def serving(plan: KubePlan, spec: EnvironmentSpec) -> list[Manifest]:
    """Deployment + LoadBalancer Service + HorizontalPodAutoscaler for the spec's model server (and,
    on GKE with ``podMetrics``, the PodMonitoring that feeds the HPA its metric)."""
    endpoint = spec.endpoint
    if endpoint is None:
        raise ValueError(f"{spec.environment} has no serving endpoint")
    server = endpoint.server
    name = workload_name(plan)
    labels = _labels(plan, name)
    container = _server_container(plan, endpoint, name)
    shm = {"name": "shm", "emptyDir": {"medium": "Memory"}}
    # Prometheus' common pod annotations (the prometheus chart's kubernetes-pods job): vLLM's /metrics.
    scrape = {"prometheus.io/scrape": "true", "prometheus.io/port": str(server.port), "prometheus.io/path": "/metrics"}
    # pulumi up waits for the first replica through a node from zero, the image and the model's load
    # (serve.AWAIT_ANNOTATION), past pulumi-kubernetes' 10-minute default.
    annotations = {serve.AWAIT_ANNOTATION: serve.await_seconds(endpoint.health_initial_delay_seconds)}
    if server.secrets:
        annotations[serve.SECRET_ANNOTATION] = serve.create_secret_command(plan, name, server.secrets)
    meta: dict[str, Any] = {"name": name, "namespace": NAMESPACE, "labels": labels, "annotations": annotations}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        # No ``replicas``: the HPA owns the count (from its minReplicas up). Applied again, a replica
        # count here would reset what it scaled to (Kubernetes "Horizontal Pod Autoscaling",
        # "Migrating Deployments and StatefulSets to horizontal autoscaling": remove spec.replicas).
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "template": {
                "metadata": {"labels": labels, "annotations": scrape},
                "spec": pod_spec(plan, container, volumes=[shm]),
            },
        },
    }
    out = [deployment, *_load_balancer(plan, endpoint, name, labels), _autoscaler(plan, endpoint, name, labels)]
    monitoring = pool_member(plan.provider).pod_monitoring
    if endpoint.pod_metrics and monitoring is not None:
        out.append(monitoring(name, labels, {"app.kubernetes.io/name": name}, "http"))
    return out


def _with_storage(plan: KubePlan, manifests: list[Manifest]) -> list[Manifest]:
    """The pods' data volume StorageClass and the compute class that orders the pools first
    (cluster-scoped, applied before what uses them)."""
    first: list[Manifest] = []
    if plan.data_volume is not None:
        first.append(storage_class(plan.data_volume, _labels(plan, workload_name(plan))))
    how = pool_member(plan.provider).spot_first
    if plan.compute_class is not None and how is not None and how.compute_class is not None:
        members = fallback_members(
            [(p.name, p.spot) for p in plan.pools],
            plan.machine_type,
            plan.instance_types,
            plan.accelerator_type,
            plan.accelerators_per_node,
        )
        first.append(how.compute_class(plan.compute_class, members, _labels(plan, workload_name(plan))))
    return [*first, *manifests]


def workload(
    plan: KubePlan, spec: EnvironmentSpec, image: str = "", command: list[str] | None = None
) -> list[Manifest]:
    """The workload of ``spec`` on ``plan``'s pools: serving objects for a serving spec, else a Job."""
    if spec.endpoint is not None:
        return _with_storage(plan, serving(plan, spec))
    if not image:
        raise ValueError("a training Job needs its image (fullserver:deployWorkload.image)")
    return _with_storage(plan, training_job(plan, image, command or []))


SMOKE_JOBS: dict[str, tuple[str, list[str]]] = {
    # A Job that proves the pod sees its accelerators, until the stack names its own image: the
    # framework's public image where there is one (pytorch), else a CUDA base image's nvidia-smi;
    # TPU pools install JAX's TPU wheel on a slim Python image.
    "pytorch": (
        "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
        ["python", "-c", "import torch; n = torch.cuda.device_count(); assert n, 'no GPU'; print(n, 'GPUs')"],
    ),
    "gpu": ("nvidia/cuda:12.4.1-base-ubuntu22.04", ["nvidia-smi"]),
    "tpu": (
        "python:3.12-slim",
        ["sh", "-c", "pip install -q 'jax[tpu]' && python -c 'import jax; print(jax.devices())'"],
    ),
}


def default_workload(plan: KubePlan, spec: EnvironmentSpec) -> list[Manifest]:
    """The stack's workload: the serving objects, or the smoke Job of ``SMOKE_JOBS``."""
    if spec.endpoint is not None:
        return _with_storage(plan, serving(plan, spec))
    key = "tpu" if spec.tpu is not None else ("pytorch" if spec.framework == "pytorch" else "gpu")
    image, command = SMOKE_JOBS[key]
    return _with_storage(plan, training_job(plan, image, command))


def fits_node(plan: KubePlan) -> bool:
    """Every pod a node runs fits its allocatable (the sizing rule's promise)."""
    pod = plan.pod.resources
    per_node = plan.pods_per_node
    total = pod.model_copy(
        update={
            "cpu_m": pod.cpu_m * per_node,
            "memory_mib": pod.memory_mib * per_node,
            "ephemeral_mib": pod.ephemeral_mib * per_node,
        }
    )
    return total.fits_in(plan.node_allocatable) and plan.pod.accelerators * per_node <= plan.accelerators_per_node
