"""`catalog refresh --provider aws`: the Price List offer files, replayed, against a small aws.yaml."""

from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path

import pytest
import yaml

from fullserver.catalog import load_catalog
from fullserver.catalog.refresh import RefreshReport, refresh
from fullserver.catalog.refresh.aws import read_region_offers
from fullserver.catalog.refresh.http import FetchError
from fullserver.errors import InputError

from .conftest import AWS_URLS, DATA, PRICING, TODAY, RecordedOpener, data_dir


def run(tmp_path: Path, prune: bool = False, write: bool = False) -> tuple[Path, RecordedOpener, RefreshReport]:
    directory = data_dir(tmp_path, "aws.yaml")
    opener = RecordedOpener(AWS_URLS)
    [report] = refresh(["aws"], today=TODAY, data_dir=directory, opener=opener, prune=prune, write=write)
    return directory, opener, report


def test_the_region_index_then_one_offer_file_per_priced_region_is_read(tmp_path: Path) -> None:
    _, opener, _ = run(tmp_path)
    assert opener.requested == [
        f"{PRICING}/current/region_index.json",
        f"{PRICING}/20261120180411/us-east-1/index.json",
        f"{PRICING}/20261119100000/eu-central-1/index.json",
    ]


def test_prices_up_and_down_with_percentages_and_rows_added_or_gone(tmp_path: Path) -> None:
    _, _, report = run(tmp_path)
    changes = {(c.row, c.field): (c.old, c.new, c.direction, c.percent) for c in report.changes}
    assert changes[("shape_prices g6.12xlarge us-east-1", "on_demand_usd_hour")] == (4.6016, 4.8016, "up", 4.35)
    assert changes[("shape_prices p5.48xlarge us-east-1", "on_demand_usd_hour")] == (55.04, 49.536, "down", -10.0)
    assert changes[("shape_prices g5.xlarge eu-central-1", "on_demand_usd_hour")] == (None, 1.258, "new", None)
    assert report.added[-1] == "shape_prices g5.xlarge eu-central-1"
    assert report.gone == ["shape_prices g5.4xlarge us-east-1"]
    assert report.unchanged == 2  # g5.xlarge us-east-1 and g6.12xlarge eu-central-1: re-sourced
    assert report.not_in_catalog == ["g5.2xlarge"]  # the provider sells it; the catalog lacks it
    assert report.shapes_gone == ["g5.4xlarge"]
    assert not report.written
    assert any("up 4.35%" in line for line in report.lines())


def test_only_the_linux_shared_on_demand_sku_prices_an_instance(tmp_path: Path) -> None:
    # g5.xlarge also has Windows (1.19), dedicated (1.1066) and unused-reservation SKUs: none is taken.
    with (DATA / "aws" / "ec2-us-east-1.json").open("rb") as stream:
        offers = read_region_offers(stream, "us-east-1.json", "us-east-1", {"g5", "g6", "p5"})
    assert str(offers.on_demand["g5.xlarge"]) == "1.0060000000"
    assert str(offers.reserved[("g5.xlarge", 1)]) == "0.6340000000"  # standard, No Upfront; not convertible
    assert set(offers.on_demand) == {"g5.xlarge", "g5.2xlarge", "g6.12xlarge", "p5.48xlarge"}  # m7i: not a family asked
    assert offers.published == dt.date(2026, 11, 20) and offers.version == "20261120180411"
    assert offers.problems == []


def test_skus_that_disagree_are_not_used(tmp_path: Path) -> None:
    doc = json.loads((DATA / "aws" / "ec2-us-east-1.json").read_text())
    windows = next(p for p in doc["products"].values() if p["attributes"]["operatingSystem"] == "Windows")
    windows["attributes"] |= {"operatingSystem": "Linux", "operation": "RunInstances"}  # two Linux SKUs now
    offers = read_region_offers(io.BytesIO(json.dumps(doc).encode()), "x.json", "us-east-1", {"g5"})
    assert "g5.xlarge" not in offers.on_demand
    assert offers.problems == [
        "us-east-1 g5.xlarge: 2 different on-demand prices (1.0060000000, 1.1900000000); not used"
    ]


