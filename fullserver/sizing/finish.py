"""Finishing the sized spec: its serving path (profile + ``fullserver:serving``, zones from the
catalog) and the network it is billed for (``fullserver.billables``). ``fullserver.plan`` asks
``complete_spec`` once per stack; the spec is then what the components build.
"""

from __future__ import annotations

from fullserver.billables import decide
from fullserver.catalog import Catalog
from fullserver.errors import InputError
from fullserver.kube.serve import serving_warnings
from fullserver.platform import AcceleratorKind
from fullserver.platforms import load_balancer_problem
from fullserver.serving import (
    DEFAULT_MODEL,
    MAX_INITIAL_DELAY_SECONDS,
    ModelServer,
    ServingSpec,
    endpoint_problem,
    model_server,
    serving_spec,
)
from fullserver.serving_keys import ServingConfig
from fullserver.spec import EnvironmentSpec
from fullserver.tls import PLAIN_HTTP, clear_text, tls_for, tls_notes
from fullserver.workload import CONFIG_NAMESPACE, Workload


def complete_spec(spec: EnvironmentSpec, workload: Workload, catalog: Catalog) -> EnvironmentSpec:
    """The sized spec with its serving path and its billables.

    A load-balancer scheme the platform does not build is refused here, at plan time, naming the
    profile field.
    """
    if spec.serving is None and spec.endpoint is None:  # nothing to add before deciding the billables
        return spec.model_copy(update={"warnings": list(spec.warnings), "billables": decide(spec)})
    endpoint = None
    warnings = list(spec.warnings)
    if spec.serving is not None:
        endpoint, server = _endpoint(spec, workload, catalog)
        if server.default_model:
            warnings.append(
                f"serving the default model {DEFAULT_MODEL} (a smoke test): set fullserver:serving.model "
                "to the model to serve"
            )
        exposed = clear_text(spec.provider, endpoint.load_balancer, endpoint.tls is not None, endpoint.plain_http)
        warnings.extend([exposed.warning] if exposed is not None else [])  # refused in _endpoint unless allowed
        warnings.extend(tls_notes(spec.provider, endpoint.tls) if endpoint.tls is not None else [])
        if spec.kube is not None:  # the pool's load balancer, autoscaling metric and cluster prerequisites
            warnings.extend(serving_warnings(spec.kube, endpoint))
    with_endpoint = spec.model_copy(update={"endpoint": endpoint, "warnings": warnings})
    return with_endpoint.model_copy(update={"billables": decide(with_endpoint)})


def _check_serving(spec: EnvironmentSpec, catalog: Catalog) -> None:
    """A serving group needs a load balancer its platform builds and a GPU for its model server."""
    assert spec.serving is not None
    problem = load_balancer_problem(spec.platform, spec.serving.load_balancer)
    if problem is not None:
        raise InputError(f"profiles/{spec.profile}.yaml: serving.load_balancer", *problem)
    accelerator = catalog.accelerators.get(spec.accelerator) if spec.accelerator else None
    if accelerator is not None and accelerator.kind is not AcceleratorKind.GPU:
        # the replicas run a CUDA container (``docker run --gpus all``) once ``nvidia-smi`` sees the GPUs
        raise InputError(
            f"{CONFIG_NAMESPACE}:accelerator",
            f"{spec.accelerator} ({accelerator.kind.value}) is no GPU, and a serving group's model server "
            "runs on NVIDIA GPUs (vLLM's CUDA image with the NVIDIA container toolkit)",
            "serve on a GPU (e.g. L4), or use a profile without serving",
        )


def _endpoint(spec: EnvironmentSpec, workload: Workload, catalog: Catalog) -> tuple[ServingSpec, ModelServer]:
    """The serving path of a spec with a serving group, and the model server it runs."""
    assert spec.serving is not None
    _check_serving(spec, catalog)
    cfg = workload.serving or ServingConfig()
    load_minutes = cfg.load_minutes or spec.serving.model_load_minutes
    if load_minutes * 60 > MAX_INITIAL_DELAY_SECONDS:
        where = (
            "fullserver:serving.loadMinutes"
            if cfg.load_minutes
            else f"profiles/{spec.profile}.yaml: serving.model_load_minutes"
        )
        raise InputError(
            where,
            f"{load_minutes} minutes is longer than the clouds wait before judging a new replica "
            f"({MAX_INITIAL_DELAY_SECONDS // 60} minutes: GCP autohealing, the AWS instance warmup)",
            f"at most {MAX_INITIAL_DELAY_SECONDS // 60}: cache the weights (a larger local disk) or serve a smaller model",
        )
    server = model_server(
        model=cfg.model,
        image=cfg.image,
        extra_args=list(cfg.args),
        port=cfg.port,
        health_path=cfg.health_path,
        gpus=spec.accelerator_count,
        token_secret=cfg.token_secret,
        api_key_secret=cfg.api_key_secret,
    )
    problem = endpoint_problem(spec.serving.load_balancer, server.api_key_secret)
    if problem is not None:
        raise InputError(f"{CONFIG_NAMESPACE}:serving.apiKeySecret", *problem)
    _check_pool_keys(spec, cfg)
    offer = catalog.offer(spec.offer)
    zones = offer.zones_in(spec.region) if offer else []
    endpoint = serving_spec(
        spec.serving,
        server,
        requests_per_second=cfg.requests_per_second,
        load_minutes=cfg.load_minutes,
        zones=zones,
        tls=tls_for(spec.provider, spec.region, spec.serving.load_balancer, cfg.certificate_arn, list(cfg.domains)),
        pod_metrics=cfg.pod_metrics,
        plain_http=cfg.plain_http,
    )
    _check_clear_text(spec, endpoint)
    return endpoint, server


def _check_clear_text(spec: EnvironmentSpec, endpoint: ServingSpec) -> None:
    """No API key in clear across the internet unless the stack says so (``fullserver.tls.clear_text``);
    ``plainHttp`` beside HTTPS would say something the endpoint does not do."""
    if endpoint.plain_http and endpoint.tls is not None:
        raise InputError(PLAIN_HTTP, "the endpoint serves HTTPS", "remove plainHttp")
    exposed = clear_text(spec.provider, endpoint.load_balancer, endpoint.tls is not None, endpoint.plain_http)
    if exposed is not None and not exposed.allowed:
        raise InputError(f"{CONFIG_NAMESPACE}:serving", exposed.what, exposed.hint)


def _check_pool_keys(spec: EnvironmentSpec, cfg: ServingConfig) -> None:
    """The serving keys of node pools only (``podMetrics``)."""
    if spec.kube is None and cfg.pod_metrics:
        raise InputError(
            f"{CONFIG_NAMESPACE}:serving.podMetrics",
            f"applies only to node pools (gke-gpu, eks-gpu), whose HPA reads a metrics adapter; this stack is "
            f"{spec.platform.value}, whose group scales on its load balancer's requests per replica",
            "remove it",
        )
