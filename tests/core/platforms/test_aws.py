"""``fullserver.platforms.aws``: what fullserver knows about AWS accelerator instances."""

from __future__ import annotations

import pytest

from fullserver.platform import AcceleratorKind, Platform, PricingModel
from fullserver.platforms import DiskLimits, Request, aws, rules_for
from fullserver.platforms.supply import MACHINES

RULES = aws.RULES


def test_it_is_the_aws_gpu_platform() -> None:
    assert rules_for(Platform.AWS_GPU) is RULES
    assert (RULES.provider, RULES.supply, RULES.boot_image("ami-0abc")) == ("aws", MACHINES, "ami-0abc")
    assert RULES.accelerator_kinds == {AcceleratorKind.GPU, AcceleratorKind.TRAINIUM, AcceleratorKind.INFERENTIA}
    assert PricingModel.DEDICATED_MONTHLY not in RULES.pricing
    assert set(RULES.options) == {
        "reservation",
        "autostopMinutes",
        "capacityBlock",
        "image",
        "sshPublicKeys",
        "sshPrivateKey",
        "serving",
        "serving.certificateArn",
    }
    assert (RULES.compact_placement, RULES.hourly_gpus, RULES.boot_disk_sized) == (True, True, True)
    # Instance store is in the instance's price; an unset zone is left to AWS.
    assert (RULES.local_ssd_price_kind, RULES.zone_from_catalog, RULES.unset_zone_warning) == (None, False, "")


def test_it_builds_internal_and_internet_facing_albs_over_two_zones_or_more() -> None:
    from fullserver.platforms import aws

    assert aws.LOAD_BALANCER_SCHEMES == ("internal", "external") and aws.LOAD_BALANCER == "alb"
    assert aws.LB_MIN_ZONES == 2 <= aws.SERVING_ZONES


@pytest.mark.parametrize("family", ["p5", "p4d", "g6", "trn1", "inf2"])
def test_every_family_boots_from_and_attaches_gp3(family: str) -> None:
    assert RULES.disk_kind(family) == "gp3"


def test_gp3_limits() -> None:
    """Amazon EBS "General Purpose SSD volumes": 3,000-16,000 IOPS (500 per GiB), 125-1,000 MiB/s
    (0.25 per IOPS), 1-16,384 GiB."""
    gp3 = RULES.disk_kinds["gp3"]
    assert gp3.max_gib == 16_384 and gp3.provisioned
    assert gp3.limits == DiskLimits(3_000, 16_000, 500, 125, 1_000, 0.25)


@pytest.mark.parametrize(
    ("zone", "region", "fits"),
    [
        ("us-east-1a", "us-east-1", True),
        ("eu-west-1c", "eu-west-1", True),
        ("us-east-1-a", "us-east-1", False),  # Google's form
        ("us-west-2a", "us-east-1", False),
        ("us-east-1", "us-east-1", False),
    ],
)
def test_zones_are_the_region_and_a_letter(zone: str, region: str, fits: bool) -> None:
    assert RULES.zone_in_region(zone, region) is fits
    if fits:
        assert RULES.region_of_zone(zone) == region


@pytest.mark.parametrize(
    ("asked", "priced", "nearest"),
    [
        ("us-east-1", {"us-east-1"}, "us-east-1"),  # priced here: itself
        ("us-central1", {"us-east-1"}, "us-east-1"),
        ("europe-west4", set(), "eu-west-1"),
        ("asia-northeast1", set(), "ap-northeast-1"),
        ("mars-north1", set(), "mars-north1"),  # no peer: itself, for sizing to refuse by name
    ],
)
def test_a_google_region_compares_with_the_nearest_aws_region(asked: str, priced: set[str], nearest: str) -> None:
    assert RULES.nearest_region(asked, priced) == nearest


@pytest.mark.parametrize(
    ("request_", "field", "what"),
    [
        (Request("p5.48xlarge", zone="us-east-1a"), None, None),
        (Request("p5.48xlarge", reservation="cr-1", zone="us-east-1a"), None, None),
        (
            Request("p5.48xlarge", spot=True, reservation="cr-1", zone="us-east-1a"),
            "reservation",
            "spot capacity cannot consume a capacity reservation",
        ),
        (Request("p5.48xlarge", reservation="cr-1"), "zone", "reservation 'cr-1' lives in one zone and no zone is set"),
        (
            Request("p5.48xlarge", capacity_block=True),
            "capacity_block",
            "a capacity block is an AWS capacity reservation and needs its id",
        ),
        (Request("g6.xlarge", data_disk="gp3"), None, None),
        (Request("g6.xlarge", data_disk="pd-balanced"), "data_disk.kind", "AWS data volumes are gp3, not pd-balanced"),
    ],
)
def test_refusals(request_: Request, field: str | None, what: str | None) -> None:
    refusal = RULES.refusal(request_)
    assert (refusal.field, refusal.what) == (field, what) if refusal else (field, what) == (None, None)


