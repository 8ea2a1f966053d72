"""AwsGpuEnvironment: launch template, EFA on p5, placement, volumes, spot fallback, refusals."""

from __future__ import annotations

import base64
from typing import Any

import pulumi
import pytest

from components.args import SpecRefused
from components.aws.args import aws_args
from components.aws.environment import AwsGpuEnvironment
from fullserver import billables
from fullserver.platforms import DiskKind, DiskLimits, aws
from fullserver.profiles import PricingModel
from fullserver.spec import DataDisk
from tests.components.conftest import Build, Plans, ResourceOpts, spec_of
from tests.core.test_stack_config import ED25519_KEY


def test_p5_cluster_has_32_efa_on_32_cards_placement_and_imdsv2(plans: Plans, build: Build) -> None:
    g = build(lambda: AwsGpuEnvironment("p5", aws_args(spec_of(plans, "train-p5-cluster"))))
    lt = g.one("ec2/launchTemplate:LaunchTemplate").inputs
    assert lt["instanceType"] == "p5.48xlarge"
    nics = lt["networkInterfaces"]
    assert len(nics) == 32
    assert [n["networkCardIndex"] for n in nics] == list(range(32))
    assert nics[0] == {**nics[0], "deviceIndex": 0, "interfaceType": "efa", "associatePublicIpAddress": "false"}
    assert {n["interfaceType"] for n in nics[1:]} == {"efa-only"}
    assert {n["deviceIndex"] for n in nics[1:]} == {0}
    assert all(n["subnetId"] == "p5-private-0-id" for n in nics)
    assert lt["placement"]["groupName"].startswith("p5-pg-")
    assert g.one("ec2/placementGroup:PlacementGroup").inputs["strategy"] == "cluster"
    assert lt["metadataOptions"]["httpTokens"] == "required"
    root = lt["blockDeviceMappings"][0]
    assert root["deviceName"] == "/dev/sda1"
    assert root["ebs"] == {"volumeType": "gp3", "volumeSize": 300, "encrypted": "true", "deleteOnTermination": "true"}
    assert len(lt["blockDeviceMappings"]) == 1  # no data volume: the core sized none
    assert lt["capacityReservationSpecification"] == {"capacityReservationPreference": "open"}
    assert "instanceMarketOptions" not in lt
    assert lt["imageId"].startswith("resolve:ssm:/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu")
    script = base64.b64decode(lt["userData"]).decode()
    assert 'SCRATCH_EXPECTED="${FULLSERVER_SCRATCH_EXPECTED:-8}"' in script and "mdadm --create" in script
    assert len(g.of_type("ec2/instance:Instance")) == 2
    sg = g.one("ec2/securityGroup:SecurityGroup").inputs
    assert not [r for r in sg["ingress"] if r.get("fromPort") == 22]  # no SSH ranges: SSM only
    assert any(r.get("self") for r in sg["ingress"]) and any(r.get("self") for r in sg["egress"])
    assert g.one("ec2/natGateway:NatGateway")
    assert g.outputs["connect"].startswith("aws ssm start-session --region us-east-1 --target ")
    tags = g.one("ec2/vpc:Vpc").inputs["tags"]
    assert tags["fullserver-owner"] == "foundation-models" and tags["Name"] == "p5-vpc"


def test_single_gpu_has_public_ssh_from_ranges_and_an_encrypted_gp3_volume(plans: Plans, build: Build) -> None:
    g = build(lambda: AwsGpuEnvironment("exp", aws_args(spec_of(plans, "exp-aws-spot"))))
    lt = g.one("ec2/launchTemplate:LaunchTemplate").inputs
    assert lt["networkInterfaces"] == [
        {
            "deviceIndex": 0,
            "networkCardIndex": 0,
            "associatePublicIpAddress": "true",
            "subnetId": "exp-public-0-id",
            "securityGroups": ["exp-sg-id"],
            "deleteOnTermination": "true",
        }
    ]
    vol = g.one("ebs/volume:Volume").inputs
    assert vol == {**vol, "type": "gp3", "size": 63, "encrypted": True}
    assert g.one("ec2/volumeAttachment:VolumeAttachment").inputs["deviceName"] == "/dev/sdf"
    # ranges but no keys: nothing logs in over SSH, so port 22 stays closed (Session Manager)
    ssh = [r for r in g.one("ec2/securityGroup:SecurityGroup").inputs["ingress"] if r.get("fromPort") == 22]
    assert ssh == [] and g.outputs["nodes"][0]["via"] == "ssm"
    assert g.outputs["connect"].startswith("aws ssm start-session")
    keyed = spec_of(plans, "exp-aws-spot")
    keyed = keyed.model_copy(update={"network": keyed.network.model_copy(update={"ssh_public_keys": [ED25519_KEY]})})
    g_keys = build(lambda: AwsGpuEnvironment("exp", aws_args(keyed)))
    ssh = [r for r in g_keys.one("ec2/securityGroup:SecurityGroup").inputs["ingress"] if r.get("fromPort") == 22]
    assert ssh[0]["cidrBlocks"] == ["203.0.113.0/24"] and g_keys.outputs["nodes"][0]["via"] == "ssh"
    assert g.of_type("ec2/natGateway:NatGateway") == []
    assert g.of_type("autoscaling/group:Group") == []  # no spot price published: on-demand


