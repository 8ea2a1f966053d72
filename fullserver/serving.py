"""The serving path of an inference environment: which model server each replica runs, how the
load balancer reaches it, when a replica counts as healthy, and what the autoscaler holds.

The profile's ``serving`` block says how the group behaves (replicas, zones, who may reach the
endpoint, the request capacity of a replica, how long a model takes to load); the stack's
``fullserver:serving`` key says what it serves (model, server image, extra arguments). This module
joins the two into a ``ServingSpec`` the components build without deciding anything.

Design notes: docs/design/core.md.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from fullserver.profiles import Serving
from fullserver.tls import Tls

VLLM_IMAGE = "vllm/vllm-openai:v0.10.2"
"""vLLM's OpenAI-compatible server image on Docker Hub, pinned so replicas started a month apart
run the same server (override with ``fullserver:serving.image``). A release after June 2025, so
the server reads ``VLLM_HTTP_TIMEOUT_KEEP_ALIVE`` (vLLM PR #18472) and keeps idle connections
open longer than the load balancer does (``components.serving.server_keep_alive``)."""
DEFAULT_MODEL = "Qwen/Qwen2.5-1.5B-Instruct"
"""An ungated model small enough for every GPU in the catalog (about 3 GiB in bf16): a smoke test
of the serving path, not a production choice; the plan warns while it is in use."""
DEFAULT_PORT = 8000
DEFAULT_HEALTH_PATH = "/health"
LB_PORT = 80
"""Where the load balancer listens with HTTP (internal, or ``serving.plainHttp``); with HTTPS
(``fullserver.tls``) it listens on 443 and, on an Application Load Balancer, this port answers a
redirect to it."""
HEALTH_INTERVAL_SECONDS = 10
HEALTHY_THRESHOLD = 2
UNHEALTHY_THRESHOLD = 3
REQUEST_TIMEOUT_SECONDS = 600
"""Generations stream for minutes; the load balancer's backend timeout must outlast the longest."""
DRAIN_SECONDS = 120
"""How long a replica being removed keeps serving the requests it has (connection draining)."""
MAX_INITIAL_DELAY_SECONDS = 3600
"""The longest either cloud waits before judging a new replica: Compute Engine's autohealing
``initialDelaySec`` "must be from range [0, 3600]" (instanceGroupManagers API), and an Auto Scaling
group's default instance warmup takes "0 to 3600" seconds (EC2 Auto Scaling user guide, "Enable
the default instance warmup"). A longer model load is refused at plan time, not by the API at
``pulumi up``."""


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelServer(Frozen):
    """The container every replica runs under systemd, restarted when it exits."""

    image: str
    model: str
    args: list[str]
    """The server's full argument list (model, host, port, tensor parallel size, then the stack's own)."""
    port: int
    health_path: str
    tensor_parallel_size: int
    default_model: bool = False
    """The model is the documented default, not the stack's choice."""
    token_secret: str | None = None
    """The cloud secret (AWS SSM SecureString parameter, GCP Secret Manager secret) holding the
    Hugging Face token; fetched by each server start, never stored by fullserver."""
    api_key_secret: str | None = None
    """The cloud secret (same store) holding the API key clients must send; fetched by each
    server start, never stored by fullserver."""

    @property
    def secrets(self) -> dict[str, str]:
        """Each secret the nodes read, by what it is (``components.startup.SECRET_VARIABLES``)."""
        named = {"token": self.token_secret, "api_key": self.api_key_secret}
        return {kind: name for kind, name in named.items() if name}


class ServingSpec(Frozen):
    """Everything the serving components build: group, model server, health, load balancer, scaling."""

    min_replicas: int
    max_replicas: int
    spread_zones: bool
    zones: list[str] = []
    """The zones a spreading group spans (GCP: ``distribution_policy_zones``): the catalog's zones
    offering the shape in the region; empty when the catalog lists none (the cloud picks)."""
    server: ModelServer
    load_balancer: Literal["internal", "external"]
    lb_port: int = LB_PORT
    health_initial_delay_seconds: int
    """No health verdict before this (GCP autohealing ``initial_delay_sec``, ASG grace period):
    the profile's model load time."""
    health_interval_seconds: int = HEALTH_INTERVAL_SECONDS
    healthy_threshold: int = HEALTHY_THRESHOLD
    unhealthy_threshold: int = UNHEALTHY_THRESHOLD
    request_timeout_seconds: int = REQUEST_TIMEOUT_SECONDS
    drain_seconds: int = DRAIN_SECONDS
    replica_requests_per_second: float
    """A replica's capacity: GCP ``max_rate_per_instance``."""
    target_utilisation: float
    """Share of that capacity the autoscaler holds."""
    tls: Tls | None = None
    """HTTPS on the load balancer (``fullserver.tls``); ``None``: plain HTTP on ``lb_port``."""
    pod_metrics: bool = False
    """Node pools: the cluster serves vLLM's Prometheus metrics to the HPA through a custom-metrics
    adapter (``fullserver:serving.podMetrics``; ``fullserver.kube.serve.hpa_metrics``)."""
    plain_http: bool = False
    """``fullserver:serving.plainHttp``: the stack accepts an internet-facing endpoint without TLS
    (``fullserver.tls.clear_text``); the load balancer carries it where the policy pack reads it."""

    @property
    def requests_per_minute_per_replica(self) -> float:
        """AWS target tracking on ``ALBRequestCountPerTarget`` (requests per target per minute)."""
        return round(self.replica_requests_per_second * 60 * self.target_utilisation, 1)


def endpoint_problem(load_balancer: str, api_key_secret: str | None) -> tuple[str, str] | None:
    """Why this endpoint may not be built as asked, and what to do; None when it may.

    An external load balancer answers the whole internet, and vLLM's OpenAI server without a key
    answers anyone it hears: each prompt would cost the stack's GPUs and could read what the model
    was given. So an external endpoint is built only with a key; an internal one is reached from
    the network alone."""
    if load_balancer == "external" and not api_key_secret:
        return (
            "an external endpoint without an API key would serve anyone on the internet",
            "set fullserver:serving.apiKeySecret to the name of a secret holding the key; "
            'see docs/deploying.md, "Serving"',
        )
    return None


def model_server(
    *,
    model: str | None,
    image: str | None,
    extra_args: list[str],
    port: int | None,
    health_path: str | None,
    gpus: int,
    token_secret: str | None = None,
    api_key_secret: str | None = None,
) -> ModelServer:
    """The server a replica runs: the stack's choices over vLLM's defaults, sharded over ``gpus``."""
    chosen = model or DEFAULT_MODEL
    listen = port or DEFAULT_PORT
    tp = max(gpus, 1)
    args = ["--model", chosen, "--host", "0.0.0.0", "--port", str(listen), "--tensor-parallel-size", str(tp)]
    return ModelServer(
        image=image or VLLM_IMAGE,
        model=chosen,
        args=[*args, *extra_args],
        port=listen,
        health_path=health_path or DEFAULT_HEALTH_PATH,
        tensor_parallel_size=tp,
        default_model=model is None,
        token_secret=token_secret,
        api_key_secret=api_key_secret,
    )


def serving_spec(
    profile: Serving,
    server: ModelServer,
    *,
    requests_per_second: float | None = None,
    load_minutes: int | None = None,
    zones: list[str] | None = None,
    tls: Tls | None = None,
    pod_metrics: bool = False,
    plain_http: bool = False,
) -> ServingSpec:
    """The profile's group behaviour with the stack's server (and its capacity and load-time
    overrides, which know the model better than a profile can)."""
    return ServingSpec(
        min_replicas=profile.min_replicas,
        max_replicas=profile.max_replicas,
        spread_zones=profile.spread_zones,
        zones=sorted(zones or []) if profile.spread_zones else [],
        server=server,
        load_balancer=profile.load_balancer,
        health_initial_delay_seconds=(load_minutes or profile.model_load_minutes) * 60,
        replica_requests_per_second=requests_per_second or profile.replica_requests_per_second,
        target_utilisation=profile.target_utilisation,
        tls=tls,
        pod_metrics=pod_metrics,
        plain_http=plain_http,
    )
