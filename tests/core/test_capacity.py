"""The balanced set (``fullserver.capacity``): which shapes and zones join the chosen one, what the
plan says the cloud tries on a stockout and what each step costs, the peak at the set's dearest
member, and the quotas of every shape the set may launch."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from fullserver.capacity import CapacitySet, balanced_set, capacity_rows, headline, launch_compatible
from fullserver.catalog import load_catalog
from fullserver.platform import Platform
from fullserver.platforms.quota import QuotaNeed
from fullserver.profiles import get_profile, load_profiles
from fullserver.quotas import set_quotas
from fullserver.sizing import rank
from fullserver.stacks import workload_from_config
from tests.core.test_stack_config import plan_offline, stack_config, write_stack


def _ranked(stack: str, platform: Platform, **changes: object):  # type: ignore[no-untyped-def]
    workload = workload_from_config(stack_config(stack, **changes), "stack")
    profile = get_profile(workload.profile, load_profiles())
    feasible, _ = rank(profile, workload, platform, load_catalog())
    return workload, [(c.offer, c.usd_hour) for c in feasible]


def test_the_set_is_every_compatible_shape_within_the_band_over_the_chosen_rate() -> None:
    workload, feasible = _ranked("finetune-gcp-g2", Platform.GCP_GPU, zone=None)
    held = balanced_set(feasible[0], feasible, workload.region, None, 0.15, 0)
    assert held.machine_types == ["g2-standard-12", "g2-standard-16"]  # $0.56 and $0.64: 14.7 % over
    assert all(m.usd_hour <= held.members[0].usd_hour * 1.15 for m in held.members)
    assert held.zones == ["us-central1-a", "us-central1-b", "us-central1-c"]
    assert balanced_set(feasible[0], feasible, workload.region, None, 0.0, 0).machine_types == ["g2-standard-12"]
    wide = balanced_set(feasible[0], feasible, workload.region, None, 1.0, 0)
    assert len(wide.members) > 2 and {o.host.accelerator_count for o, _ in feasible} == {1}
    pinned = balanced_set(feasible[0], feasible, workload.region, "us-central1-b", 0.15, 0)
    assert pinned.zones == ["us-central1-b"]


def test_only_shapes_one_launch_template_runs_may_join() -> None:
    catalog = load_catalog()
    g2_12, g2_16, a2 = (catalog.offer(n) for n in ("g2-standard-12", "g2-standard-16", "a2-highgpu-1g"))
    assert g2_12 and g2_16 and a2
    assert launch_compatible(g2_12, g2_16, 0)
    assert not launch_compatible(g2_12, a2, 0)  # another GPU
    attached = next(o for o in catalog.offers_on(Platform.GCP_GPU) if o.name != o.machine_type)
    other = next(
        o
        for o in catalog.offers_on(Platform.GCP_GPU)
        if o.accelerator == attached.accelerator
        and o.host.accelerator_count == attached.host.accelerator_count
        and o.name != attached.name
    )
    assert not launch_compatible(attached, other, 0)  # GPUs attached to N1 ride the template
    p5 = catalog.offer("p5.48xlarge")
    assert p5 is not None
    fewer_cards = replace(p5, name="p5-fewer", machine_type="p5-fewer", efa_interfaces=4)
    assert launch_compatible(p5, p5, 32) and not launch_compatible(p5, fewer_cards, 32)  # one EFA per card


def test_the_plan_says_what_aws_tries_on_a_stockout_and_what_it_costs(tmp_path: Path) -> None:
    plan = plan_offline(write_stack(tmp_path, "l4", stack_config("exp-aws-l4-spot")))
    held = plan.spec.capacity
    assert held is not None and held.used and held.machine_types == ["g6.2xlarge", "g6.4xlarge"]
    assert headline(held, spot=True) == "spot over 2 shape(s) x every zone offering them, then on-demand"
    rows = capacity_rows(held)
    assert [r[0] for r in rows] == ["1", "2", "expected", "at most"]
    assert rows[0][1].startswith("spot: any of g6.2xlarge, g6.4xlarge") and rows[0][2] == "$0.42-0.55"
    assert "prioritized" in rows[1][1] and rows[1][2] == "$0.98-1.32"
    assert rows[2][2] == "$0.53"
    # the peak: both groups full on the dearest member, g6.4xlarge spot $0.55 + on demand $1.32
    assert rows[3][2] == "$1.88" and held.peak_usd_hour is not None
    assert plan.cost.usd_month_peak is not None and "g6.4xlarge, the set's dearest" in plan.cost.peak_what


def test_on_demand_nodes_say_nothing_else_is_tried(tmp_path: Path) -> None:
    plan = plan_offline(write_stack(tmp_path, "p5", stack_config("train-p5-cluster")))
    held = plan.spec.capacity
    assert held is not None and not held.used and held.machine_types == ["p5.48xlarge"]
    assert len(held.steps) == 1 and "nothing else is tried" in held.steps[0].what
    assert held.peak_usd_hour is None


def test_gcp_spot_is_a_regional_group_over_the_set_without_an_on_demand_step(tmp_path: Path) -> None:
    plan = plan_offline(write_stack(tmp_path, "g2", stack_config("finetune-gcp-g2", zone=None)))
    held = plan.spec.capacity
    assert isinstance(held, CapacitySet) and held.used
    assert held.zones == ["us-central1-a", "us-central1-b", "us-central1-c"]
    assert "instance flexibility" in held.steps[0].what and "BALANCED" in held.steps[0].what
    assert held.steps[1].usd_hour_low is None and "no on-demand fallback" in held.steps[1].what
    assert headline(held, spot=True) == "spot over 2 shape(s) x 3 zones"
    assert held.peak_usd_hour == held.dearest.spot_usd_hour


def test_gcp_on_demand_is_a_regional_group_over_the_set_that_keeps_each_data_disk(tmp_path: Path) -> None:
    """8 x H100 of scale-training on demand (no reservation): Compute Engine picks the first type
    with capacity, cheapest ranked first, in any zone listing one; nothing else is tried after."""
    config = stack_config(
        "finetune-gcp-g2", zone=None, profile="scale-training", accelerator="H100-80GB", acceleratorCount=8
    )
    plan = plan_offline(write_stack(tmp_path, "h100", config))
    held = plan.spec.capacity
    assert isinstance(held, CapacitySet) and held.used
    assert held.machine_types == ["a3-highgpu-8g", "a3-megagpu-8g"]
    assert headline(held, spot=False) == "on-demand over 2 shape(s) x 3 zones"
    rows = capacity_rows(held)
    assert [r[0] for r in rows] == ["1", "2", "expected", "at most"]
    assert rows[0][1].startswith(
        "on-demand: a regional group over a3-highgpu-8g, a3-megagpu-8g (instance flexibility, cheapest ranked "
        "first) in us-central1-a, us-central1-b, us-central1-c (BALANCED): a VM the group recreates"
    )
    assert "keeps its name, zone and /data disk, not its boot disk, /scratch or addresses" in rows[0][1]
    # the committed rates sizing ranked the two at, cheapest first, as the cost lines bill them
    low, high = held.members[0].usd_hour, held.members[1].usd_hour
    assert low < high and rows[0][2] == f"${low:,.2f}-{high:,.2f}" and rows[2][2] == f"${low:,.2f}"
    assert rows[1][2] == "" and "keeps retrying" in rows[1][1] and "nothing else is tried" in rows[1][1]
    assert held.peak_usd_hour == held.dearest.on_demand_usd_hour == held.members[1].on_demand_usd_hour
    assert rows[3][2] == f"${held.peak_usd_hour:,.2f}"


def test_a_set_asks_each_quota_at_the_most_any_member_needs_not_the_sum() -> None:
    def need(code: str, amount: float, why: str) -> QuotaNeed:
        return QuotaNeed("aws", "ec2", code, code, "us-east-1", amount, "vCPUs", why, "src")

    merged = set_quotas([[need("G", 8, "g6.2xlarge")], [need("G", 16, "g6.4xlarge"), need("P", 192, "p5")]])
    assert [(n.code, n.amount) for n in merged] == [("G", 16), ("P", 192)]
    assert merged[0].why == "g6.2xlarge, or g6.4xlarge"


def test_the_quotas_of_a_spot_set_cover_its_widest_member(tmp_path: Path) -> None:
    plan = plan_offline(write_stack(tmp_path, "l4", stack_config("exp-aws-l4-spot")))
    vcpus = {n.code: n.amount for n in plan.quotas if n.unit.startswith("vCPU")}
    assert vcpus and set(vcpus.values()) == {16}  # g6.4xlarge's 16, not g6.2xlarge's 8
