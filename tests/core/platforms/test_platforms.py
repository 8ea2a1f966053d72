"""``fullserver.platforms``: one rules object per platform, and the questions asked across them."""

from __future__ import annotations

import re

import pytest

from fullserver import platforms
from fullserver.platform import Platform, PricingModel
from fullserver.platforms import DiskKind, DiskLimits, aws, owners, rules_for, zone_problem
from fullserver.profiles import load_profiles


@pytest.mark.parametrize("platform", list(Platform))
def test_every_platform_has_its_rules(platform: Platform) -> None:
    rules = rules_for(platform)
    assert rules.platform is platform and rules.provider in {"aws", "gcp", "dedicated"}


@pytest.mark.parametrize(
    ("key", "takers"),
    [
        ("queued", [Platform.TPU_VM]),
        ("capacityBlock", [Platform.AWS_GPU]),
        ("dedicated", [Platform.BARE_METAL]),
        ("sshPrivateKey", [Platform.AWS_GPU, Platform.GCP_GPU, Platform.TPU_VM, Platform.BARE_METAL]),
        ("reservation", [Platform.AWS_GPU, Platform.GCP_GPU, Platform.TPU_VM]),
        ("image", [Platform.AWS_GPU, Platform.GCP_GPU, Platform.TPU_VM]),
        ("sshSourceRanges", []),  # refused by bare metal, owned by no platform: taken by the rest
    ],
)
def test_which_platforms_take_a_key(key: str, takers: list[Platform]) -> None:
    assert owners(key) == takers
    if not takers:
        assert [p for p in Platform if platforms.option_refusal(key, p)] == [Platform.BARE_METAL]


@pytest.mark.parametrize(
    ("key", "nearest"), [("region", None), ("flexstart", "flexStart"), ("reservaton", "reservation")]
)
def test_a_key_no_platform_declares_is_refused_by_name(key: str, nearest: str | None) -> None:
    """A typo is not a key every platform takes: asking about it fails naming the nearest key."""
    said = f"'{key}' is no platform-specific stack key" + (f"; did you mean '{nearest}'?" if nearest else "")
    with pytest.raises(ValueError, match=f"^{re.escape(said)}$"):
        platforms.option_refusal(key, Platform.AWS_GPU)
    with pytest.raises(ValueError, match=re.escape(said)):
        owners(key)


@pytest.mark.parametrize(
    ("kind", "max_gib", "limits"),
    [
        ("gp3", 16_384, DiskLimits(3_000, 16_000, 500, 125, 1_000, 0.25)),
        ("hyperdisk-balanced", 65_536, DiskLimits(3_000, 160_000, 500, 140, 2_400, None)),
        ("pd-balanced", 65_536, None),
        ("pd-ssd", 65_536, None),
    ],
)
def test_a_disk_kind_is_found_by_its_name(kind: str, max_gib: int, limits: DiskLimits | None) -> None:
    disk = platforms.disk(kind)
    assert disk is not None and (disk.max_gib, disk.limits) == (max_gib, limits)
    assert platforms.disk_limits(kind) == limits


def test_an_unknown_disk_kind_has_no_facts() -> None:
    assert platforms.disk("io2") is None and platforms.disk_limits("io2") is None


def test_limits_by_kind_read_the_platform_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    """One place for disk limits: a lookup by kind reads the platform module each time."""
    tighter = DiskLimits(3_000, 5_000, 500, 125, 1_000, 0.25)
    monkeypatch.setitem(aws.DISKS, "gp3", DiskKind("gp3", 16_384, tighter))
    assert platforms.disk_limits("gp3") == tighter


@pytest.mark.parametrize(
    ("zone", "region", "platform", "problem"),
    [
        ("us-east-1a", "us-east-1", Platform.AWS_GPU, None),
        ("us-central1-a", "us-central1", Platform.GCP_GPU, None),
        ("us-central1-a", "us-central1", Platform.TPU_VM, None),
        ("us-central1-a", "us-central1", None, None),  # platform left to the profile: any cloud's form
        ("us-east-1a", "us-east-1", None, None),
        ("rack-4", "eu", Platform.BARE_METAL, None),  # a label, checked by the workload model
        (
            "us-east-1-a",
            "us-east-1",
            Platform.AWS_GPU,
            "'us-east-1-a' is not a zone of region us-east-1 (AWS zones are the region and a letter a-f, e.g. us-east-1a)",
        ),
        (
            "banana",
            "us-central1",
            None,
            "'banana' is not a zone of region us-central1 (AWS zones are the region and a letter a-f, e.g. us-central1a; "
            "Google Cloud zones are the region, '-' and a letter a-f, e.g. us-central1-a)",
        ),
    ],
)
def test_zone_problems(zone: str, region: str, platform: Platform | None, problem: str | None) -> None:
    assert zone_problem(zone, region, platform) == problem


@pytest.mark.parametrize("pricing", list(PricingModel))
def test_profiles_use_the_pricing_their_platforms_take(pricing: PricingModel) -> None:
    """Dedicated-monthly pricing is a contract's: a profile naming a cloud platform with it is refused."""
    takers = {p for p in Platform if pricing in rules_for(p).pricing}
    assert takers == ({Platform.BARE_METAL} if pricing is PricingModel.DEDICATED_MONTHLY else set(Platform))
    for profile in load_profiles().values():
        assert all(profile.pricing in rules_for(p).pricing for p in profile.platforms), profile.name


def test_each_platform_module_stays_readable() -> None:
    """A newcomer reads a platform's module end to end: it stays under 400 lines."""
    from pathlib import Path

    folder = Path(platforms.__file__).parent
    long = {p.name: n for p in folder.glob("*.py") if (n := len(p.read_text().splitlines())) > 400}
    assert long == {}
