"""``fullserver.platforms.gke_pool.compute_class``: the ComputeClass hands GKE the fallback in the cost
model's order (spot members first, then the on-demand pool, then the rest of the set), as a function
of members so the balanced set plugs in; every object it makes validates against the schema written
from Google's reference.

Source of every field: Google's ComputeClass CRD reference,
https://cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass (and its later revision
on docs.cloud.google.com for ``nodePoolConfig``, ``priorityDefaults``, ``description``), read
2026-12-02; the schema is ``tests/data/crds/computeclass.schema.json``.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from fullserver.platforms.gke_pool import COMPUTE_CLASS_REFERENCE, compute_class, spot_first_line
from fullserver.platforms.pool_rules import ClassMember, capacity_order
from tests.crds import CRDS, validate

REFERENCE_READ = "2026-12-02"
LABELS = {"fullserver/environment": "ft"}


def test_the_schema_names_its_source_and_the_date_it_was_read() -> None:
    comment = json.loads((CRDS / "computeclass.schema.json").read_text())["$comment"]
    assert COMPUTE_CLASS_REFERENCE in comment and REFERENCE_READ in comment


def l4(machine_type: str, spot: bool, pool: str | None = None) -> ClassMember:
    return ClassMember((machine_type,), spot=spot, pool=pool, gpu_type="nvidia-l4", gpu_count=1)


SPOT_POOL = l4("g2-standard-12", True, "ft-spot")
ON_DEMAND_POOL = l4("g2-standard-12", False, "ft-ondemand")
SPOT_REST = l4("g2-standard-16", True)
ON_DEMAND_REST = l4("g2-standard-16", False)


def test_the_stack_s_pools_are_named_spot_first_and_nothing_else_is_scaled_up() -> None:
    members = capacity_order([ON_DEMAND_POOL, SPOT_POOL])
    obj = compute_class("fullserver-ft", members, LABELS)
    validate(obj)
    assert obj == {
        "apiVersion": "cloud.google.com/v1",
        "kind": "ComputeClass",
        "metadata": {"name": "fullserver-ft", "labels": LABELS},
        "spec": {
            "priorities": [{"nodepools": ["ft-spot"]}, {"nodepools": ["ft-ondemand"]}],
            "whenUnsatisfiable": "DoNotScaleUp",
            "nodePoolAutoCreation": {"enabled": False},
        },
    }


def test_the_balanced_set_goes_spot_first_then_the_on_demand_pool_then_the_rest() -> None:
    members = capacity_order([ON_DEMAND_REST, ON_DEMAND_POOL, SPOT_REST, SPOT_POOL])
    assert members == [SPOT_REST, SPOT_POOL, ON_DEMAND_POOL, ON_DEMAND_REST]  # spot in the order given
    obj = compute_class("fullserver-ft", capacity_order([SPOT_POOL, SPOT_REST, ON_DEMAND_POOL, ON_DEMAND_REST]), LABELS)
    validate(obj)
    assert obj["spec"]["priorities"] == [
        {"nodepools": ["ft-spot"]},
        {"machineType": "g2-standard-16", "gpu": {"type": "nvidia-l4", "count": 1}, "spot": True},
        {"nodepools": ["ft-ondemand"]},
        {"machineType": "g2-standard-16", "gpu": {"type": "nvidia-l4", "count": 1}, "spot": False},
    ]
    # shapes without a pool of the stack's are GKE's to create
    assert obj["spec"]["nodePoolAutoCreation"] == {"enabled": True}
    assert obj["spec"]["whenUnsatisfiable"] == "DoNotScaleUp"


def test_a_member_of_several_types_without_a_pool_is_one_rule_per_type() -> None:
    wide = ClassMember(("a3-highgpu-8g", "a3-megagpu-8g"), spot=True, gpu_type="nvidia-h100-80gb", gpu_count=8)
    obj = compute_class("c", [wide], {})
    validate(obj)
    assert [r["machineType"] for r in obj["spec"]["priorities"]] == ["a3-highgpu-8g", "a3-megagpu-8g"]
    cpu_only = compute_class("c", [ClassMember(("n2-standard-8",), spot=False)], {})
    validate(cpu_only)
    assert cpu_only["spec"]["priorities"] == [{"machineType": "n2-standard-8", "spot": False}]


def test_the_plan_line_says_what_gke_tries_in_order_on_a_stockout() -> None:
    line = spot_first_line(capacity_order([SPOT_POOL, SPOT_REST, ON_DEMAND_POOL]))
    assert line.startswith(
        "on a stockout GKE tries, in order: 1. ft-spot: spot g2-standard-12; 2. spot g2-standard-16; "
        "3. ft-ondemand: on-demand g2-standard-12; then nothing (whenUnsatisfiable DoNotScaleUp: the pods wait)"
    )


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("spec", "whenUnsatisfiable"), "ScaleUp"),  # not one of the two the reference lists
        (("spec", "priorities"), [{"machinetype": "g2-standard-12"}]),  # a misspelled field
        (("spec", "priorities"), [{"gpu": {"type": "nvidia-l4", "count": 0}}]),
        (("spec", "nodePoolAutoCreation"), {"enabled": "yes"}),
        (("apiVersion",), "cloud.google.com/v1beta1"),
    ],
)
def test_the_schema_refuses_what_the_reference_does_not_allow(path: tuple[str, ...], value: Any) -> None:
    obj = compute_class("fullserver-ft", [SPOT_POOL, ON_DEMAND_POOL], LABELS)
    *parents, last = path
    target = obj
    for key in parents:
        target = target[key]
    target[last] = value
    with pytest.raises(jsonschema.ValidationError):
        validate(obj)
