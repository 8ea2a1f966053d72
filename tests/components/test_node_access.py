"""The ``nodes`` and ``nodeGroups`` outputs: every node a cloud component creates, and every group
that creates nodes for it, exported with the way in (``fullserver.nodes``), so ``fullserver verify``
and a person's ``~/.ssh/config`` reach nodes without a public address through IAP or Session Manager.
"""

from __future__ import annotations

from typing import Any

from components.aws.args import aws_args
from components.aws.environment import AwsGpuEnvironment
from components.environment import Environment, environment_args
from components.gcp.args import gcp_args
from components.gcp.environment import GcpGpuEnvironment
from components.startup import LOGIN_USER
from components.tpu.access import tpu_worker_group, tpu_workers
from components.tpu.args import tpu_args
from components.tpu.environment import TpuVmEnvironment
from fullserver.catalog import Catalog
from fullserver.spec import EnvironmentSpec
from tests.components.conftest import Build, Plans, spec_of
from tests.components.gcp.test_environment import cluster
from tests.core.test_stack_config import ED25519_KEY

OFFICE = "198.51.100.0/24"


def with_network(spec: EnvironmentSpec, **changes: Any) -> EnvironmentSpec:
    return spec.model_copy(update={"network": spec.network.model_copy(update=changes)})


def iap(instance: str, zone: str, project: str) -> list[str]:
    """IAP TCP forwarding on stdin/stdout, as ``gcloud compute ssh --tunnel-through-iap`` runs it."""
    return [
        "gcloud", "compute", "start-iap-tunnel", instance, "22", "--listen-on-stdin",
        f"--zone={zone}", f"--project={project}", "--verbosity=warning",
    ]  # fmt: skip


def ssm(instance_id: str, region: str) -> list[str]:
    """Session Manager's SSH document for one instance."""
    return [
        "aws", "ssm", "start-session", "--target", instance_id, "--document-name", "AWS-StartSSHSession",
        "--parameters", "portNumber=22", f"--region={region}",
    ]  # fmt: skip


# --- GCP GPU VMs ----------------------------------------------------------------------------------


def test_a_private_gcp_cluster_exports_each_vm_behind_iap(catalog: Catalog, build: Build) -> None:
    spec = cluster(catalog, "H100-80GB")  # two a3-highgpu-8g nodes without public addresses
    g = build(lambda: GcpGpuEnvironment("a3", gcp_args(spec, project="proj")))
    names = g.outputs["instance_names"]
    assert len(names) == 2 and all(n.startswith("a3-node-") for n in names)
    assert g.outputs["nodes"] == [
        {
            "name": name,
            "privateIp": ip,
            "publicIp": "",
            "user": LOGIN_USER,
            "keys": False,
            "via": "iap",
            "proxyCommand": iap(name, "us-central1-a", "proj"),
            "hostKeysCommand": [
                "gcloud",
                "compute",
                "instances",
                "get-guest-attributes",
                name,
                "--zone=us-central1-a",
                "--project=proj",
                "--query-path=hostkeys/",
                "--format=json",
            ],
        }
        for name, ip in zip(names, g.outputs["private_ips"], strict=True)
    ]
    assert g.outputs["node_groups"] == []
    # the addresses are each VM's primary NIC, not one of its GPU NICs
    assert all(n["privateIp"].startswith("10.64.0.") for n in g.outputs["nodes"])


def test_a_gcp_vm_open_to_ssh_ranges_is_reached_directly_at_its_public_address(plans: Plans, build: Build) -> None:
    spec = with_network(
        spec_of(plans, "finetune-gcp-g2", spot=False, capacity=None),  # no balanced set: one VM per node
        public_ip=True,
        ssh_source_ranges=[OFFICE],
        ssh_public_keys=[ED25519_KEY],
    )
    g = build(lambda: GcpGpuEnvironment("g2", gcp_args(spec, project="proj")))
    # spot over the set: the regional group's members are as public, so its row says ssh too
    held = spec_of(plans, "finetune-gcp-g2").capacity
    spot = spec.model_copy(update={"spot": True, "capacity": held})
    group = build(lambda: GcpGpuEnvironment("g2s", gcp_args(spot, project="proj")))
    assert group.outputs["nodes"] == [] and [gr["via"] for gr in group.outputs["node_groups"]] == ["ssh"]
    [node] = g.outputs["nodes"]
    assert node["via"] == "ssh" and node["proxyCommand"] == []
    assert node["publicIp"] == g.outputs["public_ips"][0] and node["publicIp"]
    assert node["name"] == g.outputs["instance_names"][0] and node["keys"] is True
    assert g.outputs["connect"] == f"ssh {LOGIN_USER}@{node['publicIp']}"  # the same address


