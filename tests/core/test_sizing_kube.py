"""Sizing for Kubernetes node pools: shapes balanced by the node's shape, as VMs (issue 38), with room
for the workload pod after kubelet and system reservations, and the pod's data volume making up NVMe
as the VM's data disk does."""

from __future__ import annotations

import dataclasses

import pytest

from fullserver.catalog import load_catalog
from fullserver.catalog.model import Platform
from fullserver.errors import NothingFits
from fullserver.profiles import load_profiles
from fullserver.sizing import assess, build_spec, kube_spec
from fullserver.sizing.rank import pod_misfit
from fullserver.workload import Workload

CATALOG = load_catalog()
PROFILES = load_profiles()


def t4(platform: str) -> Workload:
    return Workload.model_validate(
        {"profile": "experimentation", "platform": platform, "region": "us-east-1", "accelerator": "T4"}
    )


def test_a_node_pool_takes_the_vms_shape_as_the_reservations_are_not_the_workloads_loss() -> None:
    """g4dn.xlarge (4 vCPUs, 16 GiB) meets experimentation's 4 vCPUs and 16 GiB as a VM. As a node its pod
    requests 3.42 vCPUs and 14.0 GiB (at its 29 pods), the rest kept by kubelet and the node's agents, as a VM's kernel
    keeps some: the balance is the node's shape, so the pool takes the same g4dn.xlarge (issue 38)."""
    profile = PROFILES["experimentation"]
    vm = build_spec(profile, t4("aws-gpu"), Platform.AWS_GPU, CATALOG, "e")
    spec = kube_spec(profile, t4("eks-gpu"), Platform.EKS_GPU, CATALOG, "e")
    assert vm.offer == spec.offer == "g4dn.xlarge" and spec.platform is Platform.EKS_GPU
    assert spec.balance == vm.balance and spec.balance.ok
    assert not any(w.startswith("the pod on a") for w in spec.warnings)
    kube = spec.kube
    assert kube is not None
    assert (kube.pod.resources.cpu_m, kube.pod.resources.memory_mib) == (3420, 14321)
    lines = {line.dimension: line for line in spec.balance.lines}
    assert (lines["cpu"].provided, lines["ram"].provided) == (4, 16)


def test_a_node_must_leave_its_pod_room_or_it_is_a_near_miss_with_the_reason() -> None:
    """A node whose reservations take all its memory (1 vCPU, 1 GiB: EKS keeps 11 MiB x 110 pods +
    255 MiB and 100 MiB eviction) leaves a pod nothing to request, whatever its balance."""
    offer = CATALOG.offer("g4dn.xlarge")
    assert offer is not None
    tiny = dataclasses.replace(offer, host=offer.host.model_copy(update={"vcpus": 1, "memory_gib": 1.0}))
    profile = PROFILES["experimentation"]
    assert pod_misfit(profile, offer, Platform.AWS_GPU, Platform.EKS_GPU) == ""
    why = pod_misfit(profile, tiny, Platform.AWS_GPU, Platform.EKS_GPU)
    assert why == "no room for a workload pod's memory after the node's reservations"
    assert assess(profile, tiny, Platform.AWS_GPU, 1, Platform.EKS_GPU)[2] == why
    assert assess(profile, tiny, Platform.AWS_GPU)[2] == ""  # a VM has no pod to fit


def test_a_second_node_pool_stack_of_one_kind_finds_the_shape_worked_out_for_the_first() -> None:
    """A node pool is sized as its VMs under a copy of the profile naming the VM platform; one
    copy per profile and VM platform is kept, so the ranking and shape kept for it are found again
    (their questions hold the profile by identity) and another profile's are its own."""
    CATALOG.memo.clear()
    first = kube_spec(PROFILES["experimentation"], t4("eks-gpu"), Platform.EKS_GPU, CATALOG, "a")
    kept = len(CATALOG.memo)
    again = kube_spec(PROFILES["experimentation"], t4("eks-gpu"), Platform.EKS_GPU, CATALOG, "b")
    assert len(CATALOG.memo) == kept  # nothing asked afresh
    per_stack = {"environment", "labels", "kube"}  # the pools carry the environment's name too
    assert again.model_dump(exclude=per_stack) == first.model_dump(exclude=per_stack)
    other = kube_spec(PROFILES["fine-tuning"], t4("eks-gpu"), Platform.EKS_GPU, CATALOG, "c")
    assert len(CATALOG.memo) > kept and other.profile == "fine-tuning"


