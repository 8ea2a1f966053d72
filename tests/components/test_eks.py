"""EksEnvironment under the mock runtime: a p5 EFA node group with a new cluster, spot with its
on-demand fallback scaling from zero on an existing cluster, IRSA, and the NodeConfig."""

from __future__ import annotations

import base64
import json
from typing import Any

import pulumi
import pulumi_aws
import pytest

from components.eks import EksEnvironment, autoscaler_tags, eks_args
from components.eks.network import control_plane_subnets, given_cluster_subnets, given_one_zone, subnet_zones
from components.graph import Graph, GraphMocks
from fullserver.billables import decide
from fullserver.kube import kube_plan
from fullserver.kube.manifest import fits_node, workload
from fullserver.naming import graph_problems
from fullserver.platform import Platform
from fullserver.platforms import eks
from tests.components.conftest import Build, Plans, spec_of

SUBNETS = ["subnet-0a", "subnet-0b"]


def groups(g: Graph) -> dict[str, dict[str, Any]]:
    """The GPU node groups (a created cluster's system group apart: ``system_group``)."""
    rows = g.of_type("eks/nodeGroup:NodeGroup")
    return {r.inputs["nodeGroupName"]: r.inputs for r in rows if r.inputs["amiType"] != eks.SYSTEM_AMI_TYPE}


def system_group(g: Graph) -> dict[str, Any] | None:
    found = [r.inputs for r in g.of_type("eks/nodeGroup:NodeGroup") if r.inputs["amiType"] == eks.SYSTEM_AMI_TYPE]
    assert len(found) <= 1
    return found[0] if found else None


def gpu_template(g: Graph) -> dict[str, Any]:
    """The GPU groups' launch template (a created cluster's system group has one of its own)."""
    (gpu,) = [t for t in g.of_type("ec2/launchTemplate:LaunchTemplate") if "system" not in t.name]
    return gpu.inputs


def node_config(g: Graph) -> dict[str, Any]:
    """The NodeConfig part of the launch template's MIME user data."""
    text = base64.b64decode(gpu_template(g)["userData"]).decode()
    assert text.startswith("MIME-Version: 1.0\r\nContent-Type: multipart/mixed;")
    part = text.split("Content-Type: application/node.eks.aws\r\n\r\n", 1)[1]
    return dict(json.loads(part.split(f"\r\n\r\n--{eks.MIME_BOUNDARY}--", 1)[0]))


