"""Every policy passes on every example stack, and the stack view sees each stack's real shape."""

from __future__ import annotations

import pytest
from pulumi_policy import ResourceValidationPolicy, StackValidationPolicy

from policy import guardrails
from tests.policy.conftest import NOT_APPLICABLE, CapturedStack, by_name, policy_resources, run_resource, run_stack

RESOURCE_POLICIES = [p for p in guardrails.POLICIES if isinstance(p, ResourceValidationPolicy)]
STACK_POLICIES = [p for p in guardrails.POLICIES if isinstance(p, StackValidationPolicy)]
# Each stack's compute at list price, always on, is far below this; budget failures are tested apart.
GENEROUS = {"maxMonthlyUsd": 1_000_000}


def test_every_example_stack_was_captured(captured: dict[str, CapturedStack]) -> None:
    assert len(captured) == 9
    cloud = [s for s in captured.values() if s.plan.spec.platform.value != "bare-metal"]
    assert len(cloud) == 8
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
    assert {k: v for k, v in failures.items() if v} == {}


def test_gcp_disks_are_not_applicable_to_encryption(captured: dict[str, CapturedStack]) -> None:
    disk = captured["finetune-gcp-g2"].one(guardrails.GCP_DISK)
    policy = by_name("encrypted-disks")
    assert isinstance(policy, ResourceValidationPolicy)
    assert run_resource(policy, disk) == [NOT_APPLICABLE]


@pytest.mark.parametrize("with_dependencies", [True, False], ids=["property-deps", "id-matching"])
def test_stack_view_finds_each_examples_shape(captured: dict[str, CapturedStack], with_dependencies: bool) -> None:
    """The nodes the balance and budget policies judge are the shapes sizing chose, with the right
    count, spot flag and attached storage, whether references come from the engine or from ids."""
    seen = {}
    for stack in captured.values():
        nodes, skipped = guardrails.accelerator_nodes(policy_resources(stack, with_dependencies=with_dependencies))
        assert skipped == []
        seen[stack.stack] = [(n.shape, n.count, n.spot_count > 0, n.attached_gib) for n in nodes]
        spec = stack.plan.spec
        if spec.platform.value == "bare-metal":
            assert nodes == []
            continue
        assert {n.shape for n in nodes} == {spec.offer}, stack.stack
    assert seen["exp-aws-spot"] == [("g4dn.xlarge", 1.0, False, 63.0)]  # on-demand: no published spot price
    assert seen["train-p5-cluster"] == [("p5.48xlarge", 1.0, False, 0.0)] * 2
    assert seen["finetune-gcp-g2"] == [("g2-standard-12", 1.0, True, 250.0)]
    assert seen["serve-gcp-realtime"] == [("g2-standard-12", 2.0, False, 0.0)]  # autoscaler minimum
    assert seen["train-tpu-v5e"] == [("v5litepod-8", 1.0, True, 800.0)]
    assert seen["batch-tpu-v5e"] == [("v5litepod-4", 1.0, True, 400.0)]
    assert seen["train-tpu-v5p-slice"] == [("v5p-128", 1.0, False, 0.0)]


def test_unlabelled_queued_slice_is_judged_with_the_stack_profile_tag(
    captured: dict[str, CapturedStack], monkeypatch: pytest.MonkeyPatch
) -> None:
    """pulumi-gcp 10.2's queued resource has no labels; ``fullserver ephemeral`` tags the stack with
    the profile, and then the slice is held to (and meets) scale-training's TPU minimums."""
    policy = next(p for p in STACK_POLICIES if p.name == "balance-minimums")
    resources = policy_resources(captured["train-tpu-v5p-slice"])
    [node], _ = guardrails.accelerator_nodes(resources)
    assert node.resource.resource_type == guardrails.TPU_QUEUED
    # No label names a profile: without the stack tag there is nothing to judge the slice by.
    assert guardrails.LABEL_PROFILE not in node.labels
    assert guardrails.profile_for(node.labels, {}) is None
    tag = {"fullserver:profile": "scale-training"}
    shipped = guardrails.profiles()
    assert guardrails.profile_for(node.labels, tag) is shipped["scale-training"]
    assert run_stack(policy, resources, stack_tags=tag) == []  # held to the minimums, and meets them
    # Held, not skipped: with scale-training's CPU minimum out of reach, the tag makes the slice fail
    # (naming the profile it got from the tag) and, without the tag, the slice is not judged at all.
    real = shipped["scale-training"]
    cpu = real.balance.cpu_per_accelerator.model_copy(update={"value": 10_000})
    tight = real.model_copy(update={"balance": real.balance.model_copy(update={"cpu_per_accelerator": cpu})})
    monkeypatch.setattr(guardrails, "profiles", lambda: {**shipped, "scale-training": tight})
    found = run_stack(policy, resources, stack_tags=tag)
    assert len(found) == 1 and "short of cpu" in found[0] and "profile 'scale-training' on tpu-vm" in found[0]
    assert run_stack(policy, resources) == []


def test_estimate_covers_compute_and_disks(captured: dict[str, CapturedStack]) -> None:
    """The policy-time estimate prices every cloud example and is at least the plan's compute at
    the same hourly rate (the plan counts productive hours; the policy a full 730-hour month)."""
    for stack in captured.values():
        if stack.plan.spec.platform.value == "bare-metal":
            continue
        est = guardrails.estimate_month(policy_resources(stack))
        assert est.unpriced == [], stack.stack
        assert est.usd_month > 0, stack.stack
        assert est.usd_month >= 0.5 * stack.plan.cost.usd_month, stack.stack
    p5 = guardrails.estimate_month(policy_resources(captured["train-p5-cluster"]))
    offer = guardrails.catalog().offer("p5.48xlarge")
    assert offer is not None
    compute = 2 * offer.prices["us-east-1"].on_demand * 730
    assert compute <= p5.usd_month < compute * 1.01


def test_a_launch_template_nothing_launches_is_read_as_the_machines_it_would_launch(
    stacks: dict[str, CapturedStack],
) -> None:
    """One reading of a launch template (type, offer, disks, labels, region) serves the instances
    launched from it and a template on its own, which only differs in launching no machines."""
    stack = stacks["train-p5-cluster"]
    launched, _ = guardrails.accelerator_nodes(policy_resources(stack))
    stack.resources = [r for r in stack.resources if r.type != guardrails.AWS_INSTANCE]
    [alone], _ = guardrails.accelerator_nodes(policy_resources(stack))
    assert alone.resource.resource_type == guardrails.AWS_LAUNCH_TEMPLATE and alone.count == 0
    node = launched[0]
    assert (alone.shape, alone.offer, alone.region, alone.disks, alone.attached_gib) == (
        node.shape,
        node.offer,
        node.region,
        node.disks,
        node.attached_gib,
    )
    fullserver = {k: v for k, v in alone.labels.items() if k.startswith("fullserver-")}
    assert fullserver and fullserver.items() <= node.labels.items()
    assert guardrails.estimate_month(policy_resources(stack)).unpriced == []  # no machines, nothing to price
