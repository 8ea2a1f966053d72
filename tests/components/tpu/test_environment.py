"""TpuVmEnvironment: V2Vm for a single host, queued resource for slices, and its refusals."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from components.args import SpecRefused
from components.gcp.network import IAP_SSH_RANGE
from components.graph import Graph
from components.tpu.args import tpu_args
from components.tpu.environment import TpuVmEnvironment
from fullserver.spec import DataDisk
from tests.components.conftest import Build, Plans, spec_of


def admits(
    rule: dict[str, Any], *, network: str, tags: list[str], source: str, protocol: str, port: int, peer: bool
) -> bool:
    """Whether a GCE ingress firewall rule lets ``source`` reach an instance with ``tags`` on
    ``network`` (VPC firewall rules: a rule applies to every instance of its network unless it
    names target tags; a source matches by range, or, for a ``peer`` instance of the same
    environment carrying the same tags, by source tags)."""
    if rule.get("direction", "INGRESS") != "INGRESS" or rule["network"] != network:
        return False
    targets = rule.get("targetTags") or []
    if targets and not set(targets) & set(tags):
        return False
    src = ipaddress.IPv4Network(source)
    by_range = any(src.subnet_of(ipaddress.IPv4Network(r)) for r in rule.get("sourceRanges") or [])
    by_tag = peer and bool(set(rule.get("sourceTags") or []) & set(tags))
    if not (by_range or by_tag):
        return False
    for allow in rule.get("allows", []):
        ports = allow.get("ports") or []
        in_ports = not ports or any(
            int(r.split("-")[0]) <= port <= int(r.split("-")[-1]) for r in (str(x) for x in ports)
        )
        if allow["protocol"] in (protocol, "all") and in_ports:
            return True
    return False


def reachable(
    g: Graph, *, network: str, tags: list[str], source: str, protocol: str, port: int, peer: bool = False
) -> bool:
    rules = [r.inputs for r in g.of_type("compute/firewall:Firewall")]
    return any(
        admits(r, network=network, tags=tags, source=source, protocol=protocol, port=port, peer=peer) for r in rules
    )


def test_single_host_v5e_is_a_v2vm_with_data_disk_spot_and_its_own_service_account(plans: Plans, build: Build) -> None:
    args = tpu_args(spec_of(plans, "train-tpu-v5e"), project="p")
    g = build(lambda: TpuVmEnvironment("tpu5e", args))
    vm = g.one("tpu/v2Vm:V2Vm").inputs
    assert vm["acceleratorType"] == "v5litepod-8"
    assert vm["runtimeVersion"] == "v2-alpha-tpuv5-lite"
    assert vm["schedulingConfig"] == {"spot": True, "reserved": False}
    assert vm["zone"] == "us-central1-a"
    assert vm["networkConfig"]["enableExternalIps"] is True  # fine-tuning allows a public IP
    assert len(vm["dataDisks"]) == 1 and vm["dataDisks"][0]["mode"] == "READ_WRITE"
    assert vm["serviceAccount"]["email"].startswith("fs-tpu5e@")
    assert vm["labels"]["fullserver-profile"] == "fine-tuning"
    assert vm["labels"]["fullserver-environment"] == "train-tpu-v5e"
    assert "startup-script" in vm["metadata"] and vm["metadata"]["enable-oslogin"] == "TRUE"
    # TPU workers publish guest attributes (hostname, host keys) without being asked
    assert "enable-guest-attributes" not in vm["metadata"]
    disk = g.one("compute/disk:Disk").inputs
    assert (
        disk["type"] == "pd-balanced" and disk["size"] == 125
    )  # the dataset's disk: no per-chip NVMe minimum on a TPU VM (issue 21)
    roles = sorted(r.inputs["role"] for r in g.of_type("projects/iAMMember:IAMMember"))
    assert roles == ["roles/logging.logWriter", "roles/monitoring.metricWriter"]
    assert g.of_type("fullserver:TpuQueuedResource") == []
    # an external IP but no SSH ranges to reach it from: IAP, which only the alpha command tunnels
    assert g.outputs["connect"] == (
        "gcloud alpha compute tpus tpu-vm ssh tpu5e-tpu --zone us-central1-a --project p --worker=0 --tunnel-through-iap"
    )


def test_private_tpu_gets_iap_ssh_and_cloud_nat(plans: Plans, build: Build) -> None:
    g = build(lambda: TpuVmEnvironment("batch", tpu_args(spec_of(plans, "batch-tpu-v5e"))))
    vm = g.one("tpu/v2Vm:V2Vm").inputs
    assert vm["networkConfig"]["enableExternalIps"] is False
    ssh = next(r for r in g.of_type("compute/firewall:Firewall") if r.name == "batch-ssh").inputs
    assert ssh["sourceRanges"] == ["35.235.240.0/20"]
    assert ssh["allows"] == [{"protocol": "tcp", "ports": ["22"]}]
    assert g.one("compute/routerNat:RouterNat").inputs["natIpAllocateOption"] == "AUTO_ONLY"
    assert g.one("compute/subnetwork:Subnetwork").inputs["privateIpGoogleAccess"] is True
    assert g.outputs["connect"].endswith("--tunnel-through-iap")


def test_multi_host_slice_is_a_queued_resource(plans: Plans, build: Build) -> None:
    g = build(lambda: TpuVmEnvironment("v5p", tpu_args(spec_of(plans, "train-tpu-v5p-slice"), project="proj")))
    qr = g.one("fullserver:TpuQueuedResource").inputs
    spec = qr["tpu"]["nodeSpecs"][0]
    assert spec["parent"] == "projects/proj/locations/us-east5-a"
    assert spec["node"]["acceleratorType"] == "v5p-128"
    assert spec["node"]["runtimeVersion"] == "v2-alpha-tpuv5"
    assert spec["node"]["networkConfig"]["enableExternalIps"] is False
    assert g.of_type("tpu/v2Vm:V2Vm") == []
    assert g.of_type("compute/disk:Disk") == []


def test_a_queued_slice_runs_as_its_own_least_privilege_account_and_carries_the_labels(
    plans: Plans, build: Build
) -> None:
    """Not the project's default compute service account (often roles/editor), which a queued node
    gets when none is named: the environment's own account, as a TPU VM's, granted only logs and
    metrics; and the environment's labels, as on every other resource it bills for."""
    g = build(lambda: TpuVmEnvironment("v5p", tpu_args(spec_of(plans, "train-tpu-v5p-slice"), project="proj")))
    node = g.one("fullserver:TpuQueuedResource").inputs["tpu"]["nodeSpecs"][0]["node"]
    account = g.one("serviceaccount/account:Account").inputs
    assert account["accountId"] == "fs-v5p" and account["project"] == "proj"
    assert node["serviceAccount"] == {
        "email": "fs-v5p@mock-project.iam.gserviceaccount.com",
        "scope": ["https://www.googleapis.com/auth/cloud-platform"],  # IAM alone decides
    }
    assert g.outputs["service_account"] == node["serviceAccount"]["email"]
    grants = {r.inputs["role"]: r.inputs for r in g.of_type("projects/iAMMember:IAMMember")}
    assert set(grants) == {"roles/logging.logWriter", "roles/monitoring.metricWriter"}
    assert {m["member"] for m in grants.values()} == {"serviceAccount:fs-v5p@mock-project.iam.gserviceaccount.com"}
    assert node["labels"]["fullserver-profile"] == "scale-training"
    assert node["labels"]["fullserver-environment"] == "train-tpu-v5p-slice"
    assert node["labels"]["fullserver-owner"] == "foundation-models"


