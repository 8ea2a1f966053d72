"""One source for each stack key: the model's fields mark the platform-specific ones, and the
platforms' ``options``/``lacks``, ``Workload.platform_keys`` and Pulumi.yaml's descriptions agree
with the marks."""

from __future__ import annotations

import re

import pytest
from pydantic import Field

from fullserver.errors import InputError
from fullserver.keys import Camel
from fullserver.platform import Platform
from fullserver.platforms import PlatformRules, all_rules, owners
from fullserver.serving_keys import ServingConfig
from fullserver.stacks import config_keys, workload_from_config
from fullserver.workload import PLATFORM_KEYS, Workload
from fullserver.workload_keys import PLATFORM_SPECIFIC, declared_keys, set_keys


@pytest.mark.parametrize("rules", list(all_rules()), ids=lambda r: r.platform.value)
def test_every_platform_declares_only_real_keys(rules: PlatformRules) -> None:
    """A key a platform takes or refuses is one the model marks: a typo there is caught here."""
    assert set(rules.options) <= set(PLATFORM_KEYS), set(rules.options) - set(PLATFORM_KEYS)
    assert set(rules.lacks) <= set(PLATFORM_KEYS), set(rules.lacks) - set(PLATFORM_KEYS)
    assert not set(rules.options) & set(rules.lacks)


def test_every_marked_key_is_declared_by_some_platform() -> None:
    """A mark no platform takes up or refuses would narrow nothing."""
    declared = {k for r in all_rules() for k in (*r.options, *r.lacks)}
    assert set(PLATFORM_KEYS) == declared


def test_every_marked_key_is_a_stack_key() -> None:
    """Top-level marks are Pulumi.yaml keys; a section's mark is a field of that section."""
    top = {k for k in PLATFORM_KEYS if "." not in k}
    assert top <= set(config_keys())
    assert [k for k in PLATFORM_KEYS if "." in k] == ["serving.certificateArn"]
    assert "certificateArn" in {f.alias for f in ServingConfig.model_fields.values()}


def test_the_marks_walk_sections_and_read_not_set_values() -> None:
    """What ``set_keys`` counts as set: anything but None and False, inside sections too."""

    class Section(Camel):
        inner: str | None = Field(default=None, json_schema_extra=PLATFORM_SPECIFIC)

    class Model(Camel):
        plain: int = 0
        flag: bool = Field(default=False, json_schema_extra=PLATFORM_SPECIFIC)
        section: Section | None = None

    assert declared_keys(Model) == ["flag", "section.inner"]
    assert set_keys(Model()) == []
    assert set_keys(Model(plain=3, flag=True)) == ["flag"]
    assert set_keys(Model(section=Section(inner="x"))) == ["section.inner"]


def test_a_default_that_counts_as_set_is_counted_without_being_given() -> None:
    """``set_keys`` skips fields not given only where their default is a "not set" value: a mark
    defaulting to 0 or True, or to a factory's value, counts as set even when left out; a field
    given by ``model_copy(update=...)`` is read like one given to the model."""

    class Model(Camel):
        zero: int = Field(default=0, json_schema_extra=PLATFORM_SPECIFIC)
        on: bool = Field(default=True, json_schema_extra=PLATFORM_SPECIFIC)
        made: list[str] = Field(default_factory=list, json_schema_extra=PLATFORM_SPECIFIC)
        flag: bool = Field(default=False, json_schema_extra=PLATFORM_SPECIFIC)

    assert set_keys(Model()) == ["zero", "on", "made"]
    assert set_keys(Model(on=False)) == ["zero", "made"]
    assert set_keys(Model(on=False).model_copy(update={"flag": True})) == ["zero", "made", "flag"]


def _workload(**keys: object) -> Workload:
    config: dict[str, object] = {"fullserver:profile": "experimentation", "fullserver:region": "us-east-1"}
    config |= {f"fullserver:{k}": v for k, v in keys.items()}
    return workload_from_config(config, "Pulumi.s.yaml")


def test_platform_keys_are_the_marked_keys_set() -> None:
    assert _workload(accelerator="L4").platform_keys() == []
    found = _workload(platform="aws-gpu", accelerator="L4", reservation="cr-0123456789abcdef0", capacityBlock=True)
    assert found.platform_keys() == ["reservation", "capacityBlock"]
    assert found.takes_keys(Platform.AWS_GPU) and not found.takes_keys(Platform.GCP_GPU)


@pytest.mark.parametrize(
    ("typed", "nearest"),
    [("flexstart", "flexStart"), ("capacityBlocks", "capacityBlock"), ("reservaton", "reservation")],
)
def test_a_mistyped_stack_key_is_refused_naming_the_nearest(typed: str, nearest: str) -> None:
    with pytest.raises(InputError) as caught:
        _workload(accelerator="L4", **{typed: True})
    said = str(caught.value)
    assert said == (f"Pulumi.s.yaml: unknown key 'fullserver:{typed}' (did you mean 'fullserver:{nearest}'?)"), said
    assert "\n" not in said


_PLATFORM_NAME = re.compile("|".join(sorted((re.escape(p.value) for p in Platform), key=len, reverse=True)))


@pytest.mark.parametrize("key", [k for k in PLATFORM_KEYS if "." not in k])
def test_a_description_names_only_the_platforms_that_take_the_key(key: str) -> None:
    """Pulumi.yaml's words ("gke-gpu, gke-tpu, eks-gpu: ...") follow the platforms' declarations."""
    named = set(_PLATFORM_NAME.findall(config_keys()[key].description))
    assert named <= {p.value for p in owners(key)}, named
