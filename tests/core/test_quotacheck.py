"""``fullserver quota`` against stubbed accounts: enough, short and unknown, in each provider's format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from fullserver.clouds.aws import AwsReader
from fullserver.clouds.gcp import GcpReader
from fullserver.platforms.quota import QuotaNeed
from fullserver.quotacheck import short_error
from fullserver.quotas import load_quota_table

DATA = Path(__file__).resolve().parents[1] / "data" / "quota"
TABLE = load_quota_table()


def need(
    code: str, amount: float, scope: str, service: str = "ec2", unit: str = "vCPUs", name: str = "n", cloud: Any = "aws"
) -> QuotaNeed:
    return QuotaNeed(
        cloud=cloud, service=service, code=code, name=name, scope=scope, amount=amount, unit=unit, why="", source="s"
    )


P5_OD = need("L-417A185B", 384, "us-east-1", name="Running On-Demand P instances")


def instance(kind: str, cores: int, spot: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "InstanceId": "i-0123456789abcdef0",
        "InstanceType": kind,
        "CpuOptions": {"CoreCount": cores, "ThreadsPerCore": 2},
    }
    if spot:
        out["InstanceLifecycle"] = "spot"
    return out


class Aws:
    """Service Quotas and EC2 clients under botocore's Stubber, handed out per service."""

    def __init__(self) -> None:
        self.sq = boto3.client(
            "service-quotas", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b"
        )
        self.ec2 = boto3.client("ec2", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b")
        self.sq_stub, self.ec2_stub = Stubber(self.sq), Stubber(self.ec2)

    def reader(self) -> AwsReader:
        self.sq_stub.activate()
        self.ec2_stub.activate()
        return AwsReader(lambda service, region: self.sq if service == "service-quotas" else self.ec2, TABLE)

    def applied(self, value: float, code: str = "L-417A185B") -> None:
        quota = {"ServiceCode": "ec2", "QuotaCode": code, "Value": value}
        self.sq_stub.add_response("get_service_quota", {"Quota": quota}, {"ServiceCode": "ec2", "QuotaCode": code})

    def none_applied(self, code: str = "L-417A185B") -> None:
        self.sq_stub.add_client_error(
            "get_service_quota", "NoSuchResourceException", expected_params={"ServiceCode": "ec2", "QuotaCode": code}
        )

    def default(self, value: float, code: str = "L-417A185B") -> None:
        quota = {"ServiceCode": "ec2", "QuotaCode": code, "Value": value}
        self.sq_stub.add_response(
            "get_aws_default_service_quota", {"Quota": quota}, {"ServiceCode": "ec2", "QuotaCode": code}
        )

    def running(self, *instances: dict[str, Any]) -> None:
        filters = [{"Name": "instance-state-name", "Values": ["running"]}]
        self.ec2_stub.add_response(
            "describe_instances", {"Reservations": [{"Instances": list(instances)}]}, {"Filters": filters}
        )


def test_enough_when_the_applied_limit_holds_the_need_beside_what_runs() -> None:
    aws = Aws()
    aws.applied(1152)
    # a running p4d (96 vCPUs) counts; a g6 (other quota) and a spot p5 (Spot quota) do not
    aws.running(instance("p4d.24xlarge", 48), instance("g6.xlarge", 2), instance("p5.48xlarge", 96, spot=True))
    status = aws.reader().read(P5_OD)
    assert (status.limit, status.in_use, status.short) == (1152, 96, 0)


def test_short_on_a_new_account_whose_p_quota_is_the_default_zero() -> None:
    aws = Aws()
    aws.none_applied()
    aws.default(0)
    aws.running()
    reader = aws.reader()
    status = reader.read(P5_OD)
    assert (status.limit, status.in_use, status.short) == (0, 0, 384)
    error = short_error("stack 'train-p5-cluster'", [(status, reader)])
    assert error is not None and error.exit_code == 4
    assert "L-417A185B (Running On-Demand P instances) in us-east-1: needs 384 vCPUs, limit 0, in use 0" in error.line()
    assert (
        "aws service-quotas request-service-quota-increase --service-code ec2 --quota-code L-417A185B "
        "--desired-value 384 --region us-east-1" in error.line()
    )


def test_unknown_when_service_quotas_has_no_value_and_never_counted_short() -> None:
    aws = Aws()
    aws.none_applied()
    aws.sq_stub.add_client_error("get_aws_default_service_quota", "NoSuchResourceException")
    aws.running()
    reader = aws.reader()
    status = reader.read(P5_OD)
    assert status.limit is None and status.short is None
    assert short_error("s", [(status, reader)]) is None


def recorded(url: str) -> dict[str, Any]:
    """Compute Engine and Cloud Quotas answers as their references publish them, by URL."""
    files = {
        "https://compute.googleapis.com/compute/v1/projects/my-ml-project/regions/us-central1": "gcp-regions-get-us-central1.json",
        "https://compute.googleapis.com/compute/v1/projects/my-ml-project": "gcp-projects-get.json",
        "https://cloudquotas.googleapis.com/v1/projects/my-ml-project/locations/global/services/tpu.googleapis.com/quotaInfos/TPUV5PPerProjectPerZoneForTPUAPI": "cloudquotas-TPUV5PPerProjectPerZoneForTPUAPI.json",
    }
    data: dict[str, Any] = json.loads((DATA / files[url]).read_text())
    return data


GCP = "compute.googleapis.com"


@pytest.mark.parametrize(
    ("code", "amount", "scope", "limit", "in_use", "short"),
    [
        ("NVIDIA_L4_GPUS", 3, "us-central1", 4, 1, 0),  # enough: 1 in use + 3 = 4
        ("NVIDIA_L4_GPUS", 8, "us-central1", 4, 1, 5),  # short by 5
        ("IN_USE_ADDRESSES", 1, "us-central1", 8, 2, 0),
        ("GPUS_ALL_REGIONS", 8, "global", 16, 0, 0),  # project-wide, from projects.get
        ("PREEMPTIBLE_NVIDIA_L4_GPUS", 1, "us-central1", None, None, None),  # not listed: unknown
    ],
)
def test_compute_engine_quotas_from_regions_get(
    code: str, amount: float, scope: str, limit: float | None, in_use: float | None, short: float | None
) -> None:
    status = GcpReader(recorded, "my-ml-project").read(need(code, amount, scope, GCP, "GPUs", cloud="gcp"))
    assert (status.limit, status.in_use, status.short) == (limit, in_use, short)


@pytest.mark.parametrize(("zone", "limit", "short"), [("us-east5-a", 128, 0), ("us-east5-b", 0, 128)])
def test_cloud_tpu_limits_from_cloud_quotas_per_zone_with_the_default_elsewhere(
    zone: str, limit: float, short: float
) -> None:
    reader = GcpReader(recorded, "my-ml-project")
    status = reader.read(
        need("TPUV5PPerProjectPerZoneForTPUAPI", 128, zone, "tpu.googleapis.com", "TensorCores", cloud="gcp")
    )
    assert (status.limit, status.in_use, status.short) == (limit, None, short)
    if short:
        assert reader.request(status).startswith(
            "https://console.cloud.google.com/iam-admin/quotas?project=my-ml-project"
        )


def test_nat_gateways_count_every_live_one_of_the_region_and_eks_clusters_their_list() -> None:
    """A NAT gateway quota is per Availability Zone: the Region's live gateways are at least as many
    as any zone holds, so the usage never reads low. EKS clusters come from eks ListClusters."""
    aws = Aws()
    eks = boto3.client("eks", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b")
    eks_stub = Stubber(eks)
    live = {"Filters": [{"Name": "state", "Values": ["pending", "available"]}]}
    aws.ec2_stub.add_response("describe_nat_gateways", {"NatGateways": [{"NatGatewayId": "nat-1"}] * 2}, live)
    eks_stub.add_response("list_clusters", {"clusters": ["a", "b", "c"]}, {})
    eks_stub.activate()
    reader = aws.reader()
    clients = {"ec2": aws.ec2, "eks": eks}
    reader.client_for = lambda service, region: clients[service]
    nat = need("L-FE5A380F", 1, "us-east-1", service="vpc", unit="NAT gateways")
    clusters = need("L-1194D53C", 1, "us-east-1", service="eks", unit="clusters")
    assert (reader.in_use(nat), reader.in_use(clusters)) == (2.0, 3.0)
    aws.ec2_stub.assert_no_pending_responses()
    eks_stub.assert_no_pending_responses()