def test_refuses_a_read_write_disk_on_a_multi_host_slice(plans: Plans) -> None:
    spec = spec_of(plans, "train-tpu-v5p-slice", data_disk=DataDisk(kind="pd-balanced", size_gib=500))
    with pytest.raises(
        SpecRefused, match=r"spec\.data_disk: a read-write data disk cannot attach to the multi-host slice v5p-128"
    ):
        TpuVmEnvironment("bad", tpu_args(spec))


def test_refuses_a_reservation_on_a_queued_request(plans: Plans) -> None:
    spec = spec_of(plans, "train-tpu-v5p-slice", reservation="tpu-res")
    # The rule's one message (fullserver.platforms.tpu.queued_reservation), the same words the plan refuses with.
    with pytest.raises(
        SpecRefused,
        match=r"spec\.reservation: v5p-128 is requested as a queued resource \(16 hosts\), which cannot name",
    ):
        TpuVmEnvironment("bad", tpu_args(spec))


def test_refuses_open_ssh(plans: Plans) -> None:
    spec = plans["train-tpu-v5e"].spec
    spec = spec.model_copy(update={"network": spec.network.model_copy(update={"ssh_source_ranges": ["0.0.0.0/0"]})})
    with pytest.raises(SpecRefused, match=r"spec\.network\.ssh_source_ranges: 0\.0\.0\.0/0 would open SSH"):
        TpuVmEnvironment("bad", tpu_args(spec))


