"""``fullserver quota``: each quota a stack needs, against the account's limit and usage.

The plan names the quotas (``fullserver.quotas``); this reads them with the caller's credentials
and answers need / limit / in use / short per quota, with the request that raises it. AWS:
Service Quotas ``GetServiceQuota`` (a quota never changed from its default has no applied value:
``NoSuchResourceException``, then ``GetAWSDefaultServiceQuota``), and EC2 for the usage a quota
counts (vCPUs of running instances of the quota's families and purchase option, Elastic IPs,
VPCs). Google Cloud: Compute Engine ``regions.get`` / ``projects.get`` (``quotas[]`` of
``{metric, limit, usage}``) and the Cloud Quotas API's ``quotaInfos`` for Cloud TPU (limits only).
A quota the account does not report is *unknown*, never zero, and never counted short.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from fullserver.cloud_errors import scrub
from fullserver.errors import EXIT_SHORT, FullserverError
from fullserver.platforms.quota import QuotaNeed, QuotaTable
from fullserver.platforms.quota.aws import instance_family, vcpu_group


class QuotaShort(FullserverError):
    """A quota the stack needs is below what it reaches (``fullserver quota``, ``ephemeral``)."""

    exit_code = EXIT_SHORT


class NoCredentials(FullserverError):
    """The account cannot be read: no credentials, or no client library to read it with."""


@dataclass(frozen=True)
class QuotaStatus:
    """One quota: what the stack needs, the account's limit and usage (``None``: unknown)."""

    need: QuotaNeed
    limit: float | None
    in_use: float | None
    note: str = ""

    @property
    def short(self) -> float | None:
        """How much more the limit must hold (0: enough); ``None`` when the limit is unknown."""
        if self.limit is None:
            return None
        return max(0.0, self.need.amount + (self.in_use or 0) - self.limit)

    @property
    def desired(self) -> int:
        """The limit to ask for: what is in use plus what the stack needs."""
        return math.ceil(self.need.amount + (self.in_use or 0))


class Reader(Protocol):
    def read(self, need: QuotaNeed) -> QuotaStatus: ...

    def request(self, status: QuotaStatus) -> str: ...


# --- AWS ------------------------------------------------------------------------------------------

ClientFor = Callable[[str, str], Any]
"""(service name, region) -> a boto3 client (a Stubber's, in tests)."""


COUNTS: dict[tuple[str, str], tuple[str, str, str, dict[str, Any]]] = {
    ("ec2", "addresses"): ("ec2", "describe_addresses", "Addresses", {}),
    ("vpc", "VPCs"): ("ec2", "describe_vpcs", "Vpcs", {}),
    ("vpc", "internet gateways"): ("ec2", "describe_internet_gateways", "InternetGateways", {}),
    # every live NAT gateway of the Region: at least as many as any one Availability Zone holds
    ("vpc", "NAT gateways"): (
        "ec2",
        "describe_nat_gateways",
        "NatGateways",
        {"Filters": [{"Name": "state", "Values": ["pending", "available"]}]},
    ),
    ("eks", "clusters"): ("eks", "list_clusters", "clusters", {}),
}
"""(quota service, unit) -> the client, call and response key whose list length is the quota's
usage in the Region (first page: these defaults are single digits to a hundred)."""


