"""Every example stack, under any name Pulumi accepts, asks its provider only for names it takes.

The resource graphs are the real program's, under the mock runtime; each physical name is what
the program sets or what the provider's autonaming makes of the logical name (``-`` and seven
hex characters, eight for pulumi-kubernetes, neither shortened nor lowercased), judged by the
API's own rule (``fullserver.naming``), the objects a Kubernetes ``ConfigGroup`` applies included.
The graph itself refuses a stack that would break one (``GraphError``), so ``fullserver plan``
fails where ``pulumi up`` would.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.graph import Graph, GraphError, evaluate, graph_for_config, graph_for_plan
from fullserver import naming
from fullserver.kube.pool import LABEL_VALUE_MAX
from fullserver.plan import StackPlan
from fullserver.platforms import name_rules
from fullserver.platforms.kubernetes import type_token
from tests.components.conftest import Plans
from tests.components.matrix import CERTIFICATE
from tests.components.test_kube_stacks import STACKS as KUBE_STACKS
from tests.core.test_stack_config import stack_config

REALISTIC = [
    "serve-realtime-production-east",  # over ELB's room for a target group
    "ci-20261126-081700-a1b2c3",  # what `fullserver ephemeral` generates
    "Team_ML.Serve.v2",  # upper case, '_' and '.': valid for Pulumi, not for Compute Engine
    "mlplatform-serve-realtime-staging-east",
    "a" * 46,  # a 46-character name made a 65-character autoscaler name
    "A" * 100,  # Pulumi's longest
    "k" * 63,
    "x",
]


def cloud_plans(plans: Plans) -> list[StackPlan]:
    return [p for p in plans.values() if p.spec.platform.value != "bare-metal"]


def graph_as(plan: StackPlan, stack: str) -> Graph:
    return graph_for_plan(plan.model_copy(update={"stack": stack}))


def refused_names(graph: Graph) -> list[str]:
    """Every name the graph asks for that its API refuses (``graph_problems``, which also reads
    the objects a ConfigGroup applies), over the custom resources and those groups."""
    rows = [(r.type, r.name, r.inputs) for r in graph.rows if r.custom or naming.creates_objects(r.type)]
    return naming.graph_problems(rows)


def project_wide_names(graph: Graph) -> set[str]:
    """Names the program sets itself, which are unique in a project or zone (service account
    ids, TPU node ids, managed groups' instance names)."""
    return {
        name
        for row in graph.rows
        for rule, name in naming.physical_names(row.type, row.name, row.inputs)
        if not rule.autoname or row.inputs.get(rule.field) is not None
    }


@pytest.mark.parametrize("stack", REALISTIC)
def test_every_example_stack_under_a_realistic_name_gets_only_names_its_provider_accepts(
    plans: Plans, stack: str
) -> None:
    for plan in cloud_plans(plans):
        assert refused_names(graph_as(plan, stack)) == [], plan.stack


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stack=st.text(alphabet="abcXYZ019-_.", min_size=1, max_size=100))
def test_any_stack_name_pulumi_accepts_gives_names_every_provider_accepts(plans: Plans, stack: str) -> None:
    for plan in cloud_plans(plans):
        assert refused_names(graph_as(plan, stack)) == [], plan.stack


def test_two_stacks_that_share_a_long_prefix_share_no_project_wide_name(plans: Plans) -> None:
    """...-staging-east and ...-staging-west in one project: a service account id cut at 30
    characters was the same for both (409 alreadyExists on the second)."""
    # A node-pool plan names its cluster and pools at plan time (KubePlan), so renaming the stack
    # without re-planning keeps them: only VM plans are renamed here.
    for plan in (p for p in cloud_plans(plans) if p.spec.kube is None):
        east = project_wide_names(graph_as(plan, "mlplatform-serve-realtime-staging-east"))
        west = project_wide_names(graph_as(plan, "mlplatform-serve-realtime-staging-west"))
        assert not east & west, plan.stack


def test_a_graph_with_a_name_its_provider_refuses_is_refused_in_one_line() -> None:
    import pulumi_aws as aws

    def program() -> None:
        aws.lb.TargetGroup("serve-realtime-production-east-tg", port=80, protocol="HTTP", vpc_id="vpc-1")

    with pytest.raises(GraphError) as refused:
        evaluate(program, "serve-realtime-production-east")
    line = str(refused.value)
    assert "\n" not in line
    assert "target group name 'serve-realtime-production-east-tg-0a1b2c3' is 41 characters" in line
    assert "ELBv2 CreateTargetGroup takes 1-32" in line


# --- Kubernetes stacks, re-planned under each name ---------------------------------------------------
# A node-pool plan names its cluster, pools and workload at plan time (KubePlan), so these run the
# whole program from the stack's config under the new name: what `pulumi up` would build for it.

EKS_SERVING = {
    "fullserver:profile": "realtime-inference",
    "fullserver:platform": "eks-gpu",
    "fullserver:region": "us-east-1",
    "fullserver:accelerator": "L4",
    "fullserver:acceleratorCount": 1,
    "fullserver:framework": "pytorch",
    "fullserver:owner": "serving-team",
    "fullserver:controlPlaneSourceRanges": ["198.51.100.0/24"],  # where pulumi up reaches the API from
    "fullserver:serving": {
        "apiKeySecret": "serving-team/api-key",
        "domains": ["llm.example.com"],
        "certificateArn": CERTIFICATE,
    },
}
"""A created EKS cluster that serves: the AWS Load Balancer Controller's Helm release, the Secret."""


