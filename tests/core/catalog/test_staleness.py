"""Staleness: each price's age, and a plan's warnings for the prices it used that are too old."""

from __future__ import annotations

import copy
import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from fullserver.catalog import Catalog, catalog_from_data, load_catalog
from fullserver.catalog.model import Platform, Source
from fullserver.catalog.staleness import (
    CONTRACT,
    DEFAULT_MAX_PRICE_AGE_DAYS,
    UsedPrice,
    plan_prices_used,
    plan_staleness_warnings,
    price_age_days,
    price_sources,
    read_warning,
    secondary_warnings,
    source_age_days,
    source_ages,
    stale_prices,
    undated_lines,
)
from fullserver.cost import estimate
from fullserver.errors import InputError
from fullserver.plan import StackPlan
from fullserver.profiles import Profile, load_profiles
from fullserver.sizing import build_spec
from fullserver.workload import Workload

from ..conftest import MINI, PROFILE, SOURCE, write_catalog, write_profiles

TODAY = dt.date(2026, 11, 23)
OLD = SOURCE | {"as_of": "2026-01-01"}  # 326 days before TODAY
FRESH = SOURCE | {"as_of": "2026-11-01", "as_of_kind": "retrieved"}  # 22 days


def catalog_with_fresh_storage(tmp_path: Path) -> Catalog:
    """MINI with its storage prices (and nothing else) from a recent source."""
    data: dict[str, Any] = copy.deepcopy(MINI)
    data["sources"] = {"fx": OLD, "fresh": FRESH}
    for row in data["storage_prices"]:
        row["source"] = "fresh"
    return load_catalog(write_catalog(tmp_path / "catalog", data))


def plan(catalog: Catalog, profile: Profile, **extra: Any) -> StackPlan:
    """A plan of one stack, built the way ``plan_workload`` builds it (spec, then estimate)."""
    work = Workload.model_validate(
        {"profile": "base", "region": "r-1", "accelerator": "G24", "acceleratorCount": 1, "datasetGib": 80} | extra
    )
    spec = build_spec(profile, work, Platform.AWS_GPU, catalog, "dev")
    cost = estimate(spec, profile, work, catalog)
    return StackPlan(stack="dev", path="Pulumi.dev.yaml", spec=spec, cost=cost, comparison=[])


def profile_with(tmp_path: Path, pricing: str, extra: str = "") -> Profile:
    text = PROFILE.replace("pricing: on-demand", f"pricing: {pricing}") + extra
    return load_profiles(write_profiles(tmp_path / "profiles", {"base": text}))["base"]


def test_a_price_is_as_old_as_its_source() -> None:
    source = Source.model_validate(OLD)
    assert price_age_days(source, TODAY) == 326
    assert price_age_days(source, dt.date(2026, 1, 1)) == 0
    assert price_age_days(source, dt.date(2025, 12, 31)) == -1  # a source dated after "today"


def test_combined_sources_are_as_old_as_their_oldest_part(tmp_path: Path) -> None:
    catalog = catalog_with_fresh_storage(tmp_path)
    assert source_age_days(catalog, "fresh", TODAY) == 22
    assert source_age_days(catalog, "fresh+fx", TODAY) == 326
    assert source_age_days(catalog, "fresh+nope", TODAY) is None
    assert source_ages(catalog, TODAY) == {"fx": 326, "fresh": 22}


def test_a_plan_warns_for_each_price_it_used_older_than_the_threshold(tmp_path: Path, base_profile: Profile) -> None:
    catalog = catalog_with_fresh_storage(tmp_path)
    stack = plan(catalog, base_profile, egressGbMonth=100)
    used = plan_prices_used(stack, catalog)
    assert used == [
        UsedPrice("on-demand wide.x in r-1", "fx", refresh="aws"),
        UsedPrice("gp3 storage in r-1", "fresh", refresh="aws"),  # the EC2 offer's gp3 SKUs
        UsedPrice("public-ipv4 in r-1", "aws-public-ipv4"),  # the network file's: no refresh prices it
        UsedPrice("internet egress from r-1", "fx"),  # nor AWS data transfer
    ]
    warnings = plan_staleness_warnings(stack, catalog, TODAY)
    assert warnings == [
        "the public-ipv4 in r-1 price is 1026 days old (source aws-public-ipv4, as of 2024-02-01, published; "
        "threshold 90 days): no refresh provider prices it: update source aws-public-ipv4 from a newer snapshot of "
        + price_sources(catalog)["aws-public-ipv4"].title,
        "the internet egress from r-1 price is 326 days old (source fx, as of 2026-01-01, published; threshold 90 "
        "days): no refresh provider prices it: update source fx from a newer snapshot of test fixture",
        "the on-demand wide.x in r-1 price is 326 days old (source fx, as of 2026-01-01, published; threshold 90 "
        "days): run `fullserver catalog refresh --provider aws`",
    ]
    assert DEFAULT_MAX_PRICE_AGE_DAYS == 90
    assert plan_staleness_warnings(stack, catalog, TODAY, max_age_days=1100) == []  # configurable
    assert [w[:32] for w in plan_staleness_warnings(stack, catalog, dt.date(2026, 2, 1))] == [
        "the public-ipv4 in r-1 price is "  # 731 days old then; the catalog's own figures 31
    ]