def test_spot_runs_a_spot_group_with_an_on_demand_fallback(plans: Plans, build: Build) -> None:
    spec = spec_of(plans, "exp-aws-spot", spot=True)
    g = build(lambda: AwsGpuEnvironment("sp", aws_args(spec)))
    groups = {r.name: r.inputs for r in g.of_type("autoscaling/group:Group")}
    spot, ondemand = groups["sp-spot"], groups["sp-ondemand"]
    dist = spot["mixedInstancesPolicy"]["instancesDistribution"]
    assert dist["onDemandPercentageAboveBaseCapacity"] == 0 and dist["onDemandBaseCapacity"] == 0
    assert spot["minSize"] == spot["maxSize"] == 1 and spot["capacityRebalance"] is True
    assert ondemand["desiredCapacity"] == 0 and ondemand["maxSize"] == 1
    alarm = g.one("cloudwatch/metricAlarm:MetricAlarm").inputs
    assert alarm["metricName"] == "GroupInServiceInstances" and alarm["comparisonOperator"] == "LessThanThreshold"
    policies = {r.name: r.inputs["scalingAdjustment"] for r in g.of_type("autoscaling/policy:Policy")}
    assert policies == {"sp-fallback-on": 1, "sp-fallback-off": 0}
    lt = g.one("ec2/launchTemplate:LaunchTemplate").inputs
    assert "instanceMarketOptions" not in lt  # an ASG refuses spot market options in its template
    assert lt["capacityReservationSpecification"] == {"capacityReservationPreference": "none"}
    assert [m["deviceName"] for m in lt["blockDeviceMappings"]] == ["/dev/sda1", "/dev/sdf"]
    assert g.of_type("ec2/instance:Instance") == []


def test_spot_groups_spread_over_the_zones_offering_the_type_and_never_hold_up_up(plans: Plans, build: Build) -> None:
    """A spot shortage must not fail `up` (an ASG waits 10 minutes for capacity by default, then
    fails the update before the fallback's alarm exists), and spot capacity is looked for in every
    zone that offers the type, not one."""
    spec = spec_of(plans, "exp-aws-spot", spot=True)
    decided = billables.decide(spec)
    assert decided.zones == 3
    spec = spec.model_copy(update={"billables": decided})
    g = build(lambda: AwsGpuEnvironment("sp", aws_args(spec)))
    groups = {r.name: r.inputs for r in g.of_type("autoscaling/group:Group")}
    assert {name: group["waitForCapacityTimeout"] for name, group in groups.items()} == {
        "sp-spot": "0",
        "sp-ondemand": "0",
    }
    assert len(groups["sp-spot"]["vpcZoneIdentifiers"]) == len(groups["sp-ondemand"]["vpcZoneIdentifiers"]) == 3
    assert len(g.of_type("ec2/subnet:Subnet")) == 3


def test_a_spot_group_in_a_cluster_placement_group_stays_in_its_one_zone(plans: Plans) -> None:
    spec = spec_of(plans, "train-p5-cluster", spot=True)
    assert spec.network.compact_placement and billables.decide(spec).zones == 1


def test_reserved_pricing_targets_a_configured_capacity_block(
    plans: Plans, build: Build, resource_options: ResourceOpts
) -> None:
    """The block places its capacity itself (no cluster placement group of ours), and a node is
    replaced by freeing its reserved slot first: the block has no slot for a second copy."""
    # A reservation lives in one zone (fullserver.platforms.base.reservation_needs_zone).
    spec = spec_of(
        plans, "train-p5-cluster", reservation="cr-0123456789abcdef0", capacity_block=True, zone="us-east-1a"
    )
    g = build(lambda: AwsGpuEnvironment("cb", aws_args(spec)))
    lt = g.one("ec2/launchTemplate:LaunchTemplate").inputs
    assert lt["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0123456789abcdef0"}
    }
    assert lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    assert "placement" not in lt and not g.of_type("ec2/placementGroup:PlacementGroup")
    nodes = g.of_type("ec2/instance:Instance")
    assert len(nodes) == spec.nodes == 2
    assert all(resource_options[n.name].delete_before_replace for n in nodes)


