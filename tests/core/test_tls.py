"""HTTPS on the serving load balancer: which keys turn it on, what each accepts, and what the plan
says and prices (``fullserver.tls``)."""

from __future__ import annotations

from typing import Any

import pytest

from fullserver.catalog import load_catalog
from fullserver.catalog.network import GIB
from fullserver.errors import InputError
from fullserver.plan import StackPlan, plan_workload
from fullserver.profiles import load_profiles
from fullserver.rules import HOURS_PER_MONTH
from fullserver.tls import (
    MAX_MANAGED_DOMAINS,
    PLAIN_HTTP_LABEL,
    ClearText,
    Tls,
    check_certificate_arn,
    check_domain,
    clear_text,
    tls_for,
    tls_notes,
)
from fullserver.workload import Workload

# The documented ARN form with an all-zero UUID: no real certificate.
CERT = "arn:aws:acm:us-east-1:123456789012:certificate/00000000-0000-4000-8000-000000000000"


def serve(platform: str, region: str, **serving: Any) -> StackPlan:
    """A realtime-inference stack on ``platform`` with an API key and ``serving`` keys."""
    work = Workload.model_validate(
        {
            "profile": "realtime-inference",
            "platform": platform,
            "region": region,
            "accelerator": "L4",
            "egressGbMonth": 2000,
            "serving": {"apiKeySecret": "team/api-key", **serving},
        }
    )
    return plan_workload("srv", "stacks/Pulumi.srv.yaml", work, load_profiles(), load_catalog())


# --- what each key accepts ------------------------------------------------------------------------


def test_an_acm_arn_is_accepted_in_every_partition_and_nothing_else_is() -> None:
    assert check_certificate_arn(CERT) == CERT
    assert check_certificate_arn(CERT.replace("aws:acm:us-east-1", "aws-us-gov:acm:us-gov-west-1"))
    for wrong in (
        CERT.replace(":acm:", ":iam:"),  # an IAM server certificate: not ACM
        CERT.replace("123456789012", "1234"),  # an account id has 12 digits
        CERT.replace("certificate/", "cert/"),
        CERT + "; rm -rf /",
        "",
    ):
        with pytest.raises(ValueError, match="is not an ACM certificate ARN"):
            check_certificate_arn(wrong)


def test_domain_names_are_lowercased_rfc_1123_names_without_a_wildcard() -> None:
    assert check_domain("API.Example.com.") == "api.example.com"
    assert check_domain("a-1.b.example") == "a-1.b.example"
    assert check_domain(f"{'a' * 63}.example.com") == f"{'a' * 63}.example.com"
    for wrong in (
        "*.example.com",  # a managed certificate takes no wildcard
        "example",  # one label: a top-level domain, not a name
        "-api.example.com",
        "api-.example.com",
        "api_v2.example.com",
        "api..example.com",
        f"{'a' * 64}.example.com",  # a label is at most 63 characters
        ".".join(["a" * 60] * 5),  # a name at most 253
    ):
        with pytest.raises(ValueError, match="is not a domain name"):
            check_domain(wrong)


def test_a_managed_certificate_takes_at_most_100_domains() -> None:
    names = [f"n{i}.example.com" for i in range(MAX_MANAGED_DOMAINS)]
    assert Workload.model_validate(
        {"profile": "realtime-inference", "region": "us-central1", "serving": {"domains": names}}
    ).serving
    with pytest.raises(ValueError, match="at most 100 items"):
        Workload.model_validate(
            {
                "profile": "realtime-inference",
                "region": "us-central1",
                "serving": {"domains": [*names, "x.example.com"]},
            }
        )


# --- which cloud builds what ----------------------------------------------------------------------


def test_aws_serves_https_with_the_certificate_of_the_stacks_region() -> None:
    assert tls_for("aws", "us-east-1", "external", CERT, []) == Tls(certificate_arn=CERT)
    assert tls_for("aws", "us-east-1", "internal", CERT, ["api.example.com"]) == Tls(
        certificate_arn=CERT, domains=["api.example.com"]
    )  # an internal ALB takes an ACM certificate as well
    assert tls_for("aws", "us-east-1", "external", None, []) is None
    with pytest.raises(InputError, match=r"^fullserver:serving.certificateArn: the certificate is in us-east-1, "):
        tls_for("aws", "eu-west-1", "external", CERT, [])
    with pytest.raises(InputError, match=r"^fullserver:serving.domains: AWS serves HTTPS with an ACM certificate"):
        tls_for("aws", "us-east-1", "external", None, ["api.example.com"])


def test_gcp_serves_https_with_a_managed_certificate_on_the_external_load_balancer_only() -> None:
    assert tls_for("gcp", "us-central1", "external", None, ["api.example.com"]) == Tls(domains=["api.example.com"])
    assert tls_for("gcp", "us-central1", "external", None, []) is None
    with pytest.raises(InputError, match=r"^fullserver:serving.domains: Google-managed certificates serve only"):
        tls_for("gcp", "us-central1", "internal", None, ["api.example.com"])


# --- what the plan carries and prices -------------------------------------------------------------


