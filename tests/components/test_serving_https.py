"""HTTPS on the serving load balancer (``fullserver.tls``): AWS an HTTPS listener with the stack's
ACM certificate, GCP a Google-managed certificate on a target HTTPS proxy; port 80 redirects on both."""

from __future__ import annotations

from typing import Any

import pytest

from components.args import SpecRefused
from components.aws.args import aws_args
from components.aws.environment import AwsGpuEnvironment
from components.aws.serving import TLS_POLICY
from components.gcp.args import gcp_args
from components.gcp.environment import GcpGpuEnvironment
from components.graph import graph_for_plan
from components.serving import endpoint_url
from fullserver.tls import PLAIN_HTTP_LABEL, Tls
from tests.components.conftest import Build, Plans, plain_http, spec_of
from tests.components.test_names import REALISTIC, graph_as, refused_names
from tests.core.test_tls import CERT, serve

ALB = "arn:aws:lb::123456789012:tls-alb"
TARGET_GROUP = "arn:aws:lb::123456789012:tls-tg"


def with_tls(spec: Any, tls: Tls, **endpoint: Any) -> Any:
    assert spec.endpoint is not None
    return spec.model_copy(update={"endpoint": spec.endpoint.model_copy(update={"tls": tls, **endpoint})})


def test_an_aws_certificate_gives_an_https_listener_and_a_redirect_on_port_80(plans: Plans, build: Build) -> None:
    spec = with_tls(spec_of(plans, "serve-aws-realtime"), Tls(certificate_arn=CERT))
    g = build(lambda: AwsGpuEnvironment("tls", aws_args(spec)))
    listeners = {r.name: r.inputs for r in g.of_type("lb/listener:Listener")}
    assert set(listeners) == {"tls-https", "tls-http"}
    https = listeners["tls-https"]
    assert (https["port"], https["protocol"], https["loadBalancerArn"]) == (443, "HTTPS", ALB)
    assert (https["certificateArn"], https["sslPolicy"]) == (CERT, "ELBSecurityPolicy-TLS13-1-2-2021-06")
    assert https["sslPolicy"] == TLS_POLICY
    assert https["defaultActions"] == [{"type": "forward", "targetGroupArn": TARGET_GROUP}]
    http = listeners["tls-http"]
    assert (http["port"], http["protocol"]) == (80, "HTTP")
    assert http["defaultActions"] == [
        {"type": "redirect", "redirect": {"protocol": "HTTPS", "port": "443", "statusCode": "HTTP_301"}}
    ]
    # the internet reaches both listeners, and nothing else
    lb_sg = next(r for r in g.of_type("ec2/securityGroup:SecurityGroup") if r.name == "tls-lb-sg").inputs
    assert [(i["fromPort"], i["toPort"], i["cidrBlocks"]) for i in lb_sg["ingress"]] == [
        (80, 80, ["0.0.0.0/0"]),
        (443, 443, ["0.0.0.0/0"]),
    ]


def test_the_request_count_policy_waits_for_the_listener_that_forwards(
    plans: Plans, build: Build, resource_options: Any
) -> None:
    """AWS refuses a request-count policy whose target group is behind no listener yet: with HTTPS
    that listener is the HTTPS one (the HTTP one only redirects)."""
    spec = with_tls(spec_of(plans, "serve-aws-realtime"), Tls(certificate_arn=CERT))
    build(lambda: AwsGpuEnvironment("tls", aws_args(spec)))
    waits = [d._name for d in resource_options["tls-requests-target"].depends_on or []]
    assert waits == ["tls-https"]


def test_an_internal_alb_serves_https_to_the_vpc_alone(plans: Plans, build: Build) -> None:
    spec = with_tls(spec_of(plans, "serve-aws-realtime"), Tls(certificate_arn=CERT), load_balancer="internal")
    g = build(lambda: AwsGpuEnvironment("itl", aws_args(spec)))
    assert g.one("lb/loadBalancer:LoadBalancer").inputs["internal"] is True
    https = next(r for r in g.of_type("lb/listener:Listener") if r.name == "itl-https").inputs
    assert (https["protocol"], https["certificateArn"]) == ("HTTPS", CERT)
    lb_sg = next(r for r in g.of_type("ec2/securityGroup:SecurityGroup") if r.name == "itl-lb-sg").inputs
    assert [(i["fromPort"], i["cidrBlocks"]) for i in lb_sg["ingress"]] == [
        (80, ["10.80.0.0/16"]),
        (443, ["10.80.0.0/16"]),
    ]


