"""GcpGpuEnvironment: scheduling, local SSDs, gVNIC, shielded VM, images, N1 attach, compact placement, refusals."""

from __future__ import annotations

from typing import Any

import pytest

from components.args import SpecRefused
from components.gcp.args import gcp_args
from components.gcp.environment import STOP_TO_UPDATE, GcpGpuEnvironment
from components.graph import Graph
from fullserver.catalog import Catalog
from fullserver.catalog.model import Interconnect
from fullserver.plan import StackPlan, plan_workload
from fullserver.platforms.gcp import GPU_NIC_PLANS
from fullserver.profiles import load_profiles
from fullserver.spec import DataDisk, EnvironmentSpec
from fullserver.stacks import workload_from_config
from fullserver_cli.graph_view import summary
from tests.components.conftest import Build, Plans, ResourceOpts, spec_of

GPUDIRECT = {Interconnect.GPUDIRECT_TCPX, Interconnect.GPUDIRECT_TCPXO, Interconnect.GPUDIRECT_RDMA}


def cluster(catalog: Catalog, accelerator: str, nodes: int = 2) -> EnvironmentSpec:
    """What the core sizes for a multi-node GCP GPU training cluster (scale-training), in the first
    zone of us-central1 that sells the shape (H100 series: us-central1-a; H200 and B200: -b)."""
    config = {
        "fullserver:profile": "scale-training",
        "fullserver:platform": "gcp-gpu",
        "fullserver:region": "us-central1",
        "fullserver:accelerator": accelerator,
        "fullserver:acceleratorCount": 8,
        "fullserver:nodes": nodes,
        "fullserver:framework": "pytorch",
        "fullserver:owner": "foundation-models",
    }
    plan: StackPlan = plan_workload("c", "c", workload_from_config(config, "c"), load_profiles(), catalog)
    return plan.spec


def nics_of(g: Graph) -> list[list[dict[str, str]]]:
    return [vm.inputs["networkInterfaces"] for vm in g.of_type("compute/instance:Instance")]


def test_g2_fine_tuning_vm(plans: Plans, build: Build) -> None:
    g = build(
        lambda: GcpGpuEnvironment("g2", gcp_args(spec_of(plans, "finetune-gcp-g2", capacity=None), project="proj"))
    )
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
    # the guest environment publishes the VM's SSH host keys to guest attributes, for pinning
    assert vm["metadata"]["enable-guest-attributes"] == "TRUE"
    assert 'SCRATCH_EXPECTED="${FULLSERVER_SCRATCH_EXPECTED:-1}"' in vm["metadata"]["startup-script"]
    assert vm["attachedDisks"][0]["deviceName"] == "data"
    assert g.one("compute/disk:Disk").inputs["size"] == 250
    assert vm["serviceAccount"]["scopes"] == ["https://www.googleapis.com/auth/cloud-platform"]
    assert vm["labels"]["fullserver-ttl-hours"] == "72"
    assert "guestAccelerators" not in vm or vm["guestAccelerators"] == []
    # a public IP but no SSH ranges: through IAP, as OS Login decides who (no keys configured)
    assert g.outputs["connect"] == (
        "gcloud compute ssh "
        + g.outputs["connect"].split()[3]
        + " --zone us-central1-a --project proj --tunnel-through-iap"
    )
    assert "ssh-keys" not in vm["metadata"]


def test_on_demand_a2_uses_standard_provisioning(plans: Plans, build: Build) -> None:
    spec = spec_of(plans, "finetune-gcp-a2", spot=False, capacity=None)
    vm = build(lambda: GcpGpuEnvironment("a2", gcp_args(spec))).one("compute/instance:Instance").inputs
    assert vm["scheduling"]["provisioningModel"] == "STANDARD" and vm["scheduling"]["automaticRestart"] is True
    assert vm["reservationAffinity"] == {"type": "ANY_RESERVATION"}
    assert vm["scratchDisks"] == []


def test_a_vm_with_local_ssds_is_replaced_rather_than_stopped_for_an_update(
    plans: Plans, build: Build, resource_options: ResourceOpts
) -> None:
    """The provider stops a VM for a machine-type (or service-account...) change without saying
    what becomes of its local SSDs, which Compute Engine refuses; such a change replaces the VM
    (its scratch data is lost either way), and the plan shows the replacement."""
    g = build(
        lambda: GcpGpuEnvironment("ssd", gcp_args(spec_of(plans, "finetune-gcp-g2", capacity=None), project="proj"))
    )
    vm = g.one("compute/instance:Instance")
    assert vm.inputs["scratchDisks"] and vm.inputs["allowStoppingForUpdate"] is False
    opts = resource_options[vm.name]
    assert opts.delete_before_replace is True
    assert sorted(opts.replace_on_changes or []) == sorted(STOP_TO_UPDATE)
    assert {"machine_type", "service_account", "scheduling"} <= set(STOP_TO_UPDATE)