def test_p5_efa_node_group_with_a_new_cluster(plans: Plans, build: Build) -> None:
    spec = spec_of(plans, "train-p5-cluster")
    plan = kube_plan(spec, Platform.EKS_GPU)
    g = build(lambda: EksEnvironment("p5", eks_args(plan, SUBNETS, "vpc-1", private_endpoint=True)))
    cluster = g.one("eks/cluster:Cluster").inputs
    assert cluster["name"] == "train-p5-cluster"
    assert cluster["vpcConfig"] == {
        "subnetIds": SUBNETS,
        "endpointPrivateAccess": True,
        "endpointPublicAccess": False,
    }
    assert cluster["accessConfig"] == {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": True}
    assert cluster["upgradePolicy"] == {"supportType": "STANDARD"}
    assert cluster["deletionProtection"] is True  # scale-training protects its environments
    assert g.one("eks/addon:Addon").inputs["addonName"] == "eks-pod-identity-agent"
    assert g.of_type("iam/openIdConnectProvider:OpenIdConnectProvider") == []
    policies = sorted(
        r.inputs["policyArn"].rsplit("/", 1)[-1] for r in g.of_type("iam/rolePolicyAttachment:RolePolicyAttachment")
    )
    assert policies == sorted(
        [
            "AmazonEKSClusterPolicy",
            "AmazonEKSWorkerNodePolicy",
            "AmazonEC2ContainerRegistryReadOnly",
            "AmazonEKS_CNI_Policy",
        ]
    )
    # The created cluster's untainted group, where CoreDNS runs (no GPU group tolerates it there).
    system = system_group(g)
    assert system is not None and system["nodeGroupName"] == "train-p5-cluster-system"
    assert system["instanceTypes"] == ["m6i.large"] and system["capacityType"] == "ON_DEMAND"
    assert system["scalingConfig"] == {"minSize": 1, "maxSize": 1, "desiredSize": 1}
    assert "taints" not in system and "diskSize" not in system  # EKS refuses diskSize beside a template
    # Its root volume as the plan prices it (20 GiB gp3, encrypted), from a template of its own.
    (row,) = [t for t in g.of_type("ec2/launchTemplate:LaunchTemplate") if "system" in t.name]
    assert system["launchTemplate"] == {"id": f"{row.name}-id", "version": "1"}
    template = row.inputs
    assert template["blockDeviceMappings"] == [
        {"deviceName": "/dev/xvda", "ebs": {"volumeSize": 20, "volumeType": "gp3", "encrypted": "true"}}
    ]
    assert template["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpTokens": "required",
        "httpPutResponseHopLimit": 1,
    }
    assert "userData" not in template and "imageId" not in template  # EKS bootstraps its own AMI
    assert system["subnetIds"] == SUBNETS and system["clusterName"] == "train-p5-cluster"
    (group,) = groups(g).values()
    assert group["nodeGroupName"] == "train-p5-cluster-gpu" and group["clusterName"] == "train-p5-cluster"
    assert group["amiType"] == "AL2023_x86_64_NVIDIA" and group["capacityType"] == "ON_DEMAND"
    assert group["instanceTypes"] == [spec.machine_type] == ["p5.48xlarge"]
    # Steady (persistent scale-training): fixed at the two planned nodes.
    assert group["scalingConfig"] == {"minSize": 2, "maxSize": 2, "desiredSize": 2}
    assert group["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    assert group["labels"]["fullserver-stage"] == "scale-training"
    # EFA and cluster placement: one zone of the given subnets (us-east-1a, the first offering p5)
    assert group["subnetIds"] == ["subnet-0a"] and "diskSize" not in group
    assert not any(k.startswith("k8s.io/cluster-autoscaler/node-template") for k in group["tags"])
    assert g.of_type("autoscaling/tag:Tag") == []
    # Launch template: 32 EFA interfaces (card 0 efa, the rest efa-only), cluster placement, RAID0.
    template = gpu_template(g)
    nics = template["networkInterfaces"]
    assert len(nics) == spec.network.efa_interfaces == 32
    assert nics[0]["interfaceType"] == "efa" and nics[0]["deviceIndex"] == 0 and nics[0]["networkCardIndex"] == 0
    assert {n["interfaceType"] for n in nics[1:]} == {"efa-only"}
    assert [n["networkCardIndex"] for n in nics] == list(range(32))
    assert all("subnetId" not in n for n in nics)  # the node group's subnets
    efa = g.one("ec2/securityGroup:SecurityGroup").inputs
    assert efa["ingress"] == [{"protocol": "-1", "fromPort": 0, "toPort": 0, "self": True}]
    assert g.one("ec2/placementGroup:PlacementGroup").inputs["strategy"] == "cluster"
    assert "groupName" in template["placement"]
    assert template["blockDeviceMappings"][0]["ebs"]["volumeSize"] == spec.boot_disk_gib
    assert template["metadataOptions"]["httpTokens"] == "required"
    # Hop limit 1, as managed node groups default: pods get credentials from Pod Identity, never
    # the node role through IMDS (EKS user guide, al2023.adoc).
    assert template["metadataOptions"]["httpPutResponseHopLimit"] == 1
    assert "imageId" not in template  # EKS picks the AMI from amiType and merges its NodeConfig
    config = node_config(g)
    assert config["kind"] == "NodeConfig"
    assert config["spec"]["instance"] == {"localStorage": {"strategy": "RAID0"}}
    # A p5.48xlarge's VPC CNI addresses 100 pods (its first network card's ENIs): 11 MiB each + 255
    assert config["spec"]["kubelet"]["config"] == {
        "maxPods": 100,
        "kubeReserved": {"cpu": "550m", "memory": "1355Mi", "ephemeral-storage": "1024Mi"},
    }
    assert fits_node(plan) and plan.pod.accelerators == 8
    assert graph_problems((r.type, r.name, r.inputs) for r in g.rows if r.custom) == []


def test_a_created_cluster_gets_private_subnets_behind_a_nat_gateway(plans: Plans, build: Build) -> None:
    """An EFA node (32 interfaces) gets no public IPv4 address, so a created cluster's nodes go into
    private subnets routed through one NAT gateway; the control plane takes subnets in two zones EKS
    accepts (us-east-1c is use1-az3 in the mocks, which EKS refuses); the EFA group keeps to the
    nodes' zone, where the NAT gateway is."""
    plan = kube_plan(spec_of(plans, "train-p5-cluster"), Platform.EKS_GPU)
    assert plan.zone is None and plan.compact_placement and plan.efa_interfaces == 32
    g = build(lambda: EksEnvironment("p5", eks_args(plan)))
    subnets = {r.name: r.inputs for r in g.of_type("ec2/subnet:Subnet")}
    assert sorted(subnets) == [f"p5-{k}-{i}" for k in ("private", "public") for i in range(eks.CLUSTER_ZONES)]
    for i, zone in enumerate(["us-east-1a", "us-east-1b", "us-east-1c"]):  # the nodes' zone first
        assert subnets[f"p5-private-{i}"]["availabilityZone"] == zone == subnets[f"p5-public-{i}"]["availabilityZone"]
        assert subnets[f"p5-private-{i}"]["tags"]["kubernetes.io/role/internal-elb"] == "1"
        assert subnets[f"p5-public-{i}"]["tags"]["kubernetes.io/role/elb"] == "1"
        assert "kubernetes.io/role/elb" not in subnets[f"p5-private-{i}"]["tags"]
        assert subnets[f"p5-private-{i}"]["mapPublicIpOnLaunch"] is False
    nat = g.one("ec2/natGateway:NatGateway").inputs
    assert nat["subnetId"] == "p5-public-0-id" and nat["allocationId"] == "p5-nat-ip-id"
    routes = {r.name: r.inputs for r in g.of_type("ec2/routeTable:RouteTable")}
    assert routes["p5-private-rt"]["routes"] == [{"cidrBlock": "0.0.0.0/0", "natGatewayId": "p5-nat-id"}]
    assert g.one("ec2/vpc:Vpc").inputs["enableDnsHostnames"] is True  # the private endpoint resolves in the VPC
    assert g.of_type("ec2/securityGroup:SecurityGroup")[0].name == "p5-efa"  # no unused nodes' group
    assert len(g.of_type("ec2/securityGroup:SecurityGroup")) == 1
    assert g.one("eks/cluster:Cluster").inputs["vpcConfig"]["subnetIds"] == [
        "p5-public-0-id",
        "p5-public-1-id",
        "p5-private-0-id",
        "p5-private-1-id",
    ]
    (group,) = groups(g).values()
    assert group["subnetIds"] == ["p5-private-0-id"]  # us-east-1a, the first offering zone
    system = system_group(g)
    assert system is not None and system["subnetIds"] == [f"p5-private-{i}-id" for i in range(eks.CLUSTER_ZONES)]
    # Billed exactly as built: one NAT gateway with its address, no node address, three zones.
    bill = decide(plans["train-p5-cluster"].spec.model_copy(update={"kube": plan, "platform": Platform.EKS_GPU}))
    assert (bill.nat, bill.nat_public_ips, bill.node_public_ips) == (True, 1, 0)
    assert bill.zones == eks.CLUSTER_ZONES == len(subnets) // 2
    assert len(g.of_type("ec2/eip:Eip")) == bill.nat_public_ips


def test_a_pinned_zone_leads_the_created_subnets(plans: Plans, build: Build) -> None:
    plan = kube_plan(spec_of(plans, "train-p5-cluster"), Platform.EKS_GPU).model_copy(update={"zone": "us-east-1c"})
    g = build(lambda: EksEnvironment("p5", eks_args(plan)))
    zones = [r.inputs["availabilityZone"] for r in g.of_type("ec2/subnet:Subnet") if "private" in r.name]
    assert zones == ["us-east-1c", "us-east-1a", "us-east-1b"]
    # use1-az3 (us-east-1c) is refused for the control plane; the nodes run there all the same.
    assert g.one("eks/cluster:Cluster").inputs["vpcConfig"]["subnetIds"] == [
        "p5-public-1-id",
        "p5-public-2-id",
        "p5-private-1-id",
        "p5-private-2-id",
    ]
    assert groups(g)["train-p5-cluster-gpu"]["subnetIds"] == ["p5-private-0-id"]


def test_subnet_zones_prefer_zones_offering_the_type() -> None:
    zones = ["r-a", "r-b", "r-c", "r-d"]
    assert subnet_zones("r", "p5.48xlarge", None, zones, ["r-c", "r-d"]) == ["r-c", "r-d", "r-a"]
    assert subnet_zones("r", "p5.48xlarge", "r-d", zones, ["r-c", "r-d"]) == ["r-d", "r-c", "r-a"]
    assert subnet_zones("r", "p5.48xlarge", None, ["r-a", "r-b"], ["r-b"]) == ["r-b", "r-a", "r-b"]
    with pytest.raises(ValueError, match=r"no available zone of r offers p5\.48xlarge"):
        subnet_zones("r", "p5.48xlarge", None, zones, [])


def test_control_plane_subnets_leave_out_refused_zones() -> None:
    names, ids = ["us-east-1a", "us-east-1b", "us-east-1c"], ["use1-az3", "use1-az1", "use1-az2"]
    pairs = [("s-a", "us-east-1a"), ("s-b", "us-east-1b"), ("s-c", "us-east-1c")]
    assert control_plane_subnets(pairs, names, ids) == ["s-b", "s-c"]
    with pytest.raises(ValueError, match="two zones it accepts"):
        control_plane_subnets(pairs[:2], names, ids)


def test_a_created_cluster_refuses_given_subnets_in_one_zone(plans: Plans, build: Build) -> None:
    """EKS CreateCluster takes subnets in at least two zones (network-reqs.adoc): one zone's, what
    EFA and placement once asked for, would fail ``pulumi up`` at the cluster, so preview stops."""
    plan = kube_plan(spec_of(plans, "train-p5-cluster"), Platform.EKS_GPU)
    with pytest.raises(
        pulumi.RunError, match=r"^subnet_ids: a created EKS cluster needs subnets in two or more zones"
    ) as err:
        build(lambda: EksEnvironment("p5", eks_args(plan, ["subnet-0a", "subnet-1a"], "vpc-1")))
    line = str(err.value)
    assert "\n" not in line and "us-east-1a (use1-az1)" in line and "pass subnets in two or more zones" in line


def test_given_subnets_in_two_zones_make_the_cluster_and_the_efa_group_keeps_to_one(
    plans: Plans, build: Build, mocks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each given subnet's zone is read through the environment's explicit provider; the cluster and
    the system group take them all, the EFA group those of the first zone offering p5."""
    seen: list[tuple[str, str]] = []
    original = GraphMocks.call

    def record(self: GraphMocks, args: Any) -> dict[str, Any]:
        seen.append((args.token, str(getattr(args, "provider", "") or "")))
        return original(self, args)

    monkeypatch.setattr(GraphMocks, "call", record)
    plan = kube_plan(spec_of(plans, "train-p5-cluster"), Platform.EKS_GPU)
    mocks.zones_without[("p5.48xlarge",)] = ("us-east-1a",)

    def environment() -> EksEnvironment:
        provider = pulumi_aws.Provider("use1", region="us-east-1")
        args = eks_args(plan, SUBNETS, "vpc-1")
        return EksEnvironment("p5", args, pulumi.ResourceOptions(providers=[provider]))

    try:
        g = build(environment)
    finally:
        mocks.zones_without.clear()
    assert g.one("eks/cluster:Cluster").inputs["vpcConfig"]["subnetIds"] == SUBNETS
    system = system_group(g)
    assert system is not None and system["subnetIds"] == SUBNETS
    (group,) = groups(g).values()
    assert group["subnetIds"] == ["subnet-0b"]  # us-east-1b: 1a offers no p5
    assert [t for t, _ in seen].count("aws:ec2/getSubnet:getSubnet") == len(SUBNETS)
    assert [token for token, provider in seen if token.startswith("aws:") and not provider] == []


def test_given_cluster_subnets_leave_out_refused_zones_and_name_the_zones() -> None:
    found = [("s-a", "us-east-1a", "use1-az1"), ("s-c", "us-east-1c", "use1-az3"), ("s-b", "us-east-1b", "use1-az2")]
    assert given_cluster_subnets(found) == ["s-a", "s-b"]
    with pytest.raises(pulumi.RunError, match=r"us-east-1a \(use1-az1\), us-east-1c \(use1-az3\)"):
        given_cluster_subnets(found[:2])  # use1-az3 is refused for a control plane
    assert given_one_zone(found, None, ["us-east-1c", "us-east-1b"], "p5") == ["s-c"]
    assert given_one_zone(found, "us-east-1b", [], "p5") == ["s-b"]
    with pytest.raises(pulumi.RunError, match=r"subnet_ids: none is in us-east-1d, the plan's zone"):
        given_one_zone(found, "us-east-1d", [], "p5")
    with pytest.raises(pulumi.RunError, match=r"subnet_ids: none of their zones .* offers p5"):
        given_one_zone(found, None, ["us-east-1d"], "p5")


def test_efa_node_group_joining_a_cluster_keeps_to_one_of_its_zones(plans: Plans, build: Build, mocks: Any) -> None:
    plan = kube_plan(spec_of(plans, "train-p5-cluster"), Platform.EKS_GPU, cluster="prod")
    mocks.zones_without[("p5.48xlarge",)] = ("us-east-1a",)
    try:
        g = build(lambda: EksEnvironment("p5", eks_args(plan)))
    finally:
        mocks.zones_without.clear()
    (group,) = groups(g).values()
    assert group["subnetIds"] == ["subnet-use1-az2"]  # us-east-1b: 1a offers no p5


def attached_cluster_in(monkeypatch: pytest.MonkeyPatch, subnet_ids: list[str]) -> list[tuple[str, str]]:
    """The attached cluster's own subnets narrowed to ``subnet_ids`` (the mock's span every zone;
    ``subnet-0b`` is in us-east-1b); returns every invoke made, as (token, provider)."""
    seen: list[tuple[str, str]] = []
    original = GraphMocks.call

    def call(self: GraphMocks, args: Any) -> dict[str, Any]:
        seen.append((args.token, str(getattr(args, "provider", "") or "")))
        answer = original(self, args)
        if args.token == "aws:eks/getCluster:getCluster":
            answer = {**answer, "vpcConfig": {**answer["vpcConfig"], "subnetIds": subnet_ids}}
        return answer

    monkeypatch.setattr(GraphMocks, "call", call)
    return seen


def test_an_attached_clusters_efa_group_keeps_to_a_zone_of_its_subnets(
    plans: Plans, build: Build, monkeypatch: pytest.MonkeyPatch
) -> None:
    """us-east-1a offers p5 but holds none of the cluster's subnets: the group takes the cluster's
    subnets of us-east-1b, the first offering zone that holds one, each read through the provider."""
    seen = attached_cluster_in(monkeypatch, ["subnet-0c", "subnet-use1-az2", "subnet-1b"])
    plan = kube_plan(spec_of(plans, "train-p5-cluster"), Platform.EKS_GPU, cluster="prod")

    def environment() -> EksEnvironment:
        provider = pulumi_aws.Provider("use1", region="us-east-1")
        return EksEnvironment("p5", eks_args(plan), pulumi.ResourceOptions(providers=[provider]))

    (group,) = groups(build(environment)).values()
    assert group["subnetIds"] == ["subnet-use1-az2", "subnet-1b"]
    assert [t for t, _ in seen].count("aws:ec2/getSubnet:getSubnet") == 3
    assert [token for token, provider in seen if token.startswith("aws:") and not provider] == []


def test_an_attached_clusters_efa_group_skips_an_offering_zone_without_its_subnets(
    plans: Plans, build: Build, mocks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    attached_cluster_in(monkeypatch, ["subnet-0a", "subnet-0c"])
    plan = kube_plan(spec_of(plans, "train-p5-cluster"), Platform.EKS_GPU, cluster="prod")
    mocks.zones_without[("p5.48xlarge",)] = ("us-east-1a",)
    try:
        g = build(lambda: EksEnvironment("p5", eks_args(plan)))
    finally:
        mocks.zones_without.clear()
    (group,) = groups(g).values()
    assert group["subnetIds"] == ["subnet-0c"]  # us-east-1b offers p5 but holds none of them


def test_an_attached_cluster_without_a_subnet_where_efa_nodes_can_run_stops_the_preview(
    plans: Plans, build: Build, mocks: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node group of no subnet would fail ``pulumi up``: the preview stops, one line that names
    the cluster, its zones, the instance type and the way out."""
    attached_cluster_in(monkeypatch, ["subnet-0b", "subnet-0c"])
    plan = kube_plan(spec_of(plans, "train-p5-cluster"), Platform.EKS_GPU, cluster="prod")
    mocks.zones_without[("p5.48xlarge",)] = ("us-east-1b", "us-east-1c")
    try:
        with pytest.raises(pulumi.RunError, match=r"^EKS cluster prod: nodes with EFA") as err:
            build(lambda: EksEnvironment("p5", eks_args(plan)))
    finally:
        mocks.zones_without.clear()
    line = str(err.value)
    assert "\n" not in line
    assert "none of its subnets' zones (us-east-1b, us-east-1c) offers p5.48xlarge" in line
    assert "pass subnet_ids (fullserver:subnets) of its VPC in one that does (us-east-1a)" in line
    pinned = plan.model_copy(update={"zone": "us-east-1a"})
    with pytest.raises(pulumi.RunError, match=r"pin fullserver:zone to one of those that offers p5\.48xlarge"):
        build(lambda: EksEnvironment("p5", eks_args(pinned)))


def test_a_group_without_efa_or_placement_spans_the_cluster_subnets(plans: Plans, build: Build) -> None:
    plan = kube_plan(spec_of(plans, "serve-aws-realtime"), Platform.EKS_GPU, cluster="prod")
    assert not plan.compact_placement and not plan.efa_interfaces
    g = build(lambda: EksEnvironment("s", eks_args(plan)))
    (group,) = groups(g).values()
    assert group["subnetIds"] == ["subnet-use1-az1", "subnet-use1-az2", "subnet-use1-az3"]


def test_spot_fallback_groups_scale_from_zero_on_an_existing_cluster(plans: Plans, build: Build) -> None:
    spec = spec_of(plans, "exp-aws-l4-spot")
    plan = kube_plan(spec, Platform.EKS_GPU, cluster="research")
    g = build(lambda: EksEnvironment("exp", eks_args(plan, SUBNETS, "vpc-1")))
    assert g.of_type("eks/cluster:Cluster") == [] and g.of_type("eks/addon:Addon") == []
    assert system_group(g) is None  # the existing cluster runs its own system pods
    found = groups(g)
    spot, fallback = found["exp-aws-l4-spot-spot"], found["exp-aws-l4-spot-ondemand"]
    assert spot["capacityType"] == "SPOT" and fallback["capacityType"] == "ON_DEMAND"
    # Spot diversifies over the balanced alternatives; the fallback runs the planned shape.
    assert spot["instanceTypes"] == ["g6.2xlarge", *(o.machine_type for o in spec.alternative_shapes)]
    assert fallback["instanceTypes"] == ["g6.2xlarge"]
    for group in (spot, fallback):
        assert group["clusterName"] == "research"
        assert group["scalingConfig"] == {"minSize": 0, "maxSize": 1, "desiredSize": 0}
        assert group["tags"]["k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu"] == "present:NoSchedule"
        assert group["tags"]["k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"] == "1"
        # the pod requests ephemeral storage too: without it in the template, a group at zero never grows
        ephemeral = group["tags"]["k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage"]
        assert ephemeral == f"{plan.node_allocatable.ephemeral_mib}Mi"
        assert plan.pod.resources.ephemeral_mib <= plan.node_allocatable.ephemeral_mib
        assert group["labels"]["fullserver-ttl-hours"] == "8"
    tags = g.of_type("autoscaling/tag:Tag")
    # On each group's Auto Scaling group: the node template (labels, taint, GPUs) and the discovery
    # tags the autoscaler's IAM condition requires, with the values it requires.
    assert len(tags) == 2 * len(autoscaler_tags(plan)) + 2 * 2
    assert {t.inputs["tag"]["key"] for t in tags} == set(autoscaler_tags(plan)) | {
        "k8s.io/cluster-autoscaler/enabled",
        "k8s.io/cluster-autoscaler/research",
    }
    values = {t.inputs["tag"]["key"]: t.inputs["tag"]["value"] for t in tags}
    assert values["k8s.io/cluster-autoscaler/enabled"] == "true"
    assert values["k8s.io/cluster-autoscaler/research"] == "owned"
    assert values["k8s.io/cluster-autoscaler/node-template/label/nvidia.com/gpu.present"] == "true"
    assert all(t.inputs["tag"]["propagateAtLaunch"] is False for t in tags)
    template = gpu_template(g)
    assert "networkInterfaces" not in template and "placement" not in template
    assert node_config(g)["spec"]["instance"] == {"localStorage": {"strategy": "RAID0"}}  # g6's NVMe
    storage, job = workload(plan, spec, image="trainer:1")
    pod = job["spec"]["template"]["spec"]
    # The VM's gp3 data disk is each pod's data volume: EBS CSI, encrypted (experimentation provisions
    # no IOPS or throughput, so gp3's baseline: none in the class).
    disk = spec.data_disk
    assert disk is not None and disk.kind == "gp3" and disk.iops is None and disk.throughput_mbps is None
    assert storage["kind"] == "StorageClass" and storage["provisioner"] == "ebs.csi.aws.com"
    assert storage["parameters"] == {"type": "gp3", "encrypted": "true"}
    claim = pod["volumes"][0]["ephemeral"]["volumeClaimTemplate"]["spec"]
    assert claim["storageClassName"] == storage["metadata"]["name"]
    assert claim["resources"] == {"requests": {"storage": f"{disk.size_gib}Gi"}}
    assert spot["labels"]["fullserver-pod-data-gib"] == str(disk.size_gib)
    assert spot["labels"]["fullserver-pod-data-kind"] == "gp3"  # the budget policy prices it by its kind
    assert "fullserver-pod-data-iops" not in spot["labels"]  # gp3's baseline: nothing provisioned above it
    assert any("Amazon EBS CSI driver" in w for w in plan.warnings)  # attached: no add-on built here
    # Not the instance type: the spot group may run any of its balanced alternatives.
    assert pod["nodeSelector"] == {"fullserver-environment": "exp-aws-l4-spot"}
    assert spot["labels"]["fullserver-environment"] == "exp-aws-l4-spot"
    assert pod["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["preference"] == {
        "matchExpressions": [{"key": "eks.amazonaws.com/capacityType", "operator": "In", "values": ["SPOT"]}]
    }
    requests = pod["containers"][0]["resources"]["requests"]
    assert requests["nvidia.com/gpu"] == "1" and requests == pod["containers"][0]["resources"]["limits"]
    assert fits_node(plan)


def test_irsa_creates_an_oidc_provider_instead_of_the_agent(plans: Plans, build: Build) -> None:
    plan = kube_plan(spec_of(plans, "serve-aws-realtime"), Platform.EKS_GPU)
    g = build(lambda: EksEnvironment("serve", eks_args(plan, SUBNETS, "vpc-1", identity="irsa")))
    assert g.of_type("eks/addon:Addon") == []
    oidc = g.one("iam/openIdConnectProvider:OpenIdConnectProvider").inputs
    assert oidc["clientIdLists"] == ["sts.amazonaws.com"]
    (group,) = groups(g).values()
    assert group["scalingConfig"] == {"minSize": 2, "maxSize": 8, "desiredSize": 2}  # the serving range
    assert g.one("eks/cluster:Cluster").inputs["vpcConfig"]["endpointPublicAccess"] is False  # no ranges: private


def test_desired_size_is_left_to_the_autoscaler(plans: Plans, build: Build, resource_options: Any) -> None:
    plan = kube_plan(spec_of(plans, "exp-aws-l4-spot"), Platform.EKS_GPU, cluster="c")
    build(lambda: EksEnvironment("ign", eks_args(plan, SUBNETS, "vpc-1")))
    assert resource_options["ign-spot"].ignore_changes == ["scalingConfig.desiredSize"]


def test_efa_nodes_on_an_existing_cluster_need_its_security_group(plans: Plans) -> None:
    plan = kube_plan(spec_of(plans, "train-p5-cluster"), Platform.EKS_GPU, cluster="prod")
    with pytest.raises(ValueError, match="cluster_security_group_id"):
        eks_args(plan, SUBNETS, "vpc-1")
    assert eks_args(plan, SUBNETS, "vpc-1", cluster_security_group_id="sg-1").get("cluster_security_group_id") == "sg-1"


def test_flex_start_is_gke_only(plans: Plans) -> None:
    from fullserver.errors import InputError

    with pytest.raises(InputError, match="flex-start"):
        kube_plan(spec_of(plans, "train-p5-cluster"), Platform.EKS_GPU, flex_start=True)


def test_deploy_workload_on_an_existing_cluster_reads_it(plans: Plans, build: Build) -> None:
    spec = spec_of(plans, "serve-aws-realtime")
    plan = kube_plan(spec, Platform.EKS_GPU, cluster="prod")
    manifests = workload(plan, spec)
    g = build(lambda: EksEnvironment("dw", eks_args(plan, SUBNETS, "vpc-1", workload=manifests, deploy_workload=True)))
    (provider,) = [r for r in g.rows if r.type == "pulumi:providers:kubernetes"]
    user = json.loads(provider.inputs["kubeconfig"])["users"][0]["user"]["exec"]
    assert user["command"] == "aws"
    assert user["args"] == ["eks", "get-token", "--cluster-name", "prod", "--region", "us-east-1", "--output", "json"]
    (group,) = [r for r in g.rows if r.type == "kubernetes:yaml/v2:ConfigGroup"]
    assert [o["kind"] for o in group.inputs["objs"]] == ["Deployment", "Service", "HorizontalPodAutoscaler"]
    assert g.of_type("eks/cluster:Cluster") == []  # still nothing of the cluster is touched


def test_the_kubernetes_token_is_asked_as_the_aws_profile_that_deploys(plans: Plans, build: Build) -> None:
    """A created cluster's creator is its only admin: with ``aws:profile``, the provider's token must
    come from that profile too, not from the shell's default credentials."""
    spec = spec_of(plans, "serve-aws-realtime")
    plan = kube_plan(spec, Platform.EKS_GPU, cluster="prod")
    manifests = workload(plan, spec)
    args = eks_args(plan, SUBNETS, "vpc-1", workload=manifests, deploy_workload=True, aws_profile="ml-deploy")
    g = build(lambda: EksEnvironment("dw", args))
    (provider,) = [r for r in g.rows if r.type == "pulumi:providers:kubernetes"]
    user = json.loads(provider.inputs["kubeconfig"])["users"][0]["user"]["exec"]
    assert user["args"][-2:] == ["--profile", "ml-deploy"]


def test_a_created_cluster_gets_the_ebs_csi_driver_for_the_pods_data_volumes(
    plans: Plans, build: Build, resource_options: Any
) -> None:
    """Pod Identity (the default): a role trusted by the Pod Identity service with the driver's managed
    policy, associated with the controller's service account through the add-on. The add-on waits
    for the untainted system group (its controller's node while every GPU group sits at zero: the
    provider's create fails an add-on that stays DEGRADED)."""
    plan = kube_plan(spec_of(plans, "exp-aws-l4-spot"), Platform.EKS_GPU)
    assert plan.data_volume is not None and not any("EBS CSI" in w for w in plan.warnings)
    assert all(p.min_nodes == 0 for p in plan.pools)
    g = build(lambda: EksEnvironment("vol", eks_args(plan, SUBNETS, "vpc-1")))
    waits = {d._name for d in resource_options["vol-ebs-csi"].depends_on or []}
    assert {"vol-system", "vol-pod-identity"} <= waits
    system = system_group(g)
    assert system is not None and system["scalingConfig"]["minSize"] == 1 and "taints" not in system
    addons = {r.inputs["addonName"]: r.inputs for r in g.of_type("eks/addon:Addon")}
    assert set(addons) == {"eks-pod-identity-agent", "aws-ebs-csi-driver"}
    ebs = addons["aws-ebs-csi-driver"]
    assert ebs["clusterName"] == plan.cluster_name
    (association,) = ebs["podIdentityAssociations"]
    assert association["serviceAccount"] == "ebs-csi-controller-sa"
    assert "serviceAccountRoleArn" not in ebs
    # The controller tolerates the GPU taint too (it runs on the system group), the node plugin every taint.
    assert json.loads(ebs["configurationValues"]) == {
        "controller": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
        "node": {"tolerateAllTaints": True},
    }
    (attachment,) = [r for r in g.of_type("iam/rolePolicyAttachment:RolePolicyAttachment") if "ebs-csi" in r.name]
    assert attachment.inputs["policyArn"] == "arn:aws:iam::aws:policy/service-role/AmazonEBSCSIDriverPolicy"
    (role,) = [r for r in g.of_type("iam/role:Role") if "ebs-csi" in r.name]
    trust = json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert trust["Action"] == ["sts:AssumeRole", "sts:TagSession"]
    assert role.inputs["tags"]["fullserver-environment"] == "exp-aws-l4-spot"


def test_with_irsa_the_ebs_csi_driver_role_trusts_the_clusters_oidc_provider(plans: Plans, build: Build) -> None:
    plan = kube_plan(spec_of(plans, "exp-aws-l4-spot"), Platform.EKS_GPU)
    g = build(lambda: EksEnvironment("vol", eks_args(plan, SUBNETS, "vpc-1", identity="irsa")))
    ebs = g.one("eks/addon:Addon").inputs
    assert ebs["addonName"] == "aws-ebs-csi-driver" and "podIdentityAssociations" not in ebs
    assert "serviceAccountRoleArn" in ebs
    (role,) = [r for r in g.of_type("iam/role:Role") if "ebs-csi" in r.name]
    statement = json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]
    assert statement["Action"] == "sts:AssumeRoleWithWebIdentity"
    (condition,) = statement["Condition"].values()
    subject = next(v for k, v in condition.items() if k.endswith(":sub"))
    assert subject == "system:serviceaccount:kube-system:ebs-csi-controller-sa"
    assert next(v for k, v in condition.items() if k.endswith(":aud")) == "sts.amazonaws.com"


def test_efa_nodes_in_given_subnets_of_an_attached_cluster_keep_its_vpc_and_group(plans: Plans, build: Build) -> None:
    """``fullserver:subnets`` on an attached cluster (subnets without their VPC): the VPC and the
    cluster's security group are read from the cluster; the subnets are the node groups' as given
    (the plan warns that EFA and a placement group need them in one zone)."""
    plan = kube_plan(spec_of(plans, "train-p5-cluster"), Platform.EKS_GPU, cluster="prod")
    given = ["subnet-use1-az2"]  # the mock's ids: one of the cluster's private subnets, say
    g = build(lambda: EksEnvironment("p5", eks_args(plan, given)))
    (group,) = groups(g).values()
    assert group["subnetIds"] == given
    assert g.one("ec2/securityGroup:SecurityGroup").inputs["vpcId"] == "vpc-cluster"
    template = gpu_template(g)
    assert all("sg-cluster" in nic["securityGroups"] for nic in template["networkInterfaces"])
    assert g.of_type("eks/cluster:Cluster") == []


def test_efa_nodes_on_a_created_cluster_get_the_efa_device_plugin(
    plans: Plans, build: Build, resource_options: Any
) -> None:
    plan = spec_of(plans, "eks-gpu-cluster").kube
    assert plan is not None and plan.efa_interfaces == 32
    g = build(lambda: EksEnvironment("p5", eks_args(plan)))
    releases = {r.inputs["chart"]: r for r in g.of_type("helm.sh/v3:Release")}
    efa = releases["aws-efa-k8s-device-plugin"]
    assert efa.inputs == {
        "compat": "true",  # pulumi-kubernetes' own input on every Release
        "name": "aws-efa-k8s-device-plugin",  # named after its chart: Helm refuses a generated name past 53
        "chart": "aws-efa-k8s-device-plugin",
        "version": "v0.5.30",
        "repositoryOpts": {"repo": "https://aws.github.io/eks-charts"},
        "namespace": "kube-system",
        "values": {
            # the chart's required node affinity, narrowed to the group's instance type
            "supportedInstanceLabels": {"keys": ["node.kubernetes.io/instance-type"], "values": ["p5.48xlarge"]},
            # the chart tolerates only CriticalAddonsOnly: the GPU taint is the group's
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "nodeSelector": {"fullserver-environment": "eks-gpu-cluster"},
        },
    }
    assert resource_options["p5-efa-device-plugin"].depends_on  # after the node groups exist
    # NVIDIA's plugin leaves /dev/infiniband to the EFA plugin (mofed detection off)
    assert releases["nvidia-device-plugin"].inputs["values"] == {
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "nodeSelector": {"nvidia.com/gpu.present": "true"},
        "mofedEnabled": False,
    }


def test_nodes_without_efa_get_no_efa_plugin_and_nvidia_keeps_its_defaults(plans: Plans, build: Build) -> None:
    plan = kube_plan(spec_of(plans, "exp-aws-l4-spot"), Platform.EKS_GPU)
    g = build(lambda: EksEnvironment("exp", eks_args(plan)))
    releases = {r.inputs["chart"]: r.inputs for r in g.of_type("helm.sh/v3:Release")}
    assert "aws-efa-k8s-device-plugin" not in releases
    assert "mofedEnabled" not in releases["nvidia-device-plugin"]["values"]


def test_the_workload_waits_on_the_ebs_csi_driver(plans: Plans, build: Build, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review of issue 33, major 3: destroy deletes the workload (its pods' volumes) before the
    driver that deletes those volumes, or EBS volumes stay behind, billed."""
    import pulumi_kubernetes as k8s

    seen: dict[str, Any] = {}
    original = k8s.yaml.v2.ConfigGroup.__init__

    def record(self: Any, name: str, *args: Any, **kwargs: Any) -> None:
        seen[name] = kwargs.get("opts")
        original(self, name, *args, **kwargs)

    monkeypatch.setattr(k8s.yaml.v2.ConfigGroup, "__init__", record)
    spec = spec_of(plans, "exp-aws-l4-spot")
    plan = kube_plan(spec, Platform.EKS_GPU)
    assert plan.data_volume is not None
    manifests = workload(plan, spec, image="train:1")
    build(lambda: EksEnvironment("vol", eks_args(plan, SUBNETS, "vpc-1", workload=manifests, deploy_workload=True)))
    assert "vol-ebs-csi" in {d._name for d in seen["vol-workload"].depends_on}


def test_a_group_at_zero_tells_the_autoscaler_every_resource_its_efa_pod_requests(plans: Plans) -> None:
    """An EFA pod also requests its node's interfaces and their huge pages: the template names them
    with the pod's own figures, so the autoscaler sees the pod fit a node it has not started yet."""
    plan = spec_of(plans, "eks-gpu-cluster").kube
    assert plan is not None and plan.pod.devices
    tags = autoscaler_tags(plan)
    template = "k8s.io/cluster-autoscaler/node-template/resources"
    assert {name: tags[f"{template}/{name}"] for name in plan.pod.devices} == plan.pod.devices
    assert tags[f"{template}/vpc.amazonaws.com/efa"] == str(plan.efa_interfaces) == "32"