def test_spot_and_commitment_prices_are_the_ones_checked_when_used(tmp_path: Path) -> None:
    catalog = load_catalog(write_catalog(tmp_path / "catalog", MINI))
    spot = plan(catalog, profile_with(tmp_path / "s", "spot-with-fallback"))
    assert plan_prices_used(spot, catalog)[0] == UsedPrice("spot mid.x in r-1", "fx", refresh="aws-spot")
    extra = "topology: {nodes: multi, fabric: efa}\ncost: {commitment_years: 1}\n"
    reserved = plan(catalog, profile_with(tmp_path / "r", "reserved", extra), acceleratorCount=4, nodes=2)
    what = [u.what for u in plan_prices_used(reserved, catalog)]
    assert what[:2] == ["on-demand quad.x in r-1", "1-year commitment discount for quad"]


def test_stale_prices_are_listed_oldest_first_once_each(tmp_path: Path) -> None:
    catalog = catalog_with_fresh_storage(tmp_path)
    used = [UsedPrice("a", "fresh"), UsedPrice("b", "fx"), UsedPrice("b", "fx"), UsedPrice("c", "fresh+fx")]
    found = stale_prices(catalog, used, TODAY, max_age_days=10)
    assert [(s.what, s.age_days) for s in found] == [("b", 326), ("c", 326), ("a", 22)]


def test_a_spot_figure_names_its_own_source_and_an_unknown_one_is_refused(tmp_path: Path) -> None:
    data: dict[str, Any] = copy.deepcopy(MINI)
    data["sources"] = {"fx": SOURCE, "spot-src": OLD}
    data["shape_prices"][0]["spot_source"] = "spot-src"
    catalog = catalog_from_data([("f.yaml", data)])
    price = next(o for o in catalog.offers if o.name == "small.x").prices["r-1"]
    assert (price.source, price.spot_source, price.spot_from) == ("fx", "spot-src", "spot-src")
    data["shape_prices"][0]["spot_source"] = "nope"
    with pytest.raises(InputError, match=r"shape_prices\[0\] \(small.x in r-1\): unknown source 'nope'"):
        catalog_from_data([("f.yaml", data)])


# --- Issue 21: a snapshot pinned to a commit is as old as that snapshot, never as old as the day it was read.


@pytest.mark.parametrize("kind", ["published", "generated", "approximate"])
def test_a_commit_pinned_source_dated_by_its_snapshot_loads(tmp_path: Path, kind: str) -> None:
    data: dict[str, Any] = copy.deepcopy(MINI)
    data["sources"] = {"fx": SOURCE | {"url": f"https://github.com/o/r/blob/{'b2' * 20}/vms.csv", "as_of_kind": kind}}
    assert load_catalog(write_catalog(tmp_path / "catalog", data)).sources["fx"].as_of_kind == kind


def test_a_moving_url_may_be_dated_by_the_day_it_was_read(tmp_path: Path) -> None:
    """A branch URL or a web page states no date of its own: the read date is all there is."""
    data: dict[str, Any] = copy.deepcopy(MINI)
    data["sources"] = {"fx": SOURCE | {"url": "https://github.com/o/r/blob/main/vms.csv", "as_of_kind": "retrieved"}}
    assert load_catalog(write_catalog(tmp_path / "catalog", data)).sources["fx"].as_of_kind == "retrieved"


def test_a_commit_pinned_snapshot_read_today_still_warns_with_its_own_age(tmp_path: Path) -> None:
    """The bug of issue 21: January data read in November said "retrieved" in November and never warned."""
    data: dict[str, Any] = copy.deepcopy(MINI)
    pinned = f"https://github.com/o/r/blob/{'c3' * 20}/vms.csv"
    data["sources"] = {"fx": SOURCE | {"url": pinned, "as_of": TODAY.isoformat(), "as_of_kind": "retrieved"}}
    with pytest.raises(InputError, match="not by the day it was read"):
        load_catalog(write_catalog(tmp_path / "refused", data))
    data["sources"] = {"fx": SOURCE | {"url": pinned, "as_of": "2026-01-19", "as_of_kind": "approximate"}}
    catalog = load_catalog(write_catalog(tmp_path / "dated", data))
    used = [UsedPrice("on-demand wide.x in r-9", "fx")]
    (stale,) = stale_prices(catalog, used, TODAY, max_age_days=180)
    assert (stale.as_of, stale.age_days) == (dt.date(2026, 1, 19), 308)


