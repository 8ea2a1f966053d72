"""imdsv2-required: launch templates and instances that allow IMDSv1 fail."""

from __future__ import annotations

from policy.resources import AWS_INSTANCE, AWS_LAUNCH_TEMPLATE
from tests.policy.conftest import (
    Stacks,
    made,
    one_violation,
    violations,
)

imdsv2 = violations("imdsv2-required")


def test_launch_template_with_imdsv1(stacks: Stacks) -> None:
    lt = stacks["train-p5-cluster"].one(AWS_LAUNCH_TEMPLATE)
    lt.inputs["metadataOptions"]["httpTokens"] = "optional"
    one_violation(imdsv2(lt), "IMDSv1", "optional", 'httpTokens to "required"')


def test_instance_without_template_or_metadata_options() -> None:
    found = imdsv2(made(AWS_INSTANCE, {"instanceType": "g5.xlarge", "ami": "ami-1"}))
    one_violation(found, "unset", 'httpTokens to "required"')


def test_instance_from_a_template_defers_to_it(stacks: Stacks) -> None:
    assert imdsv2(stacks["exp-aws-spot"].one(AWS_INSTANCE)) == []
    assert imdsv2(made(AWS_LAUNCH_TEMPLATE, {"metadataOptions": {"httpEndpoint": "disabled"}})) == []