def test_the_pods_data_volume_makes_up_what_the_nodes_local_ssds_miss_as_the_vms_data_disk() -> None:
    """fine-tuning on 4 x L4 wants 2,000 GiB per node; a g2-standard-48 node has 1,500 GiB of local SSD,
    so each pod's data volume is the rest, 500 GiB, the VM's data disk (issue 38: sized the same)."""
    profile = PROFILES["fine-tuning"]
    work = Workload.model_validate(
        {"profile": "fine-tuning", "platform": "gke-gpu", "region": "us-central1", "accelerator": "L4"}
        | {"acceleratorCount": 4, "cluster": "ml-prod"}
    )
    spec = kube_spec(profile, work, Platform.GKE_GPU, CATALOG, "ft")
    vm = build_spec(
        profile, work.model_copy(update={"platform": None, "cluster": None}), Platform.GCP_GPU, CATALOG, "v"
    )
    kube = spec.kube
    assert kube is not None and kube.data_volume is not None and spec.data_disk is not None and vm.data_disk is not None
    assert kube.data_volume.size_gib == spec.data_disk.size_gib == vm.data_disk.size_gib == 2000 - 1500
    nvme = next(line for line in spec.balance.lines if line.dimension == "nvme")
    assert nvme.ok and nvme.provided == 1500 + 500
    assert kube.node_labels["fullserver-pod-data-gib"] == "500"
    assert kube.node_labels["fullserver-pod-data-kind"] == kube.data_volume.kind == "pd-balanced"


def test_a_boot_disk_is_never_scratch_so_a_pool_without_local_ssd_gets_the_vms_data_volume() -> None:
    """a2-highgpu-1g has no local SSD: its pod's ephemeral storage is on the boot disk (177 GiB), which
    is not NVMe scratch. fine-tuning's 500 GiB per A100 is all data volume, as the VM's data disk is
    (it was 327 GiB on GKE, the boot disk counted as NVMe)."""
    profile = PROFILES["fine-tuning"]
    asked = {"profile": "fine-tuning", "region": "us-central1", "accelerator": "A100-40GB"}
    vm = build_spec(profile, Workload.model_validate(asked), Platform.GCP_GPU, CATALOG, "v")
    work = Workload.model_validate(asked | {"platform": "gke-gpu", "cluster": "ml-prod"})
    spec = kube_spec(profile, work, Platform.GKE_GPU, CATALOG, "k")
    kube = spec.kube
    assert kube is not None and kube.data_volume is not None and vm.data_disk is not None
    assert spec.offer == vm.offer == "a2-highgpu-1g" and kube.local_ssd_count == 0
    assert kube.pod.resources.ephemeral_mib // 1024 == 173
    assert kube.data_volume.size_gib == vm.data_disk.size_gib == 500
    nvme = next(line for line in spec.balance.lines if line.dimension == "nvme")
    assert nvme.provided == 500 and nvme.ok


def test_when_no_shape_is_balanced_a_pools_sizing_refuses_in_one_line_naming_the_pool() -> None:
    """A profile asking 65 vCPUs per L4: no aws-gpu shape has them, so no eks-gpu node does."""
    base = PROFILES["experimentation"]
    cpu = base.balance.cpu_per_accelerator.model_copy(update={"value": 65})
    profile = base.model_copy(update={"balance": base.balance.model_copy(update={"cpu_per_accelerator": cpu})})
    work = Workload.model_validate(
        {"profile": "experimentation", "platform": "eks-gpu", "region": "us-east-1", "accelerator": "L4"}
    )
    with pytest.raises(NothingFits) as caught:
        kube_spec(profile, work, Platform.EKS_GPU, CATALOG, "e")
    error = caught.value
    assert error.where == "profile 'experimentation' on eks-gpu (nodes of aws-gpu) in us-east-1"
    assert error.what.startswith("no shape meets every minimum; closest: g6.16xlarge: short: cpu 64 vCPUs < 65 vCPUs")
    assert "\n" not in str(error)