def test_gcp_domains_give_a_managed_certificate_an_https_proxy_and_a_redirect_on_one_address(
    plans: Plans, build: Build
) -> None:
    domains = ["api.example.com", "chat.example.com"]
    spec = with_tls(spec_of(plans, "serve-gcp-realtime"), Tls(domains=domains))
    g = build(lambda: GcpGpuEnvironment("srv", gcp_args(spec)))
    address = g.one("compute/globalAddress:GlobalAddress").inputs
    assert address["addressType"] == "EXTERNAL"
    cert = g.one("compute/managedSslCertificate:ManagedSslCertificate").inputs
    assert (cert["type"], cert["managed"]) == ("MANAGED", {"domains": domains})
    policy = g.one("compute/sSLPolicy:SSLPolicy").inputs
    assert (policy["profile"], policy["minTlsVersion"]) == ("MODERN", "TLS_1_2")
    proxy = g.one("compute/targetHttpsProxy:TargetHttpsProxy").inputs
    assert proxy["urlMap"] == "srv-urls-id"  # the backend's URL map
    assert (proxy["sslCertificates"], proxy["sslPolicy"]) == (["srv-cert-id"], "srv-tls-id")
    maps = {r.name: r.inputs for r in g.of_type("compute/uRLMap:URLMap")}
    assert maps["srv-urls"]["defaultService"] == "srv-backend-id"
    assert maps["srv-redirect"]["defaultUrlRedirect"] == {
        "httpsRedirect": True,
        "stripQuery": False,
        "redirectResponseCode": "MOVED_PERMANENTLY_DEFAULT",
    }
    assert "defaultService" not in maps["srv-redirect"]
    assert g.one("compute/targetHttpProxy:TargetHttpProxy").inputs["urlMap"] == "srv-redirect-id"
    rules = {r.name: r.inputs for r in g.of_type("compute/globalForwardingRule:GlobalForwardingRule")}
    reserved = "<srv-address address, known after pulumi up>"
    assert {name: (r["target"], r["portRange"], r["ipAddress"]) for name, r in rules.items()} == {
        "srv-https-lb": ("srv-https-proxy-id", "443", reserved),
        "srv-lb": ("srv-proxy-id", "80", reserved),
    }
    assert all(r["loadBalancingScheme"] == "EXTERNAL_MANAGED" and r["ipProtocol"] == "TCP" for r in rules.values())


def test_plain_http_builds_no_certificate_and_one_rule_on_an_ephemeral_address(plans: Plans, build: Build) -> None:
    g = build(lambda: GcpGpuEnvironment("srv", gcp_args(plain_http(spec_of(plans, "serve-gcp-realtime")))))
    for kind in ("globalAddress:GlobalAddress", "managedSslCertificate:ManagedSslCertificate", "sSLPolicy:SSLPolicy"):
        assert g.of_type(f"compute/{kind}") == []
    (rule,) = g.of_type("compute/globalForwardingRule:GlobalForwardingRule")
    assert "ipAddress" not in rule.inputs
    # serving.plainHttp said where the policy pack reads it: the forwarding rule's label, the ALB's tag
    assert rule.inputs["labels"] == {PLAIN_HTTP_LABEL: "true"}
    g = build(lambda: AwsGpuEnvironment("asg", aws_args(plain_http(spec_of(plans, "serve-aws-realtime")))))
    assert [r.name for r in g.of_type("lb/listener:Listener")] == ["asg-http"]
    assert g.one("lb/loadBalancer:LoadBalancer").inputs["tags"][PLAIN_HTTP_LABEL] == "true"
    https = build(lambda: AwsGpuEnvironment("asg", aws_args(spec_of(plans, "serve-aws-realtime"))))
    assert PLAIN_HTTP_LABEL not in https.one("lb/loadBalancer:LoadBalancer").inputs["tags"]


