"""GcpGpuEnvironment: scheduling, local SSDs, gVNIC, shielded VM, images, N1 attach, compact placement, refusals."""

from __future__ import annotations

import pytest

from components.args import SpecRefused, gcp_args
from components.gcp_gpu import GcpGpuEnvironment
from tests.components.conftest import Build, Plans, spec_of


def test_g2_fine_tuning_vm(plans: Plans, build: Build) -> None:
    g = build(lambda: GcpGpuEnvironment("g2", gcp_args(spec_of(plans, "finetune-gcp-g2"), project="proj")))
    vm = g.one("compute/instance:Instance").inputs
    assert vm["machineType"] == "g2-standard-12" and vm["zone"] == "us-central1-a"
    assert vm["scheduling"] == {
        "onHostMaintenance": "TERMINATE",
        "provisioningModel": "SPOT",
        "preemptible": True,
        "automaticRestart": False,
        "instanceTerminationAction": "STOP",
    }
    assert vm["reservationAffinity"] == {"type": "NO_RESERVATION"}
    assert vm["scratchDisks"] == [{"interface": "NVME", "size": 375}]
    nic = vm["networkInterfaces"][0]
    assert nic["nicType"] == "GVNIC" and nic["accessConfigs"] == [{"networkTier": "PREMIUM"}]
    assert "networkPerformanceConfig" not in vm  # single node: no Tier_1 add-on
    assert vm["shieldedInstanceConfig"] == {
        "enableSecureBoot": False,
        "enableVtpm": True,
        "enableIntegrityMonitoring": True,
    }
    assert vm["bootDisk"]["initializeParams"] == {
        "image": "projects/deeplearning-platform-release/global/images/family/pytorch-2-7-cu128-ubuntu-2204-nvidia-570",
        "size": 200,
        "type": "pd-balanced",
    }
    assert vm["metadata"]["block-project-ssh-keys"] == "TRUE" and vm["metadata"]["enable-oslogin"] == "TRUE"
    assert "SCRATCH_EXPECTED=1" in vm["metadata"]["startup-script"]
    assert vm["attachedDisks"][0]["deviceName"] == "data"
    assert g.one("compute/disk:Disk").inputs["size"] == 250
    assert vm["serviceAccount"]["scopes"] == ["https://www.googleapis.com/auth/cloud-platform"]
    assert vm["labels"]["fullserver-ttl-hours"] == "72"
    assert "guestAccelerators" not in vm or vm["guestAccelerators"] == []
    assert (
        g.outputs["connect"]
        == "gcloud compute ssh " + g.outputs["connect"].split()[3] + " --zone us-central1-a --tunnel-through-iap"
    )


def test_on_demand_a2_uses_standard_provisioning(plans: Plans, build: Build) -> None:
    spec = spec_of(plans, "finetune-gcp-a2", spot=False)
    vm = build(lambda: GcpGpuEnvironment("a2", gcp_args(spec))).one("compute/instance:Instance").inputs
    assert vm["scheduling"]["provisioningModel"] == "STANDARD" and vm["scheduling"]["automaticRestart"] is True
    assert vm["reservationAffinity"] == {"type": "ANY_RESERVATION"}
    assert vm["scratchDisks"] == []


def test_n1_attaches_its_gpus(plans: Plans, build: Build) -> None:
    spec = spec_of(
        plans,
        "finetune-gcp-g2",
        offer="n1-highmem-8+1xT4",
        machine_type="n1-highmem-8",
        accelerator="T4",
        local_nvme_disks=0,
    )
    vm = build(lambda: GcpGpuEnvironment("n1", gcp_args(spec))).one("compute/instance:Instance").inputs
    assert vm["guestAccelerators"] == [{"type": "nvidia-tesla-t4", "count": 1}]


def test_multi_node_gets_compact_placement_and_tier1(plans: Plans, build: Build) -> None:
    spec = plans["finetune-gcp-a2"].spec
    spec = spec.model_copy(update={"nodes": 2, "network": spec.network.model_copy(update={"compact_placement": True})})
    g = build(lambda: GcpGpuEnvironment("mn", gcp_args(spec)))
    policy = g.one("compute/resourcePolicy:ResourcePolicy").inputs
    assert policy["groupPlacementPolicy"] == {"collocation": "COLLOCATED", "vmCount": 2}
    vms = g.of_type("compute/instance:Instance")
    assert len(vms) == 2 and all(v.inputs["resourcePolicies"].startswith("https://") for v in vms)
    assert all(v.inputs["networkPerformanceConfig"] == {"totalEgressBandwidthTier": "TIER_1"} for v in vms)
    assert len(g.of_type("compute/disk:Disk")) == 2


def test_a_specific_reservation(plans: Plans, build: Build) -> None:
    spec = spec_of(plans, "finetune-gcp-a2", spot=False, reservation="a2-res")
    vm = build(lambda: GcpGpuEnvironment("rs", gcp_args(spec))).one("compute/instance:Instance").inputs
    assert vm["reservationAffinity"] == {
        "type": "SPECIFIC_RESERVATION",
        "specificReservation": {"key": "compute.googleapis.com/reservation-name", "values": ["a2-res"]},
    }


def test_refuses_more_local_ssds_than_the_shape_allows(plans: Plans) -> None:
    with pytest.raises(
        SpecRefused, match=r"spec\.local_nvme_disks: 9 local SSDs requested but g2-standard-12 has at most"
    ):
        GcpGpuEnvironment("bad", gcp_args(spec_of(plans, "finetune-gcp-g2", local_nvme_disks=9)))


def test_refuses_open_ssh(plans: Plans) -> None:
    spec = plans["finetune-gcp-g2"].spec
    spec = spec.model_copy(update={"network": spec.network.model_copy(update={"ssh_source_ranges": ["0.0.0.0/0"]})})
    with pytest.raises(SpecRefused, match="would open SSH"):
        GcpGpuEnvironment("bad", gcp_args(spec))