def test_a_public_gcp_vm_without_ssh_ranges_still_goes_through_iap(plans: Plans, build: Build) -> None:
    """A public address alone is not a way in: without SSH ranges the firewall admits only IAP."""
    single = spec_of(plans, "finetune-gcp-g2", spot=False, capacity=None)  # no balanced set: one VM
    g = build(lambda: Environment("ft", environment_args(single)))
    [node] = g.outputs["nodes"]
    # spot: the regional group is reached through IAP as well
    spot = build(lambda: Environment("fs", environment_args(spec_of(plans, "finetune-gcp-g2"))))
    assert spot.outputs["nodes"] == [] and [gr["via"] for gr in spot.outputs["node_groups"]] == ["iap"]
    assert node["publicIp"] and node["via"] == "iap"
    # the provider's project when the args name none (the mock's), the configured zone
    assert node["proxyCommand"] == iap(node["name"], "us-central1-a", "mock-project")


def test_a_gcp_serving_group_exports_the_command_that_lists_its_replicas(plans: Plans, build: Build) -> None:
    g = build(lambda: GcpGpuEnvironment("srv", gcp_args(spec_of(plans, "serve-gcp-realtime"), project="proj")))
    assert g.outputs["nodes"] == []
    [group] = g.outputs["node_groups"]
    mig = g.one("compute/regionInstanceGroupManager:RegionInstanceGroupManager")
    assert group == {
        "provider": "gcp",
        "groups": [group["groups"][0]],
        "region": "us-central1",
        "zone": "",  # regional
        "project": "proj",
        "user": LOGIN_USER,
        "keys": False,
        "via": "iap",
        "listCommand": [
            "gcloud", "compute", "instances", "list", "--project=proj",
            f"--filter=name ~ ^{mig.inputs['baseInstanceName']}-[a-z0-9]{{4}}$ AND status=RUNNING "
            "AND zone ~ /zones/us-central1-[a-z]$",
            "--format=json",
        ],
        "privateIps": [],  # the listing carries each replica's address
    }  # fmt: skip
    assert mig.inputs["baseInstanceName"] == "srv"
    assert group["groups"][0].startswith("srv-mig-")  # the manager's name, the last part of its group's URL


def test_a_zonal_gcp_serving_group_names_its_zone(plans: Plans, build: Build) -> None:
    args = gcp_args(spec_of(plans, "serve-gcp-realtime"), project="proj")
    args["zone"] = "us-central1-b"
    assert args.get("serving") is not None
    args["serving"]["spread_zones"] = False
    g = build(lambda: GcpGpuEnvironment("srv", args))
    [group] = g.outputs["node_groups"]
    zmig = g.one("compute/instanceGroupManager:InstanceGroupManager")
    assert zmig.inputs["zone"] == group["zone"] == "us-central1-b"
    assert group["groups"][0].startswith("srv-mig-") and group["region"] == "us-central1"
    assert "--zone us-central1-b" in g.outputs["connect"]


# --- AWS ------------------------------------------------------------------------------------------


