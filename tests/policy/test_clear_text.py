"""no-api-key-in-clear: an internet-facing endpoint without TLS fails unless the stack set
``serving.plainHttp``; what each cloud's resources say is read as the plan and components read it."""

from __future__ import annotations

from typing import Any

from fullserver.kube.manifest import workload
from fullserver.kube.serve import PLAIN_HTTP_ANNOTATION
from fullserver.tls import PLAIN_HTTP_LABEL
from policy.clear_text import CONFIG_GROUP
from policy.clouds.aws import LB as AWS_LB
from policy.clouds.aws import LISTENER as AWS_LISTENER
from policy.clouds.gcp import GLOBAL_RULE as GCP_GLOBAL_RULE
from policy.clouds.gcp import URL_MAP as GCP_URL_MAP
from tests.components.conftest import plain_http
from tests.policy.conftest import CapturedStack, Stacks, made, one_violation, violations

in_clear = violations("no-api-key-in-clear")
IN_CLEAR = "the internet-facing endpoint has no TLS, so every request's API key (Authorization: Bearer)"


def _aws_forwarding_on_port_80(stacks: Stacks) -> CapturedStack:
    """serve-aws-realtime with its port-80 listener forwarding instead of redirecting, and no HTTPS one."""
    stack = stacks["serve-aws-realtime"]
    https = stack.one(AWS_LISTENER, "-https")
    http = stack.one(AWS_LISTENER, "-http")
    http.inputs["defaultActions"] = http.outputs["defaultActions"] = https.inputs["defaultActions"]
    stack.resources.remove(https)
    return stack


def test_an_aws_http_listener_that_forwards_on_an_internet_facing_alb_fails_naming_the_key(stacks: Stacks) -> None:
    stack = _aws_forwarding_on_port_80(stacks)
    one_violation(
        in_clear(stack),
        "Listener 'serve-aws-realtime-http'",
        IN_CLEAR,
        "Fix: set fullserver:serving.certificateArn for HTTPS, or fullserver:serving.plainHttp: true",
    )


def test_an_aws_endpoint_the_stack_accepted_in_clear_or_an_internal_one_passes(stacks: Stacks) -> None:
    stack = _aws_forwarding_on_port_80(stacks)
    alb = stack.one(AWS_LB, "-alb")
    alb.outputs["tags"] = {**alb.outputs["tags"], PLAIN_HTTP_LABEL: "true"}
    assert in_clear(stack) == []
    del alb.outputs["tags"][PLAIN_HTTP_LABEL]
    alb.outputs["internal"] = True  # reached from its VPC alone
    assert in_clear(stack) == []


def test_the_redirect_on_port_80_is_no_endpoint_in_clear(stacks: Stacks) -> None:
    assert in_clear(stacks["serve-aws-realtime"]) == [] and in_clear(stacks["serve-gcp-realtime"]) == []


def test_a_gcp_http_proxy_whose_url_map_forwards_fails_unless_the_rule_is_labelled(stacks: Stacks) -> None:
    stack = stacks["serve-gcp-realtime"]
    redirect = stack.one(GCP_URL_MAP, "-redirect")
    del redirect.outputs["defaultUrlRedirect"]
    redirect.outputs["defaultService"] = "serve-gcp-realtime-backend-id"
    stack.resources.remove(stack.one(GCP_GLOBAL_RULE, "-https-lb"))
    one_violation(
        in_clear(stack),
        "GlobalForwardingRule 'serve-gcp-realtime-lb'",
        IN_CLEAR,
        "set fullserver:serving.domains for HTTPS",
    )
    rule = stack.one(GCP_GLOBAL_RULE, "-lb")
    rule.outputs["labels"] = {PLAIN_HTTP_LABEL: "true"}
    assert in_clear(stack) == []


def _with_workload(stack: CapturedStack, manifests: list[dict[str, Any]]) -> CapturedStack:
    """The applied workload, a component the engine lists too (the harness captures custom resources)."""
    stack.resources.append(made(CONFIG_GROUP, {"objs": manifests}, name="serve-workload"))
    return stack


def test_a_node_pools_load_balancer_service_without_tls_fails_unless_annotated(stacks: Stacks) -> None:
    stack = stacks["serve-gke-l4"]
    plan = stack.plan.spec.kube
    assert plan is not None
    manifests = workload(plan, plain_http(stack.plan.spec))
    assert in_clear(_with_workload(stack, manifests)) == []  # the stack said plainHttp: true
    service = next(m for m in manifests if m["kind"] == "Service")
    del service["metadata"]["annotations"][PLAIN_HTTP_ANNOTATION]
    one_violation(in_clear(stack), "ConfigGroup 'serve-workload'", IN_CLEAR, "fullserver:serving.domains")


def test_a_gke_gateway_with_its_certificate_passes(stacks: Stacks) -> None:
    stack = stacks["serve-gke-l4"]
    plan = stack.plan.spec.kube
    assert plan is not None
    assert in_clear(_with_workload(stack, workload(plan, stack.plan.spec))) == []
