"""``fullserver.platforms.gcp``: what fullserver knows about Compute Engine GPU VMs."""

from __future__ import annotations

import pytest

from fullserver.catalog import load_catalog
from fullserver.platform import AcceleratorKind, Platform, PricingModel
from fullserver.platforms import DiskLimits, Request, gcp, rules_for

RULES = gcp.RULES


def test_it_is_the_gcp_gpu_platform() -> None:
    assert rules_for(Platform.GCP_GPU) is RULES
    assert (RULES.provider, set(RULES.accelerator_kinds)) == ("gcp", {AcceleratorKind.GPU})
    assert PricingModel.DEDICATED_MONTHLY not in RULES.pricing
    assert set(RULES.options) == {
        "reservation",
        "image",
        "sshPublicKeys",
        "sshPrivateKey",
        "serving",
        "autostopMinutes",
    }
    # serving: only the global external Application Load Balancer (no proxy-instance price sourced)
    assert gcp.LOAD_BALANCER_SCHEMES == ("external",) and gcp.LOAD_BALANCER == "gcp-global-external"
    assert (RULES.compact_placement, RULES.hourly_gpus, RULES.boot_disk_sized) == (True, True, True)
    # Local SSDs are billed apart from the VM, 375 GiB each; an unset boot size is 10 GiB.
    assert (RULES.local_ssd_price_kind, RULES.local_ssd_gib, RULES.default_boot_disk_gib) == ("local-ssd", 375, 10)
    assert RULES.zone_from_catalog and "gcp:zone" in RULES.unset_zone_warning


@pytest.mark.parametrize(
    ("family", "kind"),
    [
        ("a3", "hyperdisk-balanced"),  # A3 and A4 attach Hyperdisk only
        ("a4", "hyperdisk-balanced"),
        ("a2", "pd-balanced"),
        ("g2", "pd-balanced"),
        ("n1", "pd-balanced"),
    ],
)
def test_disk_kind_by_family(family: str, kind: str) -> None:
    assert RULES.disk_kind(family) == kind


@pytest.mark.parametrize(
    ("kind", "max_gib", "provisioned"),
    [("pd-balanced", 65_536, False), ("pd-ssd", 65_536, False), ("hyperdisk-balanced", 65_536, True)],
)
def test_disk_kinds(kind: str, max_gib: int, provisioned: bool) -> None:
    disk = RULES.disk_kinds[kind]
    assert (disk.max_gib, disk.provisioned) == (max_gib, provisioned)
    if provisioned:
        assert disk.limits == DiskLimits(3_000, 160_000, 500, 140, 2_400, None)


@pytest.mark.parametrize(
    ("machine_type", "vcpus"),
    [
        ("n2-standard-32", 32),
        ("n2d-highcpu-224", 224),
        ("c3-standard-44-lssd", 44),
        ("n2-custom-36-73728", 36),
        ("a2-highgpu-1g", 1),
        ("bogus", None),
    ],
)
def test_machine_vcpus(machine_type: str, vcpus: int | None) -> None:
    assert gcp.machine_vcpus(machine_type) == vcpus


@pytest.mark.parametrize(
    ("machine_type", "eligible"),
    [
        # "Tier_1 networking is only supported on N2, N2D, C2, C2D, or C3 VMs that have at least 30 vCPUs"
        ("n2-standard-32", True),
        ("n2-highmem-30", True),
        ("n2d-standard-32", True),
        ("c2-standard-30", True),
        ("c2d-standard-56", True),
        ("c3-standard-44", True),
        ("n2-standard-16", False),
        ("c3-standard-22", False),
        ("e2-standard-32", False),
        # GPU series never: A2/G2/N1 get their bandwidth by machine type, A3/A4 through GPU NICs.
        ("a2-highgpu-8g", False),
        ("a2-megagpu-16g", False),
        ("g2-standard-96", False),
        ("n1-standard-96", False),
        ("a3-megagpu-8g", False),
        ("a4-highgpu-8g", False),
    ],
)
def test_tier1_eligibility(machine_type: str, eligible: bool) -> None:
    assert gcp.tier1_eligible(machine_type) is eligible


def test_tier1_takes_the_vcpus_when_known() -> None:
    assert gcp.tier1_eligible("n2-custom-8-65536", vcpus=32) and not gcp.tier1_eligible("n2-standard-32", vcpus=16)


def test_no_gpu_shape_in_the_catalog_is_tier1_eligible() -> None:
    """The shapes fullserver builds on gcp-gpu are GPU shapes: none may ask for TIER_1."""
    offers = [o for o in load_catalog().offers if o.platform is Platform.GCP_GPU]
    assert offers and not [o.name for o in offers if gcp.tier1_eligible(o.machine_type or o.name, o.host.vcpus)]


