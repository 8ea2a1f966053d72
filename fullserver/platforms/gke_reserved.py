"""What a GKE node keeps for itself, so what its pods may use: GKE's reservations as implemented by
kubernetes/autoscaler ``cluster-autoscaler/cloudprovider/gce/reserved.go`` (which predicts GKE's
numbers: CPU and memory brackets, the kernel reservation, eviction thresholds, the local-SSD
filesystem overhead). EKS's nodeadm takes the same CPU tiers (``fullserver.platforms.eks``).

Apart from ``fullserver.platforms.gke`` so a reader finds the formulas in one place and the platform
module stays readable end to end; ``gke`` re-exports them.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from fullserver.platforms import gcp

MIB = 1.0
GIB_MIB = 1024.0
MEMORY_EVICTION_MIB = 100.0
"""kubelet ``evictionHard memory.available`` on GKE (100 MiB; reserved.go)."""
NODEFS_EVICTION_RATIO = 0.1
"""kubelet ``evictionHard nodefs.available`` default on GKE (10 % of the disk; reserved.go)."""

_MEMORY_BRACKETS = ((0.0, 0.25), (4000.0, 0.2), (8000.0, 0.1), (16000.0, 0.06), (128000.0, 0.02))
"""(threshold MiB, marginal rate): GKE's "GB" is 1,000 MiB on purpose (reserved.go)."""
_CPU_BRACKETS = ((0.0, 0.06), (1000.0, 0.01), (2000.0, 0.005), (4000.0, 0.0025))
"""(threshold millicores, marginal rate): 6 % of core 1, 1 % of core 2, 0.5 % of cores 3-4,
0.25 % of every core above 4 (GKE "Plan node sizes"; reserved.go)."""


def bracketed(capacity: float, brackets: tuple[tuple[float, float], ...]) -> float:
    """Marginal-rate reservation: each bracket's rate applies to capacity between its threshold
    and the next one's (reserved.go ``calculateReserved``)."""
    reserved = 0.0
    for i, (threshold, rate) in enumerate(brackets):
        top = brackets[i + 1][0] if i + 1 < len(brackets) else math.inf
        span = min(capacity, top) - threshold
        if span > 0:
            reserved += span * rate
    return reserved


def cpu_reserved_m(vcpus: int) -> int:
    """kube-reserved CPU in millicores (GKE's tiers; EKS's nodeadm uses the same)."""
    return int(bracketed(vcpus * 1000.0, _CPU_BRACKETS))


def memory_reserved_mib(memory_mib: float) -> int:
    """kube-reserved memory in MiB: 255 MiB below 1 GB, else the brackets."""
    if memory_mib <= 1000:
        return 255 if memory_mib > 0 else 0
    return int(bracketed(memory_mib, _MEMORY_BRACKETS))


def kernel_reserved_mib(memory_mib: float) -> float:
    """What the Linux kernel keeps of a COS node's memory before kubelet sees its capacity
    (reserved.go ``CalculateKernelReserved``): 1/64 + 16 MiB, + 64 MiB of software IO TLB above
    3 GiB, + 8 MiB at or below 8 GiB, + min(0.175 %, 248 MiB) statistical correction on COS."""
    reserved = memory_mib / 64 + 16
    if memory_mib > 3 * GIB_MIB:
        reserved += 64
    if memory_mib <= 8 * GIB_MIB:
        reserved += 8
    return reserved + min(0.00175 * memory_mib, 248.0)


LOCAL_SSD_OVERHEAD_KIB = {1: 7289472, 2: 13725224, 3: 20031312, 4: 26332924, 5: 32634536, 6: 38946604, 7: 45254008}
LOCAL_SSD_OVERHEAD_KIB |= {8: 51556096, 16: 52837800, 24: 78686620}
"""COS: N x 375 GiB minus the node's ephemeral-storage capacity, measured by the autoscaler's
authors on 1-node pools with ephemeral storage on N local SSDs (reserved.go); counts between
measured ones take the next measured count."""


def local_ssd_overhead_mib(count: int) -> float:
    measured = count if count <= 8 else (16 if count <= 16 else 24)
    return LOCAL_SSD_OVERHEAD_KIB[measured] / 1024


def boot_disk_os_mib(disk_mib: float) -> float:
    """COS's own partitions on the boot disk (reserved.go ``CalculateOSReservedEphemeralStorage``):
    1.5635 % + 4.148 GiB, plus an over-provisioning buffer of min(100 MiB, 0.1 %)."""
    return math.ceil(0.015635 * disk_mib) + math.ceil(4.148 * GIB_MIB) + min(100.0, math.ceil(0.001 * disk_mib))


class NodeResources(NamedTuple):
    """A node's capacity and what kubelet keeps of it (CPU in millicores, the rest in MiB): a named
    tuple, as sizing works one out for every offer it weighs as a node."""

    cpu_m: int
    memory_mib: float
    ephemeral_mib: float

    def minus(self, other: NodeResources) -> NodeResources:
        return NodeResources(
            self.cpu_m - other.cpu_m, self.memory_mib - other.memory_mib, self.ephemeral_mib - other.ephemeral_mib
        )


class Allocatable(NamedTuple):
    capacity: NodeResources
    reserved: NodeResources
    """kube-reserved + system-reserved + hard eviction thresholds."""

    @property
    def allocatable(self) -> NodeResources:
        return self.capacity.minus(self.reserved)


def allocatable(vcpus: int, memory_gib: float, local_ssds: int, boot_disk_gib: float) -> Allocatable:
    """A GKE COS node's allocatable: ephemeral storage on ``local_ssds`` x 375 GiB when there are
    any (``ephemeral_storage_local_ssd_config``), else on the boot disk."""
    physical = memory_gib * GIB_MIB
    memory = physical - kernel_reserved_mib(physical)
    if local_ssds:
        disk = local_ssds * gcp.LOCAL_SSD_GIB * GIB_MIB
        ephemeral = disk - local_ssd_overhead_mib(local_ssds)
    else:
        disk = boot_disk_gib * GIB_MIB
        ephemeral = disk - boot_disk_os_mib(disk)
    capacity = NodeResources(vcpus * 1000, memory, ephemeral)
    reserved = NodeResources(
        cpu_reserved_m(vcpus),
        memory_reserved_mib(physical) + MEMORY_EVICTION_MIB,
        NODEFS_EVICTION_RATIO * ephemeral,
    )
    return Allocatable(capacity, reserved)
