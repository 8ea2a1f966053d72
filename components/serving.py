"""Serving groups: replicas of the balanced node, each running the model server, behind a load
balancer that health-checks the server itself and an autoscaler that holds requests per replica.

Everything here was decided by the core (``fullserver.serving.ServingSpec``, carried into
``ServingArgs``): the server's port and health path, how long a replica may take to load its
model before a health check judges it, the load balancer's scheme, a replica's request capacity.

Design notes: docs/design/components.md.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING

from pulumi import Output

from components.startup import model_server_script

if TYPE_CHECKING:
    from components.args import ServingArgs

NAMED_PORT = "http"
HEALTH_TIMEOUT_SECONDS = 5


def endpoint_url(address: str | None, port: int, *, https: bool = False) -> str:
    """``http(s)://<address>[:port]`` once the address is known (``pulumi up``), else what stands
    in for it: the offline plan has no address to show. The port is named only when it is not the
    scheme's own (80, 443)."""
    scheme = "https" if https else "http"
    if not address:
        return f"{scheme}://<load balancer address, known after pulumi up>"
    return f"{scheme}://{address}" if port == (443 if https else 80) else f"{scheme}://{address}:{port}"


def lb_ports(serving: ServingArgs) -> list[int]:
    """The ports clients reach the load balancer on: the HTTP port, and with HTTPS its port too
    (the HTTP one then answers a redirect to it)."""
    tls = serving.get("tls")
    return [serving["lb_port"], *([tls["port"]] if tls is not None else [])]


def lb_endpoint(serving: ServingArgs, address: Output[str]) -> Output[str]:
    """The endpoint clients call: ``https://<first domain>`` when the stack names one (known
    before ``up``), else the load balancer's own address with the scheme it serves."""
    tls = serving.get("tls")
    if tls is not None and tls["domains"]:
        return Output.from_input(endpoint_url(tls["domains"][0], tls["port"], https=True))
    port = tls["port"] if tls is not None else serving["lb_port"]
    return address.apply(lambda a: endpoint_url(a, port, https=tls is not None))


def call_command(url: str, key_command: list[str] | None) -> str:
    """How a person calls the endpoint once it is up: the model list, with the API key read from
    the cloud's secret store by the caller's own credentials (never printed by fullserver)."""
    if not key_command:
        return f"curl {url}/v1/models"
    read = " ".join(shlex.quote(a) for a in key_command)
    return f'curl -H "Authorization: Bearer $({read})" {url}/v1/models'


GCP_BACKEND_KEEPALIVE_SECONDS = 600
"""How long Google's global external Application Load Balancer keeps an idle connection to a
backend open (its backend HTTP keepalive timeout); the backend should keep it open longer."""
KEEP_ALIVE_MARGIN_SECONDS = 20


def server_keep_alive(request_timeout_seconds: int) -> int:
    """How long the model server keeps an idle connection open: longer than the load balancer
    does (the ALB's idle timeout is the request timeout; Google's backend keepalive is 600 s), so
    the load balancer, never the server, closes it. A server that closes first races the load
    balancer's next request on that connection, which answers 502 (ELB "Connection idle timeout":
    "configure the idle timeout of your application to be larger than the idle timeout configured
    for the load balancer"). vLLM reads it from ``VLLM_HTTP_TIMEOUT_KEEP_ALIVE`` (vLLM PR #18472,
    June 2025; older images keep uvicorn's 5 s whatever it says)."""
    return max(min(request_timeout_seconds, 4000), GCP_BACKEND_KEEPALIVE_SECONDS) + KEEP_ALIVE_MARGIN_SECONDS


def server_boot_lines(serving: ServingArgs | None, secret_command: Callable[[str], list[str]]) -> str:
    """The boot-script lines that start the model server of a serving node ("" for any other node):
    every cloud's, with its own command that reads a secret by name at start."""
    if serving is None:
        return ""
    return model_server_script(
        serving["image"],
        serving["server_args"],
        serving["port"],
        {kind: secret_command(secret) for kind, secret in serving["secrets"].items()},
        server_keep_alive(serving["request_timeout_seconds"]),
    )
