"""`catalog refresh --provider gcp-zones`: where each GCP machine series is sold, from recorded
pages of Compute Engine's machineTypes.aggregatedList."""

from __future__ import annotations

from pathlib import Path

import pytest

from fullserver.catalog.refresh import RefreshReport, refresh
from fullserver.catalog.refresh.compute import SOURCE_KEY, accelerator_types_url, machine_types_url
from fullserver.errors import InputError
from fullserver.yamlio import read_yaml

from .conftest import DATA, TODAY, RecordedOpener, data_dir

PROJECT = "my-ml-project"
SERIES = {"a2-highgpu", "a3-highgpu", "g2-standard"}
URLS = {
    accelerator_types_url(PROJECT): DATA / "gcp" / "accelerator-types.json",
    machine_types_url(PROJECT, SERIES): DATA / "gcp" / "machine-types-page-1.json",
    machine_types_url(PROJECT, SERIES, "CkQ5OTk5OTk5OTk5"): DATA / "gcp" / "machine-types-page-2.json",
}
ZONES = """
machine_zones:
  - {series: a2-highgpu, zones: [us-central1-a, us-central1-c], source: gcp-skypilot-vms}
  - {series: a3-highgpu, zones: [europe-west4-b], source: gcp-skypilot-vms}
  - {series: g2-standard, zones: [us-central1-a], source: gcp-skypilot-vms}
"""


def catalog_with_zones(tmp_path: Path) -> Path:
    directory = data_dir(tmp_path, "gcp.yaml", "tpu.yaml")
    path = directory / "gcp.yaml"
    path.write_text(path.read_text() + ZONES)
    return directory


def run(directory: Path, write: bool = True) -> tuple[RecordedOpener, RefreshReport]:
    opener = RecordedOpener(URLS)
    [report] = refresh(
        ["gcp-zones"],
        today=TODAY,
        data_dir=directory,
        opener=opener,
        gcp_project=PROJECT,
        gcp_access_token="ya29.test-token",
        write=write,
    )
    return opener, report


def test_each_series_gets_the_zones_the_api_lists_in_the_regions_the_file_prices(tmp_path: Path) -> None:
    directory = catalog_with_zones(tmp_path)
    opener, report = run(directory)
    assert opener.requested == list(URLS)  # one filtered listing, every page, nothing else
    zones = {row["series"]: row["zones"] for row in read_yaml(directory / "gcp.yaml")["machine_zones"]}
    assert zones == {
        "a2-highgpu": ["us-central1-a"],  # us-central1-c no longer sells it: gone
        "a3-highgpu": ["europe-west4-b", "europe-west4-c"],  # us-east5 is not a region the file prices
        "g2-standard": ["asia-southeast1-c", "us-central1-a", "us-central1-b"],
    }
    assert report.moved == [
        "attachable_gpus P4 n1: zones +europe-west4-b",
        "attachable_gpus T4 n1: zones +europe-west4-b +us-central1-a +us-central1-b",
        "attachable_gpus V100-16GB n1: zones +us-central1-a",
        "machine_zones a2-highgpu: zones -us-central1-c",
        "machine_zones a3-highgpu: zones +europe-west4-c",
        "machine_zones g2-standard: zones +asia-southeast1-c +us-central1-b",
    ]
    attachable = {a["accelerator"]: a for a in read_yaml(directory / "gcp.yaml")["attachable_gpus"]}
    assert attachable["T4"]["zones"] == ["europe-west4-b", "us-central1-a", "us-central1-b"]  # not us-west1
    assert attachable["V100-16GB"]["zones"] == ["us-central1-a"]
    assert attachable["P4"]["zones"] == ["europe-west4-b"]
    # the limits keep their own source; the zones name theirs
    assert {(a["source"], a["zones_source"]) for a in attachable.values()} == {("gcp-gpu-machine-types", SOURCE_KEY)}
    rows = {row["series"]: row for row in read_yaml(directory / "gcp.yaml")["machine_zones"]}
    assert {row["source"] for row in rows.values()} == {SOURCE_KEY}
    assert read_yaml(directory / "gcp.yaml")["sources"][SOURCE_KEY]["as_of_kind"] == "retrieved"


def test_the_token_reaches_no_file_and_no_report(tmp_path: Path) -> None:
    directory = catalog_with_zones(tmp_path)
    _, report = run(directory)
    assert "ya29" not in (directory / "gcp.yaml").read_text()
    assert "ya29" not in str(report.to_dict())


def test_a_second_run_changes_nothing(tmp_path: Path) -> None:
    directory = catalog_with_zones(tmp_path)
    run(directory)
    text = (directory / "gcp.yaml").read_text()
    _, report = run(directory)
    assert (directory / "gcp.yaml").read_text() == text
    assert report.moved == [] and report.unchanged == 6


@pytest.mark.parametrize(
    ("project", "token", "field"), [(None, "t", "--gcp-project"), (PROJECT, None, "--gcp-token-env")]
)
def test_without_a_project_or_a_token_it_says_what_to_pass(
    tmp_path: Path, project: str | None, token: str | None, field: str
) -> None:
    with pytest.raises(InputError) as err:
        refresh(
            ["gcp-zones"],
            today=TODAY,
            data_dir=catalog_with_zones(tmp_path),
            opener=RecordedOpener({}),
            gcp_project=project,
            gcp_access_token=token,
        )
    assert err.value.where == field and "gcloud auth print-access-token" in err.value.hint
