"""ephemeral-expiry: an ephemeral environment without an expiry fails."""

from __future__ import annotations

from policy.resources import AWS_INSTANCE, AWS_LAUNCH_TEMPLATE, GCP_INSTANCE, GCP_TEMPLATE, TPU_VM
from tests.policy.conftest import (
    Stacks,
    made,
    one_violation,
    violations,
)

expiry = violations("ephemeral-expiry")


def test_ephemeral_vm_without_ttl(stacks: Stacks) -> None:
    vm = stacks["finetune-gcp-g2"].one(GCP_TEMPLATE)  # the spot VMs' regional group's template
    del vm.inputs["labels"]["fullserver-ttl-hours"]
    one_violation(expiry(vm), "finetune-gcp-g2", "no expiry", "fullserver-ttl-hours=<hours>", "fullserver janitor")
    assert expiry(vm, stack_tags={"fullserver:expires-at": "2030-01-01T00:00:00Z"}) == []
    vm.inputs["labels"]["fullserver-expires-at"] = "2030-01-01t00-00-00z"
    assert expiry(vm) == []


def test_bad_ttl_and_a_missing_lifecycle_label(stacks: Stacks) -> None:
    lt = stacks["exp-aws-spot"].one(AWS_LAUNCH_TEMPLATE)
    lt.inputs["tags"]["fullserver-ttl-hours"] = "0"
    for spec in lt.inputs["tagSpecifications"]:
        spec["tags"]["fullserver-ttl-hours"] = "0"
    one_violation(expiry(lt), "not a positive number")
    tpu = stacks["batch-tpu-v5e"].one(TPU_VM)
    del tpu.inputs["labels"]["fullserver-ttl-hours"]
    del tpu.inputs["labels"]["fullserver-lifecycle"]
    one_violation(expiry(tpu), "profile 'batch-inference' is ephemeral")


def test_persistent_environments_need_no_expiry(stacks: Stacks) -> None:
    assert expiry(stacks["train-p5-cluster"].one(AWS_INSTANCE, "node-0")) == []
    assert expiry(made(GCP_INSTANCE, {"labels": {}})) == []
