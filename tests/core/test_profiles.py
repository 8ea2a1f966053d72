"""Profiles: the shipped set, inheritance, per-platform overrides and one-line errors on bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from fullserver.catalog.model import Platform
from fullserver.errors import InputError
from fullserver.profiles import (
    MAX_EXTENDS,
    PROFILES_DIR,
    PricingModel,
    Stage,
    get_profile,
    load_profiles,
    profile_file_schema,
)
from fullserver.yamlio import read_yaml

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
                "internode_network_gbps_per_accelerator",
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


def test_a_merged_balance_follows_the_profile_it_is_asked_of() -> None:
    """``balance_for`` keeps its merge; a copy with another base balance merges afresh, and the
    original still answers with its own."""
    scale = load_profiles()["scale-training"]
    kept = scale.balance_for(Platform.TPU_VM)
    assert scale.balance_for(Platform.TPU_VM) is kept
    cpu = scale.balance.cpu_per_accelerator
    more_cpu = scale.balance.model_copy(update={"cpu_per_accelerator": cpu.model_copy(update={"value": cpu.value + 7})})
    other = scale.model_copy(update={"balance": more_cpu})
    assert other.balance_for(Platform.TPU_VM).cpu_per_accelerator == more_cpu.cpu_per_accelerator
    assert scale.balance_for(Platform.TPU_VM).cpu_per_accelerator == scale.balance.cpu_per_accelerator
    assert scale.balance_for(Platform.TPU_VM) == kept


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


def test_description_is_inherited_through_extends_like_every_other_field(tmp_path: Path) -> None:
    child = "extends: base\nstage: scale-training\n"
    profiles = load_profiles(write_profiles(tmp_path, {"base": PROFILE, "child": child}))
    assert profiles["child"].description == profiles["base"].description == "test profile"
    assert profiles["child"].stage is Stage.SCALE_TRAINING


def test_a_project_profile_may_extend_the_shipped_profile_of_the_same_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: team\nruntime: python\n", encoding="utf-8")
    write_profiles(tmp_path / "profiles", {"fine-tuning": "extends: fine-tuning\nlifecycle:\n  ttl_hours: 24\n"})
    monkeypatch.chdir(tmp_path)
    shipped = load_profiles(PROFILES_DIR)["fine-tuning"]
    team = load_profiles()["fine-tuning"]
    assert team.lifecycle.ttl_hours == 24
    assert team.lifecycle.mode == "ephemeral"  # the rest of the mapping merges from the shipped one
    assert team.model_dump(exclude={"lifecycle"}) == shipped.model_dump(exclude={"lifecycle"})


def test_a_project_copy_serves_the_shipped_profiles_that_extend_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name means the highest layer's profile: the shipped fine-tuning extends the project's
    experimentation, which itself extends the shipped one."""
    (tmp_path / "Pulumi.yaml").write_text("name: team\nruntime: python\n", encoding="utf-8")
    write_profiles(
        tmp_path / "profiles", {"experimentation": "extends: experimentation\nsecurity: {public_ip: false}\n"}
    )
    monkeypatch.chdir(tmp_path)
    shipped = load_profiles(PROFILES_DIR)
    assert shipped["experimentation"].security.public_ip and shipped["fine-tuning"].security.public_ip
    profiles = load_profiles()
    assert not profiles["experimentation"].security.public_ip
    assert not profiles["fine-tuning"].security.public_ip
    assert profiles["experimentation"].stage is Stage.EXPERIMENTATION


