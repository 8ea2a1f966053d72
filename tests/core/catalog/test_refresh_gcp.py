"""`catalog refresh --provider gcp|tpu`: Cloud Billing Catalog SKU pages, replayed, against small files."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from fullserver.catalog import load_catalog
from fullserver.catalog.refresh import RefreshReport, refresh
from fullserver.catalog.refresh.gcp import PriceIndex, classify, parse_sku
from fullserver.catalog.refresh.http import redact
from fullserver.errors import InputError

from .conftest import API_KEY, DATA, GCP_URLS, SKUS, TODAY, RecordedOpener, data_dir


def run(tmp_path: Path, providers: tuple[str, ...] = ("gcp", "tpu"), write: bool = False) -> list[RefreshReport]:
    directory = data_dir(tmp_path, "gcp.yaml", "tpu.yaml")
    return refresh(
        providers, today=TODAY, data_dir=directory, opener=RecordedOpener(GCP_URLS), gcp_api_key=API_KEY, write=write
    )


def changes(report: RefreshReport) -> dict[tuple[str, str], tuple[float | None, float | None]]:
    return {(c.row, c.field): (c.old, c.new) for c in report.changes}


def test_every_page_is_read_once_and_the_sku_list_serves_both_files(tmp_path: Path) -> None:
    opener = RecordedOpener(GCP_URLS)
    refresh(
        ["gcp", "tpu"],
        today=TODAY,
        data_dir=data_dir(tmp_path, "gcp.yaml", "tpu.yaml"),
        opener=opener,
        gcp_api_key=API_KEY,
    )
    assert opener.requested == list(GCP_URLS)  # page 1, then the nextPageToken page; not again for tpu


def test_the_api_key_reaches_no_file_and_no_report(tmp_path: Path) -> None:
    reports = run(tmp_path, write=True)
    for report in reports:
        assert API_KEY not in Path(report.path).read_text()
        assert API_KEY not in json.dumps(report.to_dict())
    assert redact(f"{SKUS}?key={API_KEY}&pageToken=x") == f"{SKUS}?key=REDACTED&pageToken=x"


def test_a_missing_api_key_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--gcp-api-key: the Cloud Billing Catalog API needs an API key"):
        refresh(["gcp"], today=TODAY, data_dir=data_dir(tmp_path, "gcp.yaml", "tpu.yaml"), opener=RecordedOpener({}))


def test_attachable_gpu_prices_on_demand_and_spot(tmp_path: Path) -> None:
    gcp, _ = run(tmp_path)
    found = changes(gcp)
    assert found[("accelerator_prices T4 us-central1", "spot_usd_hour")] == (0.1915, 0.14)  # "attached to Spot"
    assert found[("accelerator_prices T4 europe-west4", "on_demand_usd_hour")] == (0.3675, 0.37)
    assert found[("accelerator_prices V100-16GB us-central1", "spot_usd_hour")] == (1.2338, 0.992)
    assert (
        "accelerator_prices T4 us-central1",
        "on_demand_usd_hour",
    ) not in found  # 0.35 confirmed; commitment ignored


def test_skus_that_disagree_or_have_the_wrong_unit_are_not_used_and_not_called_gone(tmp_path: Path) -> None:
    gcp, _ = run(tmp_path)
    assert any("gpu T4 asia-southeast1 on-demand: SKUs disagree" in p for p in gcp.problems)
    assert any("'Nvidia Tesla P4 GPU running in Americas': unit 'GiBy.mo', expected 'h'" in p for p in gcp.problems)
    assert "accelerator_prices T4 asia-southeast1" not in gcp.gone
    assert "accelerator_prices P4 us-central1" not in gcp.gone
    assert gcp.gone == ["storage_prices gcp local-ssd europe-west4"]  # no such SKU in the pages


def test_machine_prices_are_cores_plus_memory_plus_gpus(tmp_path: Path) -> None:
    gcp, _ = run(tmp_path)
    found = changes(gcp)
    # n1-highmem-8: 8 x 0.031611 + 52 x 0.004237; spot 8 x 0.00698 + 52 x 0.00094
    assert found[("shape_prices n1-highmem-8 us-central1", "on_demand_usd_hour")] == (0.47321, 0.473212)
    assert found[("shape_prices n1-highmem-8 us-central1", "spot_usd_hour")] == (0.15896, 0.10472)
    # g2-standard-4: 4 x 0.024988 + 16 x 0.002927 + 1 x 0.560211 (L4)
    assert found[("shape_prices g2-standard-4 us-central1", "on_demand_usd_hour")] == (0.70683, 0.706995)
    # a2-highgpu-1g: 12 x 0.031611 + 85 x 0.004237 + 1 x 2.933908 (A100 40GB, not the 80GB SKU)
    assert found[("shape_prices a2-highgpu-1g us-central1", "on_demand_usd_hour")] == (3.67339, 3.673385)
    # a new region where the SKUs price the shape
    assert found[("shape_prices n1-highmem-8 europe-west4", "on_demand_usd_hour")] == (None, 0.520976)
    assert any("a3-ultragpu-8g" in p for p in gcp.problems)  # H200 SKUs not mapped: not refreshed, said so


def test_disks_and_egress(tmp_path: Path) -> None:
    gcp, _ = run(tmp_path)
    found = changes(gcp)
    assert found[("storage_prices gcp pd-ssd europe-west4", "usd_gib_month")] == (0.187, 0.2)
    # the highest first-tier rate to any destination but China and Australia, per decimal GB
    assert found[("egress_prices gcp us-central1", "usd_per_gb")] == (0.11176, 0.13039)  # 0.14 / 1.073741824
    assert ("egress_prices gcp europe-west4", "usd_per_gb") not in found  # 0.12 per GiB, as before
    assert any("egress_prices gcp us-central1: the comment on its line" in k for k in gcp.kept)


def test_spot_kept_with_its_source_when_the_api_gives_none(tmp_path: Path) -> None:
    reports = run(tmp_path, write=True)
    data = yaml.safe_load(Path(reports[0].path).read_text())
    row = next(r for r in data["shape_prices"] if (r["shape"], r["region"]) == ("n1-standard-4", "europe-west4"))
    assert row == {
        "shape": "n1-standard-4",
        "region": "europe-west4",
        "on_demand_usd_hour": 0.209184,
        "spot_usd_hour": 0.11052,
        "source": "gcp-cloud-billing-catalog",
        "spot_source": "gcp-skypilot-vms",
    }
    catalog = load_catalog(Path(reports[0].path).parent)
    attached = next(o for o in catalog.offers if o.name == "n1-standard-4+1xT4").prices["europe-west4"]
    assert attached.source == "gcp-cloud-billing-catalog+gcp-cloud-billing-catalog"
    assert attached.spot_from == "gcp-skypilot-vms+gcp-cloud-billing-catalog"


def test_tpu_chip_prices_and_v4_left_alone(tmp_path: Path) -> None:
    _, tpu = run(tmp_path, write=True)
    found = changes(tpu)
    assert found[("tpu_prices v5e europe-west4", "on_demand_usd_chip_hour")] == (1.56, 1.62)
    assert found[("tpu_prices v6e us-central1", "spot_usd_chip_hour")] == (0.54421, 0.81)  # "Preemptible TpuV6e"
    assert tpu.gone == ["tpu_prices v6e europe-west4"]
    assert tpu.problems == ["TPU v4: priced in the Cloud TPU service per device, not mapped; rows left as they are"]
    text = Path(tpu.path).read_text()
    assert "on_demand_usd_chip_hour: 1.20, spot_usd_chip_hour: 0.48, source: tpu-cloud-billing-catalog}" in text
    assert "{generation: v4, region: us-central2, on_demand_usd_chip_hour: 3.22" in text
    source = yaml.safe_load(text)["sources"]["tpu-cloud-billing-catalog"]
    assert (source["as_of"], source["as_of_kind"]) == (TODAY, "retrieved")
    assert source["url"] == SKUS


def test_units_and_nanos_make_the_price() -> None:
    raw = json.loads((DATA / "gcp" / "skus-page-2.json").read_text())["skus"]
    egress = parse_sku(next(s for s in raw if s["description"].endswith("Americas to Americas")))
    assert egress is not None and egress.price == Decimal("0.12") and egress.unit == "GiBy"

    # proto3 JSON may leave zero fields out: {"nanos": ...} alone, or units as a number
    def priced(unit_price: dict[str, Any]) -> Decimal | None:
        sku = parse_sku(
            {"pricingInfo": [{"pricingExpression": {"usageUnit": "h", "tieredRates": [{"unitPrice": unit_price}]}}]}
        )
        return sku.price if sku else None

    assert priced({"nanos": 5}) == Decimal("5E-9")
    assert priced({"units": 2, "nanos": 961000000}) == Decimal("2.961")
    assert priced({"currencyCode": "USD", "units": "0", "nanos": 0}) is None  # a free tier prices nothing


@pytest.mark.parametrize(
    ("description", "usage", "component"),
    [
        ("Nvidia Tesla A100 GPU running in Americas", "OnDemand", ("gpu", "A100-40GB")),
        ("Nvidia Tesla A100 80GB GPU running in Americas", "OnDemand", ("gpu", "A100-80GB")),
        ("Nvidia Tesla T4 Virtual Workstation GPU running in Americas", "OnDemand", None),
        ("Commitment v1: Nvidia Tesla T4 GPU in Americas for 1 Year", "Commit1Yr", None),
        ("Reserved A2 Instance Core running in Americas", "OnDemand", None),
        ("Custom Instance Core running in Americas", "OnDemand", None),
        ("Spot Preemptible N1 Predefined Instance Ram running in Americas", "Preemptible", ("ram", "n1")),
        ("Regional Balanced PD Capacity in Iowa", "OnDemand", None),
        ("SSD backed Local Storage in Iowa", "OnDemand", ("disk", "local-ssd")),
    ],
)
def test_descriptions_map_to_catalog_components(
    description: str, usage: str, component: tuple[str, str] | None
) -> None:
    sku = {
        "description": description,
        "category": {"resourceFamily": "Compute", "resourceGroup": "GPU", "usageType": usage},
        "pricingInfo": [{"pricingExpression": {"usageUnit": "h", "tieredRates": [{"unitPrice": {"units": "1"}}]}}],
    }
    parsed = parse_sku(sku)
    assert parsed is not None and classify(parsed) == component


def test_egress_to_china_and_australia_is_not_the_regions_rate() -> None:
    raw = json.loads((DATA / "gcp" / "skus-page-2.json").read_text())["skus"]
    index = PriceIndex(raw)
    assert index.highest(("egress", ""), "us-central1") == Decimal("0.14")  # not China's 0.23
    assert index.count == len(raw) - 1  # the zero-priced ingress SKU gives no price
    assert min(index.effective) == dt.date(2026, 11, 23)


# --- Issue 21, item 12: the SKU parser against a response Google's API really returned, not one written here.

RECORDED = DATA / "gcp" / "recorded-skus-list-response.json"


def test_a_recorded_public_skus_list_response_is_read_as_the_api_wrote_it() -> None:
    """units as a JSON string, nanos as a number, three tiers from startUsageAmount 0, the base-unit fields
    and effectiveTime after the expression: the first non-zero tier of the last pricingInfo is the price."""
    from fullserver.catalog.refresh.gcp import COMPUTE_SERVICE_ID, list_skus, skus_url

    opener = RecordedOpener({skus_url(COMPUTE_SERVICE_ID, API_KEY): RECORDED})
    raw = list_skus(opener, API_KEY)
    assert len(raw) == 1 and opener.requested == [skus_url(COMPUTE_SERVICE_ID, API_KEY)]
    sku = parse_sku(raw[0])
    assert sku is not None
    assert (sku.sku_id, sku.unit, sku.price, sku.usage) == ("02EE-77CE-ACCD", "GiBy", Decimal("0.12"), "OnDemand")
    assert (sku.group, sku.regions, sku.effective) == (
        "VPNInternetEgress",
        ("us-central1", "us-east1", "us-west1"),
        "2021-11-26T10:50:40.206Z",
    )
    # VPN egress is not the premium-tier internet egress the catalog prices: a look-alike is never taken.
    assert classify(sku) is None
    index = PriceIndex(raw)
    assert (index.count, index.prices) == (1, {})


# --- Issue 21, item 12: A2 Ultra and A3 machine prices from their core, RAM and per-GPU SKUs (Cyclenerd's mapping).

ACCELERATOR_OPTIMIZED = DATA / "gcp" / "accelerator-optimized-skus.json"


def test_a2_ultra_and_a3_are_priced_from_their_core_ram_and_gpu_skus_without_the_bundled_local_ssd() -> None:
    """A2 Ultra bills A2 cores and RAM plus A100 80GB GPUs, a3-highgpu A3 cores and RAM plus H100 80GB GPUs and
    a3-megagpu the H100 Mega SKUs (Cyclenerd build/mapping.csv and gcp.yml); their bundled Local SSD is billed
    as Local SSD, which the catalog prices as storage, so the shape price is the sum of these SKUs alone. A
    component with no SKU leaves the figure out (no a3-megagpu spot here); A3 Ultra (H200) is not mapped."""
    from fullserver.catalog import DATA_DIR
    from fullserver.catalog.model import CatalogFile
    from fullserver.catalog.refresh.gcp import fetch_gcp, refreshes_shape
    from fullserver.yamlio import parse, read_yaml

    raw = json.loads(ACCELERATOR_OPTIMIZED.read_text())["skus"]
    data = parse(CatalogFile, read_yaml(DATA_DIR / "gcp.yaml"), "gcp.yaml")
    rows = {row.ident: row.values for row in fetch_gcp(data, raw, TODAY, ["us-central1"]).rows}
    assert rows[("a2-ultragpu-1g", "us-central1")] == {
        "on_demand_usd_hour": Decimal("0.031611") * 12 + Decimal("0.004237") * 170 + Decimal("3.9")
    }
    assert rows[("a3-highgpu-8g", "us-central1")] == {
        "on_demand_usd_hour": Decimal("0.03") * 208 + Decimal("0.003") * 1872 + Decimal("9.5") * 8,
        "spot_usd_hour": Decimal("0.012") * 208 + Decimal("0.0012") * 1872 + Decimal("4") * 8,
    }
    assert rows[("a3-megagpu-8g", "us-central1")] == {
        "on_demand_usd_hour": Decimal("0.03") * 208 + Decimal("0.003") * 1872 + Decimal("10.25") * 8
    }
    assert ("a3-ultragpu-8g", "us-central1") not in rows
    assert not refreshes_shape("a3-ultragpu-8g", "a3", "H200-141GB", 8)
    assert refreshes_shape("a2-ultragpu-8g", "a2", "A100-80GB", 8) and refreshes_shape(
        "a3-megagpu-8g", "a3", "H100-80GB", 8
    )
