"""The balanced set on Compute Engine: spot or on-demand nodes as a regional managed instance group
with an instance flexibility policy over the set and a BALANCED distribution over its zones; an
on-demand group keeps each node's data disk across a VM's recreation (its stateful policy)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from components.args import SpecRefused
from components.gcp.args import gcp_args
from components.gcp.environment import GcpGpuEnvironment
from fullserver.plan import StackPlan
from fullserver.platforms import gcp_autostop, gcp_capacity
from fullserver.platforms.gcp_capacity import GroupPolicy
from fullserver.spec import EnvironmentSpec
from tests.components.conftest import Build, Plans, ResourceOpts, spec_of
from tests.core.test_stack_config import plan_offline, stack_config, write_stack


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


def _group(**changes: Any) -> GroupPolicy:
    """A flexible group the API takes, changed where a test breaks a rule."""
    return replace(GroupPolicy(target_shape="BALANCED", redistribution="NONE", machine_types=("a", "b")), **changes)


def test_the_api_rules_are_checked_before_anything_is_made() -> None:
    assert gcp_capacity.flexibility_refusal(_group()) is None
    even = gcp_capacity.flexibility_refusal(_group(target_shape="EVEN", redistribution="PROACTIVE"))
    assert even is not None and even.field == "distribution_policy_target_shape" and "target shape" in even.what
    proactive = gcp_capacity.flexibility_refusal(_group(redistribution="PROACTIVE"))
    assert proactive is not None and "NONE" in proactive.what
    twice = gcp_capacity.flexibility_refusal(_group(target_shape="ANY", machine_types=("a", "a")))
    assert twice is not None and "twice" in twice.what


def test_a_stateful_group_replaces_by_recreate_without_redistribution() -> None:
    """Compute Engine "Configuring stateful MIGs", limitations: a regional stateful group redistributes nothing
    (it would delete stateful VMs) and replaces a VM under its name (RECREATE), which needs
    max unavailable above 0 (pulumi-gcp ``replacement_method``)."""
    kept = {"stateful_disks": ("data",), "replacement": "RECREATE", "max_unavailable": 3}
    assert gcp_capacity.flexibility_refusal(_group(**kept)) is None
    one = _group(**{**kept, "machine_types": ("a",)})
    assert gcp_capacity.flexibility_refusal(one) is None
    moved = gcp_capacity.flexibility_refusal(
        _group(**{**kept, "machine_types": ("a",), "target_shape": "EVEN", "redistribution": "PROACTIVE"})
    )
    assert moved is not None and moved.what.startswith("a regional stateful group needs")
    renamed = gcp_capacity.flexibility_refusal(_group(**{**kept, "replacement": "SUBSTITUTE"}))
    assert renamed is not None and "RECREATE" in renamed.what
    none_down = gcp_capacity.flexibility_refusal(_group(**{**kept, "max_unavailable": 0}))
    assert none_down is not None and "max_unavailable" in none_down.what


def _h100_on_demand(tmp_path: Path) -> EnvironmentSpec:
    """One 8 x H100 node of scale-training (on demand, no reservation, persistent and protected)
    over every zone: a3-highgpu-8g and a3-megagpu-8g within the profile's band."""
    config = stack_config(
        "finetune-gcp-g2", zone=None, profile="scale-training", accelerator="H100-80GB", acceleratorCount=8
    )
    return plan_offline(write_stack(tmp_path, "h100", config)).spec