def test_a_vm_without_local_ssds_may_be_stopped_for_an_update(
    plans: Plans, build: Build, resource_options: ResourceOpts
) -> None:
    spec = spec_of(plans, "finetune-gcp-a2", spot=False, capacity=None)
    vm = build(lambda: GcpGpuEnvironment("a2", gcp_args(spec))).one("compute/instance:Instance")
    assert vm.inputs["scratchDisks"] == [] and vm.inputs["allowStoppingForUpdate"] is True
    assert not resource_options[vm.name].replace_on_changes


def test_a_vm_without_an_external_address_waits_for_cloud_nat(
    plans: Plans, build: Build, resource_options: ResourceOpts
) -> None:
    """Its first boot installs what the image lacks (mdadm for several local SSDs): Cloud NAT first."""
    spec = spec_of(plans, "finetune-gcp-a2", spot=False, capacity=None)
    args = gcp_args(spec)
    args["access"] = {**args["access"], "public_ip": False, "nat": True}
    g = build(lambda: GcpGpuEnvironment("nat", args))
    vm = g.one("compute/instance:Instance")
    nat = g.one("compute/routerNat:RouterNat")
    assert [d._name for d in resource_options[vm.name].depends_on or []] == [nat.name]  # type: ignore[union-attr]
    public = build(lambda: GcpGpuEnvironment("pub", gcp_args(spec)))
    assert not public.of_type("compute/routerNat:RouterNat")
    assert not resource_options[public.one("compute/instance:Instance").name].depends_on


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


def test_multi_node_gets_compact_placement_but_no_tier1_on_a_gpu_series(plans: Plans, build: Build) -> None:
    """Tier_1 is for N2/N2D/C2/C2D/C3 with 30+ vCPUs only: the API refuses it on A2 (whose up to
    100 Gbps comes with the machine type), so a multi-node A2 environment asks for none."""
    spec = plans["finetune-gcp-a2"].spec
    spec = spec.model_copy(update={"nodes": 2, "network": spec.network.model_copy(update={"compact_placement": True})})
    g = build(lambda: GcpGpuEnvironment("mn", gcp_args(spec)))
    policy = g.one("compute/resourcePolicy:ResourcePolicy").inputs
    # no vmCount: with it adding a node, or replacing one, would replace the policy and every node
    assert policy["groupPlacementPolicy"] == {"collocation": "COLLOCATED"}
    vms = g.of_type("compute/instance:Instance")
    assert len(vms) == 2 and all(v.inputs["resourcePolicies"].startswith("https://") for v in vms)
    assert all(v.inputs.get("networkPerformanceConfig") is None for v in vms)
    assert len(g.of_type("compute/disk:Disk")) == 2


def test_tier1_goes_only_to_a_machine_type_that_takes_it(plans: Plans, build: Build) -> None:
    args = gcp_args(spec_of(plans, "finetune-gcp-a2", capacity=None))
    for machine_type, tier in (("n2-standard-32", "TIER_1"), ("n2-standard-16", None), ("a2-highgpu-1g", None)):
        wanted = {**args, "machine_type": machine_type, "tier1_networking": True, "accelerator_count": 0}
        vm = build(lambda w=wanted: GcpGpuEnvironment("t1", w)).one("compute/instance:Instance").inputs  # type: ignore[misc]
        perf = vm.get("networkPerformanceConfig")
        assert (perf or {}).get("totalEgressBandwidthTier") == tier, machine_type


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


def test_every_gpudirect_shape_in_the_catalog_has_a_nic_plan(catalog: Catalog) -> None:
    """The sizing credits these shapes their GPU-NIC bandwidth; the component must build those NICs."""
    shapes = {o.machine_type or o.name for o in catalog.offers if o.interconnect in GPUDIRECT}
    assert shapes == set(GPU_NIC_PLANS) == {"a3-highgpu-8g", "a3-megagpu-8g", "a3-ultragpu-8g", "a4-highgpu-8g"}
    # physical NICs per machine type (catalog gcp.yaml notes, Compute Engine "Networking and GPU machines")
    assert {m: p.host_nics + p.gpu_nics for m, p in GPU_NIC_PLANS.items()} == {
        "a3-highgpu-8g": 5,
        "a3-megagpu-8g": 9,
        "a3-ultragpu-8g": 10,
        "a4-highgpu-8g": 10,
    }