def test_on_demand_nodes_outside_a_reservation_keep_pulumis_create_first_replacement(
    plans: Plans, build: Build, resource_options: ResourceOpts
) -> None:
    g = build(lambda: AwsGpuEnvironment("od", aws_args(spec_of(plans, "train-p5-cluster"))))
    assert g.of_type("ec2/placementGroup:PlacementGroup")
    assert not any(resource_options[n.name].delete_before_replace for n in g.of_type("ec2/instance:Instance"))


def test_a_public_address_is_refused_beside_several_efa_cards(plans: Plans) -> None:
    spec = plans["train-p5-cluster"].spec
    spec = spec.model_copy(update={"network": spec.network.model_copy(update={"public_ip": True})})
    with pytest.raises(SpecRefused, match=r"spec\.security\.public_ip: EC2 gives no public address at launch"):
        AwsGpuEnvironment("bad", aws_args(spec))


def test_provisioned_gp3_iops_and_throughput(plans: Plans, build: Build) -> None:
    spec = spec_of(plans, "exp-aws-spot", data_disk=DataDisk(kind="gp3", size_gib=500, iops=6000, throughput_mbps=500))
    vol = build(lambda: AwsGpuEnvironment("io", aws_args(spec))).one("ebs/volume:Volume").inputs
    assert (vol["iops"], vol["throughput"], vol["size"]) == (6000, 500, 500)


def test_refuses_efa_on_a_shape_without_it(plans: Plans) -> None:
    spec = plans["exp-aws-spot"].spec
    spec = spec.model_copy(update={"nodes": 2, "network": spec.network.model_copy(update={"efa_interfaces": 1})})
    with pytest.raises(
        SpecRefused, match=r"spec\.network\.efa_interfaces: 1 EFA interfaces requested but g4dn\.xlarge has none"
    ):
        AwsGpuEnvironment("bad", aws_args(spec))


def test_refuses_more_local_ssds_than_the_shape_has(plans: Plans) -> None:
    with pytest.raises(
        SpecRefused, match=r"spec\.local_nvme_disks: 9 local SSDs requested but p5\.48xlarge has at most 8"
    ):
        AwsGpuEnvironment("bad", aws_args(spec_of(plans, "train-p5-cluster", local_nvme_disks=9)))


def test_refuses_gp3_throughput_above_its_iops(plans: Plans) -> None:
    spec = spec_of(plans, "exp-aws-spot", data_disk=DataDisk(kind="gp3", size_gib=100, iops=3000, throughput_mbps=1000))
    with pytest.raises(SpecRefused, match=r"spec\.data_disk\.throughput_mbps: gp3 takes 125-1000 MiB/s"):
        AwsGpuEnvironment("bad", aws_args(spec))


def test_refuses_open_ssh(plans: Plans) -> None:
    spec = plans["exp-aws-spot"].spec
    spec = spec.model_copy(update={"network": spec.network.model_copy(update={"ssh_source_ranges": ["::/0"]})})
    with pytest.raises(SpecRefused, match=r"::/0 would open SSH to the whole internet"):
        AwsGpuEnvironment("bad", aws_args(spec))


def test_refuses_a_reservation_on_spot(plans: Plans) -> None:
    spec = spec_of(plans, "exp-aws-spot", spot=True, reservation="cr-1", pricing=PricingModel.SPOT_WITH_FALLBACK)
    with pytest.raises(SpecRefused, match=r"spec\.reservation: spot capacity cannot consume a capacity reservation"):
        AwsGpuEnvironment("bad", aws_args(spec))


def test_gp3_limits_are_the_cores_disk_limits(plans: Plans, build: Build, monkeypatch: pytest.MonkeyPatch) -> None:
    """One place for gp3 limits: the component refuses by fullserver.platforms.aws's, whatever they say."""
    disk = DataDisk(kind="gp3", size_gib=500, iops=6000, throughput_mbps=500)
    ok = build(lambda: AwsGpuEnvironment("ok", aws_args(spec_of(plans, "exp-aws-spot", data_disk=disk))))
    assert ok.one("ebs/volume:Volume").inputs["iops"] == 6000  # within today's limits
    tighter = DiskLimits(3_000, 5_000, 500, 125, 1_000, 0.25)
    monkeypatch.setitem(aws.DISKS, "gp3", DiskKind("gp3", 16_384, tighter))
    with pytest.raises(SpecRefused, match=r"spec\.data_disk\.iops: gp3 takes 3000-5000 IOPS at 500 GiB, not 6000"):
        AwsGpuEnvironment("bad", aws_args(spec_of(plans, "exp-aws-spot", data_disk=disk)))