def test_on_demand_h100_is_a_stateful_regional_group_over_the_set(
    tmp_path: Path, build: Build, resource_options: ResourceOpts
) -> None:
    spec = _h100_on_demand(tmp_path)
    assert not spec.spot and spec.reservation is None and spec.data_disk is not None
    assert gcp_capacity.in_group(spec) and gcp_capacity.stateful_disks(spec) == ["data"]
    g = build(lambda: GcpGpuEnvironment("h100", gcp_args(spec, project="proj")))
    assert g.of_type("compute/instance:Instance") == [] and g.of_type("compute/disk:Disk") == []
    mig_row = g.one("compute/regionInstanceGroupManager:RegionInstanceGroupManager")
    mig = mig_row.inputs
    assert mig["instanceFlexibilityPolicy"] == {
        "instanceSelections": [
            {"name": "rank-0-a3-highgpu-8g", "rank": 0, "machineTypes": ["a3-highgpu-8g"]},
            {"name": "rank-1-a3-megagpu-8g", "rank": 1, "machineTypes": ["a3-megagpu-8g"]},
        ]
    }
    assert mig["distributionPolicyZones"] == ["us-central1-a", "us-central1-b", "us-central1-c"]
    assert mig["distributionPolicyTargetShape"] == "BALANCED"
    assert mig["statefulDisks"] == [{"deviceName": "data", "deleteRule": "ON_PERMANENT_INSTANCE_DELETION"}]
    assert mig["updatePolicy"] == {
        "type": "OPPORTUNISTIC",
        "minimalAction": "REPLACE",
        "maxSurgeFixed": 0,
        "maxUnavailableFixed": 3,
        "instanceRedistributionType": "NONE",
        "replacementMethod": "RECREATE",
    }
    assert mig["targetSize"] == 1 and mig["waitForInstances"] is False
    assert mig["region"] == "us-central1" and mig["project"] == "proj" and mig["baseInstanceName"] == "h100"
    assert mig["versions"][0]["name"] == "primary"
    assert resource_options[mig_row.name].protect is True  # the group holds the data disks
    tmpl_row = g.one("compute/instanceTemplate:InstanceTemplate")
    assert tmpl_row.name == "h100-ondemand" and mig_row.name == "h100-ondemand"
    tmpl = tmpl_row.inputs
    assert tmpl["machineType"] == "a3-highgpu-8g" and tmpl["region"] == "us-central1"
    assert tmpl["scheduling"] == {
        "onHostMaintenance": "TERMINATE",
        "provisioningModel": "STANDARD",
        "preemptible": False,
        "automaticRestart": True,
    }
    assert tmpl["reservationAffinity"] == {"type": "ANY_RESERVATION"}
    data = [d for d in tmpl["disks"] if d.get("deviceName") == "data"]
    assert data == [
        {
            "autoDelete": True,
            "deviceName": "data",
            "diskType": spec.data_disk.kind,
            "diskSizeGb": spec.data_disk.size_gib,
        }
    ]
    assert tmpl["disks"][0]["boot"] is True and tmpl["disks"][0]["autoDelete"] is True  # stateless boot
    assert [d.get("type") for d in tmpl["disks"]].count("SCRATCH") == 16  # a3-highgpu-8g's local SSDs


def test_an_on_demand_group_without_a_data_disk_keeps_nothing(tmp_path: Path, build: Build) -> None:
    config = stack_config(
        "finetune-gcp-g2",
        zone=None,
        profile="scale-training",
        accelerator="H100-80GB",
        acceleratorCount=8,
        datasetGib=None,
    )
    spec = plan_offline(write_stack(tmp_path, "bare", config)).spec
    assert spec.data_disk is None and gcp_capacity.in_group(spec) and gcp_capacity.stateful_disks(spec) == []
    g = build(lambda: GcpGpuEnvironment("bare", gcp_args(spec, project="proj")))
    mig = g.one("compute/regionInstanceGroupManager:RegionInstanceGroupManager").inputs
    assert "statefulDisks" not in mig and "replacementMethod" not in mig["updatePolicy"]
    assert spec.capacity is not None and spec.capacity.steps[0].what.startswith("on-demand: a regional group")
    assert "keeps its name and zone, not its boot disk" in spec.capacity.steps[0].how


def test_an_on_demand_group_is_reached_as_a_spot_group_is(tmp_path: Path, build: Build) -> None:
    """``connect`` lists the group's first VM and ssh-es to it through IAP; ``nodeGroups`` names
    the group and the command that lists its members (``components.gcp.access``)."""
    g = build(lambda: GcpGpuEnvironment("h100", gcp_args(_h100_on_demand(tmp_path), project="proj")))
    connect = g.outputs["connect"]
    assert connect.startswith("gcloud compute ssh $(gcloud compute instance-groups managed list-instances ")
    assert "--region us-central1 --project proj" in connect and connect.endswith("--tunnel-through-iap")
    [row] = g.outputs["node_groups"]
    assert row["provider"] == "gcp" and row["region"] == "us-central1" and row["zone"] == ""
    assert row["via"] == "iap" and row["listCommand"] and "h100" in " ".join(row["listCommand"])
    assert g.outputs["nodes"] == [] and g.outputs["instance_names"] == []


def test_a_group_holding_data_is_never_resized_to_zero(tmp_path: Path) -> None:
    """Resizing a stateful group to 0 deletes its data disks, and its VMs cannot be stopped: idle,
    nothing stops it, whatever asks (the plan reports the reason, a stack asking is refused)."""
    held = _h100_on_demand(tmp_path)  # scale-training: autostop off, so the group keeps /data
    assert held.autostop_minutes == 0 and gcp_capacity.stateful_disks(held) == ["data"]
    assert gcp_autostop.autostop(held) == gcp_autostop.KEEPS_DATA
    bare = held.model_copy(update={"data_disk": None})  # nothing kept: the group may go to zero
    assert gcp_capacity.in_group(bare) and gcp_autostop.autostop(bare) is gcp_autostop.GROUP_TO_ZERO


