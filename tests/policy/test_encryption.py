"""encrypted-disks: unencrypted EBS fails; GCP disks only when CMEK is asked for."""

from __future__ import annotations

from pulumi_policy import ResourceValidationPolicy

from policy.resources import AWS_INSTANCE, AWS_LAUNCH_TEMPLATE, AWS_VOLUME, GCP_DISK, GCP_TEMPLATE
from tests.policy.conftest import (
    NOT_APPLICABLE,
    CapturedStack,
    Stacks,
    by_name,
    made,
    one_violation,
    run_resource,
    violations,
)

encrypted = violations("encrypted-disks")


def test_unencrypted_launch_template_device(stacks: Stacks) -> None:
    lt = stacks["exp-aws-spot"].one(AWS_LAUNCH_TEMPLATE)
    lt.inputs["blockDeviceMappings"][0]["ebs"]["encrypted"] = "false"
    one_violation(encrypted(lt), "/dev/sda1", "encrypted: true")


def test_unencrypted_volume(stacks: Stacks) -> None:
    vol = stacks["exp-aws-spot"].one(AWS_VOLUME)
    del vol.inputs["encrypted"]
    one_violation(encrypted(vol), "not encrypted", "encrypted: true")


def test_instance_root_and_ebs_blocks() -> None:
    bare = made(AWS_INSTANCE, {"instanceType": "g5.xlarge"})
    one_violation(encrypted(bare), "rootBlockDevice.encrypted")
    found = encrypted(
        made(
            AWS_INSTANCE,
            {
                "rootBlockDevice": {"encrypted": False},
                "ebsBlockDevices": [{"deviceName": "/dev/sdf", "encrypted": False}],
            },
        )
    )
    assert len(found) == 2 and all("encrypted" in f for f in found)


def test_gcp_cmek_only_on_request(stacks: Stacks) -> None:
    disk = stacks["train-tpu-v5e"].one(GCP_DISK)  # the TPU VM's data disk: a standalone persistent disk
    assert encrypted(disk) == [NOT_APPLICABLE]
    one_violation(encrypted(disk, {"requireGcpCmek": True}), "kmsKeySelfLink", "requireGcpCmek")
    disk.inputs["diskEncryptionKey"] = {"kmsKeySelfLink": "projects/p/locations/l/keyRings/r/cryptoKeys/k"}
    assert encrypted(disk, {"requireGcpCmek": True}) == []
    template = stacks["serve-gcp-realtime"].one(GCP_TEMPLATE)
    one_violation(encrypted(template, {"requireGcpCmek": True}), "disks[0]")  # the local SSD is exempt
    # A spot G2's data disk is inline in its regional group's template, judged there with the boot disk.
    spot = stacks["finetune-gcp-g2"].one(GCP_TEMPLATE)
    assert encrypted(spot) == [NOT_APPLICABLE]
    found = encrypted(spot, {"requireGcpCmek": True})
    assert len(found) == 2 and "disks[0]" in found[0] and "disks[2]" in found[1], found  # disks[1]: local SSD


def test_gcp_disks_are_not_applicable_to_encryption(captured: dict[str, CapturedStack]) -> None:
    disk = captured["train-tpu-v5e"].one(GCP_DISK)
    policy = by_name("encrypted-disks")
    assert isinstance(policy, ResourceValidationPolicy)
    assert run_resource(policy, disk) == [NOT_APPLICABLE]
