"""The balanced set on Compute Engine: spot nodes as a regional managed instance group with an
instance flexibility policy over the set and a BALANCED distribution over its zones."""

from __future__ import annotations

import pytest

from components.args import SpecRefused
from components.gcp.args import gcp_args
from components.gcp.environment import GcpGpuEnvironment
from fullserver.platforms import gcp_capacity
from tests.components.conftest import Build, Plans, spec_of


def _unpinned(plans: Plans):  # type: ignore[no-untyped-def]
    """finetune-gcp-g2 without its pinned zone: the set spans every zone listing G2."""
    spec = spec_of(plans, "finetune-gcp-g2")
    assert spec.capacity is not None
    zones = ["us-central1-a", "us-central1-b", "us-central1-c"]
    held = spec.capacity.model_copy(update={"zones": zones})
    return spec.model_copy(update={"capacity": held})


def test_spot_g2_is_a_regional_group_ranked_over_the_set(plans: Plans, build: Build) -> None:
    spec = _unpinned(plans)
    g = build(lambda: GcpGpuEnvironment("ft", gcp_args(spec)))
    assert g.of_type("compute/instance:Instance") == []
    mig = g.one("compute/regionInstanceGroupManager:RegionInstanceGroupManager").inputs
    assert mig["instanceFlexibilityPolicy"] == {
        "instanceSelections": [
            {"name": "rank-0-g2-standard-12", "rank": 0, "machineTypes": ["g2-standard-12"]},
            {"name": "rank-1-g2-standard-16", "rank": 1, "machineTypes": ["g2-standard-16"]},
        ]
    }
    assert mig["distributionPolicyZones"] == ["us-central1-a", "us-central1-b", "us-central1-c"]
    assert mig["distributionPolicyTargetShape"] == "BALANCED"
    assert mig["updatePolicy"] == {
        "type": "OPPORTUNISTIC",
        "minimalAction": "REPLACE",
        "maxSurgeFixed": 0,
        "maxUnavailableFixed": 3,
        "instanceRedistributionType": "NONE",
    }
    assert mig["targetSize"] == 1 and mig["waitForInstances"] is False and mig["region"] == "us-central1"
    tmpl = g.one("compute/instanceTemplate:InstanceTemplate").inputs
    assert tmpl["machineType"] == "g2-standard-12"
    assert tmpl["scheduling"] == {
        "onHostMaintenance": "TERMINATE",
        "provisioningModel": "SPOT",
        "preemptible": True,
        "automaticRestart": False,
        "instanceTerminationAction": "DELETE",
    }
    assert tmpl["reservationAffinity"] == {"type": "NO_RESERVATION"}
    assert [d.get("diskType") for d in tmpl["disks"]] == ["pd-balanced", "local-ssd", "pd-balanced"]
    assert g.outputs["connect"].startswith("gcloud compute ssh") and "--region us-central1" in g.outputs["connect"]


def test_a_reservation_keeps_single_vms(plans: Plans) -> None:
    spec = spec_of(plans, "finetune-gcp-g2", reservation="my-res")
    assert gcp_capacity.mig_reason(spec) == "reservation my-res is zonal"
    assert "capacity_machine_types" not in gcp_args(spec)


def test_the_api_rules_are_checked_before_anything_is_made() -> None:
    assert gcp_capacity.flexibility_refusal("BALANCED", "NONE", ["a", "b"]) is None
    even = gcp_capacity.flexibility_refusal("EVEN", "PROACTIVE", ["a", "b"])
    assert even is not None and "target shape" in even.what
    proactive = gcp_capacity.flexibility_refusal("BALANCED", "PROACTIVE", ["a", "b"])
    assert proactive is not None and "NONE" in proactive.what
    twice = gcp_capacity.flexibility_refusal("ANY", "NONE", ["a", "a"])
    assert twice is not None and "twice" in twice.what


def test_a_doubled_machine_type_is_refused_by_the_component(plans: Plans, build: Build) -> None:
    args = gcp_args(_unpinned(plans))
    args["capacity_machine_types"] = ["g2-standard-12", "g2-standard-12"]
    with pytest.raises(SpecRefused, match="listed twice"):
        build(lambda: GcpGpuEnvironment("ft", args))