def test_args_without_tls_or_plain_http_are_refused_before_anything_is_built(plans: Plans) -> None:
    """The core's rule (fullserver.tls.clear_text) for args that never passed through the core."""
    for stack, component, key in (
        ("serve-aws-realtime", AwsGpuEnvironment, "certificateArn"),
        ("serve-gcp-realtime", GcpGpuEnvironment, "domains"),
    ):
        spec = plain_http(spec_of(plans, stack))
        args: Any = aws_args(spec) if component is AwsGpuEnvironment else gcp_args(spec)
        del args["serving"]["plain_http"]
        with pytest.raises(
            SpecRefused, match=rf"^spec\.serving\.tls: the internet-facing endpoint has no TLS.*serving\.{key}"
        ):
            component("open", args)


def test_the_exports_call_the_https_endpoint_and_say_where_dns_points() -> None:
    gcp = graph_for_plan(serve("gcp-gpu", "us-central1", domains=["api.example.com"])).outputs
    assert gcp["endpoint"] == "https://api.example.com"
    assert gcp["call"].endswith(" https://api.example.com/v1/models")
    assert gcp["dnsTarget"].startswith("<") and "address, known after pulumi up>" in gcp["dnsTarget"]
    aws = graph_for_plan(serve("aws-gpu", "us-east-1", certificateArn=CERT)).outputs
    # no domain named: the ALB's own name, over HTTPS
    assert aws["endpoint"] == "https://<load balancer address, known after pulumi up>"
    assert "dnsTarget" not in aws
    named = graph_for_plan(serve("aws-gpu", "us-east-1", certificateArn=CERT, domains=["chat.example.com"])).outputs
    assert (named["endpoint"], named["dnsTarget"]) == (
        "https://chat.example.com",
        "<load balancer address, known after pulumi up>",
    )


def test_an_https_url_names_the_port_only_when_it_is_not_443() -> None:
    assert endpoint_url("api.example.com", 443, https=True) == "https://api.example.com"
    assert endpoint_url("api.example.com", 8443, https=True) == "https://api.example.com:8443"
    assert endpoint_url(None, 443, https=True) == "https://<load balancer address, known after pulumi up>"


def test_the_https_resources_get_names_their_providers_accept_under_any_realistic_stack_name() -> None:
    https_plans = [
        serve("gcp-gpu", "us-central1", domains=["api.example.com"]),
        serve("aws-gpu", "us-east-1", certificateArn=CERT),
    ]
    for plan in https_plans:
        for stack in REALISTIC:
            graph = graph_as(plan, stack)
            assert refused_names(graph) == [], (plan.spec.platform, stack)
    kinds = {row.type for row in graph_as(https_plans[0], "Team_ML.Serve.v2").rows}
    assert {"gcp:compute/sSLPolicy:SSLPolicy", "gcp:compute/managedSslCertificate:ManagedSslCertificate"} <= kinds


def test_args_that_never_passed_through_the_core_are_refused_before_anything_is_built(plans: Plans) -> None:
    aws = aws_args(with_tls(spec_of(plans, "serve-aws-realtime"), Tls(certificate_arn=CERT)))
    aws["serving"]["tls"]["certificate_arn"] = "arn:aws:iam::123456789012:server-certificate/x"
    with pytest.raises(SpecRefused, match=r"spec\.serving\.tls: '.*' is not an ACM certificate ARN"):
        AwsGpuEnvironment("bad", aws)
    del aws["serving"]["tls"]["certificate_arn"]
    with pytest.raises(SpecRefused, match=r"spec\.serving\.tls\.certificate_arn: an HTTPS listener needs"):
        AwsGpuEnvironment("bad", aws)
    gcp = gcp_args(with_tls(spec_of(plans, "serve-gcp-realtime"), Tls(domains=["api.example.com"])))
    gcp["serving"]["tls"]["domains"] = ["API.example.com"]
    with pytest.raises(SpecRefused, match=r"spec\.serving\.tls: 'API.example.com' is not lowercased"):
        GcpGpuEnvironment("bad", gcp)
    gcp["serving"]["tls"]["domains"] = []
    with pytest.raises(SpecRefused, match=r"spec\.serving\.tls: HTTPS here is a Google-managed certificate"):
        GcpGpuEnvironment("bad", gcp)
