"""The balanced set on AWS: the spot group and its on-demand fallback both take every type of the
set, the fallback in on-demand price order (``prioritized``), in subnets of every zone offering any."""

from __future__ import annotations

from typing import Any

import pulumi_aws as aws
import pytest

from components.aws.args import aws_args
from components.aws.environment import AwsGpuEnvironment
from tests.components.conftest import Build, Plans, spec_of


def test_both_groups_take_the_whole_set_the_fallback_cheapest_on_demand_first(plans: Plans, build: Build) -> None:
    spec = spec_of(plans, "exp-aws-l4-spot")
    assert spec.capacity is not None and spec.capacity.machine_types == ["g6.2xlarge", "g6.4xlarge"]
    g = build(lambda: AwsGpuEnvironment("l4", aws_args(spec)))
    groups = {r.name: r.inputs for r in g.of_type("autoscaling/group:Group")}
    spot, ondemand = groups["l4-spot"]["mixedInstancesPolicy"], groups["l4-ondemand"]["mixedInstancesPolicy"]
    assert [o["instanceType"] for o in spot["launchTemplate"]["overrides"]] == ["g6.2xlarge", "g6.4xlarge"]
    assert spot["instancesDistribution"] == {
        "onDemandBaseCapacity": 0,
        "onDemandPercentageAboveBaseCapacity": 0,
        "spotAllocationStrategy": "price-capacity-optimized",
    }
    # g6.2xlarge $0.98/h before g6.4xlarge $1.32/h on demand: the order is the priority
    assert [o["instanceType"] for o in ondemand["launchTemplate"]["overrides"]] == ["g6.2xlarge", "g6.4xlarge"]
    assert ondemand["instancesDistribution"] == {
        "onDemandAllocationStrategy": "prioritized",
        "onDemandBaseCapacity": 0,
        "onDemandPercentageAboveBaseCapacity": 100,
    }
    lt_spec = ondemand["launchTemplate"]["launchTemplateSpecification"]
    lt = g.one("ec2/launchTemplate:LaunchTemplate")
    assert lt_spec["launchTemplateId"] == f"{lt.name}-id" and lt_spec["version"]
    assert "launchTemplate" not in groups["l4-ondemand"]  # one of launch_template / mixed_instances_policy
    assert len(groups["l4-ondemand"]["vpcZoneIdentifiers"]) == 3


def test_the_fallback_order_is_on_demand_price_not_the_spot_ranking(plans: Plans) -> None:
    spec = spec_of(plans, "exp-aws-l4-spot")
    assert spec.capacity is not None
    dearer_first = [m.model_copy(update={"on_demand_usd_hour": 9.0 - i}) for i, m in enumerate(spec.capacity.members)]
    held = spec.capacity.model_copy(update={"members": dearer_first})
    args = aws_args(spec.model_copy(update={"capacity": held}))
    assert args["spot_instance_types"] == ["g6.4xlarge"]
    assert args["fallback_instance_types"] == ["g6.4xlarge", "g6.2xlarge"]


def test_subnets_go_to_zones_offering_any_type_of_the_set(
    plans: Plans, build: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The offerings look-up lists every type of the set (a filter's values are ORed): a zone
    offering only another member still gets a subnet."""
    asked: list[Any] = []
    real = aws.ec2.get_instance_type_offerings_output

    def spy(**kwargs: Any) -> Any:
        asked.append(kwargs["filters"])
        return real(**kwargs)

    monkeypatch.setattr(aws.ec2, "get_instance_type_offerings_output", spy)
    spec = spec_of(plans, "exp-aws-l4-spot")
    g = build(lambda: AwsGpuEnvironment("l4", aws_args(spec)))
    assert asked == [[{"name": "instance-type", "values": ["g6.2xlarge", "g6.4xlarge"]}]]
    zones = sorted(s.inputs["availabilityZone"] for s in g.of_type("ec2/subnet:Subnet") if "public" in s.name)
    assert zones == ["us-east-1a", "us-east-1b", "us-east-1c"]


def test_on_demand_nodes_stay_single_instances_of_the_chosen_type(plans: Plans, build: Build) -> None:
    spec = spec_of(plans, "exp-aws-spot")
    assert spec.capacity is not None and not spec.capacity.used
    g = build(lambda: AwsGpuEnvironment("od", aws_args(spec)))
    assert g.of_type("autoscaling/group:Group") == []
    assert len(g.of_type("ec2/instance:Instance")) == 1