def test_the_spec_carries_https_and_the_endpoint_host() -> None:
    aws = serve("aws-gpu", "us-east-1", certificateArn=CERT, domains=["Chat.Example.com"]).spec.endpoint
    assert aws is not None and aws.tls is not None
    assert (aws.tls.port, aws.tls.certificate_arn, aws.tls.host) == (443, CERT, "chat.example.com")
    assert aws.lb_port == 80  # still listening there: the redirect
    plain = serve("aws-gpu", "us-east-1", plainHttp=True).spec.endpoint
    assert plain is not None and plain.tls is None and plain.plain_http


def test_gcp_https_bills_two_forwarding_rules_at_the_one_rate_of_the_first_five() -> None:
    plain = {li.item: li for li in serve("gcp-gpu", "us-central1", plainHttp=True).cost.lines}["load balancer"]
    https = {li.item: li for li in serve("gcp-gpu", "us-central1", domains=["api.example.com"]).cost.lines}
    lb = https["load balancer"]
    # 0.025/h covers up to five rules; 2,000 GB of responses at 0.008 per GiB either way
    assert lb.usd_month == plain.usd_month == round(0.025 * HOURS_PER_MONTH + 2000 / GIB * 0.008, 2)
    assert lb.note.startswith("2 global forwarding rules (HTTPS, HTTP redirect): the first 5 billed together")
    assert plain.note.startswith("1 global forwarding rule x 0.025/h")


def test_an_aws_https_listener_costs_nothing_more() -> None:
    plain = serve("aws-gpu", "us-east-1", plainHttp=True).cost
    https = serve("aws-gpu", "us-east-1", certificateArn=CERT).cost
    assert https.usd_month == plain.usd_month


# --- no API key in clear (issue 33) ---------------------------------------------------------------

IN_CLEAR = "the internet-facing endpoint has no TLS, so every request's API key (Authorization: Bearer) and prompt cross the internet in clear"


def test_an_internet_facing_endpoint_without_tls_is_refused_naming_the_clouds_key_or_plain_http() -> None:
    assert clear_text("aws", "external", False, False) == ClearText(
        False,
        IN_CLEAR,
        "set fullserver:serving.certificateArn for HTTPS, or fullserver:serving.plainHttp: true to accept it",
    )
    assert clear_text("gcp", "external", False, False) == ClearText(
        False, IN_CLEAR, "set fullserver:serving.domains for HTTPS, or fullserver:serving.plainHttp: true to accept it"
    )
    for platform, region, key in (("aws-gpu", "us-east-1", "certificateArn"), ("gcp-gpu", "us-central1", "domains")):
        with pytest.raises(InputError) as refused:
            serve(platform, region)
        assert refused.value.line() == (
            f"fullserver:serving: {IN_CLEAR} (set fullserver:serving.{key} for HTTPS, or "
            "fullserver:serving.plainHttp: true to accept it)"
        )


def test_https_and_internal_endpoints_are_not_judged_and_plain_http_is_allowed_with_its_risk_named() -> None:
    assert clear_text("aws", "external", True, False) is None
    assert clear_text("gcp", "internal", False, False) is None  # reached from its network alone
    allowed = clear_text("gcp", "external", False, True)
    assert allowed is not None and allowed.allowed
    assert allowed.warning == (
        f"fullserver:serving.plainHttp: {IN_CLEAR}; set fullserver:serving.domains to serve HTTPS and remove "
        "fullserver:serving.plainHttp"
    )
    plan = serve("gcp-gpu", "us-central1", plainHttp=True)
    assert allowed.warning in plan.spec.warnings


def test_plain_http_beside_https_is_refused_as_saying_what_the_endpoint_does_not_do() -> None:
    with pytest.raises(InputError) as refused:
        serve("gcp-gpu", "us-central1", domains=["api.example.com"], plainHttp=True)
    assert refused.value.line() == "fullserver:serving.plainHttp: the endpoint serves HTTPS (remove plainHttp)"


def test_the_plan_says_where_the_names_point_and_which_values_are_placeholders() -> None:
    gcp = tls_notes("gcp", Tls(domains=["llm.example.com", "api.team.io"]))
    assert gcp == [
        "fullserver:serving.domains: point llm.example.com, api.team.io at the load balancer after pulumi up "
        "(pulumi stack output dnsTarget: an A record to an address, a CNAME to a name); Google issues the "
        "managed certificate only once they resolve there (minutes to hours), and HTTPS handshakes fail until then",
        "fullserver:serving.domains: llm.example.com is a placeholder (RFC 2606 reserves example.*): replace it "
        "with a name you control",
    ]
    aws = tls_notes("aws", Tls(certificate_arn=CERT))
    assert aws == [
        "fullserver:serving.certificateArn names account 123456789012, AWS's documentation example: replace it "
        "with your ACM certificate's ARN (aws acm list-certificates)"
    ]
    assert tls_notes("aws", Tls(certificate_arn=CERT.replace("123456789012", "210987654321"))) == []
    bare = tls_notes("gcp", Tls(domains=["example.org"]))
    assert bare[-1].startswith("fullserver:serving.domains: example.org is a placeholder")  # the reserved name itself
    planned = serve("aws-gpu", "us-east-1", certificateArn=CERT).spec.warnings
    assert aws[0] in planned


def test_the_plain_http_marker_is_a_valid_gcp_label_key() -> None:
    """GCP label keys: lowercase letters, digits, '_' and '-', starting with a letter, at most 63."""
    import re

    assert re.fullmatch(r"[a-z][a-z0-9_-]{0,62}", PLAIN_HTTP_LABEL)