def test_the_file_keeps_its_comments_and_style_and_spot_keeps_its_own_source(tmp_path: Path) -> None:
    directory, _, report = run(tmp_path, write=True)
    text = (directory / "aws.yaml").read_text()
    original = (DATA / "catalog" / "aws.yaml").read_text()
    kept = [line for line in original.splitlines() if line.startswith("#") or line.lstrip().startswith("# ---")]
    assert all(line in text.splitlines() for line in kept)
    assert (
        "- shape: p5.48xlarge\n  region: us-east-1\n  on_demand_usd_hour: 49.536\n  spot_usd_hour: 16.9508\n"
        "  source: aws-price-list-ec2  # lowest AZ spot price\n  spot_source: aws-skypilot-vms\n" in text
    )
    data = yaml.safe_load(text)
    source = data["sources"]["aws-price-list-ec2"]
    assert source["as_of"] == dt.date(2026, 11, 19)  # the older publicationDate of the two files
    assert source["as_of_kind"] == "published"
    assert source["url"] == f"{PRICING}/current/region_index.json"
    assert report.written
    catalog = load_catalog(directory)
    price = catalog.offers[[o.name for o in catalog.offers].index("p5.48xlarge")].prices["us-east-1"]
    assert (price.on_demand, price.source, price.spot, price.spot_from) == (
        49.536,
        "aws-price-list-ec2",
        16.9508,
        "aws-skypilot-vms",
    )


def test_reserved_rates_become_commitment_discounts_per_family(tmp_path: Path) -> None:
    directory, _, _ = run(tmp_path, write=True)
    catalog = load_catalog(directory)
    g5 = catalog.commitment("aws", "g5", 1)
    assert g5 is not None and g5.discount == 0.3697  # 1 - 0.634 / 1.006, rounded down; convertible ignored
    assert g5.source == "aws-price-list-ec2"
    assert catalog.commitment("aws", "p5", 1).discount == 0.3  # type: ignore[union-attr]
    assert catalog.commitment("aws", "p5", 3) is None  # no 3-year rate in the file


def test_prune_removes_rows_the_provider_no_longer_prices(tmp_path: Path) -> None:
    directory, _, report = run(tmp_path, write=True, prune=True)
    assert report.pruned
    prices = yaml.safe_load((directory / "aws.yaml").read_text())["shape_prices"]
    assert ("g5.4xlarge", "us-east-1") not in {(p["shape"], p["region"]) for p in prices}


def test_a_second_refresh_from_the_same_files_changes_nothing(tmp_path: Path) -> None:
    directory, opener, _ = run(tmp_path, write=True)
    before = (directory / "aws.yaml").read_text()
    [again] = refresh(["aws"], today=TODAY, data_dir=directory, opener=opener, write=True)
    assert not again.changed and not again.written and again.changes == []
    assert (directory / "aws.yaml").read_text() == before


def test_a_dry_run_writes_nothing_and_shows_a_diff(tmp_path: Path) -> None:
    directory, _, report = run(tmp_path)
    assert (directory / "aws.yaml").read_text() == (DATA / "catalog" / "aws.yaml").read_text()
    assert "+  on_demand_usd_hour: 49.536" in report.diff()


def test_a_region_missing_from_the_index_is_reported(tmp_path: Path) -> None:
    directory = data_dir(tmp_path, "aws.yaml")
    [report] = refresh(
        ["aws"], today=TODAY, data_dir=directory, opener=RecordedOpener(AWS_URLS), regions=["xx-nowhere-1"]
    )
    assert "xx-nowhere-1: not in the AmazonEC2 region index; not refreshed" in report.problems


def test_an_unknown_provider_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="unknown provider 'azure'"):
        refresh(["azure"], today=TODAY, data_dir=data_dir(tmp_path), opener=RecordedOpener({}))


def test_an_offer_file_that_is_not_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FetchError, match="no 'products'"):
        read_region_offers(io.BytesIO(b'{"formatVersion": "v1.0"}'), "x.json", "us-east-1", {"g5"})


