"""Every example stack is usable after its first real ``pulumi up``: the ``connect`` command it
exports works as printed, with what its resources allow (a key installed for the user it names, or
the Session Manager / IAP path open), and every cloud resource is created by an explicit provider
in the stack's own region (and project, and zone).

Each stack runs through the whole program (``components.program.main``) under the mock runtime,
as it is, with ``fullserver:sshPublicKeys``, and with keys and SSH ranges; the exported command is
parsed and checked against the inputs of the resources the stack registers, and so are the
``nodes`` / ``nodeGroups`` it exports (every node or group, with the way into it).
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
from typing import Any

import pytest

from components.args import SpecRefused
from components.aws.args import aws_args
from components.aws.environment import AwsGpuEnvironment
from components.aws.network import offering_zones
from components.gcp.args import gcp_args
from components.gcp.environment import GcpGpuEnvironment
from components.graph import Graph, GraphMocks, Row, graph_for_config
from components.startup import LOGIN_USER
from components.tpu.args import tpu_args
from components.tpu.environment import TpuVmEnvironment
from components.tpu.queued import TpuQueuedResourceProvider
from fullserver.capacity import CapacityMember, CapacitySet
from fullserver.clouds.gcp import MOCK_PROJECT as MOCK_GCP_PROJECT
from fullserver.platforms import aws as ec2
from fullserver.platforms import gcp as gce
from fullserver.platforms import tpu as cloud_tpu
from tests.components.conftest import STACKS, Build, Plans, ResourceOpts, rsa_4096_line, spec_of
from tests.components.test_program_config import _declared_defaults
from tests.core.test_stack_config import ED25519_KEY, stack_config

CLOUD_STACKS = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in STACKS.glob("Pulumi.*.yaml"))
# VM stacks: nodes reached over SSH, IAP or Session Manager. The Kubernetes node-pool stacks
# (gke-*, eks-*) are reached through their cluster (``connect`` is its credentials command) and
# take no SSH keys; test_kube_stacks.py covers them.
KUBE_STACKS = {"gke-gpu-attach", "gke-tpu-slice", "eks-gpu-cluster", "exp-eks-l4-karpenter", "serve-gke-l4"}
CLOUD_STACKS = [s for s in CLOUD_STACKS if s != "dedicated-h100" and s not in KUBE_STACKS]
SECOND_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOdxa8FJ42wwS51NSUShy8AnhcSqHlneQjBFh7l9eov/ second-person's key"
OFFICE = "198.51.100.0/24"
VARIANTS: dict[str, dict[str, Any]] = {
    "as-is": {},
    "keys": {"sshPublicKeys": [ED25519_KEY, SECOND_KEY]},
    "keys-and-ranges": {"sshPublicKeys": [ED25519_KEY], "sshSourceRanges": [OFFICE]},
}


def installed_keys(script: str) -> list[str]:
    """The keys a boot script adds to authorized_keys (each once: tests/components/test_startup.py
    runs that part of the script)."""
    body = script.split("<<'FULLSERVER_KEYS'\n", 1)[1]
    return body.split("\nFULLSERVER_KEYS\n", 1)[0].splitlines()


def _graph(stack: str, changes: dict[str, Any]) -> tuple[Graph, dict[str, Any]]:
    config = {**_declared_defaults(), **stack_config(stack, **changes)}
    return graph_for_config(stack, config, full=True), config


def _ssh_rules(g: Graph, network: str, tags: list[str]) -> list[dict[str, Any]]:
    """GCE ingress rules on ``network`` that admit tcp:22 to an instance with ``tags``."""
    out = []
    for rule in (r.inputs for r in g.of_type("compute/firewall:Firewall")):
        if rule["network"] != network or rule.get("direction", "INGRESS") != "INGRESS":
            continue
        if rule.get("targetTags") and not set(rule["targetTags"]) & set(tags):
            continue
        if any(a["protocol"] == "tcp" and "22" in (a.get("ports") or ["22"]) for a in rule["allows"]):
            out.append(rule)
    return out


def _gcp_sources(g: Graph, network: str, tags: list[str]) -> set[str]:
    return {src for rule in _ssh_rules(g, network, tags) for src in rule.get("sourceRanges", [])}


def _check_gcp_login(metadata: dict[str, str], user: str | None, keys: list[str]) -> None:
    """``user@`` in the command means the keys are that user's ``ssh-keys`` (OS Login off, as
    Compute Engine ignores ``ssh-keys`` under OS Login); no user means OS Login decides."""
    if user is None:
        assert metadata["enable-oslogin"] == "TRUE" and "ssh-keys" not in metadata
        return
    assert user == LOGIN_USER and keys
    assert metadata["enable-oslogin"] == "FALSE"
    assert metadata["ssh-keys"].split("\n") == [f"{LOGIN_USER}:{' '.join(k.split())}" for k in keys]


def _check_aws(g: Graph, connect: str, config: dict[str, Any]) -> str:
    region = config["fullserver:region"]
    keys = config.get("fullserver:sshPublicKeys") or []
    lt = g.one("ec2/launchTemplate:LaunchTemplate").inputs
    nic = lt["networkInterfaces"][0]
    # the nodes' security group (a serving stack adds its load balancer's, "-lb-sg")
    sg = next(r for r in g.of_type("ec2/securityGroup:SecurityGroup") if not r.name.endswith("-lb-sg")).inputs
    if connect.startswith("ssh "):
        user, ip = connect.split()[1].split("@")
        assert connect == f"ssh {user}@{ip}" and user == LOGIN_USER
        assert ip and ip == g.outputs["publicIps"][0]
        script = base64.b64decode(lt["userData"]).decode()
        for key in keys:  # the key is the user's, installed before the disks are waited for
            assert " ".join(key.split()) in installed_keys(script)
        assert script.index("authorized_keys") < script.index("fullserver-disks")
        assert f"getent passwd {LOGIN_USER}" in script
        assert nic["associatePublicIpAddress"] == "true"
        ssh = [r for r in sg["ingress"] if r.get("fromPort") == 22]
        assert ssh and set(ssh[0]["cidrBlocks"]) == set(config["fullserver:sshSourceRanges"])
        return "ssh"
    m = re.fullmatch(rf"aws ssm start-session --region {region} --target (.+)", connect)
    assert m, connect
    target = m.group(1)
    instances = g.of_type("ec2/instance:Instance")
    if instances:
        assert target == f"{instances[0].name}-id"  # the mock's id of the first node
    else:
        groups = [r.name for r in g.of_type("autoscaling/group:Group")]
        assert groups
        names = re.search(r"--auto-scaling-group-names ((?:\S+ )+)--query", target)
        assert names and sorted(names.group(1).split()) == sorted(groups), target  # every group's nodes
        assert target.startswith("$(aws autoscaling describe-auto-scaling-groups --region " + region)
        assert "LifecycleState=='InService'" in target and target.endswith("--output text)")
    # Session Manager: the agent registers with the role's policy and reaches SSM over 443.
    statements = [
        st for r in g.of_type("iam/rolePolicy:RolePolicy") for st in json.loads(r.inputs["policy"])["Statement"]
    ]
    assert {"Effect": "Allow", "Action": list(ec2.SESSION_MANAGER_ACTIONS), "Resource": "*"} in statements
    assert lt["iamInstanceProfile"]["arn"]
    # no node reads every parameter (AmazonSSMManagedInstanceCore's ssm:GetParameter on *)
    assert not any(
        a.startswith("ssm:GetParameter") and st["Resource"] == "*"
        for st in statements
        for a in st["Action"]
        if isinstance(st["Action"], list)
    )
    assert all(not (st["Action"] == "ssm:GetParameter" and st["Resource"] == "*") for st in statements)
    assert any(e["cidrBlocks"] == ["0.0.0.0/0"] and e["protocol"] == "-1" for e in sg["egress"])
    if nic["associatePublicIpAddress"] == "true":
        assert g.one("ec2/internetGateway:InternetGateway")
    else:
        private = next(r for r in g.of_type("ec2/routeTable:RouteTable") if r.name.endswith("-private-rt"))
        assert private.inputs["routes"][0]["natGatewayId"]
    return "ssm"


def _gcp_node(g: Graph) -> Row:
    nodes = g.of_type("compute/instance:Instance") or g.of_type("compute/instanceTemplate:InstanceTemplate")
    return nodes[0]


def _check_gcp(g: Graph, connect: str, config: dict[str, Any]) -> str:
    keys = config.get("fullserver:sshPublicKeys") or []
    ranges = config.get("fullserver:sshSourceRanges") or []
    node = _gcp_node(g)
    nic = node.inputs["networkInterfaces"][0]
    if connect.startswith("ssh "):
        user, ip = connect.split()[1].split("@")
        assert ip == g.outputs["publicIps"][0] and nic.get("accessConfigs")
        _check_gcp_login(node.inputs["metadata"], user, keys)
        assert set(ranges) <= _gcp_sources(g, nic["network"], node.inputs.get("tags", []))
        return "ssh"
    group = re.fullmatch(
        r"gcloud compute ssh (?:(\w+)@)?\$\(gcloud compute instance-groups managed list-instances (\S+) (--region|--zone) "
        r"(\S+) --project (\S+) --limit 1 --format=\"value\(instance\.basename\(\)\)\"\) --zone \$\(gcloud compute "
        r"instance-groups managed list-instances \2 \3 \4 --project \5 --limit 1 --format=\"value\(instance\.scope\("
        r"zones\)\.segment\(0\)\)\"\) --project \5( --tunnel-through-iap)?",
        connect,
    )
    if group:
        user, mig, scope, where, project, iap = group.groups()
        managers = g.of_type("nstanceGroupManager:RegionInstanceGroupManager") or g.of_type(
            "instanceGroupManager:InstanceGroupManager"
        )
        assert mig.startswith(managers[0].name) and project == config["gcp:project"]
        assert (scope, where) == ("--region", config["fullserver:region"]) or where == config.get("fullserver:zone")
    else:
        m = re.fullmatch(
            r"gcloud compute ssh (?:(\w+)@)?(\S+) --zone (\S+) --project (\S+)( --tunnel-through-iap)?", connect
        )
        assert m, connect
        user, instance, zone, project, iap = m.groups()
        assert instance.startswith(node.name) and zone == config["fullserver:zone"]
        assert project == config["gcp:project"]
    _check_gcp_login(node.inputs["metadata"], user, keys)
    sources = _gcp_sources(g, nic["network"], node.inputs.get("tags", []))
    if iap:
        assert gce.IAP_SSH_RANGE in sources
        return "iap"
    assert nic.get("accessConfigs") and ranges and set(ranges) <= sources
    return "direct"


def _check_tpu(g: Graph, connect: str, config: dict[str, Any]) -> str:
    keys = config.get("fullserver:sshPublicKeys") or []
    ranges = config.get("fullserver:sshSourceRanges") or []
    zone, project = config["fullserver:zone"], config["gcp:project"]
    network = g.one("compute/network:Network").name + "-id"
    sources = _gcp_sources(g, network, [])  # TPU rules carry no target tags: every host of the VPC
    queued = g.of_type("fullserver:TpuQueuedResource")
    if queued:
        m = re.fullmatch(
            rf"gcloud compute tpus queued-resources ssh (?:(\w+)@)?(\S+) --zone {zone} --project {project} "
            r"--node=0 --worker=0( --tunnel-through-iap)?  # SSH keys: (your sshPublicKeys \(--ssh-key-file .*\)|OS Login .*)",
            connect,
        )
        assert m, connect
        user, qr_name, iap, how = m.groups()
        assert qr_name.startswith(queued[0].name)
        _check_gcp_login(queued[0].inputs["tpu"]["nodeSpecs"][0]["node"]["metadata"], user, keys)
        assert how.startswith("your sshPublicKeys") == bool(keys)
        if iap:
            assert gce.IAP_SSH_RANGE in sources
        else:
            assert queued[0].inputs["tpu"]["nodeSpecs"][0]["node"]["networkConfig"]["enableExternalIps"]
            assert ranges and set(ranges) <= sources
        # the slice's own identity and the cleanup a destroy would run are exported too
        account = g.one("serviceaccount/account:Account").inputs["accountId"]
        node = queued[0].inputs["tpu"]["nodeSpecs"][0]["node"]
        assert (
            g.outputs["serviceAccount"]
            == node["serviceAccount"]["email"]
            == f"{account}@{MOCK_GCP_PROJECT}.iam.gserviceaccount.com"
        )
        assert g.outputs["cleanup"] == (
            f"gcloud compute tpus queued-resources delete {qr_name} --zone {zone} --project {project} --force --quiet"
        )
        return "queued"
    vm = g.one("tpu/v2Vm:V2Vm").inputs
    if connect.startswith("ssh "):
        user, ip = connect.split()[1].split("@")
        assert ip == g.outputs["publicIps"][0] and vm["networkConfig"]["enableExternalIps"] is True
        _check_gcp_login(vm["metadata"], user, keys)
        assert ranges and set(ranges) <= sources
        return "ssh"
    m = re.fullmatch(
        rf"gcloud (alpha )?compute tpus tpu-vm ssh (?:(\w+)@)?(\S+) --zone {zone} --project {project} --worker=0"
        r"( --tunnel-through-iap)?",
        connect,
    )
    assert m, connect
    alpha, user, node, iap = m.groups()
    assert node == vm["name"]
    assert bool(alpha) == bool(iap)  # only the alpha command tunnels through IAP
    _check_gcp_login(vm["metadata"], user, keys)
    if iap:
        assert gce.IAP_SSH_RANGE in sources
        return "iap"
    assert vm["networkConfig"]["enableExternalIps"] is True and ranges and set(ranges) <= sources
    return "direct"


CHECKS = {"aws-gpu": _check_aws, "gcp-gpu": _check_gcp, "tpu-vm": _check_tpu}


def _check_nodes(g: Graph, config: dict[str, Any]) -> None:
    """The ``nodes`` / ``nodeGroups`` exports agree with what the stack builds: every node or group
    of it, the addresses of ``privateIps``, direct SSH exactly where a public address is open to the
    configured ranges, and otherwise the platform's tunnel to that node (fullserver.nodes)."""
    nodes, groups = g.outputs["nodes"], g.outputs["nodeGroups"]
    platform, region = g.outputs["platform"], config["fullserver:region"]
    keys = bool(config.get("fullserver:sshPublicKeys"))
    ranges = bool(config.get("fullserver:sshSourceRanges"))
    tunnel = "ssm" if platform == "aws-gpu" else "iap"
    if g.of_type("fullserver:TpuQueuedResource"):
        assert nodes == [] and groups == []  # its workers are not known at deploy time
        return
    assert bool(nodes) != bool(groups)  # nodes this stack creates, or groups that create or name them
    # a TPU VM behind IAP carries its workers' addresses on its group row, in worker order
    assert [n["privateIp"] for n in nodes] + [ip for gr in groups for ip in gr["privateIps"]] == g.outputs["privateIps"]
    for node in nodes:
        assert node["user"] == LOGIN_USER and node["keys"] == keys
        # AWS nodes are logged into over SSH only with keys (fullserver sets no EC2 key pair)
        direct = ranges and node["publicIp"] and (keys or platform != "aws-gpu")
        assert node["via"] == ("ssh" if direct else tunnel), node
        if node["via"] == "ssh":
            assert node["proxyCommand"] == []
        elif platform == "aws-gpu":
            assert node["proxyCommand"] == ec2.ssm_proxy(node["name"], region)
        else:
            assert node["proxyCommand"] == gce.iap_proxy(node["name"], config["fullserver:zone"], config["gcp:project"])
    if platform == "aws-gpu":
        assert sorted(n["name"] for n in nodes) == sorted(f"{r.name}-id" for r in g.of_type("ec2/instance:Instance"))
    elif platform == "gcp-gpu":
        vms = g.of_type("compute/instance:Instance")
        assert len(nodes) == len(vms) and all(any(n["name"].startswith(vm.name) for vm in vms) for n in nodes)
    for group in groups:
        # an AWS spot group in public subnets, with keys and SSH ranges, is logged into directly
        # so is a GCP spot group (capvm) whose instance template gives its members a public address
        public_members = (
            platform == "aws-gpu"
            and any(
                nic.get("associatePublicIpAddress") == "true"
                for lt in g.of_type("ec2/launchTemplate:LaunchTemplate")
                for nic in lt.inputs.get("networkInterfaces", [])
            )
        ) or (
            platform == "gcp-gpu"
            and any(
                nic.get("accessConfigs")
                for t in g.of_type("compute/instanceTemplate:InstanceTemplate")
                for nic in t.inputs.get("networkInterfaces", [])
            )
        )
        direct = public_members and keys and ranges
        assert group["user"] == LOGIN_USER and group["keys"] == keys
        assert group["via"] == ("ssh" if direct else tunnel), group
        if platform == "aws-gpu":
            asgs = g.of_type("autoscaling/group:Group")
            assert len(group["groups"]) == len(asgs)  # the spot group and its fallback, or the serving group
            assert all(any(n.startswith(r.name) for r in asgs) for n in group["groups"])
            assert group["listCommand"] == ec2.group_list_command(group["groups"], region)
        elif platform == "tpu-vm":  # its workers' IAP instance names come from their guest attributes
            vm = g.one("tpu/v2Vm:V2Vm").inputs
            assert group["provider"] == "tpu" and group["groups"] == [vm["name"]] and group["zone"] == vm["zone"]
            assert group["listCommand"] == cloud_tpu.group_list_command(vm["name"], vm["zone"], config["gcp:project"])
        else:
            [mig] = g.of_type("nstanceGroupManager:RegionInstanceGroupManager") or g.of_type(
                "instanceGroupManager:InstanceGroupManager"
            )
            assert group["groups"][0].startswith(mig.name) and group["project"] == config["gcp:project"]
            assert group["listCommand"] == gce.group_list_command(
                mig.inputs["baseInstanceName"], region, config["gcp:project"]
            )


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("stack", CLOUD_STACKS)
def test_the_exported_connect_command_works_with_what_the_stack_builds(stack: str, variant: str) -> None:
    g, config = _graph(stack, VARIANTS[variant])
    platform = g.outputs["platform"]
    way = CHECKS[platform](g, g.outputs["connect"], config)
    _check_nodes(g, config)
    # With keys and SSH ranges, a node with a public address is reached directly as ubuntu.
    public = bool(g.outputs["publicIps"]) or any(
        r.inputs.get("networkConfig", {}).get("enableExternalIps") for r in g.of_type("tpu/v2Vm:V2Vm")
    )
    if variant == "keys-and-ranges" and public and not g.of_type("autoscaling/group:Group"):
        assert way == "ssh", g.outputs["connect"]
    if variant == "as-is" and platform != "aws-gpu":
        assert way in ("iap", "queued")  # no example stack sets SSH ranges on GCP