def test_a3_mega_cluster_gets_8_gpudirect_tcpxo_nics_each_on_its_own_network(catalog: Catalog, build: Build) -> None:
    sized = cluster(catalog, "H100-80GB")
    # Issue 13: a3-highgpu-8g is priced in us-central1 now and costs less, so sizing takes it (it
    # took A3 Mega only because A3 High had no price there); the Mega NIC plan is built from the
    # same spec on a3-megagpu-8g.
    assert (sized.machine_type, sized.nodes) == ("a3-highgpu-8g", 2)
    net = sized.network.model_copy(update={"interconnect": Interconnect.GPUDIRECT_TCPXO})
    spec = sized.model_copy(update={"offer": "a3-megagpu-8g", "machine_type": "a3-megagpu-8g", "network": net})
    assert (spec.machine_type, spec.nodes, spec.network.interconnect) == (
        "a3-megagpu-8g",
        2,
        Interconnect.GPUDIRECT_TCPXO,
    )
    g = build(lambda: GcpGpuEnvironment("mega", gcp_args(spec, project="proj")))
    per_node = nics_of(g)
    assert len(per_node) == 2
    for nics in per_node:
        assert len(nics) == 9 and {n["nicType"] for n in nics} == {"GVNIC"}
        assert (nics[0]["network"], nics[0]["subnetwork"]) == ("mega-net-id", "mega-subnet-id")
        assert [n["network"] for n in nics[1:]] == [f"mega-gpu{i}-net-id" for i in range(8)]
        assert [n["subnetwork"] for n in nics[1:]] == [f"mega-gpu{i}-subnet-id" for i in range(8)]
        assert all("accessConfigs" not in n for n in nics[1:])
    assert per_node[0] == per_node[1]  # the same rails on every node
    nets = {r.name: r.inputs for r in g.of_type("compute/network:Network")}
    assert len(nets) == 9 and all(nets[f"mega-gpu{i}-net"]["mtu"] == 8244 for i in range(8))
    assert not any("networkProfile" in n for n in nets.values())
    subnets = {r.name: r.inputs for r in g.of_type("compute/subnetwork:Subnetwork")}
    assert [subnets[f"mega-gpu{i}-subnet"]["ipCidrRange"] for i in range(8)] == [f"192.168.{i}.0/24" for i in range(8)]
    assert {subnets[f"mega-gpu{i}-subnet"]["region"] for i in range(8)} == {"us-central1"}
    rules = {r.name: r.inputs for r in g.of_type("compute/firewall:Firewall")}
    for i in range(8):
        rule = rules[f"mega-gpu{i}-internal"]
        assert rule["network"] == f"mega-gpu{i}-net-id" and rule["sourceRanges"] == [f"192.168.{i}.0/24"]
        assert "targetTags" not in rule
    vm = g.of_type("compute/instance:Instance")[0]
    assert "networkPerformanceConfig" not in vm.inputs
    assert "+8 NICs (GVNIC) on 8 networks" in summary(vm)  # what the plan's table shows


def test_a3_high_cluster_gets_4_gpudirect_tcpx_nics(catalog: Catalog, build: Build) -> None:
    spec = cluster(catalog, "H100-80GB").model_copy(update={"offer": "a3-highgpu-8g", "machine_type": "a3-highgpu-8g"})
    g = build(lambda: GcpGpuEnvironment("high", gcp_args(spec, project="proj")))
    for nics in nics_of(g):
        assert len(nics) == 5
        assert [n["network"] for n in nics[1:]] == [f"high-gpu{i}-net-id" for i in range(4)]
    assert len(g.of_type("compute/network:Network")) == 5


