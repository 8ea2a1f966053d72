"""Cost: compute by pricing model, storage, transfer, idle capacity and commitments, to the cent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fullserver.catalog import Catalog, load_catalog
from fullserver.catalog.model import Platform
from fullserver.cost import HOURS_PER_MONTH, estimate, estimate_at_minimum, pricing_basis
from fullserver.hourly import hourly_rate
from fullserver.profiles import Profile, load_profiles
from fullserver.sizing import build_spec, dedicated_spec
from fullserver.workload import Workload

from .conftest import PROFILE, write_profiles


def wl(**kw: Any) -> Workload:
    return Workload.model_validate(
        {"profile": "base", "region": "r-1", "accelerator": "G24", "acceleratorCount": 1} | kw
    )


def profile_with(tmp_path: Path, extra: str, pricing: str = "on-demand") -> Profile:
    text = PROFILE.replace("pricing: on-demand", f"pricing: {pricing}")
    return load_profiles(write_profiles(tmp_path, {"base": text + extra}))["base"]


def lines(cost: Any) -> dict[str, float]:
    return {line.item: line.usd_month for line in cost.lines}


def test_on_demand_persistent_pays_every_hour_plus_disks_and_egress(
    mini_catalog: Catalog, base_profile: Profile
) -> None:
    work = wl(datasetGib=80, egressGbMonth=100)
    spec = build_spec(base_profile, work, Platform.AWS_GPU, mini_catalog, "env")
    cost = estimate(spec, base_profile, work, mini_catalog)
    assert spec.offer == "wide.x"
    assert lines(cost) == {
        "compute": round(2.0 * HOURS_PER_MONTH, 2),  # 1460.00
        "boot disk": 200 * 0.08,  # 200 GiB gp3, persistent: billed all month
        "data disk": 100 * 0.08,  # 80 GiB dataset x 1.25 headroom
        "data transfer": 100 * 0.09,
        # private nodes egress through a NAT gateway whose Elastic IP is billed in every region
        # (the gateway itself has no price for the made-up r-1: fullserver.billables warns)
        "public IPv4 addresses": round(0.005 * HOURS_PER_MONTH, 2),
    }
    assert cost.usd_month == pytest.approx(1460 + 16 + 8 + 9 + 3.65)
    assert cost.usd_hour == pytest.approx(cost.usd_month / HOURS_PER_MONTH, abs=1e-4)


def test_idle_share_adds_paid_but_unused_hours(tmp_path: Path, mini_catalog: Catalog) -> None:
    profile = profile_with(tmp_path, "cost: {hours_per_month: 100, idle_share: 0.5}\n")
    spec = build_spec(profile, wl(), Platform.AWS_GPU, mini_catalog, "env")
    cost = estimate(spec, profile, wl(), mini_catalog)
    assert (cost.productive_hours, cost.paid_hours) == (100, 200)
    assert lines(cost)["compute"] == 200.0
    assert lines(cost)["idle capacity"] == 200.0
    assert cost.usd_per_productive_hour == pytest.approx(cost.usd_month / 100)


def test_ephemeral_disks_are_billed_only_while_the_machine_lives(tmp_path: Path, mini_catalog: Catalog) -> None:
    profile = profile_with(tmp_path, "cost: {hours_per_month: 73}\n")
    profile = profile.model_copy(
        update={"lifecycle": profile.lifecycle.model_copy(update={"mode": "ephemeral", "ttl_hours": 8})}
    )
    spec = build_spec(profile, wl(), Platform.AWS_GPU, mini_catalog, "env")
    cost = estimate(spec, profile, wl(), mini_catalog)
    assert lines(cost)["boot disk"] == pytest.approx(200 * 0.08 * 73 / HOURS_PER_MONTH, abs=0.01)


def test_provisioned_iops_and_throughput_above_the_free_baseline_are_priced(
    tmp_path: Path, mini_catalog: Catalog
) -> None:
    extra = "storage:\n  throughput_mbps_per_accelerator: {value: 325, reason: checkpoint writes}\n  iops_per_accelerator: {value: 5000, reason: many small shards}\n"
    profile = profile_with(tmp_path, extra)
    spec = build_spec(profile, wl(datasetGib=100), Platform.AWS_GPU, mini_catalog, "env")
    cost = estimate(spec, profile, wl(datasetGib=100), mini_catalog)
    # 125 GiB x 0.08 + (5000-3000) IOPS x 0.005 + (325-125) MB/s x 0.04
    assert lines(cost)["data disk"] == pytest.approx(10 + 10 + 8)


def test_spot_with_fallback_is_priced_at_the_expected_mix_with_the_fallback_named(
    tmp_path: Path, mini_catalog: Catalog
) -> None:
    # Issue 13: spot with fallback costs the profile's spot share at spot and the rest on-demand
    # (it used to cost the bare spot price, 0.80, as if capacity never ran out).
    profile = profile_with(tmp_path, "cost: {spot_share: 0.75}\n", pricing="spot-with-fallback")
    spec = build_spec(profile, wl(), Platform.AWS_GPU, mini_catalog, "env")
    cost = estimate(spec, profile, wl(), mini_catalog)
    assert spec.spot and cost.compute_usd_hour == pytest.approx(0.75 * 0.8 + 0.25 * 2.0)
    assert "75% of hours spot 0.80/h, 25% on-demand fallback 2.00/h" in cost.lines[0].note


def test_a_rate_is_worked_out_once_per_question_and_each_pricing_term_is_its_own_question(
    tmp_path: Path, mini_catalog: Catalog
) -> None:
    """``hourly_rate`` keeps its answers in the catalog's memo: the same question gets the same
    answer without working it out again; a profile differing in pricing, spot share or commitment
    term, or another region, is another question."""
    offer = next(o for o in mini_catalog.offers if o.platform is Platform.AWS_GPU and "r-1" in o.prices)
    spot = profile_with(tmp_path / "a", "cost: {spot_share: 0.75}\n", pricing="spot-with-fallback")
    first = hourly_rate(offer, "r-1", spot, mini_catalog)
    assert hourly_rate(offer, "r-1", spot, mini_catalog) is first
    half = profile_with(tmp_path / "b", "cost: {spot_share: 0.5}\n", pricing="spot-with-fallback")
    on_demand = profile_with(tmp_path / "c", "")
    assert hourly_rate(offer, "r-1", half, mini_catalog).usd != first.usd
    assert hourly_rate(offer, "r-1", on_demand, mini_catalog).basis == "on-demand" != first.basis


def test_aws_spot_with_fallback_holds_budgets_to_both_groups_running_at_once(
    tmp_path: Path, mini_catalog: Catalog
) -> None:
    """The fallback group fills the whole node count while spot nodes may still run, and keeps its
    nodes (scale-in protection) until their jobs end: the most a month costs is both at once."""
    profile = profile_with(tmp_path, "cost: {spot_share: 0.75}\n", pricing="spot-with-fallback")
    spec = build_spec(profile, wl(), Platform.AWS_GPU, mini_catalog, "env")
    cost = estimate(spec, profile, wl(), mini_catalog)
    both = (0.8 + 2.0) * cost.paid_hours
    expected = cost.compute_usd_hour * cost.paid_hours
    assert cost.usd_month_peak == pytest.approx(cost.usd_month + both - expected, abs=0.02)
    assert cost.usd_month_peak is not None and cost.usd_month_at_most == cost.usd_month_peak > cost.usd_month
    assert cost.peak_what == "with the on-demand fallback running beside every spot node"


def test_spot_where_no_fallback_is_built_is_priced_at_spot_only() -> None:
    """Compute Engine and Cloud TPU build no on-demand fallback: no on-demand hour is billed, and
    the plan says the work waits while spot is out (it used to add a 20% on-demand share)."""
    from fullserver.plan import plan_paths
    from fullserver.stacks import find_stacks

    stacks = Path(__file__).parents[2] / "stacks"
    for plan in plan_paths(find_stacks(stacks, ["finetune-gcp-g2", "batch-tpu-v5e"])):
        catalog = load_catalog()
        offer = catalog.offer(plan.spec.offer)
        assert offer is not None and plan.spec.spot, plan.stack
        spot = offer.prices[plan.spec.region].spot
        assert spot is not None
        assert plan.cost.lines[0].note.startswith(f"spot {spot:.2f}/h (no on-demand fallback is built)"), plan.stack
        # no on-demand hour at the peak either: every node spot, on the balanced set's dearest member
        held = plan.spec.capacity
        if held is not None and len(held.members) > 1:
            assert plan.cost.peak_what.startswith("with every node spot on"), plan.stack
        else:
            assert plan.cost.usd_month_peak is None, plan.stack
        assert any("no on-demand fallback for spot" in w for w in plan.spec.warnings), plan.stack


def test_reserved_capacity_applies_the_published_commitment_discount(tmp_path: Path, mini_catalog: Catalog) -> None:
    extra = "topology: {nodes: multi, fabric: efa}\ncost: {commitment_years: 1}\n"
    profile = profile_with(tmp_path, extra, pricing="reserved")
    work = wl(acceleratorCount=4, nodes=2)
    spec = build_spec(profile, work, Platform.AWS_GPU, mini_catalog, "env")
    cost = estimate(spec, profile, work, mini_catalog)
    assert cost.compute_usd_hour == pytest.approx(2 * 10.0 * 0.6)
    assert lines(cost)["compute"] == pytest.approx(12.0 * HOURS_PER_MONTH)
    # the made-up region r-1 has no network prices (NAT): tests/core/test_billables.py prices those
    assert [w for w in cost.warnings if "network catalog" not in w] == []


def test_reserved_without_a_published_discount_warns_and_prices_on_demand(
    tmp_path: Path, mini_catalog: Catalog
) -> None:
    profile = profile_with(tmp_path, "", pricing="reserved")
    spec = build_spec(profile, wl(), Platform.AWS_GPU, mini_catalog, "env")
    cost = estimate(spec, profile, wl(), mini_catalog)
    assert cost.compute_usd_hour == 2.0
    assert "no published 1-year commitment discount for wide" in cost.warnings[0]


@pytest.mark.parametrize(
    ("pricing", "extra", "nodes", "basis"),
    [
        ("spot-with-fallback", "", 1, "spot"),
        ("reserved", "topology: {nodes: multi, fabric: efa}\ncost: {commitment_years: 1}\n", 2, "reserved 1-year"),
        ("reserved", "", 1, "on-demand"),  # no published discount: priced, and labelled, on demand
        ("on-demand", "", 1, "on-demand"),
    ],
)
def test_the_estimate_names_the_pricing_model_its_rate_is_on(
    tmp_path: Path, mini_catalog: Catalog, pricing: str, extra: str, nodes: int, basis: str
) -> None:
    """Comparisons read the label off the estimate (``CostEstimate.basis``), never re-derive it;
    it stays out of the plan document, which is unchanged by it."""
    profile = profile_with(tmp_path, extra, pricing=pricing)
    work = wl(acceleratorCount=4 if nodes > 1 else 1, nodes=nodes)
    spec = build_spec(profile, work, Platform.AWS_GPU, mini_catalog, "env")
    cost = estimate(spec, profile, work, mini_catalog)
    assert cost.basis == basis and "basis" not in cost.model_dump()
    assert pricing_basis(spec, profile, mini_catalog) == basis  # known before the estimate is made


def test_a_tpu_slice_costs_chips_times_chip_price_and_misses_no_price_silently(
    mini_catalog: Catalog, base_profile: Profile
) -> None:
    work = wl(accelerator="tx-16", egressGbMonth=10)
    spec = build_spec(base_profile, work, Platform.TPU_VM, mini_catalog, "env")
    cost = estimate(spec, base_profile, work, mini_catalog)
    assert cost.compute_usd_hour == 24.0
    assert "no egress price for r-1" in " ".join(cost.warnings)


def test_dedicated_servers_cost_their_monthly_price_setup_and_extra_egress() -> None:
    profiles = load_profiles()
    from fullserver.catalog import load_catalog

    work = Workload.model_validate(
        {
            "profile": "dedicated-steady",
            "platform": "bare-metal",
            "region": "eu",
            "egressGbMonth": 3000,
            "dedicated": {
                "monthlyUsd": 9000,
                "setupUsd": 1200,
                "includedEgressGbMonth": 1000,
                "egressUsdPerGb": 0.01,
                "host": {
                    "accelerator": "H100",
                    "acceleratorCount": 4,
                    "vcpus": 128,
                    "memoryGib": 1024,
                    "localNvmeGib": 8000,
                    "networkGbps": 100,
                },
            },
        }
    )
    spec = dedicated_spec(profiles["dedicated-steady"], work, load_catalog(), "env", Platform.BARE_METAL)
    cost = estimate(spec, profiles["dedicated-steady"], work, load_catalog())
    assert lines(cost) == {"dedicated servers": 9000.0, "data transfer": 20.0, "setup fee (over 12 months)": 100.0}
    assert cost.basis == "dedicated monthly" == pricing_basis(spec, profiles["dedicated-steady"], load_catalog())
    assert spec.balance.ok


def test_the_same_job_elsewhere_holds_as_many_accelerators() -> None:
    from fullserver.catalog import load_catalog
    from fullserver.plan import plan_paths

    [plan] = plan_paths(
        [Path(__file__).parents[2] / "stacks" / "Pulumi.train-p5-cluster.yaml"], load_profiles(), load_catalog()
    )
    assert plan.spec.accelerator_count * plan.spec.nodes == 16
    by_platform = {c.platform: c for c in plan.comparison}
    # Two 8-GPU dedicated servers for the 16 GPUs of two p5 nodes, not one.
    assert by_platform[Platform.BARE_METAL].usd_month == 2 * 14500
    assert by_platform[Platform.GCP_GPU].capacity == "16 x H100-80GB, 1280 GiB"
    assert "2 node(s)" in by_platform[Platform.GCP_GPU].note


# --- Issue 13: a discount only where its source names the shape; nothing unpriced counts as $0.


def shipped_plan(**kw: Any) -> tuple[Any, Any]:
    from fullserver.catalog import load_catalog
    from fullserver.sizing import size

    profile = load_profiles()[kw["profile"]]
    work = Workload.model_validate(kw)
    spec = size(profile, work, load_catalog(), "env")
    return spec, estimate(spec, profile, work, load_catalog())


def test_8_h100_on_gcp_takes_a3_highgpu_8g_with_its_own_commitment_discount() -> None:
    spec, cost = shipped_plan(
        profile="scale-training",
        platform="gcp-gpu",
        region="us-central1",
        accelerator="H100",
        acceleratorCount=8,
        nodes=2,
    )
    # a3-highgpu-8g is now priced in us-central1 (87.83/h, below a3-megagpu-8g's 92.21/h).
    assert spec.offer == "a3-highgpu-8g"
    assert cost.compute_usd_hour == pytest.approx(2 * 87.83247 * (1 - 0.3063), abs=1e-3)
    assert "1-year commitment: 31% off 87.83/h x 2" in cost.lines[0].note


def test_a3_ultragpu_gets_no_a3_high_discount() -> None:
    spec, cost = shipped_plan(
        profile="scale-training",
        platform="gcp-gpu",
        region="us-central1",
        accelerator="H200",
        acceleratorCount=8,
        nodes=2,
    )
    assert spec.offer == "a3-ultragpu-8g"
    assert cost.compute_usd_hour == pytest.approx(2 * 86.75992)  # on-demand: no discount is published for it
    assert any("no published 1-year commitment discount for a3-ultragpu-8g" in w for w in cost.warnings)


def test_an_unpriced_disk_is_named_and_never_counted_as_zero() -> None:
    _, cost = shipped_plan(
        profile="scale-training",
        platform="gcp-gpu",
        region="us-central1",
        accelerator="H100",
        acceleratorCount=8,
        nodes=2,
    )
    # A3 boots from Hyperdisk Balanced, for which no sourced price exists.
    assert cost.unpriced == ["boot disk (600 GiB hyperdisk-balanced)"] and not cost.complete
    assert "boot disk" not in {line.item for line in cost.lines}
    assert any("the total leaves it out and is a lower bound" in w for w in cost.warnings)


def test_a_fully_priced_estimate_is_complete(mini_catalog: Catalog, base_profile: Profile) -> None:
    spec = build_spec(base_profile, wl(), Platform.AWS_GPU, mini_catalog, "env")
    cost = estimate(spec, base_profile, wl(), mini_catalog)
    assert cost.complete and cost.unpriced == []


def test_a_serving_group_is_priced_at_its_minimum_and_its_maximum_and_budgets_hold_to_the_maximum() -> None:
    """serve-aws-realtime planned at $2,216 (2 replicas) and passed a $5,000 budget while 8
    replicas cost about four times that: budgets now hold to the most the stack can spend."""
    from fullserver.plan import budgets_exceeded, plan_paths
    from fullserver.stacks import find_stacks

    [plan] = plan_paths(find_stacks(Path(__file__).parents[2] / "stacks", ["serve-aws-realtime"]))
    serving = plan.spec.serving
    assert serving is not None and (serving.min_replicas, serving.max_replicas) == (2, 8)
    cost = plan.cost
    assert cost.peak_replicas == 8 and cost.usd_month_peak is not None
    # compute and per-machine lines scale with replicas; the load balancer and NAT do not
    per_replica = cost.lines[0].usd_month / 2
    assert cost.usd_month + 6 * per_replica <= cost.usd_month_peak < 4 * cost.usd_month
    assert cost.usd_month_at_most == cost.usd_month_peak
    between = plan.model_copy(update={"budget_monthly_usd": (cost.usd_month + cost.usd_month_peak) / 2})
    assert [name for name, _ in budgets_exceeded(between, None)] == ["fullserver:budgetMonthlyUsd"]
    assert budgets_exceeded(plan, cost.usd_month_peak) == []  # the shipped stack's budget covers its peak


def test_a_serving_group_at_its_minimum_is_the_estimate_without_the_month_at_its_maximum() -> None:
    """What a comparison row is priced with: the same lines and month, no serving peak."""
    from fullserver.plan import plan_paths
    from fullserver.stacks import find_stacks, load_stack

    [path] = find_stacks(Path(__file__).parents[2] / "stacks", ["serve-aws-realtime"])
    [plan] = plan_paths([path])
    profile, work = load_profiles()[plan.spec.profile], load_stack(path).workload
    full = estimate(plan.spec, profile, work, load_catalog())
    at_minimum = estimate_at_minimum(plan.spec, profile, work, load_catalog())
    assert full.usd_month_peak is not None and full.peak_replicas == 8
    assert at_minimum.usd_month_peak is None and at_minimum.peak_replicas is None
    assert at_minimum.lines == full.lines and at_minimum.usd_month == full.usd_month
    assert at_minimum.basis == full.basis and at_minimum.usd_per_productive_hour == full.usd_per_productive_hour


def test_the_peak_month_bills_the_network_of_every_replica_at_the_maximum() -> None:
    """Cloud NAT is billed per VM using it: at the maximum, every replica's VM is on the NAT, not
    only the minimum's the spec's billables were decided for (the peak undercounted it)."""
    from fullserver.billables import decide
    from fullserver.plan import plan_paths
    from fullserver.stacks import find_stacks, load_stack

    [path] = find_stacks(Path(__file__).parents[2] / "stacks", ["serve-gcp-realtime"])
    [plan] = plan_paths([path])
    spec, work = plan.spec, load_stack(path).workload
    serving = spec.serving
    assert serving is not None and serving.max_replicas > serving.min_replicas and spec.billables is not None
    profile, catalog = load_profiles()[spec.profile], load_catalog()
    most = spec.model_copy(update={"serving": serving.model_copy(update={"min_replicas": serving.max_replicas})})
    assert decide(most).machines == spec.nodes * serving.max_replicas > spec.billables.machines
    peak = estimate_at_minimum(most.model_copy(update={"billables": decide(most)}), profile, work, catalog)
    assert plan.cost.usd_month_peak == peak.usd_month
    nat = {line.item: line.note for line in peak.lines}["Cloud NAT"]
    assert nat.startswith(f"{serving.max_replicas * spec.nodes} VM(s)")


def test_an_environment_that_does_not_scale_has_no_peak(mini_catalog: Catalog, base_profile: Profile) -> None:
    spec = build_spec(base_profile, wl(), Platform.AWS_GPU, mini_catalog, "env")
    cost = estimate(spec, base_profile, wl(), mini_catalog)
    assert cost.usd_month_peak is None and cost.usd_month_at_most == cost.usd_month


# --- Issue 34, item 5: reserved TPU v5e and v5p slices are priced at their published commitment.


@pytest.mark.parametrize(
    ("slice_", "region", "years", "chip_hour"),
    [
        ("v5litepod-16", "us-central1", 1, 0.84),  # $1.20 on demand
        ("v5litepod-16", "us-central1", 3, 0.54),
        ("v5p-128", "us-east5", 1, 2.94),  # $4.20 on demand
        ("v5p-128", "us-east5", 3, 1.89),
    ],
)
def test_a_reserved_tpu_slice_is_priced_at_the_commitment(
    slice_: str, region: str, years: int, chip_hour: float
) -> None:
    catalog = load_catalog()
    offer = catalog.offer(slice_)
    assert offer is not None
    base = load_profiles()["scale-training"]
    profile = base.model_copy(update={"cost": base.cost.model_copy(update={"commitment_years": years})})
    rate = hourly_rate(offer, region, profile, catalog)
    chips = offer.prices[region].on_demand / (1.20 if slice_.startswith("v5lite") else 4.20)
    assert rate.usd == pytest.approx(chips * chip_hour, rel=0.01)
    assert (rate.basis, rate.warning) == (f"reserved {years}-year", "")
    assert [u.source for u in rate.prices] == ["tpu-skypilot-prices", "tpu-pricing-cud"]
