"""public-ip-by-profile: a public address fails unless the resource's profile allows one."""

from __future__ import annotations

from policy.resources import (
    AWS_INSTANCE,
    AWS_LAUNCH_TEMPLATE,
    AWS_SUBNET,
    GCP_TEMPLATE,
    TPU_QUEUED,
    TPU_VM,
)
from tests.policy.conftest import (
    Stacks,
    one_violation,
    violations,
)

public_ip = violations("public-ip-by-profile")


def test_public_ip_on_a_production_launch_template(stacks: Stacks) -> None:
    lt = stacks["train-p5-cluster"].one(AWS_LAUNCH_TEMPLATE)
    lt.inputs["networkInterfaces"][0]["associatePublicIpAddress"] = "true"
    one_violation(public_ip(lt), "scale-training", "security.public_ip: false", "set it to false", "Session Manager")


def test_public_subnet_and_instance(stacks: Stacks) -> None:
    subnet = stacks["train-p5-cluster"].one(AWS_SUBNET, "private-0")
    subnet.inputs["mapPublicIpOnLaunch"] = True
    one_violation(public_ip(subnet), "mapPublicIpOnLaunch", "NAT gateway")
    node = stacks["train-p5-cluster"].one(AWS_INSTANCE, "node-0")
    node.inputs["associatePublicIpAddress"] = True
    one_violation(public_ip(node), "scale-training")


def test_external_ip_on_gcp_template_and_tpu(stacks: Stacks) -> None:
    template = stacks["serve-gcp-realtime"].one(GCP_TEMPLATE)
    template.inputs["networkInterfaces"][0]["accessConfigs"] = [{"networkTier": "PREMIUM"}]
    one_violation(public_ip(template), "realtime-inference", "Cloud NAT")
    tpu = stacks["batch-tpu-v5e"].one(TPU_VM)
    tpu.inputs["networkConfig"]["enableExternalIps"] = True
    one_violation(public_ip(tpu), "batch-inference", "enableExternalIps")


def test_public_ip_allowed_by_the_profile(stacks: Stacks) -> None:
    """fine-tuning allows a public IP: its TPU VM and its spot GPU VMs' template have one and pass."""
    assert stacks["train-tpu-v5e"].one(TPU_VM).inputs["networkConfig"]["enableExternalIps"] is True
    assert public_ip(stacks["train-tpu-v5e"].one(TPU_VM)) == []
    template = stacks["finetune-gcp-a2"].one(GCP_TEMPLATE)  # the spot VMs' regional group's template
    assert template.inputs["networkInterfaces"][0]["accessConfigs"]
    assert public_ip(template) == []


def test_public_ip_without_a_profile(stacks: Stacks) -> None:
    qr = stacks["train-tpu-v5p-slice"].one(TPU_QUEUED)
    qr.inputs["tpu"]["nodeSpecs"][0]["node"]["networkConfig"]["enableExternalIps"] = True
    one_violation(public_ip(qr), "scale-training")  # its node's own label names the profile
    del qr.inputs["tpu"]["nodeSpecs"][0]["node"]["labels"]
    one_violation(public_ip(qr), "no fullserver-profile label", "label it fullserver-profile=<profile>")
    one_violation(public_ip(qr, stack_tags={"fullserver:profile": "scale-training"}), "scale-training")
    assert public_ip(qr, stack_tags={"fullserver:profile": "fine-tuning"}) == []
    vm = stacks["finetune-gcp-a2"].one(GCP_TEMPLATE)
    vm.inputs["labels"]["fullserver-profile"] = "no-such-profile"
    one_violation(public_ip(vm), "unknown profile 'no-such-profile'", "experimentation")
