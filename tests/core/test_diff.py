"""Two plan documents in, one diff out: keyed by names, generic over lines, exact in its sums."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fullserver.diff import check_increase, compare
from fullserver.errors import EXIT_BUDGET, BudgetExceeded, InputError
from fullserver.plan_document import read_document


def entry(stack: str, **over: Any) -> dict[str, Any]:
    """One ``plan --json`` entry with the parts the diff reads (plus fields it must ignore)."""
    doc: dict[str, Any] = {
        "stack": stack,
        "path": f"stacks/Pulumi.{stack}.yaml",
        "spec": {
            "profile": "fine-tuning",
            "platform": "gcp-gpu",
            "region": "us-central1",
            "zone": None,
            "offer": "a2-highgpu-1g",
            "machine_type": "a2-highgpu-1g",
            "accelerator": "A100-40GB",
            "accelerator_count": 1,
            "nodes": 1,
            "spot": True,
            "balance": {
                "lines": [
                    {"dimension": "cpu", "unit": "vCPUs", "required": 8, "provided": 12, "ok": True, "reason": "r"},
                    {"dimension": "ram", "unit": "GiB", "required": 80, "provided": 85, "ok": True, "reason": "r"},
                ]
            },
            "some_future_field": {"nested": [1, 2]},
        },
        "cost": {
            "lines": [
                {"item": "compute", "usd_month": 300.0, "note": "spot"},
                {"item": "boot disk", "usd_month": 20.0},
            ]
        },
        "usd_month": 320.0,
        "warnings": ["a warning that stays"],
        "resources": [
            {
                "type": "gcp:compute/instance:Instance",
                "name": f"{stack}-node",
                "inputs": {"machineType": "a2-highgpu-1g"},
            },
            {
                "type": "gcp:compute/firewall:Firewall",
                "name": f"{stack}-ssh",
                "inputs": {"sourceRanges": ["10.0.0.0/8"]},
            },
        ],
        "guardrails": [],
    }
    for key, value in over.items():
        doc[key] = value
    return doc


def docs(*entries: dict[str, Any]) -> Any:
    return read_document(list(entries), "test")


def test_identical_documents_change_nothing() -> None:
    d = compare(docs(entry("a"), entry("b")), docs(entry("a"), entry("b")))
    assert [s.status for s in d.stacks] == ["unchanged", "unchanged"]
    assert d.delta_usd == 0 and d.delta_pct == 0.0 and d.changed == []


def test_shape_balance_cost_and_resources_are_compared_by_name() -> None:
    after = entry("a")
    after["spec"].update(offer="a2-highgpu-2g", accelerator_count=2)
    after["spec"]["balance"]["lines"] = [
        {"dimension": "ram", "unit": "GiB", "required": 160, "provided": 170, "ok": True},
        {"dimension": "cpu", "unit": "vCPUs", "required": 16, "provided": 24, "ok": True},
        {"dimension": "nvme", "unit": "GiB", "required": 1000, "provided": 750, "ok": False},
    ]
    after["cost"]["lines"] = [
        {"item": "boot disk", "usd_month": 20.0},
        {"item": "compute", "usd_month": 600.0},
        {"item": "local SSD", "usd_month": 30.5},
    ]
    after["usd_month"] = 650.5
    after["resources"][0]["inputs"] = {"machineType": "a2-highgpu-2g"}
    (s,) = compare(docs(entry("a")), docs(after)).stacks
    assert s.status == "changed"
    assert [(f.field, f.before, f.after) for f in s.shape] == [
        ("offer", "a2-highgpu-1g", "a2-highgpu-2g"),
        ("accelerator_count", "1", "2"),
    ]
    # Reordered lines are matched by dimension / item, a new one shows as new.
    assert [(b.dimension, b.before is not None, b.after is not None) for b in s.balance] == [
        ("cpu", True, True),
        ("ram", True, True),
        ("nvme", False, True),
    ]
    assert [(c.item, c.before_usd, c.after_usd, c.delta_usd) for c in s.cost] == [
        ("compute", 300.0, 600.0, 300.0),
        ("local SSD", None, 30.5, 30.5),
    ]
    assert s.delta_usd == 330.5 == sum(c.delta_usd for c in s.cost)
    [r] = s.resources
    assert (r.name, r.status, r.inputs) == ("a-node", "changed", ["machineType"])


def test_added_removed_and_replaced_resources() -> None:
    after = entry("a")
    after["resources"] = [
        {"type": "gcp:tpu/v2QueuedResource:V2QueuedResource", "name": "a-node", "inputs": {}},
        {"type": "gcp:compute/disk:Disk", "name": "a-data", "inputs": {"size": 500}},
    ]
    (s,) = compare(docs(entry("a")), docs(after)).stacks
    got = {(r.name, r.status, r.before_type) for r in s.resources}
    assert got == {
        ("a-data", "added", None),
        ("a-node", "replaced", "gcp:compute/instance:Instance"),
        ("a-ssh", "removed", None),
    }
    assert (s.resources_before, s.resources_after) == (2, 2)


def test_nested_input_changes_name_their_path() -> None:
    after = entry("a")
    after["resources"][1]["inputs"] = {"sourceRanges": ["10.0.0.0/8"], "allows": [{"ports": ["22"]}]}
    after["resources"][0]["inputs"] = {"machineType": "a2-highgpu-1g", "scheduling": {"provisioningModel": "SPOT"}}
    (s,) = compare(docs(entry("a")), docs(after)).stacks
    assert {r.name: r.inputs for r in s.resources} == {"a-node": ["scheduling"], "a-ssh": ["allows"]}
    before = entry("a")
    before["resources"][0]["inputs"] = {"scheduling": {"provisioningModel": "STANDARD", "preemptible": False}}
    after["resources"][0]["inputs"] = {"scheduling": {"provisioningModel": "SPOT", "preemptible": False}}
    (s,) = compare(docs(before), docs(after)).stacks
    assert {r.name: r.inputs for r in s.resources}["a-node"] == ["scheduling.provisioningModel"]


def test_stacks_added_and_removed_carry_their_whole_bill() -> None:
    d = compare(docs(entry("a"), entry("gone")), docs(entry("a"), entry("new", usd_month=100.0)))
    status = {s.stack: s for s in d.stacks}
    assert status["gone"].status == "removed" and status["gone"].delta_usd == -320.0
    assert status["new"].status == "added" and status["new"].delta_usd == 100.0
    assert status["new"].was == "" and "a2-highgpu-1g" in status["new"].now
    assert d.delta_usd == -220.0 and d.delta_pct == pytest.approx(-220 / 640 * 100, abs=0.01)


def test_warnings_and_guardrails_appear_and_disappear() -> None:
    finding = {"policy": "no-open-admin-ports", "level": "mandatory", "message": "SSH open to 0.0.0.0/0"}
    before = entry("a", warnings=["a warning that stays", "a warning that goes"])
    after = entry("a", warnings=["a warning that stays", "a new warning"], guardrails=[finding])
    (s,) = compare(docs(before), docs(after)).stacks
    assert s.status == "changed"
    assert s.warnings_added == ["a new warning"] and s.warnings_removed == ["a warning that goes"]
    assert [g.policy for g in s.guardrails_added] == ["no-open-admin-ports"] and s.guardrails_removed == []
    (back,) = compare(docs(after), docs(before)).stacks
    assert [g.message for g in back.guardrails_removed] == ["SSH open to 0.0.0.0/0"]


def test_a_saved_plan_without_guardrails_lists_the_current_findings_without_calling_them_new() -> None:
    finding = {"policy": "monthly-budget", "message": "over"}
    saved = entry("a")
    del saved["guardrails"]
    (s,) = compare(docs(saved), docs(entry("a", guardrails=[finding]))).stacks
    assert s.guardrails_added == [] and [g.policy for g in (s.guardrails_now or [])] == ["monthly-budget"]


def test_a_cost_item_that_appears_twice_keeps_both_lines() -> None:
    before = entry("a")
    before["cost"]["lines"] = [{"item": "disk", "usd_month": 1.0}, {"item": "disk", "usd_month": 2.0}]
    after = copy.deepcopy(before)
    after["cost"]["lines"][1]["usd_month"] = 5.0
    (s,) = compare(docs(before), docs(after)).stacks
    assert [(c.item, c.delta_usd) for c in s.cost] == [("disk #2", 3.0)]


def test_the_total_falls_back_to_the_lines_when_a_document_has_no_usd_month() -> None:
    e = entry("a")
    del e["usd_month"]
    assert docs(e)[0].usd_month == 320.0


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"stack": "a"}, "is not a plan document"),
        ([1], "test: entry 0: is not an object"),
        ([{"stack": "a", "spec": {}}], "test: entry 0: needs 'stack', 'spec' and 'cost'"),
        ([entry("a"), entry("a")], "test: entry 1: stack 'a' appears twice"),
        ([entry("a", resources=[{"name": "x"}])], "test: entry 0 (stack 'a'): field 'type'"),
    ],
)
def test_a_document_that_is_not_a_plan_is_one_line(data: Any, needle: str) -> None:
    with pytest.raises(InputError) as info:
        read_document(data, "test")
    assert needle in str(info.value) and "fullserver plan --json" in str(info.value)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf"), "320", True])
def test_a_total_that_is_not_a_finite_number_is_refused_so_the_caps_keep_working(bad: Any) -> None:
    with pytest.raises(InputError) as info:
        docs(entry("a", usd_month=bad))
    assert str(info.value).startswith("test: entry 0 (stack 'a'): field 'usd_month':")
    assert "is not a finite number of USD" in str(info.value)


def test_a_cost_line_that_is_not_a_finite_number_is_refused() -> None:
    e = entry("a")
    e["cost"]["lines"][0]["usd_month"] = float("nan")
    with pytest.raises(InputError, match=r"test: entry 0 \(stack 'a'\): field 'usd_month': Input should be a finite"):
        docs(e)


def test_a_base_stack_that_did_not_plan_and_is_gone_now_is_removed_with_its_reason() -> None:
    d = compare(docs(entry("a")), docs(entry("a")), {"old": "the base does not plan with the current code: x"})
    [old] = d.changed
    assert (old.stack, old.status, old.was, old.usd_before) == ("old", "removed", "", 0.0)
    assert old.note == "the base does not plan with the current code: x; it is deleted now"


def test_caps_on_the_rise() -> None:
    d = compare(docs(entry("a"), entry("b")), docs(entry("a", usd_month=420.0), entry("b")))
    assert d.delta_usd == 100.0 and d.delta_pct == pytest.approx(15.625)
    check_increase(d, 100.0, 15.625)  # at the cap is not above it
    check_increase(d, None, None)
    with pytest.raises(BudgetExceeded) as info:
        check_increase(d, 99.99, None)
    assert info.value.exit_code == EXIT_BUDGET
    assert "rises by 100.00 USD (+15.6%), above --max-increase-usd 99.99 (a +100.00)" in str(info.value)
    with pytest.raises(BudgetExceeded, match="--max-increase-pct 15"):
        check_increase(d, None, 15)


def test_a_rise_from_nothing_passes_no_percentage_cap() -> None:
    d = compare([], docs(entry("a")))
    assert d.delta_pct is None
    with pytest.raises(BudgetExceeded, match="from nothing"):
        check_increase(d, None, 1000)


def test_the_json_carries_each_delta() -> None:
    after = entry("a", usd_month=330.0)
    after["cost"]["lines"][0]["usd_month"] = 310.0
    data = compare(docs(entry("a")), docs(after)).to_json()
    assert data["delta_usd"] == 10.0
    assert data["stacks"][0]["delta_usd"] == 10.0 and data["stacks"][0]["cost"][0]["delta_usd"] == 10.0
