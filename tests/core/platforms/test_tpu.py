"""``fullserver.platforms.tpu``: what fullserver knows about Cloud TPU VMs and slices."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fullserver.platform import AcceleratorKind, Platform, PricingModel
from fullserver.platforms import Request, gcp, option_refusal, rules_for, tpu
from fullserver.platforms.capacity import SpotQuestion
from fullserver.platforms.supply import SLICES

RULES = tpu.RULES


def test_it_is_the_tpu_vm_platform() -> None:
    assert rules_for(Platform.TPU_VM) is RULES
    assert (RULES.provider, set(RULES.accelerator_kinds)) == ("gcp", {AcceleratorKind.TPU})
    assert PricingModel.DEDICATED_MONTHLY not in RULES.pricing
    assert set(RULES.options) == {"queued", "reservation", "image", "sshPublicKeys", "sshPrivateKey", "autostopMinutes"}
    # A slice is one resource: its hosts are the nodes, its boot disk is part of it, it is not
    # placed by a policy, and fullserver:image names its runtime version.
    assert (RULES.supply, RULES.boot_disk_sized, RULES.compact_placement) == (SLICES, False, False)
    assert RULES.boot_image("tpu-ubuntu2204-base") is None
    assert RULES.multi_node == tpu.MULTISLICE and RULES.zone_from_catalog and not RULES.hourly_gpus
    # The same disks, zones and region peers as Compute Engine.
    assert (RULES.disk_kinds, RULES.zone_form, RULES.region_peers) == (gcp.DISKS, gcp.ZONES, gcp.REGION_PEERS)


@pytest.mark.parametrize(
    ("family", "kind"),
    [
        ("v6e", "hyperdisk-balanced"),
        ("tpu7x", "hyperdisk-balanced"),
        ("v5p", "pd-balanced"),
        ("v5e", "pd-balanced"),
        ("v4", "pd-balanced"),
    ],
)
def test_disk_kind_by_generation(family: str, kind: str) -> None:
    assert RULES.disk_kind(family) == kind


def test_queued_applies_only_here() -> None:
    assert option_refusal("queued", Platform.TPU_VM) is None
    assert option_refusal("capacityBlock", Platform.TPU_VM) == (
        "applies only to aws-gpu (a Capacity Block is an AWS reservation); this stack is tpu-vm"
    )


SLICE = Request("v5p-128", hosts=16, zone="us-east5-a", queued=True)


@pytest.mark.parametrize(
    ("request_", "key", "field", "what"),
    [
        (Request("v5litepod-8", zone="us-west4-a"), None, None, None),
        (SLICE, None, None, None),
        (Request("v5litepod-8"), "zone", "zone", "Cloud TPUs are zonal and no zone is set"),
        (
            Request("v5litepod-8", zone="us-west4-a", local_ssds=2),
            "platform",
            "local_nvme_disks",
            "TPU VMs have no local SSDs (2 requested)",
        ),
        # Spot is the request's tier (gcloud queued-resources create --spot): queued or not, one host or many.
        (Request("v5litepod-8", zone="us-west4-a", queued=True, queued_asked=True, spot=True), None, None, None),
        (replace(SLICE, spot=True), None, None, None),
        (
            replace(SLICE, reservation="tpu-res"),
            "reservation",
            "reservation",
            "v5p-128 is requested as a queued resource (16 hosts), which cannot name a reservation: "
            "fullserver creates it with gcloud (components.tpu.queued) and passes none",
        ),
        (
            replace(SLICE, data_disk="pd-balanced"),
            "datasetGib",
            "data_disk",
            "a read-write data disk cannot attach to the multi-host slice v5p-128 (16 hosts)",
        ),
        (
            replace(SLICE, data_disk="pd-balanced", data_disk_read_only=True),
            "datasetGib",
            "data_disk",
            "v5p-128 is requested as a queued resource (16 hosts), which cannot attach a data disk: "
            "fullserver creates it with gcloud (components.tpu.queued) and passes none",
        ),
        (
            Request("v5litepod-8", zone="us-west4-a", data_disk="gp3"),
            "datasetGib",
            "data_disk.kind",
            "TPU VMs attach pd-balanced or hyperdisk-balanced, not gp3",
        ),
        (
            Request("v5litepod-8", zone="us-west4-a", spot=True, reservation="r"),
            "reservation",
            "reservation",
            "spot capacity cannot consume a capacity reservation",
        ),
    ],
)
def test_refusals(request_: Request, key: str | None, field: str | None, what: str | None) -> None:
    refusal = RULES.refusal(request_)
    assert ((refusal.key, refusal.field, refusal.what) if refusal else (None, None, None)) == (key, field, what)


QUESTION = SpotQuestion(
    shape="v5p-32", hosts=4, zone="us-east5-a", queued=True, spot_usd_hour=20.80, on_demand_usd_hour=67.20
)


def test_a_queued_spot_slice_waits_runs_whole_and_is_recreated_after_a_preemption() -> None:
    queued, running, preempted = tpu.spot_steps(QUESTION)
    assert queued.what == "queue a spot request for v5p-32 (4 hosts) in us-east5-a" and queued.usd_hour_low is None
    assert "WAITING_FOR_RESOURCES" in queued.how and "no valid-until window" in queued.how
    assert (running.what, running.usd_hour_low) == ("v5p-32 (4 hosts) runs on spot", 20.80)
    assert running.how == "the spot price of the whole slice (67.20/h on-demand)"
    assert preempted.usd_hour_low is None
    assert preempted.how.startswith("the whole slice goes, all hosts at once")
    assert "cannot be restarted, only recreated: pulumi up --refresh replaces a request" in preempted.how


def test_a_spot_tpu_vm_is_created_at_once_or_not_and_replaced_by_hand_after_a_preemption() -> None:
    one = replace(QUESTION, shape="v5litepod-8", hosts=1, queued=False, spot_usd_hour=2.38, on_demand_usd_hour=9.6)
    create, running, preempted = tpu.spot_steps(one)
    assert create.what == "create the spot TPU VM v5litepod-8 in us-east5-a" and create.usd_hour_low is None
    assert "on a stockout pulumi up fails" in create.how and "fullserver:queued: true" in create.how
    assert (running.what, running.usd_hour_low) == ("v5litepod-8 runs on spot", 2.38)
    assert preempted.how.startswith("the TPU VM stops") and "pulumi up --replace on the TPU VM" in preempted.how


def test_the_plan_states_tpu_spot_and_its_missing_fallback() -> None:
    assert RULES.spot_steps is tpu.spot_steps
    assert "a queued spot slice waits in the queue" in RULES.no_spot_fallback
    assert tpu.GONE_STATES == ("SUSPENDED", "FAILED")  # what a refresh replaces (components.tpu.queued)