def test_an_image_the_plan_would_refuse_is_refused_by_the_component_in_the_same_words(plans: Plans) -> None:
    with pytest.raises(SpecRefused, match=r"spec\.image: 'not-an-ami' is not an AMI id or a Systems Manager parameter"):
        AwsGpuEnvironment("bad", aws_args(spec_of(plans, "exp-aws-spot", image="not-an-ami")))


def test_the_boot_volume_kind_comes_from_the_spec(plans: Plans) -> None:
    with pytest.raises(SpecRefused, match=r"spec\.boot_disk_kind: AWS boot volumes are gp3, not pd-balanced"):
        AwsGpuEnvironment("bad", aws_args(spec_of(plans, "exp-aws-spot", boot_disk_kind="pd-balanced")))


def test_protected_nodes_keep_their_launch_template_version(
    plans: Plans, build: Build, resource_options: ResourceOpts
) -> None:
    """An instance's launch_template is replace-only in the AWS provider: following a new template
    version would replace protected nodes, so they pin the version they launched with."""
    g = build(lambda: AwsGpuEnvironment("p5", aws_args(spec_of(plans, "train-p5-cluster"))))
    lt = g.one("ec2/launchTemplate:LaunchTemplate").inputs
    assert lt["updateDefaultVersion"] is True
    for node in g.of_type("ec2/instance:Instance"):
        assert node.inputs["launchTemplate"] == {"id": "p5-lt-id", "version": "1"}  # the version at launch
        opts = resource_options[node.name]
        assert opts.protect is True and opts.ignore_changes == ["launch_template"], node.name
    assert resource_options["p5-lt"].ignore_changes is None  # the template itself follows every edit


def test_spot_fallback_nodes_are_protected_from_scale_in(plans: Plans, build: Build) -> None:
    """When spot returns (alarm OK) the on-demand group goes back to zero without killing running jobs."""
    g = build(lambda: AwsGpuEnvironment("sp", aws_args(spec_of(plans, "exp-aws-spot", spot=True))))
    groups = {r.name: r.inputs for r in g.of_type("autoscaling/group:Group")}
    assert groups["sp-ondemand"]["protectFromScaleIn"] is True
    assert "protectFromScaleIn" not in groups["sp-spot"]
    alarm = g.one("cloudwatch/metricAlarm:MetricAlarm").inputs
    assert alarm["okActions"] == ["arn:aws:autoscaling::123456789012:sp-fallback-off"]


def _after(opts: pulumi.ResourceOptions) -> list[str]:
    """The logical names of the resources ``opts`` makes a resource wait for."""
    depends_on: Any = opts.depends_on or []
    return sorted(str(d._name) for d in depends_on)


def test_public_subnet_nodes_wait_for_their_route_to_the_internet_gateway(
    plans: Plans, build: Build, resource_options: ResourceOpts
) -> None:
    """A node in a public subnet (a public address, no NAT) launched before the subnet's route to
    the internet gateway exists cannot fetch anything on its only user-data run."""
    g = build(lambda: AwsGpuEnvironment("pub", aws_args(spec_of(plans, "exp-aws-spot", spot=False))))
    (node,) = g.of_type("ec2/instance:Instance")
    assert not g.of_type("ec2/natGateway:NatGateway")  # the node's subnet is a public one
    association = g.one("ec2/routeTableAssociation:RouteTableAssociation")
    assert association.name == "pub-public-0"
    rt = next(r for r in g.of_type("ec2/routeTable:RouteTable") if r.name == "pub-public-rt").inputs
    assert rt["routes"][0]["cidrBlock"] == "0.0.0.0/0" and rt["routes"][0]["gatewayId"]
    assert _after(resource_options[node.name]) == ["pub-public-0"]


def test_spot_groups_and_private_nodes_wait_for_their_subnets_routes(
    plans: Plans, build: Build, resource_options: ResourceOpts
) -> None:
    g = build(lambda: AwsGpuEnvironment("sp", aws_args(spec_of(plans, "exp-aws-spot", spot=True))))
    routes = sorted(r.name for r in g.of_type("ec2/routeTableAssociation:RouteTableAssociation"))
    for group in g.of_type("autoscaling/group:Group"):
        assert _after(resource_options[group.name]) == routes, group.name
    p5 = build(lambda: AwsGpuEnvironment("p5", aws_args(spec_of(plans, "train-p5-cluster"))))
    private = sorted(
        r.name for r in p5.of_type("ec2/routeTableAssociation:RouteTableAssociation") if "-private-" in r.name
    )
    assert private
    for node in p5.of_type("ec2/instance:Instance"):
        assert _after(resource_options[node.name]) == private
