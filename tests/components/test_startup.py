"""The boot script: idempotent RAID0 scratch and a data disk that is never reformatted."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from components.images import aws_image_id, gcp_image
from components.labels import gcp_labels, gcp_name
from components.startup import AWS_INSTANCE_STORE, GCP_DATA, DiskPlan, boot_script, disks_script


def test_script_guards_and_stable_device_names() -> None:
    text = disks_script(
        DiskPlan(scratch_glob=AWS_INSTANCE_STORE, scratch_devices=8, data_glob=GCP_DATA, data_disk=True)
    )
    assert 'mountpoint -q "$SCRATCH_DIR" && return 0' in text
    assert "mdadm --assemble" in text and "mdadm --create" in text
    assert 'has_signature "$dev" || mkfs.ext4' in text  # never over a filesystem or partition table
    assert "/dev/disk/by-id/nvme-Amazon_EC2_NVMe_Instance_Storage_*" in text
    assert "nofail" in text


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash needed")
def test_scripts_are_valid_bash(tmp_path: Path) -> None:
    path = tmp_path / "boot.sh"
    path.write_text(
        boot_script(
            DiskPlan(scratch_glob="/nonexistent/*", scratch_devices=2, data_glob="/nonexistent", data_disk=True)
        )
    )
    subprocess.run(["bash", "-n", str(path)], check=True)
    inner = tmp_path / "disks.sh"
    inner.write_text(
        disks_script(
            DiskPlan(scratch_glob="/nonexistent/*", scratch_devices=0, data_glob="/nonexistent", data_disk=False)
        )
    )
    subprocess.run(["bash", "-n", str(inner)], check=True)


def test_labels_fit_gcp_rules() -> None:
    assert gcp_labels({"Fullserver-Owner": "ML Research/Team", "1x": "y"}) == {
        "fullserver-owner": "ml-research-team",
        "l-1x": "y",
    }
    assert gcp_name("1-Bad_Name") == "fs-1-bad-name"


def test_images_default_to_deep_learning_images_and_can_be_pinned() -> None:
    assert aws_image_id(None, "trainium").startswith("resolve:ssm:/aws/service/neuron/")
    assert aws_image_id("ami-0abc", "gpu") == "ami-0abc"
    assert gcp_image(None, "jax").endswith("/family/common-cu128-ubuntu-2204-nvidia-570")
    assert gcp_image("my-family", "pytorch") == "projects/deeplearning-platform-release/global/images/family/my-family"