def test_no_shipped_commit_pinned_source_is_dated_by_its_read_day() -> None:
    from fullserver.catalog.model import commit_pin
    from fullserver.catalog.network import load_network_prices

    shipped = load_catalog()
    pinned = {key: src for key, src in shipped.sources.items() if commit_pin(src.url)}
    assert len(pinned) >= 10  # karpenter, skypilot, infracost, Cyclenerd, xpk, cluster-autoscaler, vantage
    assert {key: src.as_of_kind for key, src in pinned.items() if src.as_of_kind == "retrieved"} == {}
    network = load_network_prices()
    assert all(src.as_of_kind != "retrieved" for src in network.sources.values() if commit_pin(src.url))


def test_each_shipped_stale_price_names_the_refresh_that_updates_it_or_the_snapshot() -> None:
    """Issue 21, item 12: "run `fullserver catalog refresh`" under a figure no refresh updates sends the
    reader nowhere. A3 High, TPU v5e, GCP disks and AWS gp3 are priced by a refresh provider; TPU v4,
    A3 Ultra, AWS egress and GCP commitments are not, so their warning names the source to update."""
    from fullserver.catalog.staleness import _commitment_refresh, _offer_refresh, _storage_refresh

    shipped = load_catalog()

    def offer(name: str) -> Any:
        found = shipped.offer(name)
        assert found is not None
        return found

    assert _offer_refresh(offer("g6.4xlarge"), spot=False) == "aws"
    assert _offer_refresh(offer("g6.4xlarge"), spot=True) == "aws-spot"
    assert _offer_refresh(offer("v5litepod-4"), spot=True) == "tpu"
    assert _offer_refresh(offer("v4-8"), spot=False) == ""  # TPU v4: the Cloud TPU service, not mapped
    assert _offer_refresh(offer("a2-highgpu-1g"), spot=True) == "gcp"
    assert _offer_refresh(offer("a3-ultragpu-8g"), spot=False) == ""
    assert (
        _offer_refresh(offer("a3-highgpu-8g"), spot=False)
        == _offer_refresh(offer("a2-ultragpu-1g"), spot=True)
        == "gcp"
    )
    # gp3 is priced by the EC2 offer's gp3 SKUs (refresh.aws); other EBS kinds are not mapped
    assert (_storage_refresh("gcp", "pd-balanced"), _storage_refresh("aws", "gp3")) == ("gcp", "aws")
    assert _storage_refresh("aws", "io2") == ""
    assert (_commitment_refresh("gcp", "gcp-cyclenerd-cud"), _commitment_refresh("aws", "x")) == ("", "aws")
    used = [UsedPrice("internet egress from us-east-1", "aws-infracost-data-transfer-golden")]
    (stale,) = stale_prices(shipped, used, dt.date(2026, 11, 26), max_age_days=90)
    assert stale.warning(90).endswith(
        "no refresh provider prices it: update source aws-infracost-data-transfer-golden from a newer snapshot of "
        + shipped.sources["aws-infracost-data-transfer-golden"].title
    )


# --- Issue 34, item 2: one age rule over every price a plan's cost lines read.

GOLDEN_TODAY = dt.date(2026, 11, 26)  # the day the golden plans are pinned to (tests/project/golden.py)


@pytest.fixture(scope="module")
def example_plans() -> list[StackPlan]:
    from fullserver.plan import plan_paths
    from fullserver.stacks import find_stacks

    return plan_paths(find_stacks(Path(__file__).parents[3] / "stacks", []), catalog=load_catalog())


def test_every_price_line_of_every_example_plan_is_checked_for_age_by_the_one_rule(
    example_plans: list[StackPlan],
) -> None:
    """Whatever a line bills (compute, disks, NAT, addresses, load balancers, fees, system pools,
    alarms), the entry it read is judged; none older than 180 days goes unwarned."""
    catalog = load_catalog()
    sources = price_sources(catalog)
    judged: set[str] = set()
    for stack in example_plans:
        assert undated_lines(stack.cost.lines) == [], stack.stack
        warnings = plan_staleness_warnings(stack, catalog, GOLDEN_TODAY, max_age_days=180)
        for used in plan_prices_used(stack, catalog):
            if used.source == CONTRACT:
                continue
            ages = [price_age_days(sources[k], GOLDEN_TODAY) for k in used.source.split("+")]
            judged.add(used.what.split(" in ")[0])
            if max(ages) > 180:
                assert any(f"the {used.what} price is {max(ages)} days old" in w for w in warnings), used
    # the surfaces the old per-surface list never reached are judged now
    assert {"public-ipv4", "nat-gateway", "cloud-nat-vm", "forwarding-rule", "cloudwatch-alarm"} <= judged
    assert {"aws cluster fee", "gcp cluster fee", "on-demand m6i.large", "on-demand e2-standard-4"} <= judged


