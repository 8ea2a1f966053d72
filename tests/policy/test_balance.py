"""balance-minimums: a node short of its profile's minimums fails, one violation per dimension."""

from __future__ import annotations

import pytest
from pulumi_policy import StackValidationPolicy

from fullserver.rules import LABEL_PROFILE
from policy import labels
from policy.labels import profile_for, profiles
from policy.resources import AWS_LAUNCH_TEMPLATE, GCP_TEMPLATE, TPU_QUEUED, TPU_VM
from policy.stack_nodes import accelerator_nodes
from tests.policy.conftest import (
    Stacks,
    by_name,
    one_violation,
    policy_resources,
    run_stack,
    violations,
)

balance = violations("balance-minimums")


def test_unbalanced_shape_reports_each_short_dimension(stacks: Stacks) -> None:
    stack = stacks["train-p5-cluster"]
    stack.one(AWS_LAUNCH_TEMPLATE).outputs["instanceType"] = "g6.xlarge"  # 1 x L4 on 4 vCPUs
    found = balance(stack)
    nodes = [f for f in found if "node-0" in f]
    assert len(nodes) == 4, found  # 4 vCPUs, 16 GiB, 250 GB NVMe, 10 Gbps: every dimension is short
    assert {f.split(" is short of ")[1].split()[0] for f in nodes} == {"cpu", "ram", "nvme", "network"}
    for f in nodes:
        assert "scale-training" in f and "fullserver plan" in f and "g6.xlarge" in f


def test_missing_data_disk_leaves_nvme_short(stacks: Stacks) -> None:
    """The spot G2 runs from a regional group's instance template: without its data disk, the
    template's local SSD alone is short of fine-tuning's NVMe minimum."""
    stack = stacks["finetune-gcp-g2"]
    template = stack.one(GCP_TEMPLATE)
    disks = template.outputs["disks"]
    template.outputs["disks"] = [d for d in disks if d.get("boot") or d.get("type") == "SCRATCH"]
    assert len(template.outputs["disks"]) == len(disks) - 1
    one_violation(balance(stack), "nvme 375 GiB < 500 GiB", "larger data disk")


def test_tpu_host_short_for_a_stricter_profile(stacks: Stacks) -> None:
    stack = stacks["batch-tpu-v5e"]
    stack.one(TPU_VM).outputs["labels"]["fullserver-profile"] = "realtime-inference"
    found = balance(stack)
    assert found and all("realtime-inference" in f and "tpu-vm" in f for f in found)


def test_queued_slice_is_judged_by_its_own_label_and_an_unlabelled_one_by_the_stack_tag(
    stacks: Stacks, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The queued slice's node carries the environment's labels, so it is held to (and meets)
    scale-training's TPU minimums without help; a node without labels falls back to the profile
    tag ``fullserver ephemeral`` sets on the stack, and without either is not judged."""
    policy = by_name("balance-minimums")
    assert isinstance(policy, StackValidationPolicy)
    resources = policy_resources(stacks["train-tpu-v5p-slice"])  # a copy: its labels are removed below
    [node], _ = accelerator_nodes(resources)
    assert node.resource.resource_type == TPU_QUEUED
    shipped = profiles()
    assert node.labels[LABEL_PROFILE] == "scale-training"
    assert profile_for(node.labels, {}) is shipped["scale-training"]
    assert run_stack(policy, resources) == []  # held to the minimums, and meets them
    # Held, not skipped: with scale-training's CPU minimum out of reach, the slice fails by its own label.
    real = shipped["scale-training"]
    cpu = real.balance.cpu_per_accelerator.model_copy(update={"value": 10_000})
    tight = real.model_copy(update={"balance": real.balance.model_copy(update={"cpu_per_accelerator": cpu})})
    monkeypatch.setattr(labels, "profiles", lambda: {**shipped, "scale-training": tight})
    found = run_stack(policy, resources)
    assert len(found) == 1 and "short of cpu" in found[0] and "profile 'scale-training' on tpu-vm" in found[0]
    # Without labels on the node, only the stack tag names the profile.
    del node.resource.props["tpu"]["nodeSpecs"][0]["node"]["labels"]
    tag = {"fullserver:profile": "scale-training"}
    assert run_stack(policy, resources) == []
    found = run_stack(policy, resources, stack_tags=tag)
    assert len(found) == 1 and "profile 'scale-training' on tpu-vm" in found[0]
