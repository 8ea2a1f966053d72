"""production-on-demand-or-reserved: production profiles on spot capacity fail."""

from __future__ import annotations

from policy.resources import AWS_ASG, AWS_LAUNCH_TEMPLATE, GCP_TEMPLATE, TPU_VM
from tests.policy.conftest import (
    Stacks,
    made,
    one_violation,
    violations,
)

capacity = violations("production-on-demand-or-reserved")


def test_spot_launch_template_for_scale_training(stacks: Stacks) -> None:
    lt = stacks["train-p5-cluster"].one(AWS_LAUNCH_TEMPLATE)
    lt.inputs["instanceMarketOptions"] = {"marketType": "spot"}
    one_violation(capacity(lt), "scale-training", "on-demand or reserved", "remove instanceMarketOptions")


def test_spot_group_and_spot_template(stacks: Stacks) -> None:
    group = made(
        AWS_ASG,
        {
            "tags": [{"key": "fullserver-profile", "value": "realtime-inference", "propagateAtLaunch": True}],
            "mixedInstancesPolicy": {"instancesDistribution": {"onDemandPercentageAboveBaseCapacity": 0}},
        },
    )
    one_violation(capacity(group), "realtime-inference", "onDemandPercentageAboveBaseCapacity to 100")
    template = stacks["serve-gcp-realtime"].one(GCP_TEMPLATE)
    template.inputs["scheduling"].update({"provisioningModel": "SPOT", "preemptible": True})
    one_violation(capacity(template), "provisioningModel STANDARD")


def test_spot_allowed_for_spot_profiles_and_batch_inference_by_default(stacks: Stacks) -> None:
    spot = stacks["finetune-gcp-g2"].one(GCP_TEMPLATE)  # its spot VMs come from a regional group's template
    assert spot.inputs["scheduling"]["provisioningModel"] == "SPOT"
    assert capacity(spot) == []  # fine-tuning is not production
    batch = stacks["batch-tpu-v5e"].one(TPU_VM)
    assert capacity(batch) == []  # production stage, but the profile itself prices spot-with-fallback
    one_violation(capacity(batch, {"allowProfileSpot": False}), "batch-inference", "schedulingConfig.spot false")
