"""`catalog refresh --provider aws-spot | aws-types`: EC2 spot prices and instance types, from responses that
botocore's Stubber checks against the EC2 service model (request parameters and response shape)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from botocore.exceptions import ClientError
from botocore.stub import Stubber

from fullserver.catalog import catalog_from_data, load_catalog
from fullserver.catalog.refresh import refresh
from fullserver.catalog.refresh.ec2 import SOURCE_KEY
from fullserver.cloud_errors import one_line
from fullserver.errors import InputError
from fullserver.yamlio import read_yaml

from .conftest import TODAY, data_dir

NOW = dt.datetime(2026, 11, 23, 9, 30, tzinfo=dt.UTC)


def price(itype: str, zone: str, usd: str) -> dict[str, Any]:
    """One entry as the EC2 API returns it (SpotPrice is a string of up to 6 decimals)."""
    return {
        "AvailabilityZone": zone,
        "InstanceType": itype,
        "ProductDescription": "Linux/UNIX",
        "SpotPrice": usd,
        "Timestamp": dt.datetime(2026, 11, 23, 4, 0, tzinfo=dt.UTC),
    }


class StubbedEc2:
    """One stubbed client per region; each expects exactly the requests listed, in order."""

    def __init__(self) -> None:
        self.clients: dict[str, Any] = {}
        self.stubs: dict[str, Stubber] = {}

    def expect(self, region: str, types: list[str], pages: list[list[dict[str, Any]]]) -> None:
        if region not in self.clients:
            client = boto3.client(
                "ec2", region_name=region, aws_access_key_id="testing", aws_secret_access_key="testing"
            )
            self.clients[region] = client
            self.stubs[region] = Stubber(client)
        stub = self.stubs[region]
        for i, entries in enumerate(pages):
            params: dict[str, Any] = {
                "InstanceTypes": types,
                "ProductDescriptions": ["Linux/UNIX"],
                "StartTime": NOW,
                "EndTime": NOW,
            }
            if i:
                params["NextToken"] = f"token-{i}"
            response: dict[str, Any] = {"SpotPriceHistory": entries}
            if i + 1 < len(pages):
                response["NextToken"] = f"token-{i + 1}"
            stub.add_response("describe_spot_price_history", response, params)

    def __call__(self, region: str) -> Any:
        if region not in self.clients:
            pytest.fail(f"no EC2 client expected for {region}")
        return self.clients[region]

    @property
    def active(self) -> Iterator[Stubber]:
        for stub in self.stubs.values():
            stub.activate()
            yield stub


def run(tmp_path: Path, ec2: StubbedEc2, write: bool = True) -> tuple[Path, Any]:
    directory = data_dir(tmp_path, "aws.yaml")
    stubs = list(ec2.active)
    [report] = refresh(["aws-spot"], today=TODAY, data_dir=directory, ec2_client_for=ec2, now=NOW, write=write)
    for stub in stubs:
        stub.assert_no_pending_responses()
    return directory, report


def shape_rows(directory: Path) -> dict[tuple[str, str], dict[str, Any]]:
    rows = read_yaml(directory / "aws.yaml")["shape_prices"]
    return {(r["shape"], r["region"]): r for r in rows}


US = ["g5.4xlarge", "g5.xlarge", "g6.12xlarge", "p5.48xlarge"]


def test_the_lowest_zone_price_now_becomes_the_spot_figure_with_its_own_source(tmp_path: Path) -> None:
    ec2 = StubbedEc2()
    ec2.expect(
        "us-east-1",
        US,
        [
            [price("g5.xlarge", "us-east-1a", "0.451200"), price("g5.xlarge", "us-east-1b", "0.402100")],
            [
                price("g6.12xlarge", "us-east-1c", "1.900000"),
                price("g6.12xlarge", "us-east-1d", "1.830800"),
                price("p5.48xlarge", "us-east-1a", "18.100000"),
            ],
        ],
    )
    ec2.expect("eu-central-1", ["g6.12xlarge"], [[price("g6.12xlarge", "eu-central-1a", "2.250000")]])
    directory, report = run(tmp_path, ec2)

    rows = shape_rows(directory)
    g5 = rows[("g5.xlarge", "us-east-1")]
    assert g5["spot_usd_hour"] == pytest.approx(0.4021)  # the cheaper of two zones
    assert g5["spot_source"] == SOURCE_KEY
    assert g5["on_demand_usd_hour"] == pytest.approx(1.006) and g5["source"] == "aws-karpenter-pricing"
    p5 = rows[("p5.48xlarge", "us-east-1")]
    assert (p5["spot_usd_hour"], p5["spot_source"], p5["source"]) == (18.1, SOURCE_KEY, "aws-skypilot-vms")
    assert rows[("g6.12xlarge", "us-east-1")]["spot_usd_hour"] == pytest.approx(1.8308)  # confirmed, not changed
    assert rows[("g6.12xlarge", "eu-central-1")]["spot_usd_hour"] == pytest.approx(2.25)

    moved = {(c.row, c.direction) for c in report.changes}
    assert moved == {
        ("shape_prices g5.xlarge us-east-1", "new"),
        ("shape_prices p5.48xlarge us-east-1", "up"),
        ("shape_prices g6.12xlarge eu-central-1", "up"),
    }
    assert report.unchanged == 1
    assert report.problems == ["us-east-1: no spot price for g5.4xlarge (not offered as spot there)"]
    source = read_yaml(directory / "aws.yaml")["sources"][SOURCE_KEY]
    assert str(source["as_of"]) == "2026-11-23" and source["as_of_kind"] == "retrieved"
    assert "DescribeSpotPriceHistory" in source["title"]

    load_catalog.cache_clear()
    offer = catalog_from_data([(str(p), read_yaml(p)) for p in sorted(directory.glob("*.yaml"))]).offer("g5.xlarge")
    assert offer is not None
    assert offer.prices["us-east-1"].spot == pytest.approx(0.4021)


def test_a_second_run_with_the_same_prices_changes_nothing(tmp_path: Path) -> None:
    def stubbed() -> StubbedEc2:
        ec2 = StubbedEc2()
        ec2.expect("us-east-1", US, [[price("g5.xlarge", "us-east-1a", "0.402100")]])
        ec2.expect("eu-central-1", ["g6.12xlarge"], [[price("g6.12xlarge", "eu-central-1a", "2.100000")]])
        return ec2

    directory, first = run(tmp_path, stubbed())
    text = (directory / "aws.yaml").read_text()
    stubs = stubbed()
    active = list(stubs.active)
    [second] = refresh(["aws-spot"], today=TODAY, data_dir=directory, ec2_client_for=stubs, now=NOW, write=True)
    for stub in active:
        stub.assert_no_pending_responses()
    assert first.changes and not second.changes
    assert (directory / "aws.yaml").read_text() == text


def test_spot_prices_never_add_a_row_without_an_on_demand_price(tmp_path: Path) -> None:
    """A type the file prices nowhere on demand is not asked for; a dry run writes nothing."""
    ec2 = StubbedEc2()
    ec2.expect("us-east-1", US, [[]])
    ec2.expect("eu-central-1", ["g6.12xlarge"], [[]])
    directory = data_dir(tmp_path, "aws.yaml")
    before = (directory / "aws.yaml").read_text()
    active = list(ec2.active)
    [report] = refresh(["aws-spot"], today=TODAY, data_dir=directory, ec2_client_for=ec2, now=NOW, write=False)
    for stub in active:
        stub.assert_no_pending_responses()
    assert not report.changes and not report.added
    assert (directory / "aws.yaml").read_text() == before
    assert all(row.get("spot_source") != SOURCE_KEY for row in yaml.safe_load(report.text)["shape_prices"])


def test_a_region_the_file_does_not_price_is_not_asked(tmp_path: Path) -> None:
    ec2 = StubbedEc2()
    ec2.expect("us-east-1", US, [[]])
    ec2.expect("eu-central-1", ["g6.12xlarge"], [[]])
    directory = data_dir(tmp_path, "aws.yaml")
    active = list(ec2.active)
    [report] = refresh(
        ["aws-spot"],
        today=TODAY,
        data_dir=directory,
        ec2_client_for=ec2,
        now=NOW,
        regions=["ap-south-1"],
    )
    for stub in active:
        stub.assert_no_pending_responses()
    assert "ap-south-1: the file prices no shape there on demand; refresh the Price List first" in report.problems


def test_without_boto3_the_refresh_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_boto3(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "boto3":
            raise ImportError("No module named 'boto3'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_boto3)
    data = data_dir(tmp_path, "aws.yaml")
    for provider, permission in (("aws-spot", "DescribeSpotPriceHistory"), ("aws-types", "DescribeInstanceTypes")):
        with pytest.raises(InputError) as err:
            refresh([provider], today=TODAY, data_dir=data, now=NOW)
        assert err.value.where == "--provider" and err.value.what == f"{provider} reads the EC2 API, which needs boto3"
        assert "pip install 'fullserver[refresh]'" in str(err.value) and f"ec2:{permission}" in str(err.value)


# --- aws-types: DescribeInstanceTypes --------------------------------------------------------------


def instance_type(
    name: str,
    vcpus: int,
    mib: int,
    gpus: int,
    cards: list[float],
    disks: list[tuple[int, int]] | None = None,
    efa: int | None = None,
    enis: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """One InstanceTypeInfo with the members the refresh reads, as the EC2 API returns them
    (``enis``: the default card's network interfaces and the IPv4 addresses each takes)."""
    info: dict[str, Any] = {
        "InstanceType": name,
        "VCpuInfo": {"DefaultVCpus": vcpus},
        "MemoryInfo": {"SizeInMiB": mib},
        "GpuInfo": {"Gpus": [{"Name": "GPU", "Manufacturer": "NVIDIA", "Count": gpus, "MemoryInfo": {"SizeInMiB": 1}}]},
        "NetworkInfo": {
            "NetworkPerformance": "Up to 10 Gigabit",
            "MaximumNetworkCards": len(cards),
            "NetworkCards": [
                {"NetworkCardIndex": i, "BaselineBandwidthInGbps": gbps, "PeakBandwidthInGbps": gbps}
                for i, gbps in enumerate(cards)
            ],
            "EfaSupported": efa is not None,
        },
    }
    if efa is not None:
        info["NetworkInfo"]["EfaInfo"] = {"MaximumEfaInterfaces": efa}
    if enis is not None:
        info["NetworkInfo"] |= {"DefaultNetworkCardIndex": 0, "Ipv4AddressesPerInterface": enis[1]}
        for card in info["NetworkInfo"]["NetworkCards"]:
            card["MaximumNetworkInterfaces"] = enis[0]
    if disks:
        info["InstanceStorageSupported"] = True
        info["InstanceStorageInfo"] = {
            "TotalSizeInGB": sum(c * s for c, s in disks),
            "Disks": [{"SizeInGB": s, "Count": c, "Type": "ssd"} for c, s in disks],
            "NvmeSupport": "required",
        }
    return info


def types_client(pages: list[list[dict[str, Any]]]) -> tuple[Any, Stubber]:
    client = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing")
    stub = Stubber(client)
    for i, infos in enumerate(pages):
        params: dict[str, Any] = {"Filters": [{"Name": "instance-type", "Values": ["g5.*", "g6.*", "p5.*"]}]}
        if i:
            params["NextToken"] = f"t{i}"
        response: dict[str, Any] = {"InstanceTypes": infos}
        if i + 1 < len(pages):
            response["NextToken"] = f"t{i + 1}"
        stub.add_response("describe_instance_types", response, params)
    stub.activate()
    return client, stub


def test_shape_figures_come_from_describe_instance_types_each_with_its_source(tmp_path: Path) -> None:
    """Changed figures are rewritten, missing ones (instance store) added, each named in
    figure_sources; sizes the catalog lacks are reported and never added."""
    client, stub = types_client(
        [
            [
                instance_type("g5.xlarge", 4, 16384, 1, [2.5], disks=[(1, 250)]),
                instance_type("g5.4xlarge", 16, 65536, 1, [8.0], disks=[(1, 600)]),
                instance_type("g5.2xlarge", 8, 32768, 1, [5.0], disks=[(1, 450)]),
            ],
            [
                instance_type("g6.12xlarge", 48, 196608, 4, [20.0], disks=[(4, 940)]),
                instance_type("p5.48xlarge", 192, 2097152, 8, [100.0] * 32, disks=[(8, 3800)], efa=32),
            ],
        ]
    )
    directory = data_dir(tmp_path, "aws.yaml")
    [report] = refresh(
        ["aws-types"], today=TODAY, data_dir=directory, ec2_client_for=lambda region: client, now=NOW, write=True
    )
    stub.assert_no_pending_responses()
    shapes = {s["name"]: s for s in read_yaml(directory / "aws.yaml")["shapes"]}
    g6 = shapes["g6.12xlarge"]
    assert (g6["local_nvme_disks"], g6["local_nvme_disk_gb"]) == (4, 940)
    assert g6["figure_sources"]["local_nvme_disk_gb"] == "aws-ec2-describe-instance-types"
    assert g6["source"] == "aws-karpenter-types"  # name, family, accelerator model: not from this API
    assert shapes["p5.48xlarge"]["network_gbps"] == 3200 and shapes["p5.48xlarge"]["efa_interfaces"] == 32
    assert report.not_in_catalog == ["g5.2xlarge"]
    assert "g5.2xlarge" not in shapes
    changed = {(c.row, c.field) for c in report.changes}
    assert ("shapes g6.12xlarge", "local_nvme_disks") in changed
    assert not any(field in ("vcpus", "memory_gib") for _, field in changed)  # the same figures: confirmed

    load_catalog.cache_clear()
    cat = catalog_from_data([(str(p), read_yaml(p)) for p in sorted(directory.glob("*.yaml"))])
    offer = cat.offer("g6.12xlarge")
    assert offer is not None
    assert offer.local_nvme_disks * offer.local_nvme_disk_gib == pytest.approx(4 * 940 / 1.073741824)


def test_the_pods_a_shapes_vpc_cni_addresses_come_from_its_default_network_cards_enis(tmp_path: Path) -> None:
    """nodeadm's default maxPods: the default card's ENIs x (IPv4 addresses each - 1) + 2, never every
    card's (a p5.48xlarge has 32). A figure the file lacks is added (g5.4xlarge: 8 x 29 + 2), one the
    API reports differently is rewritten, and each is reported."""
    client, stub = types_client(
        [
            [
                instance_type("g5.xlarge", 4, 16384, 1, [2.5], enis=(4, 14)),
                instance_type("g5.4xlarge", 16, 65536, 1, [8.0], enis=(8, 30)),
                instance_type("g6.12xlarge", 48, 196608, 4, [20.0]),
                instance_type("p5.48xlarge", 192, 2097152, 8, [100.0] * 32, efa=32, enis=(2, 51)),
            ]
        ]
    )
    directory = data_dir(tmp_path, "aws.yaml")
    [report] = refresh(
        ["aws-types"], today=TODAY, data_dir=directory, ec2_client_for=lambda region: client, now=NOW, write=True
    )
    stub.assert_no_pending_responses()
    shapes = {s["name"]: s for s in read_yaml(directory / "aws.yaml")["shapes"]}
    assert [shapes[n]["pods"] for n in ("g5.xlarge", "g5.4xlarge", "p5.48xlarge")] == [54, 234, 102]
    assert [c.line() for c in report.changes if c.field == "pods"] == [
        "shapes g5.4xlarge: pods new 234",
        "shapes g5.xlarge: pods 58 -> 54 (down 6.90%)",
        "shapes p5.48xlarge: pods 100 -> 102 (up 2.00%)",
    ]
    assert shapes["g5.xlarge"]["figure_sources"]["pods"] == "aws-ec2-describe-instance-types"
    assert shapes["g6.12xlarge"]["pods"] == 234  # the API left the members out: the figure stays


def test_a_figure_the_api_reports_differently_is_rewritten_and_reported(tmp_path: Path) -> None:
    client, stub = types_client(
        [
            [
                instance_type("g5.xlarge", 4, 16384, 1, [5.0]),
                instance_type("g5.4xlarge", 16, 65536, 1, [8.0]),
                instance_type("g6.12xlarge", 48, 196608, 4, [20.0]),
                instance_type("p5.48xlarge", 192, 2097152, 8, [100.0] * 32, efa=32),
            ]
        ]
    )
    directory = data_dir(tmp_path, "aws.yaml")
    [report] = refresh(
        ["aws-types"], today=TODAY, data_dir=directory, ec2_client_for=lambda region: client, now=NOW, write=True
    )
    stub.assert_no_pending_responses()
    assert [c.line() for c in report.changes] == ["shapes g5.xlarge: network_gbps 2.5 -> 5 (up 100.00%)"]
    g5 = next(s for s in read_yaml(directory / "aws.yaml")["shapes"] if s["name"] == "g5.xlarge")
    assert g5["network_gbps"] == 5 and g5["figure_sources"]["network_gbps"] == "aws-ec2-describe-instance-types"


def test_a_per_disk_split_replaces_a_total(tmp_path: Path) -> None:
    """A shape whose instance store was known only in total gets the API's split instead."""
    client, stub = types_client(
        [
            [
                instance_type("g5.xlarge", 4, 16384, 1, [2.5]),
                instance_type("g5.4xlarge", 16, 65536, 1, [8.0]),
                instance_type("g6.12xlarge", 48, 196608, 4, [20.0], disks=[(4, 940)]),
                instance_type("p5.48xlarge", 192, 2097152, 8, [100.0] * 32, efa=32),
            ]
        ]
    )
    directory = data_dir(tmp_path, "aws.yaml")
    path = directory / "aws.yaml"
    path.write_text(
        path.read_text().replace("    memory_gib: 192\n", "    memory_gib: 192\n    local_nvme_total_gb: 3760\n")
    )
    [report] = refresh(
        ["aws-types"], today=TODAY, data_dir=directory, ec2_client_for=lambda region: client, now=NOW, write=True
    )
    stub.assert_no_pending_responses()
    g6 = next(s for s in read_yaml(path)["shapes"] if s["name"] == "g6.12xlarge")
    assert "local_nvme_total_gb" not in g6 and (g6["local_nvme_disks"], g6["local_nvme_disk_gb"]) == (4, 940)
    assert "shapes g6.12xlarge: local_nvme_total_gb 3760 dropped" in [c.line() for c in report.changes]


def test_credentials_the_ec2_api_refuses_reach_the_one_line_boundary_untouched(tmp_path: Path) -> None:
    """The refresh raises botocore's own error; ``fullserver.cloud_errors`` (every command's
    boundary) names the call and the credentials in one line, and nothing was written."""
    client = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing")
    stub = Stubber(client)
    stub.add_client_error("describe_instance_types", "AuthFailure", "AWS was not able to validate the credentials.")
    stub.activate()
    data = data_dir(tmp_path, "aws.yaml")
    before = (data / "aws.yaml").read_text()
    with pytest.raises(ClientError) as err:
        refresh(["aws-types"], today=TODAY, data_dir=data, ec2_client_for=lambda _: client, now=NOW)
    line = one_line(err.value)
    assert line is not None and line.line() == (
        "AWS DescribeInstanceTypes: answered AuthFailure: AWS was not able to validate the credentials. "
        "(the credentials (AWS_PROFILE or AWS_ACCESS_KEY_ID) are expired or not allowed DescribeInstanceTypes: "
        "log in again, or use a role that is)"
    )
    assert (data / "aws.yaml").read_text() == before