def test_a_profile_extending_its_own_name_without_a_shipped_one_below_is_circular(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        load_profiles(write_profiles(tmp_path, {"a": "extends: a\n"}))
    assert str(err.value) == (
        f"{tmp_path / 'a.yaml'}: field 'extends': circular extends: a -> a "
        "(only a project's profile may extend the shipped profile of its own name; extend another one)"
    )


def test_an_extends_chain_longer_than_the_bound_is_one_line_not_a_recursion_error(tmp_path: Path) -> None:
    files = {"p0": PROFILE} | {f"p{i}": f"extends: p{i - 1}\n" for i in range(1, 1_200)}
    with pytest.raises(InputError) as err:
        load_profiles(write_profiles(tmp_path, files))
    assert f"is longer than {MAX_EXTENDS} profiles" in str(err.value)
    assert "\n" not in str(err.value)


def test_an_extends_chain_at_the_bound_resolves(tmp_path: Path) -> None:
    files = {"p0": PROFILE} | {f"p{i}": f"extends: p{i - 1}\n" for i in range(1, MAX_EXTENDS + 1)}
    profiles = load_profiles(write_profiles(tmp_path, files))
    assert profiles[f"p{MAX_EXTENDS}"].balance == profiles["p0"].balance


def test_an_unknown_profile_names_it_with_close_matches_and_every_known_one() -> None:
    profiles = load_profiles()
    with pytest.raises(InputError) as err:
        get_profile("fine-tunning", profiles)
    assert str(err.value) == (
        "fullserver:profile: unknown profile 'fine-tunning' (did you mean fine-tuning? known profiles: "
        "batch-inference, dedicated-steady, experimentation, fine-tuning, realtime-inference, scale-training)"
    )
    with pytest.raises(InputError, match=r"unknown profile 'zzz' \(known profiles: batch-inference, "):
        get_profile("zzz", profiles)


def test_an_unknown_parent_suggests_the_close_name(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"unknown profile 'bsae' \(did you mean base\? known profiles: a, base\)"):
        load_profiles(write_profiles(tmp_path, {"base": PROFILE, "a": "extends: bsae\n"}))


# --- the profile-file schema ------------------------------------------------------------------


def file_schema_errors(data: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(profile_file_schema())
    return [e.message for e in validator.iter_errors(data)]


def test_the_file_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(profile_file_schema())


@pytest.mark.parametrize("path", sorted(PROFILES_DIR.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_profile_file_validates_against_the_file_schema(path: Path) -> None:
    assert file_schema_errors(read_yaml(path)) == []


def test_a_file_with_extends_may_leave_out_what_it_inherits_at_any_depth() -> None:
    child = {"extends": "base", "balance": {"cpu_per_accelerator": {"value": 12}}, "lifecycle": {"ttl_hours": 4}}
    assert file_schema_errors(child) == []


def test_the_file_schema_still_refuses_what_the_loader_refuses() -> None:
    base = yaml.safe_load(PROFILE)
    assert file_schema_errors(base) == []
    assert file_schema_errors({k: v for k, v in base.items() if k != "stage"}) == ["'stage' is a required property"]
    assert any("colour" in e for e in file_schema_errors({**base, "colour": "blue"}))
    assert any("colour" in e for e in file_schema_errors({"extends": "base", "colour": "blue"}))
    assert file_schema_errors({"extends": "base", "stage": "teenage"}) != []
    assert file_schema_errors({"extends": "base", "balance": {"cpu_per_accelerator": {"value": -1}}}) != []


# --- Issue 13: every minimum holds for the machines its reason cites.

BALANCE_FIELDS = (
    "cpu_per_accelerator",
    "ram_per_accelerator_memory",
    "ram_floor_gib",
    "nvme_gib_per_accelerator",
    "network_gbps_per_accelerator",
    "internode_network_gbps_per_accelerator",
    "internode_network_gbps_floor",
)


def _needed_and_given(field: str, minimum: Any, host: Any) -> tuple[float, float | None]:
    """What ``minimum`` asks of one node of ``host`` and what the node has, written out here
    rather than through fullserver.balance so the check does not lean on the code it checks."""
    n = max(host.accelerator_count, 1)
    if field == "cpu_per_accelerator":
        given = host.vcpus // 2 if minimum.unit == "core" else host.vcpus
        return minimum.value * n, given
    if field == "ram_per_accelerator_memory":
        return minimum.value * n * host.accelerator_memory_gib, host.memory_gib
    if field == "ram_floor_gib":
        return minimum.value, host.memory_gib
    if field == "nvme_gib_per_accelerator":
        return minimum.value * n, host.local_nvme_gib
    if field == "internode_network_gbps_floor":
        return minimum.value, host.network_gbps
    return minimum.value * n, host.network_gbps


def test_every_minimum_holds_for_the_catalog_machines_its_reason_cites() -> None:
    import re

    from fullserver.catalog import load_catalog

    offers = {o.name: o for o in load_catalog().offers}
    cited = 0
    for profile in load_profiles().values():
        for platform in profile.platforms:
            balance = profile.balance_for(platform)
            for field in BALANCE_FIELDS:
                minimum = getattr(balance, field)
                if minimum is None:
                    continue
                for name in re.findall(r"[a-z0-9][a-z0-9.-]*[a-z0-9]", minimum.reason):
                    offer = offers.get(name)
                    if offer is None:
                        continue
                    cited += 1
                    needed, given = _needed_and_given(field, minimum, offer.host)
                    assert given is not None and given + 1e-9 >= needed, (profile.name, field, name, needed, given)
    assert cited >= 10  # the shipped reasons do cite machines: the check is not vacuous
