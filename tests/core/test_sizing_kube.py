"""Sizing for Kubernetes node pools: shapes ranked by the workload pod's share of each node (its
allocatable after kubelet and system reservations, less the DaemonSet allowance), and the pod's data
volume making up NVMe as a VM's data disk does."""

from __future__ import annotations

import math

import pytest

from fullserver.catalog import load_catalog
from fullserver.catalog.model import Platform
from fullserver.errors import NothingFits
from fullserver.profiles import load_profiles
from fullserver.sizing import build_spec, kube_spec
from fullserver.workload import Workload

CATALOG = load_catalog()
PROFILES = load_profiles()


def t4(platform: str) -> Workload:
    return Workload.model_validate(
        {"profile": "experimentation", "platform": platform, "region": "us-east-1", "accelerator": "T4"}
    )


def test_a_node_pool_takes_the_next_shape_when_the_vm_shape_leaves_its_pod_short() -> None:
    """g4dn.xlarge (4 vCPUs, 16 GiB) meets experimentation's 4 vCPUs and 16 GiB as a VM; as a node its
    pod gets 3 whole vCPUs and 13.1 GiB, so the pool is sized on g4dn.2xlarge, whose pod meets both."""
    profile = PROFILES["experimentation"]
    vm = build_spec(profile, t4("aws-gpu"), Platform.AWS_GPU, CATALOG, "e")
    assert vm.offer == "g4dn.xlarge"
    spec = kube_spec(profile, t4("eks-gpu"), Platform.EKS_GPU, CATALOG, "e")
    assert spec.offer == "g4dn.2xlarge" and spec.platform is Platform.EKS_GPU
    assert spec.near_misses[0].offer == "g4dn.xlarge"
    assert spec.near_misses[0].reason == "short: cpu 3 vCPUs < 4 vCPUs; ram 13.1 GiB < 16 GiB"
    assert not any(w.startswith("the pod on a") for w in spec.warnings)
    # The balance the plan shows is the pod's: its whole vCPUs and its memory.
    kube = spec.kube
    assert kube is not None
    lines = {line.dimension: line for line in spec.balance.lines}
    assert lines["cpu"].provided == kube.pod.resources.cpu_m // 1000 == 7
    assert lines["ram"].provided == pytest.approx(kube.pod.resources.memory_mib / 1024)


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


def test_the_pods_data_volume_makes_up_what_its_ephemeral_storage_misses() -> None:
    """fine-tuning on 4 x L4 wants 2,000 GiB per node; a g2-standard-48 node's pod gets 1,327 GiB of its
    1,500 GiB of local SSD, so its data volume is the rest (673 GiB), not the VM's 500."""
    profile = PROFILES["fine-tuning"]
    work = Workload.model_validate(
        {"profile": "fine-tuning", "platform": "gke-gpu", "region": "us-central1", "accelerator": "L4"}
        | {"acceleratorCount": 4, "cluster": "ml-prod"}
    )
    spec = kube_spec(profile, work, Platform.GKE_GPU, CATALOG, "ft")
    kube = spec.kube
    assert kube is not None and kube.data_volume is not None and spec.data_disk is not None
    ephemeral = kube.pod.resources.ephemeral_mib / 1024
    assert kube.data_volume.size_gib == spec.data_disk.size_gib == math.ceil(2000 - ephemeral) == 673
    nvme = next(line for line in spec.balance.lines if line.dimension == "nvme")
    assert nvme.ok and nvme.provided == pytest.approx(ephemeral + 673)
    assert kube.node_labels["fullserver-pod-data-gib"] == "673"
    assert kube.node_labels["fullserver-pod-data-kind"] == kube.data_volume.kind == "pd-balanced"


def test_when_no_shape_leaves_a_pod_enough_sizing_refuses_in_one_line() -> None:
    """A profile asking 64 vCPUs per L4: g6.16xlarge has 64 as a VM, its pod fewer; nothing fits."""
    base = PROFILES["experimentation"]
    cpu = base.balance.cpu_per_accelerator.model_copy(update={"value": 64})
    profile = base.model_copy(update={"balance": base.balance.model_copy(update={"cpu_per_accelerator": cpu})})
    work = Workload.model_validate(
        {"profile": "experimentation", "platform": "eks-gpu", "region": "us-east-1", "accelerator": "L4"}
    )
    assert build_spec(profile, work, Platform.AWS_GPU, CATALOG, "e").offer == "g6.16xlarge"
    with pytest.raises(NothingFits) as caught:
        kube_spec(profile, work, Platform.EKS_GPU, CATALOG, "e")
    error = caught.value
    assert error.where == "profile 'experimentation' on eks-gpu (nodes of aws-gpu) in us-east-1"
    assert error.what.startswith(
        "no shape meets every minimum with a pod's share after kubelet and system reservations; closest: g6.16xlarge: "
        "short: cpu 63 vCPUs < 64 vCPUs"
    )
    assert "\n" not in str(error)