class AwsReader:
    """Service Quotas for limits, EC2 for usage, per region, with the caller's credentials."""

    def __init__(self, client_for: ClientFor, table: QuotaTable) -> None:
        self.client_for = client_for
        self.table = table

    def limit(self, need: QuotaNeed) -> float | None:
        sq = self.client_for("service-quotas", need.scope)
        args = {"ServiceCode": need.service, "QuotaCode": need.code}
        try:
            return float(sq.get_service_quota(**args)["Quota"]["Value"])
        except sq.exceptions.NoSuchResourceException:
            pass
        try:
            return float(sq.get_aws_default_service_quota(**args)["Quota"]["Value"])
        except sq.exceptions.NoSuchResourceException:
            return None

    def vcpus_in_use(self, need: QuotaNeed) -> float:
        """vCPUs of running instances counted by this quota: of its families, on Spot for a Spot
        quota, not on Spot for an On-Demand one (cores x threads, as DescribeInstances reports)."""
        ec2 = self.client_for("ec2", need.scope)
        spot_quota = need.name.endswith("Spot Instance Requests")
        total = 0.0
        filters = [{"Name": "instance-state-name", "Values": ["running"]}]
        for page in ec2.get_paginator("describe_instances").paginate(Filters=filters):
            for reservation in page["Reservations"]:
                for inst in reservation["Instances"]:
                    if (inst.get("InstanceLifecycle") == "spot") != spot_quota:
                        continue
                    if need.code not in self._codes(inst["InstanceType"], spot_quota):
                        continue
                    cpu = inst.get("CpuOptions", {})
                    total += cpu.get("CoreCount", 0) * cpu.get("ThreadsPerCore", 1)
        return total

    def _codes(self, instance_type: str, spot: bool) -> set[str]:
        group = vcpu_group(instance_type, self.table)
        if group is None:
            return set()
        key = group.spot_by_family.get(instance_family(instance_type), group.spot) if spot else group.on_demand
        return {self.table.quota(key).code} if key else set()

    def in_use(self, need: QuotaNeed) -> float | None:
        if need.service == "ec2" and need.unit == "vCPUs":
            return self.vcpus_in_use(need)
        count = COUNTS.get((need.service, need.unit))
        if count is None:
            return None
        service, call, key, kwargs = count
        return float(len(getattr(self.client_for(service, need.scope), call)(**kwargs)[key]))

    def read(self, need: QuotaNeed) -> QuotaStatus:
        limit = self.limit(need)
        return QuotaStatus(need, limit, self.in_use(need), "" if limit is not None else "Service Quotas has no value")

    def request(self, status: QuotaStatus) -> str:
        n = status.need
        return (
            f"aws service-quotas request-service-quota-increase --service-code {n.service} "
            f"--quota-code {n.code} --desired-value {status.desired} --region {n.scope}"
        )


# --- Google Cloud ---------------------------------------------------------------------------------

GetJson = Callable[[str], dict[str, Any]]
"""An authorised GET returning the JSON body (google-auth's session, or recorded responses)."""

COMPUTE = "https://compute.googleapis.com/compute/v1/projects/{project}"
CLOUD_QUOTAS = (
    "https://cloudquotas.googleapis.com/v1/projects/{project}/locations/global/services/{service}/quotaInfos/{quota}"
)


class GcpReader:
    """Compute Engine quotas from ``regions.get`` (``projects.get`` for global ones), with usage;
    Cloud TPU limits from Cloud Quotas ``quotaInfos`` (it reports no usage)."""

    def __init__(self, get_json: GetJson, project: str) -> None:
        self.get_json = get_json
        self.project = project
        self._compute: dict[str, dict[str, tuple[float, float]]] = {}

    def _compute_quotas(self, scope: str) -> dict[str, tuple[float, float]]:
        if scope not in self._compute:
            base = COMPUTE.format(project=self.project)
            body = self.get_json(base if scope == "global" else f"{base}/regions/{scope}")
            self._compute[scope] = {
                q["metric"]: (float(q["limit"]), float(q.get("usage", 0))) for q in body.get("quotas", [])
            }
        return self._compute[scope]

    def _tpu_limit(self, need: QuotaNeed) -> float | None:
        url = CLOUD_QUOTAS.format(project=self.project, service=need.service, quota=need.code)
        dimension = "zone" if need.code.endswith("PerZoneForTPUAPI") else "region"
        fallback = None
        for info in self.get_json(url).get("dimensionsInfos", []):
            value = info.get("details", {}).get("value")
            dims = info.get("dimensions", {})
            if value is None:
                continue
            if dims.get(dimension) == need.scope:
                return float(value)
            if not dims:
                fallback = float(value)  # the default for every zone or region without its own
        return fallback

    def read(self, need: QuotaNeed) -> QuotaStatus:
        if need.service == "tpu.googleapis.com":
            limit = self._tpu_limit(need)
            return QuotaStatus(need, limit, None, "Cloud Quotas reports no usage" if limit is not None else "no value")
        found = self._compute_quotas(need.scope).get(need.code)
        if found is None:
            return QuotaStatus(need, None, None, "not in the project's quota list")
        return QuotaStatus(need, found[0], found[1])

    def request(self, status: QuotaStatus) -> str:
        n = status.need
        return (
            f"https://console.cloud.google.com/iam-admin/quotas?project={self.project} "
            f"(service {n.service}, {n.code} in {n.scope}: ask for {status.desired})"
        )