@pytest.mark.parametrize(
    ("machine_type", "nodes", "nics", "rdma"),
    [
        ("a3-highgpu-8g", 2, 5, False),
        ("a3-megagpu-8g", 2, 9, False),
        ("a3-ultragpu-8g", 2, 10, True),
        ("a4-highgpu-8g", 2, 10, True),
        ("a3-megagpu-8g", 1, None, None),  # one node: nothing to talk to
        ("a2-highgpu-8g", 2, None, None),
    ],
)
def test_gpu_nic_plans(machine_type: str, nodes: int, nics: int | None, rdma: bool | None) -> None:
    plan = gcp.gpu_nic_plan(machine_type, nodes)
    assert ((plan.host_nics + plan.gpu_nics, plan.rdma) if plan else (None, None)) == (nics, rdma)


def test_a_roce_network_is_zonal() -> None:
    refusal = gcp.gpu_nic_refusal("a4-highgpu-8g", 2, None)
    assert refusal is not None and refusal.field == "zone" and "RoCE" in refusal.what
    assert gcp.gpu_nic_refusal("a4-highgpu-8g", 2, "us-central1-b") is None
    assert gcp.gpu_nic_refusal("a3-megagpu-8g", 2, None) is None  # GPUDirect-TCPXO: regular networks


@pytest.mark.parametrize(("gpu", "attached"), sorted(gcp.ATTACHED_GPU_TYPES.items()))
def test_attached_gpu_types(gpu: str, attached: str) -> None:
    assert attached.startswith("nvidia-tesla-") and gpu in load_catalog().accelerators


@pytest.mark.parametrize(
    ("zone", "region", "fits"),
    [
        ("us-central1-a", "us-central1", True),
        ("europe-west4-b", "europe-west4", True),
        ("us-central1a", "us-central1", False),  # AWS's form
        ("europe-west4-a", "us-central1", False),
    ],
)
def test_zones_are_the_region_a_dash_and_a_letter(zone: str, region: str, fits: bool) -> None:
    assert RULES.zone_in_region(zone, region) is fits
    if fits:
        assert RULES.region_of_zone(zone) == region


@pytest.mark.parametrize(
    ("asked", "nearest"),
    [("us-east-1", "us-central1"), ("eu-central-1", "europe-west4"), ("ap-southeast-1", "asia-southeast1")],
)
def test_an_aws_region_compares_with_the_nearest_google_region(asked: str, nearest: str) -> None:
    assert RULES.nearest_region(asked, {"us-central1"}) == nearest


@pytest.mark.parametrize(
    ("request_", "field", "what"),
    [
        (Request("a2-highgpu-1g", zone="us-central1-a", data_disk="pd-balanced"), None, None),
        (
            Request("a2-highgpu-1g", spot=True, reservation="a2-res", zone="us-central1-a"),
            "reservation",
            "spot capacity cannot consume a capacity reservation",
        ),
        (
            Request("a2-highgpu-1g", reservation="a2-res"),
            "zone",
            "reservation 'a2-res' lives in one zone and no zone is set",
        ),
        (Request("a2-highgpu-1g", data_disk="gp3"), "data_disk.kind", "gp3 is not a GCE disk type fullserver attaches"),
    ],
)
def test_refusals(request_: Request, field: str | None, what: str | None) -> None:
    refusal = RULES.refusal(request_)
    assert ((refusal.field, refusal.what) if refusal else (None, None)) == (field, what)


@pytest.mark.parametrize(
    "image",
    [
        "pytorch-2-7-cu128-ubuntu-2204-nvidia-570",  # a Deep Learning VM family
        "family/common-cu128-ubuntu-2204-nvidia-570",
        "ubuntu-os-cloud/ubuntu-2204-lts",  # project/image or project/family
        "global/images/my-golden-image",
        "global/images/family/my-golden",
        "projects/deeplearning-platform-release/global/images/family/pytorch-2-7-cu128-ubuntu-2204-nvidia-570",
        "projects/my-project/global/images/my-image-v20250101",
        "https://www.googleapis.com/compute/v1/projects/my-project/global/images/my-image",
        "projects/example.com:my-project/global/images/family/golden",  # a domain-scoped project
    ],
)
def test_every_form_compute_engine_takes_for_a_boot_image_is_an_image(image: str) -> None:
    assert gcp.image_form(Request("a2-highgpu-1g", image=image)) is None


@pytest.mark.parametrize(
    "image",
    [
        "ami-0abcdef1234567890; rm -rf /",
        "Ubuntu-2204",  # names are lowercase
        "projects/p/global/images/x",  # a project id is 6-30 characters
        "projects/my-project/images/x",
        "http://www.googleapis.com/compute/v1/projects/my-project/global/images/x",
        "family/",
        "a" * 64,  # names are at most 63 characters
    ],
)
def test_anything_else_is_refused_by_its_form_at_plan_time(image: str) -> None:
    refusal = gcp.image_form(Request("a2-highgpu-1g", image=image))
    assert refusal is not None and "is not a Compute Engine image reference" in refusal.what
    assert RULES.refusal(Request("a2-highgpu-1g", image=image)) == refusal