def test_the_public_ipv4_price_and_the_eks_fee_warn_with_what_updates_them(example_plans: list[StackPlan]) -> None:
    catalog = load_catalog()
    eks = next(p for p in example_plans if p.stack == "eks-gpu-cluster")
    warnings = plan_staleness_warnings(eks, catalog, GOLDEN_TODAY)
    ipv4 = next(w for w in warnings if "(source aws-public-ipv4," in w)
    assert ipv4.startswith("the public-ipv4 in us-east-1 price is 1029 days old")
    assert ipv4.endswith(
        "update source aws-public-ipv4 from a newer snapshot of " + price_sources(catalog)["aws-public-ipv4"].title
    )
    fee = next(w for w in warnings if "(source eks-extended-support-pricing," in w)
    assert fee.startswith("the aws cluster fee price is 969 days old")
    assert read_warning(fee) is not None  # diff's report reads it back like every stale price


def test_a_priced_line_added_without_a_dated_entry_fails_the_rule(
    example_plans: list[StackPlan], tmp_path: Path
) -> None:
    """A new priced item must come with an entry (so a source, so a date): a line that read none, an
    entry naming no known source, and a source without a date are each caught."""
    from fullserver.catalog.network import NetworkFile
    from fullserver.cost import CostLine

    catalog = load_catalog()
    stack = example_plans[0]
    lines = [*stack.cost.lines, CostLine("VPN gateway", 36.5, "1 x 0.05/h")]
    with_new = stack.model_copy(update={"cost": stack.cost.model_copy(update={"lines": lines})})
    assert undated_lines(with_new.cost.lines) == ["VPN gateway"]
    assert "the VPN gateway cost line records no price it read: its age cannot be checked" in plan_staleness_warnings(
        with_new, catalog, GOLDEN_TODAY
    )
    read = (UsedPrice("vpn-gateway in us-east-1", "aws-vpn-pricing"),)
    lines = [*stack.cost.lines, CostLine("VPN gateway", 36.5, "1 x 0.05/h", prices=read)]
    named = stack.model_copy(update={"cost": stack.cost.model_copy(update={"lines": lines})})
    assert "price source 'aws-vpn-pricing' is in no data file: date it under `sources` so its age is checked" in (
        plan_staleness_warnings(named, catalog, GOLDEN_TODAY)
    )
    undated = {"title": "VPN pricing", "url": "https://aws.amazon.com/vpn/pricing/"}  # no as_of
    row = {"provider": "aws", "item": "nat-gateway", "region": "us-east-1", "usd_hour": 0.05, "source": "vpn"}
    with pytest.raises(ValueError, match="as_of"):
        NetworkFile.model_validate({"sources": {"vpn": undated}, "prices": [row]})


def test_a_secondary_source_is_said_by_every_plan_resting_on_it() -> None:
    sources = {
        "blog": Source.model_validate(FRESH | {"secondary": "a blog's figure: confirm on https://example.invalid/p"}),
        "page": Source.model_validate(FRESH),
    }
    used = [UsedPrice("nlb in r-1", "blog"), UsedPrice("alb in r-1", "page"), UsedPrice("nlb-lcu in r-1", "blog+page")]
    assert secondary_warnings(sources, used) == [
        "the nlb in r-1, nlb-lcu in r-1 price rests on a secondary source (blog: a blog's figure: confirm on "
        "https://example.invalid/p)"
    ]


def test_secondary_sources_shipped_are_said_in_the_plans_that_use_them(example_plans: list[StackPlan]) -> None:
    catalog = load_catalog()
    said = {
        key
        for stack in example_plans
        for w in plan_staleness_warnings(stack, catalog, GOLDEN_TODAY)
        for key in ("aws-cloudwatch-alarms", "gcp-external-ips", "tpu-pricing-cud")
        if f"secondary source ({key}:" in w
    }
    assert said == {"aws-cloudwatch-alarms", "gcp-external-ips", "tpu-pricing-cud"}


def test_one_source_key_names_one_source_across_the_price_files() -> None:
    from fullserver.catalog.network import load_network_prices
    from fullserver.kube.fees import load_cluster_fees

    files = [set(load_catalog().sources), set(load_network_prices().sources), set(load_cluster_fees().sources)]
    assert all(not (a & b) for i, a in enumerate(files) for b in files[i + 1 :])
