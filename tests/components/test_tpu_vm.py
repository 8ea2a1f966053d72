"""TpuVmEnvironment: V2Vm for a single host, queued resource for slices, and its refusals."""

from __future__ import annotations

import pytest

from components.args import SpecRefused, tpu_args
from components.tpu_vm import TpuVmEnvironment
from fullserver.spec import DataDisk
from tests.components.conftest import Build, Plans, spec_of


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
    assert "startup-script" in vm["metadata"]
    disk = g.one("compute/disk:Disk").inputs
    assert disk["type"] == "pd-balanced" and disk["size"] == 800
    roles = sorted(r.inputs["role"] for r in g.of_type("projects/iAMMember:IAMMember"))
    assert roles == ["roles/logging.logWriter", "roles/monitoring.metricWriter"]
    assert g.of_type("tpu/v2QueuedResource:V2QueuedResource") == []
    assert g.outputs["connect"] == "gcloud compute tpus tpu-vm ssh tpu5e-tpu --zone us-central1-a --worker=0"


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
    qr = g.one("tpu/v2QueuedResource:V2QueuedResource").inputs
    spec = qr["tpu"]["nodeSpecs"][0]
    assert spec["parent"] == "projects/proj/locations/us-east5-a"
    assert spec["node"]["acceleratorType"] == "v5p-128"
    assert spec["node"]["runtimeVersion"] == "v2-alpha-tpuv5"
    assert spec["node"]["networkConfig"]["enableExternalIps"] is False
    assert g.of_type("tpu/v2Vm:V2Vm") == []
    assert g.of_type("compute/disk:Disk") == []


def test_refuses_a_read_write_disk_on_a_multi_host_slice(plans: Plans) -> None:
    spec = spec_of(plans, "train-tpu-v5p-slice", data_disk=DataDisk(kind="pd-balanced", size_gib=500))
    with pytest.raises(
        SpecRefused, match=r"spec\.data_disk: a read-write data disk cannot attach to the multi-host slice v5p-128"
    ):
        TpuVmEnvironment("bad", tpu_args(spec))


def test_refuses_spot_on_a_queued_request(plans: Plans) -> None:
    spec = spec_of(plans, "train-tpu-v5p-slice", spot=True)
    with pytest.raises(SpecRefused, match=r"spec\.spot: spot capacity for a queued TPU request"):
        TpuVmEnvironment("bad", tpu_args(spec))


def test_refuses_open_ssh(plans: Plans) -> None:
    spec = plans["train-tpu-v5e"].spec
    spec = spec.model_copy(update={"network": spec.network.model_copy(update={"ssh_source_ranges": ["0.0.0.0/0"]})})
    with pytest.raises(SpecRefused, match=r"spec\.network\.ssh_source_ranges: 0\.0\.0\.0/0 would open SSH"):
        TpuVmEnvironment("bad", tpu_args(spec))


def test_refuses_local_ssds_on_a_tpu(plans: Plans) -> None:
    with pytest.raises(SpecRefused, match=r"spec\.local_nvme_disks: TPU VMs have no local SSDs"):
        TpuVmEnvironment("bad", tpu_args(spec_of(plans, "train-tpu-v5e", local_nvme_disks=2)))
