"""``fullserver:serving``: what a serving group's replicas run and how clients reach them (model,
server image, secrets, HTTPS, the HPA's metric). ``fullserver.serving`` joins it with the profile's
``serving`` block into the ``ServingSpec`` the components build."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictBool, StrictInt, StrictStr

from fullserver.keys import MAX_IMAGE, MAX_NAME, MAX_PATH, Camel, Count, finite
from fullserver.tls import CertificateArn, Domains
from fullserver.workload_keys import PLATFORM_SPECIFIC

# Container image references (registry/name:tag@digest) and model ids (hub repo ids or paths):
# no spaces or shell characters, since both end up on a systemd ExecStart line.
_IMAGE_REF = r"^[A-Za-z0-9][A-Za-z0-9._/:@-]*$"
_MODEL_REF = r"^[A-Za-z0-9_./-]+$"
# A model server's own flags: printable, no line breaks (each becomes one quoted argument).
_ARG = r"^[^\x00-\x1f\x7f]*$"
MAX_SERVER_ARGS = 64
# SSM parameter names (letters, digits, _.-/) and Secret Manager secret ids (letters, digits, _-).
_SECRET_NAME = r"^[A-Za-z0-9_./-]+$"
SecretName = Annotated[StrictStr, Field(min_length=1, max_length=MAX_NAME * 4, pattern=_SECRET_NAME)]


class ServingConfig(Camel):
    """``fullserver:serving``: what each replica of a serving group runs (profiles with ``serving`` only);
    every field is optional: the default is vLLM's OpenAI-compatible server (``fullserver.serving``)."""

    model: Annotated[StrictStr, Field(min_length=1, max_length=MAX_IMAGE, pattern=_MODEL_REF)] | None = None
    image: Annotated[StrictStr, Field(min_length=1, max_length=MAX_IMAGE, pattern=_IMAGE_REF)] | None = None
    args: Annotated[
        list[Annotated[StrictStr, Field(max_length=MAX_IMAGE, pattern=_ARG)]], Field(max_length=MAX_SERVER_ARGS)
    ] = Field(default_factory=list)
    port: Annotated[StrictInt, Field(ge=1024, le=65535)] | None = None
    health_path: Annotated[StrictStr, Field(max_length=MAX_PATH, pattern=r"^/[A-Za-z0-9._~/-]*$")] | None = None
    requests_per_second: Annotated[float, finite(10_000, positive=True)] | None = None
    load_minutes: Annotated[Count, Field(le=120)] | None = None
    token_secret: SecretName | None = None
    """The name of a secret you keep in the cloud's own store holding a Hugging Face token (gated
    models): an SSM SecureString parameter on AWS, a Secret Manager secret on GCP. VMs fetch it at
    each server start, so it never passes through fullserver or Pulumi's state; node pools with
    ``deployWorkload`` read it at ``pulumi up`` into a Kubernetes Secret, a Pulumi secret in state."""
    api_key_secret: SecretName | None = None
    """The name of a secret in the same store, read the same way, holding the endpoint's API key:
    clients send it as ``Authorization: Bearer <key>`` (vLLM's ``--api-key``). An endpoint open to
    the internet needs one (``fullserver.serving.endpoint_problem``)."""
    certificate_arn: CertificateArn | None = Field(default=None, json_schema_extra=PLATFORM_SPECIFIC)
    """AWS: the ACM certificate (in the stack's region) of an HTTPS listener (``fullserver.tls``)."""
    domains: Domains = Field(default_factory=list)
    """The names clients call; GCP: a Google-managed certificate for them (``fullserver.tls``)."""
    pod_metrics: StrictBool = False
    """Node pools: a metrics adapter serves vLLM's queue size to the HPA (``fullserver.kube.serve``)."""
    plain_http: StrictBool = False
    """An internet-facing endpoint without TLS is built only with this set: the stack accepts that
    the API key and the prompts cross the internet in clear (``fullserver.tls.clear_text``)."""
