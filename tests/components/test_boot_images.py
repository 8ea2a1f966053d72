"""A node boots, when its stack names no image, exactly the image the core's table dates
(``fullserver/catalog/data/images.yaml``), so the plan's end-of-patch warning is about what runs."""

from __future__ import annotations

import pytest

from components.aws.boot import aws_image_id
from components.gcp.boot import gcp_image
from fullserver.images import default_image, load_images
from fullserver.platform import Platform


@pytest.mark.parametrize("kind", ["gpu", "trainium", "inferentia"])
def test_an_aws_node_boots_the_dated_dlami(kind: str) -> None:
    found = default_image(Platform.AWS_GPU, (kind,))
    assert found is not None and found.end_of_patch is not None
    assert aws_image_id(None, kind) == f"resolve:ssm:{found.name}"


@pytest.mark.parametrize("framework", ["pytorch", "tensorflow", "jax", "other", "unknown-framework"])
def test_a_gcp_node_boots_the_dated_family(framework: str) -> None:
    found = default_image(Platform.GCP_GPU, (framework,))
    assert found is not None
    assert gcp_image(None, framework) == f"projects/deeplearning-platform-release/global/images/family/{found.name}"


def test_every_default_in_the_table_is_one_a_component_boots() -> None:
    booted = {aws_image_id(None, k).removeprefix("resolve:ssm:") for k in ("gpu", "trainium", "inferentia")}
    booted |= {gcp_image(None, f).rsplit("/", 1)[1] for f in ("pytorch", "tensorflow", "jax", "other")}
    assert {i.name for i in load_images().images} == booted


def test_a_stack_pins_its_own_image() -> None:
    assert aws_image_id("ami-0123456789abcdef0", "gpu") == "ami-0123456789abcdef0"
    assert gcp_image("my-family", "pytorch") == "projects/deeplearning-platform-release/global/images/family/my-family"
