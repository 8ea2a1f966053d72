"""AWS: what fullserver asks Amazon Web Services, one place for every platform on it (EC2, EKS).

Price refresh sources (the Price List Bulk API, EC2's spot and instance-type APIs, the Savings
Plans files), the quota reader (Service Quotas and EC2, ``GetServiceQuota`` then the default on
``NoSuchResourceException``), the AWS CLI's install hint, the offline graph's answers for
pulumi-aws and its table rows, and the compute types the policies watch.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from fullserver.clouds import graph_text, mock
from fullserver.clouds.base import Cloud, MockSession, PriceRefresh, RefreshSource
from fullserver.platforms.quota import QuotaNeed, QuotaTable
from fullserver.platforms.quota.aws import instance_family, vcpu_group
from fullserver.quotacheck import NoCredentials, QuotaStatus

if TYPE_CHECKING:
    from fullserver.catalog import Offer
    from fullserver.catalog.refresh.ask import Ask
    from fullserver.catalog.refresh.rows import Fetched

KEY = "aws"

# --- price refresh (``fullserver catalog refresh --provider``) ------------------------------------


def _home(ask: Ask) -> str:
    from fullserver.catalog.refresh import aws

    return aws.home_region(ask.where, ask.extra[0] if ask.extra else None)


def _on_demand(ask: Ask) -> Fetched:
    from fullserver.catalog.refresh import aws

    return aws.fetch(ask.data, ask.where, ask.opener, ask.today)


def _types(ask: Ask) -> Fetched:
    from fullserver.catalog.refresh import ec2

    clients = ask.ec2_client_for or ec2.boto3_client_for("aws-types", "ec2:DescribeInstanceTypes")
    return ec2.fetch_types(ask.data, _home(ask), clients(_home(ask)), ask.now or dt.datetime.now(dt.UTC))


def _savings_plans(ask: Ask) -> Fetched:
    from fullserver.catalog.refresh import savings_plans

    return savings_plans.fetch(ask.data, _home(ask), ask.opener, ask.today)


def _spot(ask: Ask) -> Fetched:
    from fullserver.catalog.refresh import ec2

    clients = ask.ec2_client_for or ec2.boto3_client_for("aws-spot", "ec2:DescribeSpotPriceHistory")
    return ec2.fetch_spot(ask.data, ask.where, clients, ask.now or dt.datetime.now(dt.UTC))


def _offer_refresh(offer: Offer, spot: bool) -> str:
    return "aws-spot" if spot else "aws"


def _commitments(source: str) -> str:
    """Reserved and Savings Plans discounts are refreshed (the Price List's reserved terms, the
    Savings Plans files)."""
    from fullserver.catalog.refresh import savings_plans

    return "aws-savings-plans" if source == savings_plans.SOURCE_KEY else "aws"


PRICE_REFRESH = PriceRefresh(
    _offer_refresh,
    "aws",
    lambda: frozenset({"gp3"}),
    commitments=_commitments,
    machines=lambda machine: "aws",  # the Price List's EC2 offer prices every instance type
)
"""The EC2 offer (on-demand, gp3, reserved terms) and the EC2 API's spot prices; the
AWSDataTransfer offer (egress) is not mapped."""

# --- quota reader (``fullserver quota``) ----------------------------------------------------

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


# --- the offline graph ------------------------------------------------------------------------

_DIRECTIONS = {
    "north": "n",
    "south": "s",
    "east": "e",
    "west": "w",
    "central": "c",
    "northeast": "ne",
    "northwest": "nw",
    "southeast": "se",
    "southwest": "sw",
}


def zone_ids(region: str) -> list[str]:
    """Zone ids as AWS spells them for ``region`` (``us-east-1`` -> ``use1-az1``; ``eu-central-1`` ->
    ``euc1-az1``), so a graph for any region reads like that region's own answer."""
    geo, direction, number = [*region.split("-"), "", ""][:3]
    short = f"{geo}{_DIRECTIONS.get(direction, direction[:1])}{number}"
    return [f"{short}-az{i}" for i in (1, 2, 3)]


MOCK_DEFAULT_VPC = "vpc-default"


def _mock_outputs(typ: str, name: str, inputs: dict[str, Any], out: dict[str, Any], m: MockSession) -> None:
    """What pulumi-aws computes for a resource: its ARN, and the few outputs the components read."""
    out["arn"] = f"arn:aws:{typ.split(':')[1].split('/')[0]}::{mock.ACCOUNT_NUMBER}:{name}"
    if typ == "aws:ec2/launchTemplate:LaunchTemplate":
        out["latestVersion"] = 1
        nics = inputs.get("networkInterfaces") or [{}]
        m.notes[f"public:{name}-id"] = nics[0].get("associatePublicIpAddress") == "true"
    elif typ == "aws:ec2/instance:Instance":
        out["privateIp"] = m.next_ip("10.80.128")
        out["availabilityZone"] = str(inputs.get("availabilityZone") or f"{m.aws_region}a")
        template = str((inputs.get("launchTemplate") or {}).get("id", ""))
        out["publicIp"] = m.next_ip("54.0.0") if m.notes.get(f"public:{template}") else ""
        out["instanceState"] = "running"  # an instance launched and up
    elif typ == "aws:autoscaling/group:Group":
        out["name"] = inputs.get("name", name)
    elif typ == "aws:sqs/queue:Queue":  # a queue's URL: https://sqs.<region>.amazonaws.com/<account>/<name>
        out["url"] = f"https://sqs.{m.aws_region}.amazonaws.com/{mock.ACCOUNT_NUMBER}/{out['name']}"


