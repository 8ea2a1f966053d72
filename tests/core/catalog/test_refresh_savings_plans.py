"""`catalog refresh --provider aws-savings-plans`: the public Savings Plans files, replayed, against a
small aws.yaml: one No Upfront Compute Savings Plan discount per priced shape and term, for that shape."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from fullserver.catalog import load_catalog
from fullserver.catalog.model import Platform
from fullserver.catalog.refresh import RefreshReport, refresh
from fullserver.catalog.refresh.http import FetchError
from fullserver.catalog.refresh.savings_plans import read_region_plans
from fullserver.cost import estimate
from fullserver.hourly import hourly_rate
from fullserver.profiles import load_profiles
from fullserver.sizing import build_spec
from fullserver.workload import Workload

from ..conftest import PROFILE, write_profiles
from .conftest import AWS_URLS, DATA, SAVINGS, SP_URLS, TODAY, RecordedOpener, data_dir, real_data_dir

SP_FILE = DATA / "aws" / "savings-plans-us-east-1.json"
SP_FILE_URL = f"{SAVINGS}/20261121091502/us-east-1/index.json"


def run(
    tmp_path: Path, providers: tuple[str, ...] = ("aws-savings-plans",), write: bool = False, sp: Path = SP_FILE
) -> tuple[Path, RecordedOpener, list[RefreshReport]]:
    """Refresh tmp_path's copy of the test aws.yaml (made on the first call), ``sp`` served as us-east-1's file."""
    directory = tmp_path / "data" if (tmp_path / "data").exists() else data_dir(tmp_path, "aws.yaml")
    opener = RecordedOpener(AWS_URLS | SP_URLS | {SP_FILE_URL: sp})
    reports = refresh(list(providers), today=TODAY, data_dir=directory, opener=opener, write=write)
    return directory, opener, reports


def discounts(directory: Path) -> dict[tuple[str, int], tuple[float, list[str], str]]:
    load_catalog.cache_clear()
    catalog = load_catalog(directory)
    return {(c.applies_to, c.term_years): (c.discount, c.shapes, c.source) for c in catalog.commitment_discounts}


def test_the_offer_index_then_the_savings_plans_region_index_then_one_region_file_are_read(tmp_path: Path) -> None:
    _, opener, _ = run(tmp_path)
    assert opener.requested == list(SP_URLS)  # us-east-1 only: the catalog's discounts are per shape, not region


def test_each_shape_priced_on_demand_gets_its_compute_savings_plan_discount_for_itself_only(tmp_path: Path) -> None:
    directory, _, [report] = run(tmp_path, write=True)
    source = "aws-price-list-savings-plans"
    # 1 - rate / on-demand of the file, rounded down: g5.xlarge 1 - 0.7546 / 1.006 = 0.24990...
    assert discounts(directory) == {
        ("g5.xlarge", 1): (0.2499, ["g5.xlarge"], source),
        ("g5.xlarge", 3): (0.4669, ["g5.xlarge"], source),
        ("g6.12xlarge", 1): (0.2566, ["g6.12xlarge"], source),  # not RHEL's 3.7 (RunInstances:0010)
        ("g6.12xlarge", 3): (0.4671, ["g6.12xlarge"], source),
        ("p5.48xlarge", 1): (0.3095, ["p5.48xlarge"], source),  # not the p5 EC2 Instance SP's 33.3, nor All Upfront
        ("p5.48xlarge", 3): (0.5003, ["p5.48xlarge"], source),
    }
    assert sorted(report.added) == sorted(
        f"commitment_discounts aws {s} {y}" for s in ("g5.xlarge", "g6.12xlarge", "p5.48xlarge") for y in (1, 3)
    )
    catalog = load_catalog(directory)
    assert catalog.commitment("aws", "g5", 1, "g5.4xlarge") is None  # g5.xlarge's rate reaches no other size
    text = (directory / "aws.yaml").read_text()
    assert (
        "  - {provider: aws, applies_to: p5.48xlarge, term_years: 1, discount: 0.3095, shapes: [p5.48xlarge], "
        "source: aws-price-list-savings-plans}\n" in text
    )
    src = catalog.sources[source]
    assert (str(src.as_of), src.as_of_kind) == ("2026-11-21", "published")  # the file's publicationDate
    assert "version 20261121091502" in src.note and "aws-karpenter-pricing" in src.note  # where on-demand came from


def test_only_linux_shared_tenancy_no_upfront_compute_plan_rates_in_the_region_count(tmp_path: Path) -> None:
    with SP_FILE.open("rb") as stream:
        plans = read_region_plans(stream, "sp.json", "us-east-1", {"g5.xlarge", "g6.12xlarge", "p5.48xlarge"})
    # Windows (0.9312), dedicated (0.8301), the Boston Local Zone (0.7001), Fargate, m7i (not asked),
    # All Upfront (0.7201) and the p5 EC2 Instance Savings Plan (33.3) are all left out.
    assert plans.compute_rates() == {
        ("g5.xlarge", 1): {Decimal("0.7546")},
        ("g5.xlarge", 3): {Decimal("0.5362")},
        ("g6.12xlarge", 1): {Decimal("3.4208")},
        ("g6.12xlarge", 3): {Decimal("2.4521")},
        ("p5.48xlarge", 1): {Decimal("38.0")},
        ("p5.48xlarge", 3): {Decimal("27.5")},
    }
    assert {itype for _, itype, _ in plans.rates} == {"g5.xlarge", "g6.12xlarge", "p5.48xlarge"}
    assert (plans.version, str(plans.published), plans.problems) == ("20261121091502", "2026-11-21", [])


def test_a_shape_without_a_rate_gets_no_discount_and_is_reported(tmp_path: Path) -> None:
    _, _, [report] = run(tmp_path)
    assert "us-east-1 g5.4xlarge 1-year: no No Upfront Compute Savings Plan rate (Linux, shared); no discount" in (
        report.problems
    )
    assert not any("g5.4xlarge" in a for a in report.added)


def test_two_different_rates_for_one_shape_and_term_are_not_used(tmp_path: Path) -> None:
    doc = json.loads(SP_FILE.read_text())
    plan = next(t for t in doc["terms"]["savingsPlan"] if t["sku"] == "CSPNOUPFRONT1Y")
    twin = dict(plan["rates"][0], discountedSku="OTHERSKU", discountedRate={"price": "0.7601", "currency": "USD"})
    plan["rates"].append(twin)
    changed = tmp_path / "sp.json"
    changed.write_text(json.dumps(doc))
    _, _, [report] = run(tmp_path, sp=changed)
    assert (
        "us-east-1 g5.xlarge 1-year: 2 different Compute Savings Plan rates (0.7546, 0.7601); not used"
        in report.problems
    )
    assert "commitment_discounts aws g5.xlarge 1" not in report.added
    assert "commitment_discounts aws g5.xlarge 3" in report.added


def test_a_term_whose_length_disagrees_with_its_product_is_not_used(tmp_path: Path) -> None:
    doc = json.loads(SP_FILE.read_text())
    next(t for t in doc["terms"]["savingsPlan"] if t["sku"] == "CSPNOUPFRONT3Y")["leaseContractLength"]["duration"] = 1
    changed = tmp_path / "sp.json"
    changed.write_text(json.dumps(doc))
    _, _, [report] = run(tmp_path, sp=changed)
    assert "us-east-1 plan CSPNOUPFRONT3Y: leaseContractLength 1 years but purchaseTerm '3yr'; not used" in (
        report.problems
    )
    assert not any(a.endswith(" 3") for a in report.added)
    assert "commitment_discounts aws g5.xlarge 1" in report.added  # the 1-year plan's rates stay distinct


def test_a_second_refresh_from_the_same_files_changes_nothing(tmp_path: Path) -> None:
    run(tmp_path, write=True)
    _, _, [again] = run(tmp_path, write=True)
    assert (again.changes, again.added, again.gone, again.kept) == ([], [], [], [])
    assert again.unchanged == 6 and not again.changed and not again.written


def test_with_the_price_list_first_both_kinds_coexist_and_the_exact_shape_wins(tmp_path: Path) -> None:
    directory, _, reports = run(tmp_path, ("aws", "aws-savings-plans"), write=True)
    assert [r.provider for r in reports] == ["aws", "aws-savings-plans"]
    catalog = load_catalog(directory)
    family = catalog.commitment("aws", "p5", 1)  # reserved, standard no upfront, per family (aws.py)
    exact = catalog.commitment("aws", "p5", 1, "p5.48xlarge")
    assert family is not None and (family.applies_to, family.shapes, family.discount) == ("p5", [], 0.3)
    # the on-demand price the Price List gave in the same run (49.536): 1 - 38.0 / 49.536 = 0.23288...
    assert exact is not None and (exact.applies_to, exact.shapes, exact.discount) == (
        "p5.48xlarge",
        ["p5.48xlarge"],
        0.2328,
    )
    assert "aws-price-list-ec2" in catalog.sources["aws-price-list-savings-plans"].note


def test_a_reserved_profile_is_priced_at_its_shapes_savings_plan_discount(tmp_path: Path) -> None:
    directory, _, _ = run(tmp_path, ("aws", "aws-savings-plans"), write=True)
    catalog = load_catalog(directory)
    text = PROFILE.replace("pricing: on-demand", "pricing: reserved") + "cost: {commitment_years: 3}\n"
    profile = load_profiles(write_profiles(tmp_path / "profiles", {"base": text}))["base"]
    work = Workload.model_validate(
        {"profile": "base", "region": "us-east-1", "accelerator": "H100-80GB", "acceleratorCount": 8}
    )
    spec = build_spec(profile, work, Platform.AWS_GPU, catalog, "env")
    assert spec.offer == "p5.48xlarge"
    offer = next(o for o in catalog.offers if o.name == "p5.48xlarge")
    rate = hourly_rate(offer, "us-east-1", profile, catalog)
    assert rate.usd == pytest.approx(49.536 * (1 - 0.4448))  # 3-year: 1 - 27.5 / 49.536, rounded down
    assert (rate.basis, rate.warning) == ("reserved 3-year", "")
    assert estimate(spec, profile, work, catalog).compute_usd_hour == pytest.approx(49.536 * (1 - 0.4448))


def test_a_region_without_a_savings_plans_file_is_refused(tmp_path: Path) -> None:
    directory = data_dir(tmp_path, "aws.yaml")
    with pytest.raises(FetchError, match="no Savings Plans file for region ap-south-2"):
        refresh(
            ["aws-savings-plans"],
            today=TODAY,
            data_dir=directory,
            opener=RecordedOpener(SP_URLS),
            regions=["ap-south-2"],
        )


def test_the_shipped_aws_file_takes_the_rows_and_still_loads(tmp_path: Path) -> None:
    directory = real_data_dir(tmp_path)
    opener = RecordedOpener(SP_URLS)
    [report] = refresh(["aws-savings-plans"], today=TODAY, data_dir=directory, opener=opener, write=True)
    assert report.written
    catalog = load_catalog(directory)
    offer = catalog.offer("p5.48xlarge")
    assert offer is not None
    od = offer.prices["us-east-1"].on_demand
    exact = catalog.commitment("aws", "p5", 1, "p5.48xlarge")
    assert exact is not None and exact.shapes == ["p5.48xlarge"]
    assert exact.discount == float((1 - Decimal("38.0") / Decimal(str(od))).quantize(Decimal("0.0001"), "ROUND_FLOOR"))