def test_refuses_local_ssds_on_a_tpu(plans: Plans) -> None:
    with pytest.raises(SpecRefused, match=r"spec\.local_nvme_disks: TPU VMs have no local SSDs"):
        TpuVmEnvironment("bad", tpu_args(spec_of(plans, "train-tpu-v5e", local_nvme_disks=2)))


def test_firewall_rules_cover_every_host_of_a_queued_slice(plans: Plans, build: Build) -> None:
    """A V2QueuedResource node carries no network tags (pulumi-gcp 10.2), so rules that target a
    tag would leave the slice's 16 hosts unable to reach each other (JAX multi-host) or be reached."""
    g = build(lambda: TpuVmEnvironment("v5p", tpu_args(spec_of(plans, "train-tpu-v5p-slice"), project="proj")))
    node = g.one("fullserver:TpuQueuedResource").inputs["tpu"]["nodeSpecs"][0]["node"]
    assert "tags" not in node  # what the slice's hosts carry: nothing
    net = node["networkConfig"]["network"]
    subnet = next(r.inputs for r in g.of_type("compute/subnetwork:Subnetwork") if r.name == "v5p-subnet")
    assert node["networkConfig"]["subnetwork"] == "v5p-subnet-id" and subnet["network"] == net
    hosts = list(ipaddress.ip_network(subnet["ipCidrRange"]).hosts())
    for ip in (hosts[1], hosts[15], hosts[-1]):  # any host address the slice's workers get
        peer = f"{ip}/32"
        for protocol, port in (("tcp", 8476), ("tcp", 8471), ("udp", 8476), ("tcp", 22)):  # JAX coordinator, DCN
            assert reachable(g, network=net, tags=[], source=peer, protocol=protocol, port=port, peer=True), (ip, port)
    assert reachable(g, network=net, tags=[], source=IAP_SSH_RANGE, protocol="tcp", port=22)
    assert not reachable(g, network=net, tags=[], source="203.0.113.7/32", protocol="tcp", port=22)
    for rule in g.of_type("compute/firewall:Firewall"):
        assert rule.inputs["network"] == net and not rule.inputs.get("targetTags"), rule.name


def test_firewall_rules_cover_a_single_host_tpu_vm_with_configured_ssh_ranges(plans: Plans, build: Build) -> None:
    spec = plans["train-tpu-v5e"].spec
    spec = spec.model_copy(
        update={"network": spec.network.model_copy(update={"ssh_source_ranges": ["198.51.100.0/24"]})}
    )
    g = build(lambda: TpuVmEnvironment("one", tpu_args(spec)))
    vm = g.one("tpu/v2Vm:V2Vm").inputs
    tags = vm.get("tags") or []
    net = vm["networkConfig"]["network"]
    assert reachable(g, network=net, tags=tags, source="198.51.100.9/32", protocol="tcp", port=22)
    assert not reachable(g, network=net, tags=tags, source=IAP_SSH_RANGE, protocol="tcp", port=22)
    assert reachable(g, network=net, tags=tags, source="10.64.0.5/32", protocol="tcp", port=8476, peer=True)


def test_queued_is_the_specs_decision(plans: Plans, build: Build) -> None:
    """The core queues every multi-host slice (TpuSpec.queued); the component does not decide again."""
    assert plans["train-tpu-v5p-slice"].spec.tpu is not None and plans["train-tpu-v5p-slice"].spec.tpu.queued
    args = tpu_args(spec_of(plans, "train-tpu-v5p-slice", spot=True))
    args["queued"] = False  # hand-written args: a multi-host slice created directly, on spot
    g = build(lambda: TpuVmEnvironment("direct", args))
    vm = g.one("tpu/v2Vm:V2Vm").inputs
    assert vm["acceleratorType"] == "v5p-128" and vm["schedulingConfig"]["spot"] is True
    assert g.of_type("fullserver:TpuQueuedResource") == []
