"""Multi-host TPU slices on spot (issue 37): a queued resource asked with ``--spot`` on tpu-vm, and
the request a refresh finds given up on (a preempted spot slice) replaced rather than kept."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from components.tpu.args import tpu_args
from components.tpu.environment import TpuVmEnvironment
from components.tpu.queued import TpuQueuedResourceProvider, queued_create_command
from fullserver.catalog import Catalog
from fullserver.plan import StackPlan, plan_workload
from fullserver.profiles import load_profiles
from fullserver.stacks import workload_from_config
from tests.components.conftest import Build


def spot_slice(
    catalog: Catalog, accelerator: str, platform: str = "tpu-vm", extra: dict[str, Any] | None = None
) -> StackPlan:
    """A batch-inference (spot with fallback) stack on a multi-host slice, as the core plans it."""
    config = {
        "fullserver:profile": "batch-inference",
        "fullserver:platform": platform,
        "fullserver:region": "us-central1",
        "fullserver:zone": "us-central1-a",
        "fullserver:accelerator": accelerator,
        "fullserver:framework": "jax",
        "fullserver:owner": "batch-scoring",
        **(extra or {}),
    }
    return plan_workload("spot-slice", "s", workload_from_config(config, "s"), load_profiles(), catalog)


@pytest.mark.parametrize(
    ("accelerator", "hosts", "spot_usd_hour"),
    [
        ("v5litepod-16", 4, 16 * 0.29771),  # catalog tpu_prices: v5e us-central1 spot per chip-hour
        ("v5p-32", 4, 16 * 0.78049),  # v5p-32 is 16 chips (2 TensorCores per chip), us-central1
    ],
)
def test_a_multi_host_slice_on_spot_is_a_queued_resource_asked_with_spot(
    catalog: Catalog, build: Build, accelerator: str, hosts: int, spot_usd_hour: float
) -> None:
    plan = spot_slice(catalog, accelerator)
    spec = plan.spec
    assert spec.spot is True and spec.tpu is not None and spec.tpu.queued and spec.tpu.hosts == hosts
    assert plan.cost.basis == "spot"
    # the plan's spot capacity: queued (no TPU yet), then the whole slice at the spot price, then preempted
    queued, running, preempted = plan.spec.capacity.steps  # type: ignore[union-attr]
    assert queued.usd_hour_low is None and "WAITING_FOR_RESOURCES" in queued.how
    assert running.usd_hour_low == pytest.approx(spot_usd_hour)
    assert preempted.usd_hour_low is None and "the whole slice goes" in preempted.how
    g = build(lambda: TpuVmEnvironment("slice", tpu_args(spec, project="proj")))
    qr = g.one("fullserver:TpuQueuedResource").inputs
    assert qr["spot"] == {}  # the API's tier union (QueuedResource.spot), what --spot sets
    assert qr["tpu"]["nodeSpecs"][0]["node"]["acceleratorType"] == accelerator
    command = queued_create_command(qr)
    assert command[:6] == ["gcloud", "compute", "tpus", "queued-resources", "create", qr["name"]]
    assert command[-2:] == ["--spot", "--quiet"]  # GA `queued-resources create --spot`
    assert "--guaranteed" not in command and "--reserved" not in command and "--best-effort" not in command
    assert g.of_type("tpu/v2Vm:V2Vm") == []


def test_an_on_demand_slice_asks_no_tier(catalog: Catalog, build: Build) -> None:
    """An on-demand request's inputs are what they were before spot slices: no change for old stacks."""
    plan = plan_workload(
        "od",
        "s",
        workload_from_config(
            {
                "fullserver:profile": "scale-training",
                "fullserver:platform": "tpu-vm",
                "fullserver:region": "us-central1",
                "fullserver:zone": "us-central1-a",
                "fullserver:accelerator": "v5litepod-16",
                "fullserver:framework": "jax",
                "fullserver:owner": "o",
            },
            "s",
        ),
        load_profiles(),
        catalog,
    )
    assert plan.spec.spot is False
    qr = build(lambda: TpuVmEnvironment("od", tpu_args(plan.spec))).one("fullserver:TpuQueuedResource").inputs
    assert "spot" not in qr and "--spot" not in queued_create_command(qr)


def test_a_single_host_spot_tpu_may_wait_in_the_queue_too(catalog: Catalog, build: Build) -> None:
    plan = spot_slice(catalog, "v5litepod-8", extra={"fullserver:queued": True})
    assert plan.spec.tpu is not None and plan.spec.tpu.hosts == 1 and plan.spec.tpu.queued
    qr = build(lambda: TpuVmEnvironment("one", tpu_args(plan.spec))).one("fullserver:TpuQueuedResource").inputs
    assert "--spot" in queued_create_command(qr)


PROPS: dict[str, Any] = {"project": "p", "zone": "us-central1-a", "name": "qr-1", "tpu": {"nodeSpecs": []}, "spot": {}}


def described(state: str | None) -> subprocess.CompletedProcess[str]:
    """What ``gcloud ... queued-resources describe --format=json(state)`` prints (None: NOT_FOUND)."""
    if state is None:
        return subprocess.CompletedProcess([], 1, "", "ERROR: (gcloud) NOT_FOUND: qr-1")
    return subprocess.CompletedProcess([], 0, json.dumps({"state": {"state": state}}), "")


@pytest.mark.parametrize(
    ("state", "kept"),
    [
        ("ACTIVE", True),
        ("WAITING_FOR_RESOURCES", True),
        ("PROVISIONING", True),
        ("SUSPENDED", False),
        ("FAILED", False),
    ],
)
def test_a_refresh_marks_a_request_cloud_tpu_gave_up_on_so_up_replaces_it(
    monkeypatch: pytest.MonkeyPatch, state: str, kept: bool
) -> None:
    calls: list[list[str]] = []

    def run(command: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        return described(state)

    monkeypatch.setattr("components.tpu.queued.shutil.which", lambda _: "/usr/bin/gcloud")
    monkeypatch.setattr("components.tpu.queued.subprocess.run", run)
    provider = TpuQueuedResourceProvider()
    read = provider.read("p/us-central1-a/qr-1", PROPS)
    assert calls == [
        ["gcloud", "compute", "tpus", "queued-resources", "describe", "qr-1", "--zone", "us-central1-a",
         "--project", "p", "--format=json(state)"],
    ]  # fmt: skip
    assert read.id == "p/us-central1-a/qr-1"
    diff = provider.diff(read.id, read.outs or {}, PROPS)
    if kept:
        assert read.outs == PROPS and diff.changes is False
    else:  # a preempted spot slice (SUSPENDED) or an expired window: deleted with --force, then queued anew
        assert read.outs == {**PROPS, "state": state}
        assert diff.replaces == ["state"] and diff.delete_before_replace is True


def test_a_refresh_drops_a_request_that_is_gone_and_keeps_one_it_cannot_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("components.tpu.queued.shutil.which", lambda _: "/usr/bin/gcloud")
    monkeypatch.setattr("components.tpu.queued.subprocess.run", lambda c, **_: described(None))
    assert TpuQueuedResourceProvider().read("id", PROPS).id == ""  # deleted by hand: up creates it again
    monkeypatch.setattr("components.tpu.queued.shutil.which", lambda _: None)
    kept = TpuQueuedResourceProvider().read("id", PROPS)
    assert (kept.id, kept.outs) == ("id", PROPS)  # no gcloud here: nothing read, nothing changed