@pytest.mark.parametrize("stack", CLOUD_STACKS)
def test_every_cloud_resource_has_the_stacks_explicit_provider(stack: str) -> None:
    g, config = _graph(stack, {})
    providers = [r for r in g.rows if r.type.startswith("pulumi:providers:")]
    assert len(providers) == 1
    provider = providers[0]
    assert provider.inputs["region"] == config["fullserver:region"]
    cloud = [r for r in g.rows if r.custom and r.type.split(":")[0] in ("aws", "gcp")]
    assert cloud
    for row in cloud:
        assert g.provider_of(row) == provider.inputs, row.name
    if provider.type == "pulumi:providers:gcp":
        assert provider.inputs["project"] == config["gcp:project"]
        assert provider.inputs.get("zone") == (config.get("fullserver:zone") or None)
    # Who the nodes are, to grant them data: exported as docs/deploying.md says.
    if provider.type == "pulumi:providers:aws":
        assert g.outputs["instanceRole"] and g.outputs["instanceRoleArn"].startswith("arn:aws:iam::")
    else:
        assert g.outputs["serviceAccount"].endswith(".gserviceaccount.com")


def test_an_aws_provider_region_differs_from_aws_region_config() -> None:
    """``aws:region`` says nothing about where the environment goes: ``fullserver:region`` does."""
    g, _ = _graph("train-p5-cluster", {})
    config = {**_declared_defaults(), **stack_config("train-p5-cluster"), "aws:region": "eu-west-1"}
    other = graph_for_config("train-p5-cluster", config, full=True)
    assert [r.as_json() for r in other.rows] == [r.as_json() for r in g.rows]
    subnet = next(r for r in other.rows if r.name == "train-p5-cluster-private-0" and r.type.endswith("Subnet"))
    assert subnet.inputs["availabilityZone"].startswith("us-east-1")


