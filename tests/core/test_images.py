"""The boot images a node starts from when the stack names none carry their publisher's
end-of-patch date, and the plan warns before that date and after it; a missing date is said,
never guessed."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import yaml

from fullserver.catalog import load_catalog
from fullserver.catalog.network import DATA_DIR, IMAGES_FILE
from fullserver.errors import InputError
from fullserver.images import default_image, load_images, plan_image_warnings, support_warning
from fullserver.platform import Platform
from tests.core.test_stack_config import STACKS, plan_offline

AWS_GPU_AMI = "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"


def test_an_aws_node_is_patched_until_its_ubuntu_release_is() -> None:
    found = default_image(Platform.AWS_GPU, ("pytorch", "gpu"))
    assert found is not None and found.end_of_patch == dt.date(2027, 4, 30) and found.basis == "Ubuntu 22.04"
    assert support_warning(Platform.AWS_GPU, ("pytorch", "gpu"), None, dt.date(2026, 11, 26)) is None


def test_the_plan_warns_ninety_days_ahead_and_after_the_end() -> None:
    near = support_warning(Platform.AWS_GPU, ("pytorch", "gpu"), None, dt.date(2027, 3, 1))
    assert near is not None and "stops being patched in 60 days" in near and "2027-04-30" in near
    past = support_warning(Platform.AWS_GPU, ("jax", "trainium"), None, dt.date(2027, 5, 1))
    assert past is not None and "is past its end of patch" in past and "fullserver:image" in past
    assert support_warning(Platform.AWS_GPU, ("pytorch", "gpu"), None, dt.date(2027, 1, 29)) is None  # 91 days ahead


def test_a_date_the_publisher_does_not_give_is_a_gap_said_in_the_plan() -> None:
    said = support_warning(Platform.GCP_GPU, ("pytorch", "gpu"), None, dt.date(2026, 11, 26))
    assert said is not None
    assert said.startswith("boot image pytorch-2-7-cu128-ubuntu-2204-nvidia-570: its publisher gives no end-of-patch")
    assert "cloud.google.com/deep-learning-vm/docs/framework-support-policy" in said


def test_an_image_the_stack_names_is_checked_when_the_table_knows_it_and_left_alone_when_not() -> None:
    today = dt.date(2027, 5, 1)
    assert support_warning(Platform.AWS_GPU, ("pytorch", "gpu"), "ami-0123456789abcdef0", today) is None
    named = support_warning(Platform.AWS_GPU, ("pytorch", "gpu"), f"resolve:ssm:{AWS_GPU_AMI}", today)
    assert named is not None and "past its end of patch" in named
    family = "projects/deeplearning-platform-release/global/images/family/pytorch-2-7-cu128-ubuntu-2204-nvidia-570"
    assert support_warning(Platform.GCP_GPU, ("jax", "gpu"), family, today) is not None


def test_platforms_without_default_images_say_nothing() -> None:
    for platform in (Platform.TPU_VM, Platform.BARE_METAL):
        assert support_warning(platform, ("jax", "tpu"), None, dt.date(2030, 1, 1)) is None


@pytest.mark.parametrize(
    ("stack", "warns"), [("finetune-gcp-g2", True), ("serve-aws-realtime", False), ("train-tpu-v5e", False)]
)
def test_the_example_stacks_plans(stack: str, warns: bool) -> None:
    plan = plan_offline(STACKS / f"Pulumi.{stack}.yaml")
    found = plan_image_warnings(plan, load_catalog(), dt.date(2026, 11, 26))
    assert bool(found) is warns, found


def test_a_bad_table_is_refused_in_one_line_naming_the_file(tmp_path: Path) -> None:
    data = yaml.safe_load((DATA_DIR / IMAGES_FILE).read_text())
    data["images"][0]["source"] = "nowhere"
    path = tmp_path / "images.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(InputError) as info:
        load_images(path)
    assert str(info.value).startswith(f"{path}: images[0]") and "unknown source 'nowhere'" in str(info.value)
    assert "\n" not in str(info.value)
