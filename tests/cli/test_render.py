"""``fullserver plan``'s serving row says what ``up`` builds: where the load balancer listens, with
which certificate, and the URL clients call (``fullserver_cli.render``)."""

from __future__ import annotations

from rich.console import Console

from fullserver.plan import StackPlan
from fullserver_cli.render import stack_plan
from tests.core.test_tls import CERT, serve


def shown(plan: StackPlan) -> str:
    con = Console(width=400, record=True, color_system=None)
    with con.capture() as captured:
        con.print(stack_plan(plan, []))
    return " ".join(captured.get().split())


def test_the_serving_row_says_plain_http_when_no_certificate_is_given() -> None:
    text = shown(serve("aws-gpu", "us-east-1", plainHttp=True))  # HTTP only when the stack says so
    assert "external load balancer on port 80 (HTTP), OpenAI API at <endpoint>/v1" in text


def test_the_serving_row_names_the_acm_certificate_and_the_redirect() -> None:
    text = shown(serve("aws-gpu", "us-east-1", certificateArn=CERT))
    assert f"external load balancer with HTTPS on port 443 (ACM certificate {CERT}), port 80 redirecting to it" in text
    assert "OpenAI API at <endpoint>/v1 (`pulumi stack output endpoint` after up)" in text


def test_the_serving_row_names_the_managed_certificates_domains_and_the_url_clients_call() -> None:
    text = shown(serve("gcp-gpu", "us-central1", domains=["api.example.com", "chat.example.com"]))
    assert "with HTTPS on port 443 (a Google-managed certificate for api.example.com, chat.example.com)" in text
    assert "OpenAI API at https://api.example.com/v1 (point api.example.com at `pulumi stack output dnsTarget`" in text