def kube_configs(deploy: bool) -> dict[str, dict[str, Any]]:
    configs = {stack: stack_config(stack) for stack in KUBE_STACKS} | {"eks-serving": dict(EKS_SERVING)}
    return {k: {**c, "fullserver:deployWorkload": deploy} for k, c in configs.items()}


def kubernetes_objects(graph: Graph) -> list[tuple[str, str, dict[str, Any]]]:
    """Every Kubernetes object the graph creates, as (type token, name, inputs): its custom
    resources (their logical names) and the objects each ConfigGroup applies (their own names)."""
    found = [(r.type, r.name, r.inputs) for r in graph.rows if r.custom and r.type.startswith("kubernetes:")]
    for group in graph.of_type("yaml/v2:ConfigGroup"):
        found += [(type_token(o), o["metadata"]["name"], o) for o in group.inputs["objs"]]
    return found


def label_values(obj: Any) -> list[str]:
    """Every label value and selector value in an object (metadata, templates, selectors)."""
    if isinstance(obj, list):
        return [v for item in obj for v in label_values(item)]
    if not isinstance(obj, dict):
        return []
    found = [str(v) for k, m in obj.items() if k in ("labels", "matchLabels", "nodeSelector") for v in m.values()]
    if "selector" in obj and isinstance(obj["selector"], dict) and "matchLabels" not in obj["selector"]:
        found += [str(v) for v in obj["selector"].values()]
    return found + [v for value in obj.values() for v in label_values(value)]


LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
"""Kubernetes "Labels and Selectors": empty, or at most 63 of these, alphanumeric at both ends."""


@pytest.mark.parametrize("deploy", [False, True], ids=["pools", "deployWorkload"])
@pytest.mark.parametrize("stack", REALISTIC)
def test_every_kubernetes_stack_replanned_under_a_realistic_name_gets_only_names_its_apis_accept(
    stack: str, deploy: bool
) -> None:
    """Helm releases (53, Helm's regex), Services (RFC 1035), Jobs (63), every other object
    (DNS-1123 subdomains), clusters and pools, and every label value, under the new name."""
    for example, config in kube_configs(deploy).items():
        graph = graph_for_config(stack, config)  # raises GraphError on any name its API refuses
        assert refused_names(graph) == [], example
        objects = kubernetes_objects(graph)
        kinds = {typ.rsplit(":", 1)[-1] for typ, _, _ in objects}
        assert [typ for typ, _, _ in objects if not name_rules(typ)] == [], example  # every kind has its rule
        assert ("Release" in kinds) is example.startswith("eks")  # a created EKS cluster's charts
        assert bool(kinds & {"Job", "Deployment"}) is deploy, example
        for _, _, obj in objects:
            for value in label_values(obj):
                assert len(value) <= LABEL_VALUE_MAX and LABEL_VALUE.fullmatch(value), (example, value)


def test_helm_releases_are_named_after_their_charts_whatever_the_stack_is_called() -> None:
    """pulumi-kubernetes named them <logical>-<8 hex>: past Helm's 53 characters from a 15-character
    stack name on (the controller), and upper case or '_' for stacks like Team_ML.Serve.v2."""
    for stack in ("eks-serving", "Team_ML.Serve.v2", "ci-20261126-081700-a1b2c3", "A" * 100):
        graph = graph_for_config(stack, {**EKS_SERVING, "fullserver:deployWorkload": True})
        names = sorted(r.inputs["name"] for r in graph.of_type("helm.sh/v3:Release"))
        assert names == ["aws-load-balancer-controller", "cluster-autoscaler", "nvidia-device-plugin"], stack


def test_an_upper_case_stack_gets_lowercase_workload_names_that_keep_it_apart_from_its_lowercase_twin() -> None:
    def names(stack: str) -> set[str]:
        graph = graph_for_config(stack, {**stack_config("serve-gke-l4"), "fullserver:deployWorkload": True})
        objects = kubernetes_objects(graph)
        return {str(o["metadata"]["name"]) for typ, _, o in objects if typ.endswith(("Deployment", "Secret"))}

    upper, lower = names("Team_ML.Serve.v2"), names("team-ml-serve-v2")
    assert lower == {"team-ml-serve-v2", "team-ml-serve-v2-serving"}
    assert not upper & lower and all(n == n.lower() for n in upper)


def test_a_workload_object_its_api_refuses_is_refused_in_one_line() -> None:
    import pulumi_kubernetes as k8s

    def program() -> None:
        objs = [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "Team_ML.Serve"}, "spec": {}}]
        k8s.yaml.v2.ConfigGroup("Team_ML.Serve-workload", objs=objs)

    with pytest.raises(GraphError) as refused:
        evaluate(program, "Team_ML.Serve")
    line = str(refused.value)
    assert "\n" not in line
    assert "Team_ML.Serve-workload/Team_ML.Serve (kubernetes:core/v1:Service): Service name 'Team_ML.Serve'" in line
    assert "does not match [a-z]([a-z0-9-]*[a-z0-9])? (Kubernetes object names)" in line