# --- what a real API or a real destroy would reject -----------------------------------------------


def test_a_data_volume_detaches_from_a_stopped_instance_and_is_replaced_by_deleting_first(
    plans: Plans, build: Build, resource_options: ResourceOpts
) -> None:
    """A volume mounted at /data never detaches from a running instance (destroy hangs), and a
    second attachment of an in-use volume is refused (VolumeInUse)."""
    g = build(lambda: AwsGpuEnvironment("vol", aws_args(spec_of(plans, "exp-aws-spot"))))
    attachment = g.one("ec2/volumeAttachment:VolumeAttachment")
    assert attachment.inputs["stopInstanceBeforeDetaching"] is True
    assert "forceDetach" not in attachment.inputs  # never: it can lose data
    assert resource_options[attachment.name].delete_before_replace is True


def test_a_spot_group_diversifies_over_balanced_types_and_connect_covers_the_fallback(
    plans: Plans, build: Build
) -> None:
    # the balanced set (fullserver.capacity, capvm) replaced alternative_shapes
    members = [
        CapacityMember(offer=t, machine_type=t, vcpus=v, usd_hour=p, on_demand_usd_hour=p)
        for t, v, p in (("g4dn.xlarge", 4, 0.526), ("g4dn.2xlarge", 8, 0.752), ("g4dn.4xlarge", 16, 1.204))
    ]
    held = CapacitySet(band=0.1, members=members, used=True)
    spec = spec_of(plans, "exp-aws-spot", spot=True, capacity=held)
    args = aws_args(spec)
    assert args["spot_instance_types"] == ["g4dn.2xlarge", "g4dn.4xlarge"]
    assert args["fallback_instance_types"] == ["g4dn.xlarge", "g4dn.2xlarge", "g4dn.4xlarge"]
    g = build(lambda: AwsGpuEnvironment("sp", args))
    groups = {r.name: r.inputs for r in g.of_type("autoscaling/group:Group")}
    policy = groups["sp-spot"]["mixedInstancesPolicy"]
    assert policy["launchTemplate"]["overrides"] == [
        {"instanceType": "g4dn.xlarge"},
        {"instanceType": "g4dn.2xlarge"},
        {"instanceType": "g4dn.4xlarge"},
    ]
    assert policy["instancesDistribution"]["spotAllocationStrategy"] == "price-capacity-optimized"
    assert groups["sp-spot"]["capacityRebalance"] is True
    # the on-demand fallback takes the whole set too, cheapest on demand first (prioritized)
    fallback = groups["sp-ondemand"]["mixedInstancesPolicy"]
    assert [o["instanceType"] for o in fallback["launchTemplate"]["overrides"]] == args["fallback_instance_types"]
    connect = g.outputs["connect"]
    assert "--auto-scaling-group-names sp-spot sp-ondemand --query" in connect  # whichever runs the nodes
    # without alternatives the group still names its one type
    plain = build(lambda: AwsGpuEnvironment("one", aws_args(spec_of(plans, "exp-aws-spot", spot=True))))
    spot = next(r for r in plain.of_type("autoscaling/group:Group") if r.name == "one-spot").inputs
    assert spot["mixedInstancesPolicy"]["launchTemplate"]["overrides"] == [{"instanceType": "g4dn.xlarge"}]


