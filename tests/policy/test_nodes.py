"""The stack view: each example's nodes are the shapes sizing chose; unknown values skip only their node."""

from __future__ import annotations

from typing import Any

import pytest

from policy.budget import estimate_month
from policy.resources import AWS_INSTANCE, AWS_LAUNCH_TEMPLATE, GCP_TEMPLATE
from policy.stack_nodes import accelerator_nodes
from tests.policy.conftest import (
    CapturedStack,
    Stacks,
    policy_resources,
    violations,
)

balance = violations("balance-minimums")


@pytest.mark.parametrize("with_dependencies", [True, False], ids=["property-deps", "id-matching"])
def test_stack_view_finds_each_examples_shape(captured: dict[str, CapturedStack], with_dependencies: bool) -> None:
    """The nodes the balance and budget policies judge are the shapes sizing chose, with the right
    count, spot flag and attached storage, whether references come from the engine or from ids."""
    seen = {}
    for stack in captured.values():
        nodes, skipped = accelerator_nodes(policy_resources(stack, with_dependencies=with_dependencies))
        assert skipped == []
        seen[stack.stack] = [(n.shape, n.count, n.spot_count > 0, n.attached_gib) for n in nodes]
        spec = stack.plan.spec
        if spec.platform.value == "bare-metal":
            assert nodes == []
            continue
        # a GKE TPU pool's nodes are the slice's hosts (its machine type); every other node is the offer
        shape = spec.kube.machine_type if spec.kube is not None and spec.tpu is not None else spec.offer
        # a created cluster also runs its untainted CPU system pool (priced, never an accelerator offer)
        system = set()
        if spec.kube is not None and spec.kube.create_cluster:
            system = {"e2-standard-4" if spec.kube.provider == "gke" else "m6i.large"}
        assert {n.shape for n in nodes} == {shape} | system, stack.stack
        assert all(n.offer is None for n in nodes if n.shape in system), stack.stack
    assert seen["exp-aws-spot"] == [("g4dn.xlarge", 1.0, False, 63.0)]  # on-demand: no published spot price
    assert seen["train-p5-cluster"] == [("p5.48xlarge", 1.0, False, 0.0)] * 2
    assert seen["finetune-gcp-g2"] == [("g2-standard-12", 1.0, True, 250.0)]
    assert seen["serve-gcp-realtime"] == [("g2-standard-12", 8.0, False, 0.0)]  # autoscaler maximum: budgets hold to it
    assert seen["train-tpu-v5e"] == [("v5litepod-8", 1.0, True, 125.0)]
    assert seen["batch-tpu-v5e"] == [("v5litepod-4", 1.0, True, 188.0)]
    assert seen["train-tpu-v5p-slice"] == [("v5p-128", 1.0, False, 0.0)]


def test_a_launch_template_nothing_launches_is_read_as_the_machines_it_would_launch(
    stacks: dict[str, CapturedStack],
) -> None:
    """One reading of a launch template (type, offer, disks, labels, region) serves the instances
    launched from it and a template on its own, which only differs in launching no machines."""
    stack = stacks["train-p5-cluster"]
    launched, _ = accelerator_nodes(policy_resources(stack))
    stack.resources = [r for r in stack.resources if r.type != AWS_INSTANCE]
    [alone], _ = accelerator_nodes(policy_resources(stack))
    assert alone.resource.resource_type == AWS_LAUNCH_TEMPLATE and alone.count == 0
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
    assert estimate_month(policy_resources(stack)).unpriced == []  # no machines, nothing to price


def test_unknown_values_skip_only_their_node(stacks: Stacks) -> None:
    """During preview an unknown prop raises; the stack policies skip that node, not the stack."""
    from pulumi_policy.proxy import UnknownValueError

    class Unknown(dict[str, Any]):
        def get(self, key: str, default: Any = None) -> Any:
            if key == "machineType":
                raise UnknownValueError("04da6b54-80e4-46f7-96ec-b56ff0331ba9", [key])
            return super().get(key, default)

    stack = stacks["finetune-gcp-g2"]
    vm = stack.one(GCP_TEMPLATE)  # its spot VMs' regional group's template: the stack's only node
    vm.outputs = Unknown(vm.outputs)
    assert balance(stack) == []
    nodes, skipped = accelerator_nodes(policy_resources(stack))
    assert nodes == [] and skipped and "machineType" in skipped[0]
