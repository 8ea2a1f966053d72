"""GKE's and EKS's node reservations, against their sources' own figures."""

from __future__ import annotations

import pytest

from fullserver.platforms import eks, gke
from fullserver.platforms.pool_rules import pinned_pods

MIB = 1024 * 1024


@pytest.mark.parametrize(
    ("vcpus", "millicores"),
    [
        (1, 60),  # 6 % of the first core
        (2, 70),  # + 1 % of the second
        (4, 80),  # + 0.5 % of cores 3-4
        (8, 90),  # + 0.25 % of every core above 4
        (12, 100),
        (208, 590),  # the reference's derived example (kubernetes.md section 4)
    ],
)
def test_cpu_reservation_tiers(vcpus: int, millicores: int) -> None:
    assert gke.cpu_reserved_m(vcpus) == millicores


@pytest.mark.parametrize(
    ("memory_mib", "reserved_mib"),
    [
        (512, 255),  # below 1 GB: the minimum
        (1000, 255),
        (4000, 1000),  # 25 % of the first 4 "GB" (1,000 MiB each, as reserved.go does on purpose)
        (8000, 1800),  # + 20 % of the next 4
        (16000, 2600),  # + 10 % of the next 8
        (128000, 9320),  # + 6 % of the next 112
        (1872 * 1024, 45098),  # + 2 % above: 1,872 GiB (the reference's example, in reserved.go's units)
    ],
)
def test_memory_reservation_brackets(memory_mib: float, reserved_mib: int) -> None:
    assert gke.memory_reserved_mib(memory_mib) == reserved_mib


@pytest.mark.parametrize(
    ("disk_gib", "expected_bytes"),
    [(15, 4721806516), (90, 6061433659)],  # reserved.go's own test cases for COS (~4.7 GiB, ~5.6 GiB)
)
def test_cos_boot_disk_os_share_matches_the_autoscalers_figures(disk_gib: int, expected_bytes: int) -> None:
    """Computed in whole MiB (rounded up), so within a few MiB of the byte-exact figure, never below it."""
    ours = gke.boot_disk_os_mib(disk_gib * 1024) * MIB
    assert expected_bytes <= ours <= expected_bytes + 4 * MIB


def test_local_ssd_overhead_takes_the_next_measured_count() -> None:
    assert gke.local_ssd_overhead_mib(1) == 7289472 / 1024
    assert gke.local_ssd_overhead_mib(12) == gke.local_ssd_overhead_mib(16) == 52837800 / 1024
    assert gke.local_ssd_overhead_mib(20) == 78686620 / 1024


def test_gke_allocatable_is_capacity_less_reservations_and_eviction() -> None:
    node = gke.allocatable(vcpus=12, memory_gib=48, local_ssds=1, boot_disk_gib=150)
    physical = 48 * 1024
    assert node.capacity.cpu_m == 12_000 and node.reserved.cpu_m == 100
    assert node.capacity.memory_mib == physical - gke.kernel_reserved_mib(physical)
    assert node.reserved.memory_mib == gke.memory_reserved_mib(physical) + 100  # kube-reserved + evictionHard
    assert node.capacity.ephemeral_mib == 375 * 1024 - 7289472 / 1024  # on the local SSD, not the boot disk
    assert node.reserved.ephemeral_mib == pytest.approx(0.1 * node.capacity.ephemeral_mib)
    allocatable = node.allocatable
    assert 0 < allocatable.memory_mib < node.capacity.memory_mib and allocatable.cpu_m == 11_900


def test_gke_ephemeral_storage_is_the_boot_disk_without_local_ssds() -> None:
    node = gke.allocatable(vcpus=8, memory_gib=32, local_ssds=0, boot_disk_gib=100)
    assert node.capacity.ephemeral_mib == 100 * 1024 - gke.boot_disk_os_mib(100 * 1024)


def test_eks_nodeadm_defaults() -> None:
    assert eks.memory_reserved_mib(110) == 1465  # 11 x maxPods + 255
    assert eks.kube_reserved(192) == {"cpu": "550m", "memory": "1465Mi", "ephemeral-storage": "1024Mi"}
    node = eks.allocatable(vcpus=8, memory_gib=32, instance_store_gib=441, root_gib=150)
    assert node.reserved.cpu_m == 90
    assert node.reserved.memory_mib == 1465 + 100
    assert node.capacity.ephemeral_mib == 441 * 1024  # the instance-store RAID0, not the root volume
    assert node.reserved.ephemeral_mib == 1024 + 0.1 * 441 * 1024
    root_only = eks.allocatable(vcpus=8, memory_gib=32, instance_store_gib=0, root_gib=150)
    assert root_only.capacity.ephemeral_mib == 150 * 1024


def test_node_config_user_data_is_mime_multipart() -> None:
    config = eks.node_config(raid0=False, max_pods=110, kube_reserved=eks.kube_reserved(4))
    assert "instance" not in config["spec"]  # type: ignore[operator]
    text = eks.user_data(config)
    assert 'Content-Type: multipart/mixed; boundary="==FULLSERVER=="' in text
    assert "Content-Type: application/node.eks.aws" in text and text.endswith("--==FULLSERVER==--\r\n")


def test_an_eks_node_pins_no_more_pods_than_its_vpc_cni_addresses() -> None:
    """A pod past what the VPC CNI addresses never gets an IP and stays in ContainerCreating: a
    g4dn.xlarge addresses 29 (3 ENIs x (10 - 1) + 2), so it pins 29, not nodeadm's fallback 110."""
    assert pinned_pods(eks.MAX_PODS, 29) == 29 and pinned_pods(eks.MAX_PODS, 737) == eks.MAX_PODS == 110
    assert pinned_pods(eks.MAX_PODS, None) == 110  # no figure: nodeadm's own fallback
    assert eks.memory_reserved_mib(pinned_pods(eks.MAX_PODS, 29)) == 574  # 11 x 29 + 255