def test_subnets_go_only_to_zones_that_offer_the_instance_type(plans: Plans, build: Build, mocks: GraphMocks) -> None:
    mocks.zones_without[("p5.48xlarge",)] = ("us-east-1a",)
    try:
        g = build(lambda: AwsGpuEnvironment("p5", aws_args(spec_of(plans, "train-p5-cluster"))))
    finally:
        mocks.zones_without.clear()
    zones = {r.name: r.inputs["availabilityZone"] for r in g.of_type("ec2/subnet:Subnet")}
    assert zones == {"p5-public-0": "us-east-1b", "p5-private-0": "us-east-1b"}


def test_no_zone_offering_the_type_stops_the_deployment() -> None:
    with pytest.raises(ValueError, match=r"no available zone of us-east-1 offers p5\.48xlarge"):
        offering_zones("us-east-1", "p5.48xlarge", ["us-east-1a", "us-east-1b"], ["us-east-1f"])
    assert offering_zones(
        "us-east-1", "t", ["us-east-1a", "us-east-1b", "us-east-1c"], ["us-east-1c", "us-east-1a"]
    ) == [
        "us-east-1a",
        "us-east-1c",
    ]


def test_a_queued_slice_is_replaced_by_deleting_first_and_names_its_forced_delete(
    plans: Plans, build: Build, resource_options: ResourceOpts
) -> None:
    args = tpu_args(spec_of(plans, "train-tpu-v5p-slice"), project="proj")
    g = build(lambda: TpuVmEnvironment("v5p", args))
    qr = g.one("fullserver:TpuQueuedResource")
    assert qr.inputs["project"] == "proj" and qr.inputs["zone"] == "us-east5-a"
    assert qr.inputs["name"] == "v5p-qr"
    opts = resource_options["v5p-qr"]
    assert opts.delete_before_replace is True  # a new request would name the same TPU node
    assert opts.protect is args["protect"]
    assert g.outputs["cleanup"] == (
        "gcloud compute tpus queued-resources delete v5p-qr --zone us-east5-a --project proj --force --quiet"
    )


