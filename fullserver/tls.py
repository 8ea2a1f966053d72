"""HTTPS on a serving load balancer: built when the stack gives a certificate (AWS) or the domain
names clients call (GCP), checked here before anything is built.

Design notes: docs/design/core.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictStr

from fullserver import platforms
from fullserver.errors import InputError

HTTPS_PORT = 443
MAX_MANAGED_DOMAINS = 100
"""A Google-managed certificate's domains (pulumi-gcp 10.2: "there can be up to 100 domains")."""
MAX_DOMAIN = 253
"""A DNS name's most characters (RFC 1035 section 2.3.4), each label at most 63."""

_ACM_ARN = re.compile(
    r"arn:(?P<partition>aws|aws-cn|aws-us-gov):acm:(?P<region>[a-z]{2}(?:-[a-z]+)+-\d+):\d{12}:certificate/[0-9a-f-]{36}"
)
"""``arn:aws:acm:<region>:<account>:certificate/<id>`` (ACM ``CertificateArn``; the id is a UUID)."""
_PARTITIONS = (("cn-", "aws-cn"), ("us-gov-", "aws-us-gov"))
"""A region's partition by its name: China regions are cn-*, GovCloud us-gov-*, the rest aws
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference-arns.html, "partition")."""
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
"""An RFC 1123 host name label: letters, digits and '-', not at either end, 1-63 characters."""


def check_certificate_arn(arn: str) -> str:
    """An ACM certificate's ARN by form (its region is checked against the stack's in ``tls_for``)."""
    found = _ACM_ARN.fullmatch(arn)
    if not found:
        raise ValueError(
            f"'{arn[:80]}' is not an ACM certificate ARN (arn:aws:acm:<region>:<account>:certificate/<id>)"
        )
    partition = next((p for prefix, p in _PARTITIONS if found["region"].startswith(prefix)), "aws")
    if found["partition"] != partition:
        raise ValueError(f"region {found['region']} is in partition {partition}, not {found['partition']}")
    return arn


def check_domain(name: str) -> str:
    """One DNS name clients call, lowercased: RFC 1123 labels, two or more (a name, not a TLD),
    no wildcard (a managed certificate takes none, and an endpoint's host cannot be one)."""
    domain = name.lower().removesuffix(".")
    if len(domain) > MAX_DOMAIN or domain.count(".") < 1 or not all(_LABEL.fullmatch(p) for p in domain.split(".")):
        shown = name if len(name) <= 60 else name[:60] + "..."
        raise ValueError(
            f"'{shown}' is not a domain name (labels of letters, digits and '-' joined by '.', e.g. api.example.com; "
            "no wildcard)"
        )
    if domain.rpartition(".")[2].isdigit():  # 10.0.0.1, llm.example.123: no top-level domain is numeric
        raise ValueError(
            f"'{domain}' is an IP address or ends in a numeric top-level label, not a name a certificate covers "
            "(RFC 3696 section 2): point a DNS name at the load balancer and give that"
        )
    return domain


def _distinct(domains: list[str]) -> list[str]:
    seen = [d for i, d in enumerate(domains) if d in domains[:i]]
    if seen:
        raise ValueError(f"lists '{seen[0]}' twice")
    return domains


CertificateArn = Annotated[StrictStr, AfterValidator(check_certificate_arn)]
Domains = Annotated[
    list[Annotated[StrictStr, AfterValidator(check_domain)]],
    Field(max_length=MAX_MANAGED_DOMAINS),
    AfterValidator(_distinct),
]


class Tls(BaseModel):
    """HTTPS on the serving load balancer: the certificate (AWS) or the managed certificate's names
    (GCP), on ``port``; the plain-HTTP port answers a redirect to it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    port: int = HTTPS_PORT
    certificate_arn: str | None = None
    """AWS: the ACM certificate of the HTTPS listener."""
    domains: list[str] = []
    """The names clients call: GCP's managed certificate covers exactly these; the first is the
    endpoint's host on both clouds."""

    @property
    def host(self) -> str | None:
        """The endpoint's host name, when the stack names one."""
        return self.domains[0] if self.domains else None


KEY = "fullserver:serving"


def _certificate_by_arn(provider: str) -> bool:
    """The cloud serves HTTPS with a certificate the stack names (AWS's ACM): a platform of it takes
    ``serving.certificateArn`` (``PlatformRules.options``); else the cloud manages the certificate
    for the stack's domains (Google-managed)."""
    return any("serving.certificateArn" in r.options for r in platforms.all_rules() if r.provider == provider)


