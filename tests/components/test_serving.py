"""Serving groups: GCP template + regional MIG + autoscaler + health check; AWS ASG + GPU target tracking."""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import pytest

from components.args import SpecRefused, aws_args, gcp_args
from components.aws_gpu import AwsGpuEnvironment
from components.gcp_gpu import GcpGpuEnvironment
from components.graph import graph_for_plan
from fullserver.catalog import Catalog, Offer
from fullserver.platform import Platform
from tests.components.conftest import Build, Plans, spec_of


class ZonedCatalog:
    """The real catalog, with zones listed for one shape (the shipped data lists none for GCP GPUs)."""

    def __init__(self, catalog: Catalog, shape: str, zones: tuple[str, ...]) -> None:
        self._catalog, self._shape, self._zones = catalog, shape, zones

    def offer(self, name: str) -> Offer | None:
        offer = self._catalog.offer(name)
        if offer is not None and name == self._shape:
            return dataclasses.replace(offer, zones=self._zones)
        return offer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._catalog, name)


def test_gcp_realtime_serving_is_a_regional_group_spread_over_zones(plans: Plans, build: Build) -> None:
    g = build(lambda: GcpGpuEnvironment("srv", gcp_args(spec_of(plans, "serve-gcp-realtime"))))
    tmpl = g.one("compute/instanceTemplate:InstanceTemplate").inputs
    assert tmpl["machineType"] == "g2-standard-12"
    assert tmpl["scheduling"]["provisioningModel"] == "STANDARD"
    assert [d.get("type") for d in tmpl["disks"]] == [None, "SCRATCH"]
    assert tmpl["disks"][1]["interface"] == "NVME"
    assert tmpl["networkInterfaces"][0].get("accessConfigs") in (None, [])
    mig = g.one("compute/regionInstanceGroupManager:RegionInstanceGroupManager").inputs
    assert mig["distributionPolicyTargetShape"] == "BALANCED" and mig["region"] == "us-central1"
    assert mig["autoHealingPolicies"]["initialDelaySec"] == 900
    policy = g.one("compute/regionAutoscaler:RegionAutoscaler").inputs["autoscalingPolicy"]
    assert (policy["minReplicas"], policy["maxReplicas"]) == (2, 8)
    assert policy["metrics"] == [{"name": "agent.googleapis.com/gpu/utilization", "target": 60, "type": "GAUGE"}]
    hc = g.one("compute/healthCheck:HealthCheck").inputs
    assert hc["httpHealthCheck"] == {"port": 8000, "requestPath": "/health"}
    health_fw = next(r for r in g.of_type("compute/firewall:Firewall") if r.name == "srv-health").inputs
    assert health_fw["sourceRanges"] == ["130.211.0.0/22", "35.191.0.0/16"]
    assert g.of_type("compute/instance:Instance") == []


def test_aws_serving_is_an_auto_scaling_group_across_three_zones(plans: Plans, build: Build) -> None:
    spec = spec_of(
        plans,
        "serve-gcp-realtime",
        platform=Platform.AWS_GPU,
        offer="g6.xlarge",
        machine_type="g6.xlarge",
        zone=None,
        region="us-east-1",
        local_nvme_disks=0,
        boot_disk_kind="gp3",
    )
    g = build(lambda: AwsGpuEnvironment("asg", aws_args(spec)))
    group = g.one("autoscaling/group:Group").inputs
    assert (group["minSize"], group["maxSize"]) == (2, 8)
    assert len(group["vpcZoneIdentifiers"]) == 3
    subnets = {r.inputs["availabilityZone"] for r in g.of_type("ec2/subnet:Subnet") if "private" in r.name}
    assert subnets == {"us-east-1a", "us-east-1b", "us-east-1c"}
    tracking = g.one("autoscaling/policy:Policy").inputs["targetTrackingConfiguration"]
    assert tracking["targetValue"] == 60
    assert tracking["customizedMetricSpecification"]["metricName"] == "nvidia_smi_utilization_gpu"
    assert "networkInterfaces" in g.one("ec2/launchTemplate:LaunchTemplate").inputs
    assert "subnetId" not in g.one("ec2/launchTemplate:LaunchTemplate").inputs["networkInterfaces"][0]
    policies = {
        r.inputs["policyArn"].rsplit("/", 1)[-1] for r in g.of_type("iam/rolePolicyAttachment:RolePolicyAttachment")
    }
    assert policies == {"AmazonSSMManagedInstanceCore", "CloudWatchAgentServerPolicy"}


def test_gcp_serving_group_spreads_over_the_catalogs_zones_of_the_region(
    plans: Plans, catalog: Catalog, build: Build
) -> None:
    zones = ("us-central1-a", "us-central1-b", "us-central1-c", "europe-west4-a")
    zoned = cast(Catalog, ZonedCatalog(catalog, "g2-standard-12", zones))
    args = gcp_args(spec_of(plans, "serve-gcp-realtime"), zoned)
    assert args.get("serving", {}).get("zones") == ["us-central1-a", "us-central1-b", "us-central1-c"]
    mig = build(lambda: GcpGpuEnvironment("srv", args)).one(
        "compute/regionInstanceGroupManager:RegionInstanceGroupManager"
    )
    assert mig.inputs["distributionPolicyZones"] == ["us-central1-a", "us-central1-b", "us-central1-c"]
    assert mig.inputs["updatePolicy"]["maxSurgeFixed"] == 3


def test_gcp_serving_group_without_known_zones_says_so(plans: Plans) -> None:
    """The shipped catalog does not source GCP GPU zones: Compute Engine picks them, and the plan warns."""
    g = graph_for_plan(plans["serve-gcp-realtime"])
    mig = g.one("compute/regionInstanceGroupManager:RegionInstanceGroupManager").inputs
    assert "distributionPolicyZones" not in mig and mig["updatePolicy"]["maxSurgeFixed"] == 3
    assert any("no zones are known for this shape in us-central1" in w for w in g.warnings), g.warnings


def test_gcp_serving_zones_outside_the_region_are_refused(plans: Plans) -> None:
    args = gcp_args(spec_of(plans, "serve-gcp-realtime"))
    args["serving"]["zones"] = ["us-central1-a", "us-east1-b"]
    with pytest.raises(SpecRefused, match=r"spec\.serving\.zones: zone us-east1-b is not in the region us-central1"):
        GcpGpuEnvironment("bad", args)