def test_a_private_aws_cluster_exports_each_instance_behind_session_manager(plans: Plans, build: Build) -> None:
    g = build(lambda: AwsGpuEnvironment("p5", aws_args(spec_of(plans, "train-p5-cluster"))))
    ids = g.outputs["instance_ids"]
    assert ids and ids == [f"{r.name}-id" for r in g.of_type("ec2/instance:Instance")]
    assert g.outputs["nodes"] == [
        {
            "name": iid,
            "privateIp": ip,
            "publicIp": "",
            "user": LOGIN_USER,
            "keys": False,
            "via": "ssm",
            "proxyCommand": ssm(iid, "us-east-1"),
            "hostKeysCommand": [
                "aws",
                "ec2",
                "get-console-output",
                "--instance-id",
                iid,
                "--latest",
                "--region=us-east-1",
                "--output=json",
            ],
        }
        for iid, ip in zip(ids, g.outputs["private_ips"], strict=True)
    ]
    assert g.outputs["node_groups"] == []


def test_an_aws_node_open_to_ssh_ranges_is_reached_directly(plans: Plans, build: Build) -> None:
    spec = with_network(spec_of(plans, "exp-aws-spot"), ssh_public_keys=[ED25519_KEY])
    assert spec.network.public_ip and spec.network.ssh_source_ranges  # the stack opens SSH to its range
    g = build(lambda: AwsGpuEnvironment("exp", aws_args(spec)))
    [node] = g.outputs["nodes"]
    assert node["via"] == "ssh" and node["proxyCommand"] == [] and node["keys"] is True
    assert node["publicIp"] == g.outputs["public_ips"][0] and node["publicIp"]
    assert node["name"] == g.outputs["instance_ids"][0]


def test_an_aws_serving_group_exports_the_command_that_lists_its_replicas(plans: Plans, build: Build) -> None:
    g = build(lambda: AwsGpuEnvironment("srv", aws_args(spec_of(plans, "serve-aws-realtime"))))
    assert g.outputs["nodes"] == []
    [asg] = g.outputs["group_names"]
    assert asg.startswith(g.one("autoscaling/group:Group").name)  # srv-serving, and AWS's suffix
    assert g.outputs["node_groups"] == [
        {
            "provider": "aws",
            "groups": [asg],
            "region": "us-east-1",
            "zone": "",
            "project": "",
            "user": LOGIN_USER,
            "keys": False,
            "via": "ssm",
            "listCommand": [
                "aws", "ec2", "describe-instances", "--region=us-east-1", "--filters",
                f"Name=tag:aws:autoscaling:groupName,Values={asg}", "Name=instance-state-name,Values=running",
                "--output=json",
            ],
            "privateIps": [],
        }
    ]  # fmt: skip


def test_a_spot_group_and_its_on_demand_fallback_are_listed_together(plans: Plans, build: Build) -> None:
    g = build(lambda: AwsGpuEnvironment("sp", aws_args(spec_of(plans, "exp-aws-spot", spot=True))))
    assert g.outputs["nodes"] == []
    spot, fallback = g.outputs["group_names"]
    assert spot.startswith("sp-spot") and fallback.startswith("sp-ondemand")
    [group] = g.outputs["node_groups"]
    assert group["groups"] == [spot, fallback]
    assert f"Name=tag:aws:autoscaling:groupName,Values={spot},{fallback}" in group["listCommand"]


# --- TPU VMs --------------------------------------------------------------------------------------


def test_a_tpu_vm_behind_iap_is_a_group_listed_by_its_workers_guest_attributes(plans: Plans, build: Build) -> None:
    """The IAP tunnel needs each worker's instance name, which only its guest attributes give
    (components.tpu.environment): the TPU VM is exported with the command that reads them, and the workers'
    internal addresses, which the guest attributes do not carry."""
    g = build(lambda: TpuVmEnvironment("batch", tpu_args(spec_of(plans, "batch-tpu-v5e"), project="proj")))
    node = g.outputs["node_name"]
    assert g.outputs["nodes"] == []
    assert g.outputs["node_groups"] == [
        {
            "provider": "tpu",
            "groups": [node],
            "region": "us-central1",
            "zone": "us-central1-a",
            "project": "proj",
            "user": LOGIN_USER,
            "keys": False,
            "via": "iap",
            "listCommand": [
                "gcloud", "compute", "tpus", "tpu-vm", "get-guest-attributes", node,
                "--zone=us-central1-a", "--project=proj", "--format=json",
            ],
            "privateIps": g.outputs["private_ips"],
        }
    ]  # fmt: skip
    assert len(g.outputs["private_ips"]) == 1 and g.outputs["private_ips"][0]