def test_boot_volumes_are_gp3() -> None:
    assert aws.boot_disk_refusal("gp3") is None
    refusal = aws.boot_disk_refusal("pd-balanced")
    assert refusal is not None and (refusal.field, refusal.what) == (
        "boot_disk_kind",
        "AWS boot volumes are gp3, not pd-balanced",
    )


@pytest.mark.parametrize(
    ("efa", "most", "nodes", "what"),
    [
        (0, 0, 1, None),
        (32, 32, 2, None),
        (32, None, 2, None),  # a shape whose limit is not known is not refused
        (4, 0, 2, "4 EFA interfaces requested but g6.xlarge has none"),
        (33, 32, 2, "33 EFA interfaces requested but g6.xlarge has 32"),
        (32, 32, 1, "EFA only pays off between nodes; this environment has one"),
    ],
)
def test_one_efa_per_network_card_and_only_between_nodes(
    efa: int, most: int | None, nodes: int, what: str | None
) -> None:
    refusal = aws.efa_refusal(efa, most, nodes, "g6.xlarge")
    assert (refusal.what if refusal else None) == what


@pytest.mark.parametrize(("efa", "refused"), [(0, False), (1, False), (2, True), (32, True)])
def test_a_public_address_goes_only_with_one_network_interface(efa: int, refused: bool) -> None:
    """EC2 refuses associatePublicIPAddress when a launch has more than one network interface."""
    refusal = aws.efa_refusal(efa, 32, 2, "p5.48xlarge", public_ip=True)
    assert (refusal is not None and refusal.field == "security.public_ip") == refused


@pytest.mark.parametrize(
    "image",
    [
        "ami-12345678",  # the older 8-digit id
        "ami-0abcdef1234567890",  # 17 hex digits
        "resolve:ssm:/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id",
        "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id",
        "resolve:ssm:golden-ami",  # a parameter outside any hierarchy
        "resolve:ssm:/golden/ami:3",  # a version
        "resolve:ssm:/golden/ami:prod",  # a label
        "resolve:ssm:arn:aws:ssm:us-east-1:123456789012:parameter/golden/ami",  # shared from another account
    ],
)
def test_an_ami_id_or_a_systems_manager_parameter_is_an_image(image: str) -> None:
    assert aws.image_form(Request("g6.xlarge", image=image)) is None


@pytest.mark.parametrize(
    "image",
    [
        "ami-123; rm -rf /",
        "not-an-ami",  # once read as the SSM parameter "not-an-ami"
        "ami-1234567",  # 7 digits
        "ami-ABCDEF12",  # ids are lowercase hex
        "resolve:ssm:",
        "resolve:ssm:/a b",
        "resolve:ssm:/" + "/".join(["l"] * 16),  # 16 levels: SSM allows 15
        "resolve:ssm:/" + "p" * 1_012,
        "/aws/service/x\x1b[31m",
    ],
)
def test_anything_else_is_refused_by_its_form_at_plan_time(image: str) -> None:
    refusal = aws.image_form(Request("g6.xlarge", image=image))
    assert refusal is not None and (refusal.key, refusal.field) == ("image", "image")
    assert "is not an AMI id or a Systems Manager parameter" in refusal.what


def test_the_image_rule_is_one_of_the_platform_rules() -> None:
    request = Request("g6.xlarge", image="not-an-ami")
    assert RULES.refusal(request) == aws.image_form(request) is not None


def test_spot_nodes_spread_over_zones_unless_a_placement_group_or_efa_keeps_them_in_one() -> None:
    """A spot group widens its pools over three zones; EFA's OS-bypass traffic never leaves its
    subnet (AWS EFA guide), so EFA nodes stay in one zone as a cluster placement group's do."""
    from types import SimpleNamespace

    from fullserver.platforms.network.aws import billed_network

    def zones(compact: bool, efa: int) -> int:
        net = SimpleNamespace(compact_placement=compact, efa_interfaces=efa)
        spec = SimpleNamespace(spot=True, serving=None, endpoint=None, network=net)
        return int(billed_network(spec)["zones"])

    assert zones(compact=False, efa=0) == aws.SERVING_ZONES
    assert zones(compact=True, efa=0) == 1
    assert zones(compact=False, efa=32) == 1
