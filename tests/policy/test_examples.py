"""Every policy passes on every example stack (what the components register is what the pack allows)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pulumi_policy import ResourceValidationPolicy, StackValidationPolicy

from components.graph import graph_for_stack_plan
from policy import guardrails
from tests.core.test_stack_config import plan_offline, stack_config, write_stack
from tests.policy.conftest import NOT_APPLICABLE, CapturedStack, capture, policy_resources, run_resource, run_stack

RESOURCE_POLICIES = [p for p in guardrails.POLICIES if isinstance(p, ResourceValidationPolicy)]
STACK_POLICIES = [p for p in guardrails.POLICIES if isinstance(p, StackValidationPolicy)]
# Each stack's compute at list price, always on, is far below this; budget failures are tested apart.
GENEROUS = {"maxMonthlyUsd": 1_000_000}


def test_every_example_stack_was_captured(captured: dict[str, CapturedStack]) -> None:
    assert len(captured) == 16
    cloud = [s for s in captured.values() if s.plan.spec.platform.value != "bare-metal"]
    assert len(cloud) == 15
    assert all(s.resources for s in cloud)


@pytest.mark.parametrize("policy", RESOURCE_POLICIES, ids=lambda p: p.name)
def test_resource_policies_pass_on_every_example(
    policy: ResourceValidationPolicy, captured: dict[str, CapturedStack]
) -> None:
    failures = []
    checked = 0
    for stack in captured.values():
        for r in stack.resources:
            found = [v for v in run_resource(policy, r) if v != NOT_APPLICABLE]
            checked += 1
            failures += [f"{stack.stack}/{r.name}: {v}" for v in found]
    assert checked >= 90
    assert failures == []


@pytest.mark.parametrize("policy", STACK_POLICIES, ids=lambda p: p.name)
def test_stack_policies_pass_on_every_example(
    policy: StackValidationPolicy, captured: dict[str, CapturedStack]
) -> None:
    failures = {s.stack: run_stack(policy, policy_resources(s), GENEROUS) for s in captured.values()}
    found = {k: v for k, v in failures.items() if v}
    assert found == {}


def test_every_policy_passes_on_an_on_demand_gcp_group_over_the_set(tmp_path: Path) -> None:
    """No example stack builds one (the GCP GPU examples are spot): 8 x H100 of scale-training on
    demand, a stateful regional group over a3-highgpu-8g and a3-megagpu-8g."""
    config = stack_config(
        "finetune-gcp-g2", zone=None, profile="scale-training", accelerator="H100-80GB", acceleratorCount=8
    )
    plan = plan_offline(write_stack(tmp_path, "h100", config))
    stack = capture(plan, graph_for_stack_plan(plan))
    assert {r.type for r in stack.resources} >= {
        "gcp:compute/regionInstanceGroupManager:RegionInstanceGroupManager",
        "gcp:compute/instanceTemplate:InstanceTemplate",
    }
    failures = [f"{r.name}: {v}" for p in RESOURCE_POLICIES for r in stack.resources for v in run_resource(p, r)]
    failures += [f"{p.name}: {v}" for p in STACK_POLICIES for v in run_stack(p, policy_resources(stack), GENEROUS)]
    assert [f for f in failures if not f.endswith(NOT_APPLICABLE)] == []