def test_tpu_workers_open_to_ssh_ranges_are_reached_at_their_external_addresses(plans: Plans, build: Build) -> None:
    spec = with_network(spec_of(plans, "train-tpu-v5e"), ssh_source_ranges=[OFFICE], ssh_public_keys=[ED25519_KEY])
    g = build(lambda: TpuVmEnvironment("v5e", tpu_args(spec, project="proj")))
    [worker] = g.outputs["nodes"]
    assert worker["name"] == f"{g.outputs['node_name']}-w0" and worker["via"] == "ssh"
    assert worker["publicIp"] == g.outputs["public_ips"][0] and worker["keys"] is True
    assert g.outputs["connect"] == f"ssh {LOGIN_USER}@{worker['publicIp']}"
    # its host keys are read from the TPU's guest attributes (parse_host_keys keeps worker 0's)
    assert worker["hostKeysCommand"][:5] == ["gcloud", "compute", "tpus", "tpu-vm", "get-guest-attributes"]
    assert worker["hostKeysCommand"][5:] == [
        g.outputs["node_name"],
        f"--zone={spec.zone}",
        "--project=proj",
        "--format=json",
    ]


def test_every_worker_of_a_multi_host_tpu_vm_is_a_node_in_worker_order() -> None:
    """``networkEndpoints`` lists one endpoint per host, worker 0 first (as ``tpu-vm ssh --worker``
    indexes them); the provider gives typed objects, the mocks plain dicts."""
    endpoints = [
        {"ip_address": "10.64.0.2", "access_configs": [{"external_ip": "203.0.113.2"}]},
        {"ip_address": "10.64.0.3", "access_configs": [{"external_ip": "203.0.113.3"}]},
    ]
    direct = tpu_workers("slice", endpoints, keys=True, direct=True)
    assert [(w.name, w.private_ip, w.public_ip, w.via) for w in direct] == [
        ("slice-w0", "10.64.0.2", "203.0.113.2", "ssh"),
        ("slice-w1", "10.64.0.3", "203.0.113.3", "ssh"),
    ]
    tunnelled = tpu_worker_group(
        "slice", endpoints, region="us-central2", zone="us-central2-b", project="p", keys=False
    )
    assert tunnelled.private_ips == ["10.64.0.2", "10.64.0.3"] and tunnelled.groups == ["slice"]
    assert (tunnelled.provider, tunnelled.via, tunnelled.keys) == ("tpu", "iap", False)
    # a worker that has no external address cannot be reached directly, whatever the ranges say
    private = tpu_workers("slice", [{"ip_address": "10.64.0.4", "access_configs": []}], keys=True, direct=True)
    assert private[0].via == "iap" and private[0].public_ip == ""
    assert tpu_workers("slice", None, keys=True, direct=True) == []


def test_a_queued_slice_has_no_nodes_known_at_deploy_time(plans: Plans, build: Build) -> None:
    """The queued resource creates the TPU node when capacity arrives, after ``pulumi up``."""
    g = build(lambda: TpuVmEnvironment("v5p", tpu_args(spec_of(plans, "train-tpu-v5p-slice"), project="proj")))
    assert g.outputs["nodes"] == [] and g.outputs["node_groups"] == []


# --- through Environment --------------------------------------------------------------------------


def test_the_environment_passes_the_inner_components_nodes_on(plans: Plans, build: Build) -> None:
    g = build(lambda: Environment("train-p5-cluster", environment_args(plans["train-p5-cluster"].spec)))
    instances = g.of_type("ec2/instance:Instance")
    assert instances and [n["name"] for n in g.outputs["nodes"]] == [f"{r.name}-id" for r in instances]
    assert [n["privateIp"] for n in g.outputs["nodes"]] == g.outputs["private_ips"]
    assert g.outputs["node_groups"] == []
    serving = build(lambda: Environment("srv", environment_args(plans["serve-aws-realtime"].spec)))
    assert serving.outputs["nodes"] == [] and len(serving.outputs["node_groups"]) == 1