def test_gp3_storage_iops_and_throughput_come_from_the_offer_files_gp3_skus(tmp_path: Path) -> None:
    # The us-east-1 file prices gp3 at 0.085 per GB-month, 0.005 per IOPS-month and 40.96 per GiBps-month
    # (= 0.04 per MB/s-month); the free baselines are the EBS billing codes' 3,000 IOPS and 125 MB/s.
    directory, _, report = run(tmp_path, write=True)
    changes = {(c.row, c.field): (c.old, c.new) for c in report.changes}
    assert changes[("storage_prices aws gp3 us-east-1", "usd_gib_month")] == (0.08, 0.085)
    assert ("storage_prices aws gp3 us-east-1", "usd_mbps_month") not in changes  # 40.96 / 1024 = 0.04
    (gp3,) = [p for p in yaml.safe_load((directory / "aws.yaml").read_text())["storage_prices"]]
    assert gp3 == {
        "provider": "aws",
        "kind": "gp3",
        "region": "us-east-1",
        "usd_gib_month": 0.085,
        "usd_iops_month": 0.005,
        "usd_mbps_month": 0.04,
        "free_iops": 3000,
        "free_mbps": 125,
        "source": "aws-price-list-ec2",
    }
    assert "storage_prices aws gp3 eu-central-1" not in report.added  # that file has no gp3 SKU


def test_a_recorded_offer_file_prices_gp3_storage_as_aws_wrote_it() -> None:
    """recorded-ec2-us-east-2.json is an AWS Price List EC2 offer excerpt (us-east-2, version
    20230322145651) as opencost keeps it for its tests, byte for byte (README.md): its gp3 SKU
    M6UGCCQ3CDJQAA37, usagetype with the USE2- prefix, prices 0.08 USD per GB-Mo. It has no gp3 IOPS
    or throughput SKU, so a refresh from it reports the row rather than writing a partial one."""
    with (DATA / "aws" / "recorded-ec2-us-east-2.json").open("rb") as stream:
        offers = read_region_offers(stream, "recorded.json", "us-east-2", {"m5", "p3"})
    assert {k: str(v) for k, v in offers.gp3.items()} == {"usd_gib_month": "0.0800000000"}
    assert offers.on_demand == {}  # m5.large: only a 3-year convertible fee; p3.8xlarge: Windows BYOL
    assert offers.published == dt.date(2023, 3, 22) and offers.problems == []
    with (DATA / "aws" / "recorded-ec2-us-east-2.json").open("rb") as stream:
        other_region = read_region_offers(stream, "recorded.json", "us-east-1", set())
    assert other_region.gp3 == {}  # a gp3 SKU of another region prices nothing here


def test_gp3_skus_that_disagree_or_lack_a_part_refresh_nothing(tmp_path: Path) -> None:
    from fullserver.catalog.refresh.aws import _gp3_row
    from fullserver.catalog.refresh.rows import Fetched

    doc = json.loads((DATA / "aws" / "ec2-us-east-1.json").read_text())
    [term] = doc["terms"]["OnDemand"]["GP3STORAGE000001"].values()
    [dim] = term["priceDimensions"].values()
    doc["terms"]["OnDemand"]["GP3STORAGE000001"]["GP3STORAGE000001.OTHERTERM"] = {
        **term,
        "priceDimensions": {"x": {**dim, "pricePerUnit": {"USD": "0.09"}}},
    }
    offers = read_region_offers(io.BytesIO(json.dumps(doc).encode()), "x.json", "us-east-1", set())
    assert "usd_gib_month" not in offers.gp3
    assert offers.problems == ["us-east-1 usd_gib_month: 2 different gp3 prices (0.0850000000, 0.09); not used"]
    fetched = Fetched("k", load_catalog().sources["aws-karpenter-pricing"])
    _gp3_row(offers, fetched)
    assert fetched.rows == [] and fetched.scope == set()  # the file row stays as it is
    assert fetched.problems == ["us-east-1 gp3: no price for usd_gib_month; the row is not refreshed"]
