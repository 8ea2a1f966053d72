"""Profiles: the shipped set, inheritance, per-platform overrides and one-line errors on bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from fullserver.catalog.model import Platform
from fullserver.errors import InputError
from fullserver.profiles import PricingModel, Stage, load_profiles

from .conftest import PROFILE, write_profiles

SHIPPED = [
    "batch-inference",
    "dedicated-steady",
    "experimentation",
    "fine-tuning",
    "realtime-inference",
    "scale-training",
]


def test_the_shipped_profiles_cover_every_maturity_stage() -> None:
    profiles = load_profiles()
    assert sorted(profiles) == SHIPPED
    assert {p.stage for p in profiles.values()} == set(Stage)
    assert {p for prof in profiles.values() for p in prof.platforms} == set(Platform)
    assert {p.pricing for p in profiles.values()} == set(PricingModel)


def test_every_shipped_minimum_carries_a_reason() -> None:
    for profile in load_profiles().values():
        for platform in profile.platforms:
            balance = profile.balance_for(platform)
            for name in (
                "cpu_per_accelerator",
                "ram_per_accelerator_memory",
                "ram_floor_gib",
                "nvme_gib_per_accelerator",
                "network_gbps_per_accelerator",
            ):
                minimum = getattr(balance, name)
                assert minimum is None or len(minimum.reason) >= 10, (profile.name, name)


def test_extends_merges_nested_mappings_and_overrides_scalars(tmp_path: Path) -> None:
    child = "extends: base\ndescription: child\npricing: spot-with-fallback\nbalance:\n  cpu_per_accelerator: {value: 12, reason: more threads for the child}\n"
    profiles = load_profiles(write_profiles(tmp_path, {"base": PROFILE, "child": child}))
    c = profiles["child"]
    assert c.pricing is PricingModel.SPOT_WITH_FALLBACK
    assert c.balance.cpu_per_accelerator.value == 12
    assert c.balance.ram_per_accelerator_memory.value == 2.0  # inherited from base
    assert c.description == "child"
    assert profiles["base"].balance.cpu_per_accelerator.value == 8


def test_fine_tuning_inherits_from_experimentation() -> None:
    profiles = load_profiles()
    assert profiles["fine-tuning"].platforms == profiles["experimentation"].platforms
    assert profiles["fine-tuning"].security == profiles["experimentation"].security


def test_platform_override_can_drop_a_minimum() -> None:
    scale = load_profiles()["scale-training"]
    assert scale.balance_for(Platform.AWS_GPU).nvme_gib_per_accelerator is not None
    assert scale.balance_for(Platform.TPU_VM).nvme_gib_per_accelerator is None
    assert scale.balance_for(Platform.TPU_VM).cpu_per_accelerator == scale.balance.cpu_per_accelerator


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"a": "extends: b\n", "b": "extends: a\n"}, "circular extends: a -> b -> a"),
        ({"a": "extends: a\n"}, "circular extends"),
        ({"a": "extends: nowhere\n"}, "unknown profile 'nowhere'"),
        ({"a": PROFILE + "colour: blue\n"}, "unknown key 'colour'"),
        ({"a": PROFILE.replace("stage: fine-tuning", "stage: 7")}, "field 'stage'"),
        (
            {"a": PROFILE.replace("value: 2.0", "value: 0")},
            "field 'balance.ram_per_accelerator_memory.value': Input should be greater than 0",
        ),
        ({"a": PROFILE.replace("value: 8,", "value: -1,")}, "greater than 0"),
        ({"a": PROFILE + "security: {ssh_source_ranges: ['0.0.0.0/0']}\n"}, "would open SSH to much of the internet"),
        ({"a": "stage: [unclosed\n"}, "malformed YAML"),
        ({"a": PROFILE.replace("lifecycle: {mode: persistent}", "lifecycle: {mode: ephemeral}")}, "needs ttl_hours"),
    ],
)
def test_bad_profiles_fail_with_one_line_naming_the_file(tmp_path: Path, files: dict[str, str], message: str) -> None:
    with pytest.raises(InputError) as err:
        load_profiles(write_profiles(tmp_path, files))
    line = str(err.value)
    assert message in line
    assert "\n" not in line
    assert str(tmp_path) in line


def test_a_malformed_yaml_error_names_the_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"a\.yaml:2: malformed YAML"):
        load_profiles(write_profiles(tmp_path, {"a": "description: x\nstage: a: b\n"}))


def test_an_empty_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no profiles found"):
        load_profiles(tmp_path)
