"""A stack's autostop as the plan decides and prices it (``fullserver.autostop.plan``)."""

from __future__ import annotations

import pytest

from fullserver.errors import FullserverError
from fullserver.plan import StackPlan
from fullserver.platforms import aws_autostop as aws
from fullserver.platforms import gcp_autostop as gcp
from fullserver.platforms import tpu_autostop as tpu
from tests.components.matrix import plan_config
from tests.core.test_stack_config import stack_config


def plan(stack: str, **changes: object) -> StackPlan:
    return plan_config(stack, stack_config(stack, **changes))


def test_each_profile_default_reaches_its_vm_stacks_with_the_platform_s_way() -> None:
    ways = {
        "exp-aws-spot": (30, aws.INSTANCE_SHUTDOWN.key),  # priced and run on demand: an instance
        "exp-aws-l4-spot": (30, aws.GROUP_TO_ZERO.key),  # spot: the groups go to zero
        "train-tpu-v5e": (60, tpu.TPU_STOP.key),
        "batch-tpu-v5e": (30, tpu.TPU_STOP.key),
    }
    for stack, (minutes, way) in ways.items():
        auto = plan(stack).autostop
        assert auto is not None and auto.on, stack
        assert (auto.minutes, auto.way) == (minutes, way), stack
    single = plan("finetune-gcp-g2", accelerator="T4").autostop  # N1 + T4: single VMs, not a group
    assert single is not None and (single.minutes, single.way) == (60, gcp.INSTANCE_STOP.key)


def test_a_gcp_spot_group_is_resized_to_zero_and_restored_by_up() -> None:
    auto = plan("finetune-gcp-g2").autostop  # spot G2: a regional group over the balanced set
    assert auto is not None and auto.on
    assert (auto.minutes, auto.way, auto.restored_by_up) == (60, gcp.GROUP_TO_ZERO.key, True)


def test_a_stopped_gcp_group_bills_nothing_of_its_nodes() -> None:
    """The group deletes its VMs and their disks (the template's disks auto-delete), and a Cloud
    NAT bills per VM using it: a G2 stack's stopped month is its stack's other lines, here none."""
    p = plan("finetune-gcp-g2")
    auto = p.autostop
    assert auto is not None and auto.bills_while_stopped == []
    assert {"boot disk", "data disk", "local SSD"} <= {line.item for line in p.cost.lines}
    assert "all their disks" in auto.lost
    idle = p.cost.paid_hours - p.cost.productive_hours
    assert (auto.idle_hours_always_on, auto.idle_hours_with_autostop) == (round(idle, 1), 30.0)
    assert auto.usd_month_with_autostop == pytest.approx(
        p.cost.usd_month - p.cost.compute_usd_hour * (idle - 30.0), abs=0.01
    )


def test_serving_scale_training_and_bare_metal_stacks_never_stop() -> None:
    for stack in ("serve-aws-realtime", "serve-gcp-realtime", "train-p5-cluster", "dedicated-h100"):
        assert plan(stack).autostop is None, stack


def test_a_node_pool_stack_says_why_it_runs_no_agent() -> None:
    auto = plan("gke-gpu-attach").autostop
    assert auto is not None and not auto.on
    assert auto.off.startswith("node pools scale to zero when their pods end")


def test_idle_hours_are_capped_at_the_minutes_per_idle_stretch() -> None:
    p = plan("finetune-gcp-g2", accelerator="T4")
    auto = p.autostop
    assert auto is not None
    idle = p.cost.paid_hours - p.cost.productive_hours  # 375 - 300 = 75 h always on
    assert auto.idle_hours_always_on == pytest.approx(idle, abs=0.1)
    assert auto.idle_hours_with_autostop == 30.0  # 30 runs a month x 60 minutes
    saved = p.cost.compute_usd_hour * (idle - 30.0)
    assert auto.usd_month_always_on == p.cost.usd_month
    assert auto.usd_month_with_autostop == pytest.approx(p.cost.usd_month - saved, abs=0.01)
    assert auto.usd_month_with_autostop < auto.usd_month_always_on


def test_a_stack_s_minutes_override_the_profile_s_and_zero_turns_it_off() -> None:
    shorter = plan("exp-aws-l4-spot", autostopMinutes=15).autostop
    assert shorter is not None and shorter.minutes == 15
    assert shorter.idle_hours_with_autostop == 5.0  # 20 sessions x 15 minutes
    assert plan("exp-aws-l4-spot", autostopMinutes=0).autostop is None


def test_what_the_stopped_state_still_bills_is_listed_from_the_cost_lines() -> None:
    gce = plan("finetune-gcp-g2", accelerator="T4").autostop
    assert gce is not None
    assert {b.item for b in gce.bills_while_stopped} == {"boot disk", "data disk"}  # local SSD and IPs stop
    group = plan("exp-aws-l4-spot").autostop
    assert group is not None
    assert {b.item for b in group.bills_while_stopped} == {"CloudWatch alarms"}  # the volumes go with the nodes


def test_a_stack_asking_for_autostop_where_nothing_can_stop_is_refused_naming_the_key() -> None:
    with pytest.raises(FullserverError, match=r"Pulumi.serve-aws-realtime.yaml: fullserver:autostopMinutes: a serving"):
        plan("serve-aws-realtime", autostopMinutes=30)
    with pytest.raises(FullserverError, match="autostopMinutes"):
        plan("gke-gpu-attach", autostopMinutes=30)


def test_reserved_capacity_saves_nothing() -> None:
    auto = plan("train-p5-cluster", autostopMinutes=30).autostop
    assert auto is not None and auto.on
    assert auto.usd_month_with_autostop == auto.usd_month_always_on


def test_neuron_nodes_run_no_agent_that_would_stop_them_mid_job() -> None:
    """The agent sees NVIDIA GPUs and TPU devices at work, not Trainium or Inferentia: their nodes
    would look idle with a job running, so the profile's default is off and a stack's ask refused."""
    for accelerator in ("Trainium", "Inferentia2"):
        auto = plan("exp-aws-spot", accelerator=accelerator).autostop
        assert auto is not None and not auto.on and "not Neuron devices" in auto.off, accelerator
    with pytest.raises(FullserverError, match="autostopMinutes: aws-gpu: the idle agent sees NVIDIA GPUs"):
        plan("exp-aws-spot", accelerator="Inferentia2", autostopMinutes=30)
