"""A node's measuring log and its node object → the verdict ``fullserver verify`` shows: the SSH
path's parsers and lines, the node's OS disk told from its local NVMe, a TPU node's chips from
what it offers, and the node's allocatable against what the workload's pods request."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from fullserver.baremetal.errors import ProbeError
from fullserver.baremetal.probe import parse_probe
from fullserver.catalog import load_catalog
from fullserver.kube import KubePlan, kube_plan
from fullserver.kube.verify_lines import Node, node_verdict, os_disks, parse_log, quantity
from fullserver.plan import StackPlan
from fullserver.platform import Platform
from fullserver.profiles import load_profiles

DATA = Path(__file__).parent / "data"
P5_LOG = (DATA / "eks-p5-node.log").read_text()
NODE = "ip-10-0-1-23.ec2.internal"
# A p5.48xlarge's allocatable as the plan works it out (kube-reserved pinned, EKS's formula), as
# kubelet writes it
P5_ALLOCATABLE = {
    "cpu": "191450m",
    "memory": "2111990784Ki",
    "ephemeral-storage": "26717701120Ki",
    "nvidia.com/gpu": "8",
    "pods": "100",
}


def _p5(plans: dict[str, StackPlan]) -> KubePlan:
    return kube_plan(plans["train-p5-cluster"].spec, Platform.EKS_GPU, cluster="ml-prod")


def test_quantities_read_as_kubernetes_writes_them() -> None:
    assert quantity("191450m") == Decimal("191.45")
    assert quantity("8") == 8
    assert quantity("182416Mi") == 182416 * 2**20
    assert quantity("1870953804Ki") == 1870953804 * 1024
    assert quantity("1e3") == 1000
    assert quantity("2G") == 2 * 10**9
    with pytest.raises(ValueError, match="not a Kubernetes quantity"):
        quantity("lots")


def test_the_nodes_root_disk_is_not_counted_as_local_nvme() -> None:
    # lsblk in the container: the EBS root volume carries none of the container's mounts
    plain = parse_probe(NODE, P5_LOG)
    assert not any(d.os_disk for d in plain.disks)
    # the node's mount table names it: / on nvme0n1p1, /boot/efi on nvme0n1p128
    log = parse_log(NODE, P5_LOG)
    assert [d.name for d in log.facts.disks if d.os_disk] == ["nvme0n1"]
    assert log.facts.local_nvme_gib == pytest.approx(8 * 3.8e12 / 2**30)
    assert log.problems == []


def test_os_disks_follow_device_mapper_and_raid_to_their_disks() -> None:
    # COS / Bottlerocket: / on dm-0 (dm-verity) over a partition of the boot disk
    cos = "15 1 253:0 / / ro,relatime - ext2 /dev/root ro\n40 15 259:1 / /mnt/stateful_partition rw - ext4 /dev/nvme0n1p1 rw"
    devnums = "dm-0|253:0|block|nvme0n1p3 \nnvme0n1|259:0|nvme0|\nnvme0n1p1|259:1|nvme0n1|\nnvme0n1p3|259:3|nvme0n1|\nnvme1n1|259:4|nvme1|"
    assert os_disks(cos, devnums) == {"nvme0n1"}
    # a DGX: / on an md mirror of two disks' partitions
    dgx = "30 1 9:1 / / rw - ext4 /dev/md1 rw"
    devnums = "md1|9:1|block|nvme0n1p2 nvme1n1p2\nnvme0n1|259:0|nvme0|\nnvme0n1p2|259:2|nvme0n1|\nnvme1n1|259:5|nvme1|\nnvme1n1p2|259:7|nvme1n1|"
    assert os_disks(dgx, devnums) == {"nvme0n1", "nvme1n1"}
    assert os_disks("", devnums) == set()


def test_a_log_cut_short_is_one_error_naming_the_node() -> None:
    with pytest.raises(ProbeError, match=f"{NODE}: the measuring pod's log ends before the measurement did"):
        parse_log(NODE, P5_LOG.replace("@@fullserver:done\n", ""))


def test_without_the_nodes_mount_table_local_nvme_is_flagged() -> None:
    unreadable = re.sub(r"@@fullserver:end hostmounts 0", "@@fullserver:end hostmounts 1", P5_LOG)
    assert parse_log(NODE, unreadable).problems == [
        "the node's mount table (/proc/1/mountinfo) did not name its OS disk: local NVMe counts every NVMe disk"
    ]


def test_a_gpu_node_gets_the_ssh_paths_lines_and_what_kubernetes_offers(plans: dict[str, StackPlan]) -> None:
    plan = _p5(plans)
    profile = load_profiles()[plan.profile]
    node = Node(NODE, P5_ALLOCATABLE, ready=True, address="10.0.1.23")
    got = node_verdict(plan, node, parse_log(NODE, P5_LOG), profile, load_catalog())
    lines = {x.dimension: x for x in got.lines}
    assert lines["cpu"].delivered == 192
    assert lines["nvme capacity"].delivered == pytest.approx(28312.2, abs=0.1)
    # the SSH path's GPU verdicts, from the same nvidia-smi output
    assert (lines["gpu pcie width"].promised, lines["gpu pcie width"].delivered) == (16, 8)
    assert (lines["nvlink"].promised, lines["nvlink"].delivered) == (18, 17)
    assert (lines["gpu memory health"].promised, lines["gpu memory health"].delivered) == (8, 7)
    # what the node offers pods, against the pool and the workload's requests
    assert (lines["allocatable nvidia.com/gpu"].promised, lines["allocatable nvidia.com/gpu"].delivered) == (8, 8)
    assert lines["allocatable cpu"].promised == plan.pod.resources.cpu_m / 1000
    assert lines["allocatable cpu"].delivered == 191.45
    assert lines["allocatable cpu"].ok and lines["allocatable memory"].ok and lines["allocatable ephemeral"].ok
    assert lines["allocatable memory"].delivered == 2062491
    assert got.status == "short"
    assert "8 x NVIDIA H100 80GB HBM3 (driver 550.54.15" in got.gpus
    assert got.address == "10.0.1.23"


def test_a_node_offering_fewer_accelerators_than_its_pool_is_short(plans: dict[str, StackPlan]) -> None:
    plan = _p5(plans)
    node = Node(NODE, {**P5_ALLOCATABLE, "nvidia.com/gpu": "7"}, ready=False)
    got = node_verdict(plan, node, parse_log(NODE, P5_LOG), load_profiles()[plan.profile], load_catalog())
    (gpu,) = [x for x in got.lines if x.dimension == "allocatable nvidia.com/gpu"]
    assert (gpu.promised, gpu.delivered, gpu.ok) == (8, 7, False)
    assert f"node {NODE} is not Ready" in got.problems


def test_a_tpu_nodes_chips_are_the_ones_it_offers(plans: dict[str, StackPlan]) -> None:
    plan = plans["gke-tpu-slice"].spec.kube
    assert plan is not None
    # The p5 node's host sections as a host with no GPU (nvidia-smi absent), measured as a TPU host.
    log = re.sub(
        r"@@fullserver:section gpus\n.*?@@fullserver:end gpus 0",
        "@@fullserver:section gpus\n@@fullserver:absent\n@@fullserver:end gpus 0",
        P5_LOG,
        flags=re.S,
    )
    node = Node("gke-tpu-slice-tpu-0", {"cpu": "111650m", "memory": "186793984Ki", "google.com/tpu": "4"})
    got = node_verdict(plan, node, parse_log(node.name, log), load_profiles()[plan.profile], load_catalog())
    assert not any("GPU" in p for p in got.problems)
    assert got.gpus == "TPU-v5e (4 chips offered)"
    lines = {x.dimension: x for x in got.lines}
    assert (lines["allocatable google.com/tpu"].promised, lines["allocatable google.com/tpu"].delivered) == (4, 4)
    assert lines["cpu"].delivered == 192
    assert lines["allocatable ephemeral"].delivered is None  # not reported by this node: not judged
    assert not any(x.dimension.startswith("gpu") for x in got.lines)


def test_a_link_that_reports_no_speed_is_not_measurable_never_short(plans: dict[str, StackPlan]) -> None:
    """The p5 node's ENA link (ens32) reads -1 in sysfs: its network lines say why they could not be
    measured, the node is unverified on them (a problem), and no network line is short; the same
    node whose link reads a speed too slow for the profile is short."""
    plan = _p5(plans)
    profile = load_profiles()[plan.profile]
    node = Node(NODE, P5_ALLOCATABLE)
    got = node_verdict(plan, node, parse_log(NODE, P5_LOG), profile, load_catalog())
    network = [x for x in got.lines if x.dimension in ("network link", "internode network")]
    assert network and all(x.delivered is None and x.ok is None for x in network)
    assert all(x.detail.startswith("not measurable: ens32 reports no link speed") for x in network)
    assert any(p.startswith("network link speed not measurable: ens32") for p in got.problems)
    assert not any(x.dimension in ("network link", "internode network") for x in got.short)
    slow = P5_LOG.replace("ens32|up|-1|9001|1|1", "ens32|up|25000|9001|1|1")
    got = node_verdict(plan, node, parse_log(NODE, slow), profile, load_catalog())
    (link,) = [x for x in got.lines if x.dimension == "network link"]
    assert (link.delivered, link.ok) == (25, False) and "not measurable" not in link.detail
    assert not any("not measurable" in p for p in got.problems)


def test_a_readable_link_that_meets_the_profile_keeps_its_line_beside_an_unreadable_one(
    plans: dict[str, StackPlan],
) -> None:
    """An unreadable second link does not hide a first one that already delivers the profile's minimum."""
    plan = _p5(plans)
    fast = P5_LOG.replace("ens32|up|-1|9001|1|1", "ens32|up|3200000|9001|1|1\nens33|up|-1|9001|1|1")
    got = node_verdict(
        plan, Node(NODE, P5_ALLOCATABLE), parse_log(NODE, fast), load_profiles()[plan.profile], load_catalog()
    )
    (link,) = [x for x in got.lines if x.dimension == "network link"]
    assert link.delivered == 3200 and link.ok
    assert not any("not measurable" in p for p in got.problems)