def tls_for(
    provider: str, region: str, load_balancer: str, certificate_arn: str | None, domains: list[str]
) -> Tls | None:
    """HTTPS as the stack asks for it on ``provider``'s load balancer, or ``None`` (plain HTTP).

    Which key a cloud takes is ``PlatformRules.options`` (``certificateArn`` is AWS's alone); this
    checks what needs the region and the scheme. Each refusal names the key and what to do."""
    if _certificate_by_arn(provider):
        if certificate_arn is None:
            if domains:
                raise InputError(
                    f"{KEY}.domains",
                    "AWS serves HTTPS with an ACM certificate, and fullserver requests none",
                    f"set {KEY}.certificateArn to an ACM certificate covering these names, or remove domains",
                )
            return None
        found = _ACM_ARN.fullmatch(certificate_arn)
        cert_region = found["region"] if found else ""
        if cert_region != region:
            raise InputError(
                f"{KEY}.certificateArn",
                f"the certificate is in {cert_region}, the load balancer in {region} (ACM certificates are regional)",
                f"request or import the certificate in {region} and name that one",
            )
        return Tls(certificate_arn=certificate_arn, domains=domains)
    if not domains:
        return None
    if load_balancer != "external":
        raise InputError(
            f"{KEY}.domains",
            "Google-managed certificates serve only the global external Application Load Balancer, "
            f"not an {load_balancer} one",
            "remove domains, or use a profile whose serving.load_balancer is external",
        )
    return Tls(domains=domains)


PLAIN_HTTP = f"{KEY}.plainHttp"
PLAIN_HTTP_LABEL = "fullserver-plain-http"
"""The tag (AWS load balancer) or label (GCP forwarding rule) saying ``plainHttp`` was set, value
``"true"``: the policy pack reads it (``policy/clear_text.py``) to tell an accepted risk from an
oversight. A valid GCP label key (lowercase letters and '-') and AWS tag key."""


@dataclass(frozen=True)
class ClearText:
    """An internet-facing endpoint without TLS: refused, or built because the stack said so."""

    allowed: bool
    """``fullserver:serving.plainHttp: true``: built, with ``warning`` on the plan."""
    what: str
    hint: str

    @property
    def warning(self) -> str:
        return f"{PLAIN_HTTP}: {self.what}; {self.hint}"


def clear_text(provider: str, load_balancer: str, https: bool, plain_http: bool) -> ClearText | None:
    """Whether an endpoint sends the API key in clear, and what the stack may do about it; ``None``
    when it does not (HTTPS, or an internal load balancer, reached from its network alone).

    One rule for the plan (``fullserver.sizing.finish``), the components (``components.args``,
    ``components.kube_workload``) and the policy pack (``policy/clear_text.py``). The key to set is
    the cloud's (``serving.certificateArn`` where it takes one, else ``serving.domains``)."""
    if load_balancer != "external" or https:
        return None
    key = f"{KEY}.certificateArn" if _certificate_by_arn(provider) else f"{KEY}.domains"
    what = "the internet-facing endpoint has no TLS, so every request's API key (Authorization: Bearer) and prompt cross the internet in clear"
    if plain_http:
        return ClearText(True, what, f"set {key} to serve HTTPS and remove {PLAIN_HTTP}")
    return ClearText(False, what, f"set {key} for HTTPS, or {PLAIN_HTTP}: true to accept it")


PLACEHOLDER_DOMAINS = ("example.com", "example.net", "example.org")
"""Second-level names RFC 2606 reserves for documentation: a stack naming one shows the shape only."""
PLACEHOLDER_ACCOUNT = "123456789012"
"""The account id AWS's own documentation uses in example ARNs."""


def tls_notes(provider: str, tls: Tls) -> list[str]:
    """What the plan tells a stack with HTTPS: where its names must point (and, for a
    Google-managed certificate, that it is issued only then), and which values are placeholders
    to replace before ``pulumi up``."""
    out = []
    if tls.domains:
        names = ", ".join(tls.domains)
        issued = (
            ""
            if _certificate_by_arn(provider)
            else "; Google issues the managed certificate only once they resolve there (minutes to hours), "
            "and HTTPS handshakes fail until then"
        )
        out.append(
            f"{KEY}.domains: point {names} at the load balancer after pulumi up "
            f"(pulumi stack output dnsTarget: an A record to an address, a CNAME to a name){issued}"
        )
    placeholders = [
        d for d in tls.domains if d in PLACEHOLDER_DOMAINS or d.endswith(tuple(f".{p}" for p in PLACEHOLDER_DOMAINS))
    ]
    if placeholders:
        out.append(
            f"{KEY}.domains: {', '.join(placeholders)} is a placeholder (RFC 2606 reserves example.*): "
            "replace it with a name you control"
        )
    if tls.certificate_arn and f":{PLACEHOLDER_ACCOUNT}:" in tls.certificate_arn:
        out.append(
            f"{KEY}.certificateArn names account {PLACEHOLDER_ACCOUNT}, AWS's documentation example: "
            "replace it with your ACM certificate's ARN (aws acm list-certificates)"
        )
    return out