def _subnets(region: str, args: Mapping[str, Any]) -> list[str]:
    """One subnet per zone of the region (``subnet-<zone id>``, zone ``<region>a`` first),
    narrowed by ``subnet-id`` and ``availability-zone`` filters as EC2 DescribeSubnets does."""
    by_zone = {f"{region}{z}": f"subnet-{i}" for z, i in zip("abc", zone_ids(region), strict=True)}
    found = list(by_zone.values())
    for f in args.get("filters") or []:
        values = list(f.get("values") or [])
        if f.get("name") == "subnet-id":
            found = [s for s in found if s in values]
        elif f.get("name") == "availability-zone":
            found = [s for s in found if any(by_zone.get(v) == s for v in values)]
    return found


def _subnet(region: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """A subnet by id, as EC2 DescribeSubnets gives it: ``subnet-<zone id>`` (``_subnets``' own) is in
    that zone; any other in the zone its last letter names (``subnet-0b``: ``<region>b``), else ``a``."""
    subnet = str(args.get("id") or "")
    names, ids = [f"{region}{z}" for z in "abc"], zone_ids(region)
    by_id = {f"subnet-{i}": n for n, i in zip(names, ids, strict=True)}
    zone = by_id.get(subnet) or (f"{region}{subnet[-1]}" if subnet[-1:] in ("a", "b", "c") else names[0])
    return {"id": subnet, "availabilityZone": zone, "availabilityZoneId": ids[names.index(zone)]}


def _offerings(region: str, args: Mapping[str, Any], m: MockSession) -> dict[str, Any]:
    """Every zone of the region offers every type (a test narrows this to check the choice)."""
    types = [v for f in args.get("filters") or [] for v in f.get("values", [])]
    offered = [z for z in (f"{region}{z}" for z in "abc") if z not in m.zones_without.get(tuple(types), ())]
    return {
        "id": region,
        "locations": offered,
        "locationTypes": ["availability-zone"] * len(offered),
        "instanceTypes": [types[0] if types else ""] * len(offered),
    }


def _cluster(region: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """An existing EKS cluster node groups join."""
    return {
        "name": args.get("name"),
        "endpoint": f"https://MOCK.gr7.{region}.eks.amazonaws.com",
        "certificateAuthorities": [{"data": mock.CA}],
        "vpcConfig": {
            "subnetIds": [f"subnet-{z}" for z in zone_ids(region)],
            "vpcId": "vpc-cluster",
            "clusterSecurityGroupId": "sg-cluster",
        },
    }


_INVOKES: dict[str, Callable[[str, Mapping[str, Any], MockSession], dict[str, Any]]] = {
    "aws:index/getAvailabilityZones:getAvailabilityZones": lambda r, a, m: {
        "names": [f"{r}{z}" for z in "abc"],
        "zoneIds": zone_ids(r),
    },
    "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings": _offerings,
    "aws:index/getPartition:getPartition": lambda r, a, m: {
        "partition": "aws",
        "dnsSuffix": "amazonaws.com",
        "id": "aws",
    },
    "aws:index/getCallerIdentity:getCallerIdentity": lambda r, a, m: {
        "accountId": mock.ACCOUNT_NUMBER,
        "arn": f"arn:aws:iam::{mock.ACCOUNT_NUMBER}:user/mock",
        "userId": "mock",
    },
    # the region's default VPC (no component reads it; a created EKS cluster builds its own)
    "aws:ec2/getVpc:getVpc": lambda r, a, m: {"id": MOCK_DEFAULT_VPC, "default": True, "cidrBlock": "172.31.0.0/16"},
    "aws:ec2/getSubnets:getSubnets": lambda r, a, m: {"id": r, "ids": _subnets(r, a)},
    "aws:ec2/getSubnet:getSubnet": lambda r, a, m: _subnet(r, a),
    "aws:eks/getCluster:getCluster": lambda r, a, m: _cluster(r, a),
    "aws:ssm/getParameter:getParameter": lambda r, a, m: {
        "name": a.get("name"),
        "value": mock.SECRET_VALUE,  # never a real key
        "type": "SecureString",
    },
}


def _mock_invoke(token: str, args: Mapping[str, Any], provider: object, m: MockSession) -> dict[str, Any] | None:
    answer = _INVOKES.get(token)
    return None if answer is None else answer(m.region_of(args, provider), args, m)


# --- the plan's graph table -------------------------------------------------------------------


def _nics(nics: list[dict[str, Any]]) -> str:
    efa = [n for n in nics if str(n.get("interfaceType", "")).startswith("efa")]
    if efa:
        cards = sorted(int(n.get("networkCardIndex", 0)) for n in efa)
        return f"{len(efa)} EFA (cards {cards[0]}-{cards[-1]})"
    return f"{len(nics)} NIC"


def _launch_template(i: dict[str, Any]) -> list[str]:
    parts = [i.get("instanceType", ""), f"image={i.get('imageId', '')}", _nics(i.get("networkInterfaces", []))]
    for m in i.get("blockDeviceMappings", []):
        e = m.get("ebs", {})
        extra = "".join(f" {k}={e[k]}" for k in ("iops", "throughput") if k in e)
        parts.append(
            f"{m.get('deviceName')} {e.get('volumeType')} {e.get('volumeSize')}GiB{extra} encrypted={e.get('encrypted')}"
        )
    parts.append(f"IMDS tokens={i.get('metadataOptions', {}).get('httpTokens')}")
    if i.get("placement"):
        parts.append("cluster placement")
    if i.get("instanceMarketOptions"):
        parts.append(f"market={i['instanceMarketOptions'].get('marketType')}")
    crs = i.get("capacityReservationSpecification", {})
    target = crs.get("capacityReservationTarget", crs.get("capacityReservationPreference"))
    parts.append(f"reservation={graph_text.fmt(target)}")
    return parts


def _security_group(i: dict[str, Any]) -> list[str]:
    parts = []
    for rule in i.get("ingress", []):
        src = rule.get("cidrBlocks") or ("self" if rule.get("self") else "")
        parts.append(f"in {rule.get('protocol')}:{rule.get('fromPort')} from {graph_text.fmt(src)}")
    return parts


def _autoscaling_group(i: dict[str, Any]) -> list[str]:
    parts = [f"min={i.get('minSize')} max={i.get('maxSize')}"]
    if i.get("mixedInstancesPolicy"):
        mix = i["mixedInstancesPolicy"].get("instancesDistribution") or {}
        on_demand = mix.get("onDemandPercentageAboveBaseCapacity")
        parts.append(f"on-demand, {mix.get('onDemandAllocationStrategy')}" if on_demand else "spot (0% on-demand)")
        overrides = i["mixedInstancesPolicy"].get("launchTemplate", {}).get("overrides") or []
        if overrides:
            parts.append("types=" + graph_text.fmt([o.get("instanceType") for o in overrides]))
    return parts


# --- the policy pack's resource types -----------------------------------------------------------

SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
SG_INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
INSTANCE = "aws:ec2/instance:Instance"
SPOT_REQUEST = "aws:ec2/spotInstanceRequest:SpotInstanceRequest"
SPOT_FLEET = "aws:ec2/spotFleetRequest:SpotFleetRequest"
VOLUME = "aws:ebs/volume:Volume"
VOLUME_ATTACHMENT = "aws:ec2/volumeAttachment:VolumeAttachment"
SUBNET = "aws:ec2/subnet:Subnet"
ASG = "aws:autoscaling/group:Group"


CLOUD = Cloud(
    key=KEY,
    title="AWS",
    sdk_module="pulumi_aws",
    own_modules=(
        "fullserver.catalog.refresh.aws",
        "fullserver.catalog.refresh.ec2",
        "fullserver.catalog.refresh.savings_plans",
        "fullserver.platforms.quota.aws",
        "fullserver.platforms.network.aws",
    ),
    refresh_sources={
        "aws": RefreshSource("aws.yaml", _on_demand, default=True),
        "aws-spot": RefreshSource("aws.yaml", _spot),
        "aws-types": RefreshSource("aws.yaml", _types),
        "aws-savings-plans": RefreshSource("aws.yaml", _savings_plans),
    },
    price_refresh=PRICE_REFRESH,
    quota_reader=lambda table, project: aws_reader(table),
    cli_install={"aws": "install the AWS CLI v2 (and, for Session Manager, its Session Manager plugin)"},
    graph_summaries={
        LAUNCH_TEMPLATE: _launch_template,
        VOLUME: graph_text.disk,
        SECURITY_GROUP: _security_group,
        ASG: _autoscaling_group,
    },
    graph_unlabelled=frozenset({SECURITY_GROUP}),
    policy_reader="policy.clouds.aws",
    bucket_scheme="s3",
    mock_outputs=_mock_outputs,
    mock_invoke=_mock_invoke,
    region_config="aws:region",
    compute_types=(LAUNCH_TEMPLATE, INSTANCE, SPOT_REQUEST, SPOT_FLEET, ASG),
)