def _on_demand_tuning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **changes: object) -> StackPlan:
    """finetune-gcp-g2 on demand (a project profile extending fine-tuning: 60 idle minutes) over
    every zone listing G2, with its 200 GiB data disk."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "Pulumi.yaml").write_text("name: team\nruntime: python\n")
    (tmp_path / "profiles").mkdir(exist_ok=True)
    (tmp_path / "profiles" / "on-demand-tuning.yaml").write_text(
        "extends: fine-tuning\ndescription: fine-tuning on demand\npricing: on-demand\n"
    )
    config = stack_config("finetune-gcp-g2", profile="on-demand-tuning", zone=None, **changes)
    return plan_offline(write_stack(tmp_path, "odft", config))


def test_on_demand_nodes_with_data_that_autostop_stops_stay_single_vms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stateful group's VMs cannot be stopped, only deleted: with autostop on, each node is a VM
    that stops itself and keeps /data (``STOPPED_WITH_DATA``); one type in one zone."""
    p = _on_demand_tuning(tmp_path, monkeypatch)
    spec = p.spec
    assert not spec.spot and spec.data_disk is not None and spec.autostop_minutes == 60
    assert gcp_capacity.mig_reason(spec) == gcp_capacity.STOPPED_WITH_DATA
    assert not gcp_capacity.in_group(spec) and gcp_capacity.stateful_disks(spec) == []
    assert spec.capacity is not None and len(spec.capacity.steps) == 1
    what = spec.capacity.steps[0].what
    assert spec.zone is not None and what.startswith(f"on-demand {spec.machine_type}, one VM per node in {spec.zone} (")
    assert gcp_capacity.STOPPED_WITH_DATA in what
    assert p.autostop is not None and (p.autostop.minutes, p.autostop.way) == (60, gcp_autostop.INSTANCE_STOP.key)
    assert p.autostop.lost.endswith("the boot and data disks stay") and p.autostop.restored_by_up is False
    assert "data disk" in {b.item for b in p.autostop.bills_while_stopped}  # kept, so still billed


def test_with_autostop_off_on_demand_nodes_with_data_are_a_stateful_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = _on_demand_tuning(tmp_path, monkeypatch, autostopMinutes=0)
    spec = p.spec
    assert spec.autostop_minutes == 0 and p.autostop is None
    assert gcp_capacity.mig_reason(spec) == "" and gcp_capacity.stateful_disks(spec) == ["data"]
    assert spec.capacity is not None and spec.capacity.steps[0].what.startswith("on-demand: a regional group over ")
    assert "keeps its name, zone and /data disk" in spec.capacity.steps[0].how


def test_reserved_and_spot_nodes_keep_no_stateful_disk(plans: Plans) -> None:
    spot = _unpinned(plans)
    assert gcp_capacity.in_group(spot) and gcp_capacity.stateful_disks(spot) == []
    reserved = spec_of(plans, "finetune-gcp-g2", spot=False, reservation="my-res")
    assert not gcp_capacity.in_group(reserved) and "capacity_stateful_disks" not in gcp_args(reserved)
    assert "one VM per node" in gcp_capacity.capacity_steps(reserved, reserved.capacity).steps[0].what  # type: ignore[arg-type]


def test_a_doubled_machine_type_is_refused_by_the_component(plans: Plans, build: Build) -> None:
    args = gcp_args(_unpinned(plans))
    args["capacity_machine_types"] = ["g2-standard-12", "g2-standard-12"]
    with pytest.raises(SpecRefused, match="listed twice"):
        build(lambda: GcpGpuEnvironment("ft", args))


def test_a_group_without_catalog_zones_still_holds_the_regional_rule_for_its_update_policy() -> None:
    """A regional group's fixed unavailability is 0 or at least its zone count: where the catalog
    names no zones, Compute Engine spreads the group over three, so 1 would be refused."""
    from components.gcp.flexible import _update_policy
    from fullserver.platforms import gcp

    assert _update_policy(0, stateful=True)["max_unavailable_fixed"] == gcp.SERVING_ZONES == 3
    assert _update_policy(2, stateful=False)["max_unavailable_fixed"] == 2
