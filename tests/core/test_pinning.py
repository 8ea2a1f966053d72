"""``plan --pin``: the chosen place written into the stack file as a reviewed, round-trip edit."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
import yaml

from fullserver.errors import InputError
from fullserver.pinning import PIN_MARK, pin_stack, pin_text
from fullserver.plan import plan_paths

TODAY = dt.date(2026, 12, 2)

UNPINNED = """\
# Four T4s for experiments, wherever they are cheapest in the US.
config:
  fullserver:profile: experimentation   # what the work needs
  fullserver:location:
  - us
  # the dataset is read once a month
  fullserver:datasetLocation: s3://team-data/imagenet@us-east-1
  fullserver:datasetGib: 200
  fullserver:accelerator: T4
  fullserver:acceleratorCount: 4
  gcp:project: example-project
"""

PINNED = """\
# Four T4s for experiments, wherever they are cheapest in the US.
config:
  fullserver:profile: experimentation   # what the work needs
  fullserver:location:
  - us
  # pinned by `fullserver plan --pin` on 2026-12-02: why
  fullserver:platform: gcp-gpu
  fullserver:region: us-central1
  # the dataset is read once a month
  fullserver:datasetLocation: s3://team-data/imagenet@us-east-1
  fullserver:datasetGib: 200
  fullserver:accelerator: T4
  fullserver:acceleratorCount: 4
  gcp:project: example-project
"""
COMMENT = "# pinned by `fullserver plan --pin` on 2026-12-02: why"


def test_a_pin_adds_region_and_platform_after_the_location_and_keeps_every_other_line() -> None:
    assert pin_text(UNPINNED, "gcp-gpu", "us-central1", COMMENT, "f") == PINNED


def test_pinning_twice_changes_nothing() -> None:
    once = pin_text(UNPINNED, "gcp-gpu", "us-central1", COMMENT, "f")
    assert pin_text(once, "gcp-gpu", "us-central1", COMMENT.replace("why", "another day"), "f") == once


def test_a_new_choice_replaces_the_pin_where_it_stands_with_a_new_comment() -> None:
    moved = pin_text(PINNED, "aws-gpu", "us-east-1", COMMENT.replace("why", "cheaper now"), "f")
    assert moved == PINNED.replace("gcp-gpu", "aws-gpu").replace("us-central1", "us-east-1").replace(
        ": why", ": cheaper now"
    )
    assert moved.count(PIN_MARK) == 1


def test_a_hand_set_region_keeps_its_place_in_the_key_order() -> None:
    text = UNPINNED.replace(
        "  fullserver:location:\n", '  fullserver:region: "us-east-1"  # by hand\n  fullserver:location:\n'
    )
    pinned = pin_text(text, "gcp-gpu", "us-central1", COMMENT, "f")
    keys = list(yaml.safe_load(pinned)["config"])
    assert keys[:4] == ["fullserver:profile", "fullserver:region", "fullserver:location", "fullserver:platform"]
    assert yaml.safe_load(pinned)["config"]["fullserver:region"] == "us-central1"
    assert pinned.splitlines()[3] == COMMENT.join(["  ", ""])


def test_a_list_indented_under_the_location_is_stepped_over() -> None:
    text = UNPINNED.replace("  - us\n", "    - us\n    - europe\n")
    pinned = yaml.safe_load(pin_text(text, "gcp-gpu", "us-central1", COMMENT, "f"))["config"]
    assert pinned["fullserver:location"] == ["us", "europe"]
    assert pinned["fullserver:region"] == "us-central1"


def test_a_stack_without_a_location_is_not_pinned() -> None:
    text = "config:\n  fullserver:profile: experimentation\n  fullserver:accelerator: T4\n"
    with pytest.raises(InputError) as err:
        pin_text(text, "gcp-gpu", "us-central1", COMMENT, "stacks/Pulumi.x.yaml")
    assert err.value.line() == (
        "stacks/Pulumi.x.yaml: names no fullserver:location to pin (plan --pin pins stacks with a location)"
    )


def test_a_flow_style_config_is_refused_rather_than_rewritten() -> None:
    text = "config: {fullserver:profile: experimentation, fullserver:location: [us]}\n"
    with pytest.raises(InputError) as err:
        pin_text(text, "gcp-gpu", "us-central1", COMMENT, "f")
    assert "set fullserver:region and fullserver:platform by hand" in err.value.hint


def test_pin_stack_writes_the_winner_with_when_and_why(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.t4.yaml"
    path.write_text(UNPINNED, encoding="utf-8")
    (plan,) = plan_paths([path])
    assert plan.placement is not None
    assert pin_stack(path, plan.placement, TODAY) is True
    text = path.read_text(encoding="utf-8")
    comment = next(line for line in text.splitlines() if PIN_MARK in line)
    assert comment.startswith("  # pinned by `fullserver plan --pin` on 2026-12-02: cheapest of 2 option(s) in us: ")
    assert "runner-up aws-gpu in us-east-1 (g4dn.12xlarge" in comment
    assert pin_stack(path, plan.placement, TODAY + dt.timedelta(days=1)) is False  # idempotent
    assert path.read_text(encoding="utf-8") == text
    (again,) = plan_paths([path])
    assert again.placement is not None and again.placement.pinned
    assert again.placement.pinned_option == again.placement.winner
