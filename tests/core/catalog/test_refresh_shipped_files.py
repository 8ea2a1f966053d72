"""A refresh of the shipped data files (copies) edits price rows and sources, and nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from fullserver.catalog import DATA_DIR, load_catalog
from fullserver.catalog.refresh import PROVIDER_FILES, RefreshReport, refresh

from .conftest import API_KEY, AWS_URLS, GCP_URLS, TODAY, RecordedOpener, real_data_dir

PRICE_KEYS = ("on_demand_usd_hour", "spot_usd_hour", "on_demand_usd_chip_hour", "spot_usd_chip_hour", "usd_gib_month")


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> list[RefreshReport]:
    directory = real_data_dir(tmp_path_factory.mktemp("shipped"))
    return refresh(
        ["aws", "gcp", "tpu"],
        today=TODAY,
        data_dir=directory,
        opener=RecordedOpener(AWS_URLS | GCP_URLS),
        gcp_api_key=API_KEY,
        write=True,
    )


def removed_and_added(report: RefreshReport) -> tuple[list[str], list[str]]:
    lines = report.diff().splitlines()[2:]
    return (
        [line[1:] for line in lines if line.startswith("-")],
        [line[1:] for line in lines if line.startswith("+")],
    )


def test_every_comment_of_the_shipped_files_survives(reports: list[RefreshReport]) -> None:
    for report in reports:
        original = (DATA_DIR / PROVIDER_FILES[report.provider]).read_text()
        assert report.original == original
        comments = [line for line in original.splitlines() if line.lstrip().startswith("#")]
        after = report.text.splitlines()
        assert all(c in after for c in comments), report.path


def test_only_price_rows_change(reports: list[RefreshReport]) -> None:
    for report in reports:
        removed, _ = removed_and_added(report)
        for line in removed:
            stripped = line.strip()
            is_flow_row = stripped.startswith(("- {shape:", "- {accelerator:", "- {generation:", "- {provider:"))
            is_block_field = stripped.startswith(("source:", *(f"{k}:" for k in PRICE_KEYS)))
            assert is_flow_row or is_block_field, f"{report.path}: unexpected removed line {line!r}"


def test_the_refreshed_catalog_loads_and_names_the_new_sources(reports: list[RefreshReport]) -> None:
    catalog = load_catalog(Path(reports[0].path).parent)
    assert {"aws-price-list-ec2", "gcp-cloud-billing-catalog", "tpu-cloud-billing-catalog"} <= set(catalog.sources)
    assert all(r.written for r in reports)
    p5 = next(o for o in catalog.offers if o.name == "p5.48xlarge")
    assert p5.prices["us-east-1"].source == "aws-price-list-ec2"
    assert p5.prices["us-east-1"].spot_from == "aws-skypilot-vms"
    assert p5.prices["ap-northeast-1"].source == "aws-skypilot-vms"  # region not in the recorded index: untouched


def test_the_shipped_files_themselves_are_untouched(reports: list[RefreshReport]) -> None:
    for report in reports:
        assert Path(report.path).parent != DATA_DIR
        assert (DATA_DIR / PROVIDER_FILES[report.provider]).read_text() == report.original
