"""Every example stack, under any name Pulumi accepts, asks its provider only for names it takes.

The resource graphs are the real program's, under the mock runtime; each physical name is what
the program sets or what the provider's autonaming makes of the logical name (``-`` and seven
hex characters, neither shortened nor lowercased), judged by the API's own rule
(``fullserver.naming``). The graph itself refuses a stack that would break one (``GraphError``),
so ``fullserver plan`` fails where ``pulumi up`` would.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.graph import Graph, GraphError, evaluate, graph_for_plan
from fullserver import naming
from fullserver.plan import StackPlan
from tests.components.conftest import Plans

REALISTIC = [
    "serve-realtime-production-east",  # over ELB's room for a target group
    "ci-20261126-081700-a1b2c3",  # what `fullserver ephemeral` generates
    "Team_ML.Serve.v2",  # upper case, '_' and '.': valid for Pulumi, not for Compute Engine
    "mlplatform-serve-realtime-staging-east",
    "a" * 46,  # a 46-character name made a 65-character autoscaler name
    "A" * 100,  # Pulumi's longest
    "x",
]


def cloud_plans(plans: Plans) -> list[StackPlan]:
    return [p for p in plans.values() if p.spec.platform.value != "bare-metal"]


def graph_as(plan: StackPlan, stack: str) -> Graph:
    return graph_for_plan(plan.model_copy(update={"stack": stack}))


def refused_names(graph: Graph) -> list[str]:
    return [
        f"{row.name}: {problem}"
        for row in graph.rows
        if row.custom
        for rule, name in naming.physical_names(row.type, row.name, row.inputs)
        if (problem := rule.problem(name)) is not None
    ]


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