def short_error(where: str, checked: Iterable[tuple[QuotaStatus, Reader]]) -> QuotaShort | None:
    """One line naming each short quota and the request that raises it; ``None`` when none is short."""
    short = [(s, r) for s, r in checked if s.short]
    if not short:
        return None
    what = "; ".join(
        f"{s.need.code} ({s.need.name}) in {s.need.scope}: needs {s.need.amount:g} {s.need.unit}, "
        f"limit {s.limit or 0:g}, in use {s.in_use or 0:g}"
        for s, _ in short
    )
    return QuotaShort(where, f"quota short: {what}", "request: " + "; ".join(r.request(s) for s, r in short))


# --- the caller's credentials ---------------------------------------------------------------------


def aws_reader(table: QuotaTable) -> AwsReader:
    """A reader on the default AWS credential chain; one line saying what is missing otherwise."""
    try:
        import boto3
    except ImportError:
        raise NoCredentials("AWS", "boto3 is not installed", "pip install 'fullserver[refresh]'") from None
    session = boto3.Session()
    if session.get_credentials() is None:
        raise NoCredentials(
            "AWS",
            "no credentials to read Service Quotas and EC2 with",
            "set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
        )
    clients: dict[tuple[str, str], Any] = {}

    def client_for(service: str, region: str) -> Any:
        if (service, region) not in clients:
            clients[service, region] = session.client(service, region_name=region)
        return clients[service, region]

    return AwsReader(client_for, table)


def gcp_reader(project: str | None) -> GcpReader:
    """A reader on Application Default Credentials over plain HTTPS (google-auth's session)."""
    if not project:
        raise NoCredentials("Google Cloud", "the stack sets no gcp:project", "set gcp:project in the stack file")
    try:
        import google.auth
        from google.auth.transport.requests import AuthorizedSession
    except ImportError:
        raise NoCredentials(
            "Google Cloud", "google-auth is not installed", "pip install 'fullserver[refresh]'"
        ) from None
    try:
        credentials, _ = google.auth.default(scopes=["https://www.googleapis.com/auth/cloud-platform"])
    except google.auth.exceptions.DefaultCredentialsError as exc:  # none: ephemeral goes on without
        raise NoCredentials(
            "Google Cloud",
            f"no Application Default Credentials to read Compute Engine and Cloud Quotas with ({scrub(str(exc))})",
            "run gcloud auth application-default login, or set GOOGLE_APPLICATION_CREDENTIALS",
        ) from None
    session = AuthorizedSession(credentials)  # type: ignore[no-untyped-call]  # google-auth is untyped

    def get_json(url: str) -> dict[str, Any]:
        response = session.get(url, timeout=30)
        response.raise_for_status()
        body: dict[str, Any] = response.json()
        return body

    return GcpReader(get_json, project)


def readers_for(needs: list[QuotaNeed], table: QuotaTable, gcp_project: str | None) -> dict[str, Reader]:
    """A reader for each cloud the needs are on (raises ``NoCredentials`` for a cloud it cannot read)."""
    makers: dict[str, Callable[[], Reader]] = {
        "aws": lambda: aws_reader(table),
        "gcp": lambda: gcp_reader(gcp_project),
    }  # each cloud's quota API, by provider key (``QuotaNeed.cloud``)
    clouds = {n.cloud for n in needs}
    return {cloud: make() for cloud, make in makers.items() if cloud in clouds}


def check_all(needs: list[QuotaNeed], readers: dict[str, Reader]) -> list[tuple[QuotaStatus, Reader]]:
    """Each need read by its cloud's reader."""
    return [(readers[n.cloud].read(n), readers[n.cloud]) for n in needs]