@pytest.mark.parametrize("machine_type", ["a3-ultragpu-8g", "a4-highgpu-8g"])
def test_rdma_cluster_gets_8_mrdma_nics_on_one_roce_network(catalog: Catalog, build: Build, machine_type: str) -> None:
    spec = cluster(catalog, "H200-141GB").model_copy(update={"offer": machine_type, "machine_type": machine_type})
    g = build(lambda: GcpGpuEnvironment("rdma", gcp_args(spec, project="proj")))
    for nics in nics_of(g):
        assert len(nics) == 10
        assert [n["nicType"] for n in nics] == ["GVNIC"] * 2 + ["MRDMA"] * 8
        assert [n["network"] for n in nics[:2]] == ["rdma-net-id", "rdma-host1-net-id"]
        assert {n["network"] for n in nics[2:]} == {"rdma-roce-net-id"}
        assert [n["subnetwork"] for n in nics[2:]] == [f"rdma-roce{i}-subnet-id" for i in range(8)]
    roce = next(r.inputs for r in g.of_type("compute/network:Network") if r.name == "rdma-roce-net")
    assert roce["networkProfile"] == "projects/proj/global/networkProfiles/us-central1-b-vpc-roce"
    assert roce["mtu"] == 8896
    rules = [r.inputs["network"] for r in g.of_type("compute/firewall:Firewall")]
    assert "rdma-roce-net-id" not in rules  # RoCE networks allow ingress implicitly and take no rules
    assert "rdma-host1-net-id" in rules


def test_rdma_cluster_without_a_zone_is_refused(catalog: Catalog) -> None:
    spec = cluster(catalog, "H200-141GB").model_copy(update={"zone": None})
    with pytest.raises(SpecRefused, match=r"spec\.zone: a3-ultragpu-8g nodes talk over a RoCE network, which is zonal"):
        GcpGpuEnvironment("bad", gcp_args(spec))


def test_a_single_a3_node_has_only_its_primary_nic(catalog: Catalog, build: Build) -> None:
    spec = cluster(catalog, "H100-80GB").model_copy(update={"nodes": 1})
    g = build(lambda: GcpGpuEnvironment("one", gcp_args(spec)))
    assert [len(n) for n in nics_of(g)] == [1]
    assert len(g.of_type("compute/network:Network")) == 1


def test_boot_disk_kind_comes_from_the_spec(plans: Plans, build: Build) -> None:
    spec = spec_of(plans, "finetune-gcp-g2", boot_disk_kind="hyperdisk-balanced", capacity=None)
    vm = build(lambda: GcpGpuEnvironment("bk", gcp_args(spec))).one("compute/instance:Instance").inputs
    assert vm["bootDisk"]["initializeParams"]["type"] == "hyperdisk-balanced"
    with pytest.raises(SpecRefused, match=r"spec\.boot_disk_kind: no boot disk kind is set"):
        GcpGpuEnvironment("bad", gcp_args(spec_of(plans, "finetune-gcp-g2", boot_disk_kind="")))


def test_a_serving_templates_data_disk_is_provisioned_only_where_its_kind_is(plans: Plans, build: Build) -> None:
    """As the VMs' own data disks (components.gcp.disks): no IOPS or throughput on pd-balanced."""

    def template_disk(disk: DataDisk) -> Any:
        spec = spec_of(plans, "serve-gcp-realtime", data_disk=disk)
        g = build(lambda: GcpGpuEnvironment("sd", gcp_args(spec)))
        (data,) = [d for d in g.one("compute/instanceTemplate:InstanceTemplate").inputs["disks"] if d.get("deviceName")]
        return data

    balanced = template_disk(DataDisk(kind="pd-balanced", size_gib=500, iops=6000, throughput_mbps=300))
    assert "provisionedIops" not in balanced and "provisionedThroughput" not in balanced
    hyper = template_disk(DataDisk(kind="hyperdisk-balanced", size_gib=500, iops=6000, throughput_mbps=300))
    assert hyper["provisionedIops"] == 6000 and hyper["provisionedThroughput"] == 300


def test_hyperdisk_limits_are_the_cores(plans: Plans) -> None:
    disk = DataDisk(kind="hyperdisk-balanced", size_gib=100, iops=60_000, throughput_mbps=500)
    with pytest.raises(
        SpecRefused, match=r"spec\.data_disk\.iops: hyperdisk-balanced takes 3000-50000 IOPS at 100 GiB"
    ):
        GcpGpuEnvironment("bad", gcp_args(spec_of(plans, "finetune-gcp-g2", data_disk=disk)))


def test_an_image_the_plan_would_refuse_is_refused_by_the_component_in_the_same_words(plans: Plans) -> None:
    with pytest.raises(SpecRefused, match=r"spec\.image: 'family/' is not a Compute Engine image reference"):
        GcpGpuEnvironment("bad", gcp_args(spec_of(plans, "finetune-gcp-a2", image="family/")))