QUEUED_PROPS: dict[str, Any] = {
    "project": "p",
    "zone": "us-east5-a",
    "name": "qr-1",
    "tpu": {
        "nodeSpecs": [
            {
                "parent": "projects/p/locations/us-east5-a",
                "nodeId": "slice-tpu",
                "node": {
                    "runtimeVersion": "v2-alpha-tpuv5",
                    "acceleratorType": "v5p-128",
                    "description": "fullserver slice",
                    "networkConfig": {"network": "net-id", "subnetwork": "subnet-id", "enableExternalIps": False},
                    "serviceAccount": {"email": "fs-slice@p.iam.gserviceaccount.com", "scope": ["s1", "s2"]},
                    "labels": {"fullserver-profile": "training", "fullserver-environment": "slice"},
                    "metadata": {
                        "enable-oslogin": "FALSE",
                        "block-project-ssh-keys": "TRUE",
                        "ssh-keys": "ubuntu:ssh-ed25519 AAAAC3Nz one@laptop\nubuntu:ssh-ed25519 AAAAC3Nz two@desk",
                    },
                },
            }
        ]
    },
}


def test_a_queued_slice_is_created_and_force_deleted_with_the_documented_commands(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[list[str]] = []

    def run(command: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        calls.append(command)
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr("components.tpu.queued.shutil.which", lambda _: "/usr/bin/gcloud")
    monkeypatch.setattr("components.tpu.queued.subprocess.run", run)
    props = QUEUED_PROPS
    provider = TpuQueuedResourceProvider()
    assert provider.create(props).id == "p/us-east5-a/qr-1"
    provider.delete("p/us-east5-a/qr-1", props)
    assert calls == [
        ["gcloud", "compute", "tpus", "queued-resources", "create", "qr-1", "--zone", "us-east5-a", "--project", "p",
         "--node-id", "slice-tpu", "--accelerator-type", "v5p-128", "--runtime-version", "v2-alpha-tpuv5",
         "--description", "fullserver slice", "--network", "net-id", "--subnetwork", "subnet-id", "--internal-ips",
         "--service-account", "fs-slice@p.iam.gserviceaccount.com", "--scopes", "s1,s2",
         "--labels", "fullserver-environment=slice,fullserver-profile=training",
         "--metadata", "^;^block-project-ssh-keys=TRUE;enable-oslogin=FALSE;"
         "ssh-keys=ubuntu:ssh-ed25519 AAAAC3Nz one@laptop\nubuntu:ssh-ed25519 AAAAC3Nz two@desk", "--quiet"],
        ["gcloud", "compute", "tpus", "queued-resources", "delete", "qr-1", "--zone", "us-east5-a", "--project", "p",
         "--force", "--quiet"],
    ]  # fmt: skip
    # already gone: nothing to do; another failure stops the destroy with the command to run
    monkeypatch.setattr(
        "components.tpu.queued.subprocess.run",
        lambda c, **_: subprocess.CompletedProcess(c, 1, "", "ERROR: NOT_FOUND: qr-1"),
    )
    provider.delete("p/us-east5-a/qr-1", props)
    with pytest.raises(RuntimeError, match=r"--labels .* --quiet` failed: ERROR: NOT_FOUND"):
        provider.create(props)  # a create that finds no network is a failure, not "done"
    monkeypatch.setattr(
        "components.tpu.queued.subprocess.run",
        lambda c, **_: subprocess.CompletedProcess(c, 1, "", "PERMISSION_DENIED"),
    )
    with pytest.raises(RuntimeError, match=r"--force --quiet` failed: PERMISSION_DENIED"):
        provider.delete("p/us-east5-a/qr-1", props)
    monkeypatch.setattr("components.tpu.queued.shutil.which", lambda _: None)
    with pytest.raises(RuntimeError, match=r"not on this machine: run `gcloud compute tpus queued-resources delete"):
        provider.delete("p/us-east5-a/qr-1", props)
    # every change replaces the request (the API has no update for a queued resource), deleting first
    relabelled = {**props, "tpu": {"nodeSpecs": [{**props["tpu"]["nodeSpecs"][0], "nodeId": "other"}]}}
    diff = provider.diff("id", props, relabelled)
    assert diff.replaces == ["tpu"] and diff.delete_before_replace is True
    assert provider.diff("id", props, dict(props)).changes is False
    # but new keys alone are kept for the next request: a slice capacity was found for is not given up
    node = props["tpu"]["nodeSpecs"][0]["node"]
    rekeyed = {**props, "tpu": {"nodeSpecs": [{**props["tpu"]["nodeSpecs"][0], "node": {**node, "metadata": {}}}]}}
    kept = provider.diff("id", props, rekeyed)
    assert kept.changes is True and kept.replaces == []
    # any other field of the node is a new request
    relabelled = {**props, "tpu": {"nodeSpecs": [{**props["tpu"]["nodeSpecs"][0], "node": {**node, "labels": {}}}]}}
    assert provider.diff("id", props, relabelled).replaces == ["tpu"]
    # the running node gets the new metadata; a request still waiting keeps the one it was made with
    calls.clear()
    monkeypatch.setattr("components.tpu.queued.shutil.which", lambda _: "/usr/bin/gcloud")
    monkeypatch.setattr("components.tpu.queued.subprocess.run", run)
    assert provider.update("id", props, rekeyed).outs == rekeyed
    assert calls == [
        ["gcloud", "alpha", "compute", "tpus", "tpu-vm", "update", "slice-tpu", "--zone", "us-east5-a", "--project", "p",
         "--remove-metadata", "block-project-ssh-keys,enable-oslogin,ssh-keys", "--quiet"],
    ]  # fmt: skip
    monkeypatch.setattr(
        "components.tpu.queued.subprocess.run",
        lambda c, **_: subprocess.CompletedProcess(c, 1, "", "ERROR: NOT_FOUND: slice-tpu"),
    )
    waiting = provider.update("id", props, rekeyed).outs or {}
    assert waiting["tpu"]["nodeSpecs"][0]["node"]["metadata"] == node["metadata"]


def test_keys_reach_gcp_and_tpu_nodes_as_metadata_and_aws_nodes_through_user_data(plans: Plans, build: Build) -> None:
    keys = [ED25519_KEY]

    def with_keys(stack: str) -> Any:
        spec = plans[stack].spec
        return spec.model_copy(update={"network": spec.network.model_copy(update={"ssh_public_keys": keys})})

    on_demand = with_keys("finetune-gcp-g2").model_copy(update={"spot": False, "capacity": None})  # one VM a node
    vm = build(lambda: GcpGpuEnvironment("g", gcp_args(on_demand))).one("compute/instance:Instance")
    # spot: the regional group's instance template carries them to every member
    member = build(lambda: GcpGpuEnvironment("gs", gcp_args(with_keys("finetune-gcp-g2")))).one(
        "compute/instanceTemplate:InstanceTemplate"
    )
    for node in (vm, member):
        assert node.inputs["metadata"]["ssh-keys"] == f"ubuntu:{ED25519_KEY}"
        assert node.inputs["metadata"]["enable-oslogin"] == "FALSE"
        assert node.inputs["metadata"]["block-project-ssh-keys"] == "TRUE"
    tpu = build(lambda: TpuVmEnvironment("t", tpu_args(with_keys("train-tpu-v5e")))).one("tpu/v2Vm:V2Vm")
    assert tpu.inputs["metadata"]["ssh-keys"] == f"ubuntu:{ED25519_KEY}"
    template = build(lambda: GcpGpuEnvironment("s", gcp_args(with_keys("serve-gcp-realtime")))).one(
        "compute/instanceTemplate:InstanceTemplate"
    )
    assert template.inputs["metadata"]["ssh-keys"] == f"ubuntu:{ED25519_KEY}"
    lt = build(lambda: AwsGpuEnvironment("a", aws_args(with_keys("train-p5-cluster")))).one(
        "ec2/launchTemplate:LaunchTemplate"
    )
    script = base64.b64decode(lt.inputs["userData"]).decode()
    assert installed_keys(script) == [ED25519_KEY]


def test_components_refuse_a_key_the_core_would_refuse(plans: Plans) -> None:
    spec = plans["exp-aws-spot"].spec
    spec = spec.model_copy(
        update={"network": spec.network.model_copy(update={"ssh_public_keys": ['command="id" ' + ED25519_KEY]})}
    )
    with pytest.raises(SpecRefused, match=r"spec\.network\.ssh_public_keys\[0\]: not an OpenSSH public key"):
        AwsGpuEnvironment("bad", aws_args(spec))


def test_an_aws_stack_whose_keys_overflow_ec2s_user_data_is_refused_before_anything_is_created(plans: Plans) -> None:
    """32 RSA-4096 keys (the most a stack may name) make ~27 KB of user data; EC2 takes 16 KiB."""
    spec = plans["serve-aws-realtime"].spec
    keys = [rsa_4096_line(i) for i in range(32)]
    spec = spec.model_copy(update={"network": spec.network.model_copy(update={"ssh_public_keys": keys})})
    with pytest.raises(
        SpecRefused, match=r"spec\.network\.ssh_public_keys: the boot script is [\d,]+ bytes of user data"
    ):
        AwsGpuEnvironment("many-keys", aws_args(spec))
