"""The NICs a multi-node A3/A4 node on Compute Engine needs for GPU-to-GPU traffic, and the rule
that keeps RoCE networks zonal: read by the platform's rules, its capacity steps and the
components (``fullserver.platforms.gcp`` re-exports them)."""

from __future__ import annotations

from dataclasses import dataclass

from fullserver.platforms.base import Refusal


@dataclass(frozen=True)
class GpuNicPlan:
    """The NICs a multi-node A3/A4 node needs besides its primary gVNIC, and their networks."""

    fabric: str
    gpu_nics: int
    """NICs for GPU-to-GPU traffic between nodes."""
    nic_type: str
    """GVNIC (GPUDirect-TCPX/TCPXO) or MRDMA (GPUDirect RDMA over RoCE)."""
    rdma: bool
    """All GPU NICs on ONE RoCE VPC network (``network_profile`` ZONE-vpc-roce), a subnet each;
    otherwise each GPU NIC gets its own VPC network, subnet and internal firewall rule."""
    host_nics: int
    """gVNICs for host traffic, the primary (the environment's network) included."""
    mtu: int


# "Networking and GPU machines": A3 High 1,000 Gbps over GPUDirect-TCPX (4 GPU NICs + 1 gVNIC),
# A3 Mega 1,800 Gbps over GPUDirect-TCPXO (8 + 1), A3 Ultra and A4 3,600 Gbps: 8 ConnectX-7 NICs
# for GPU traffic only (MRDMA) + 2 gVNICs; the same counts as the catalog's NIC notes (5 / 9 / 10
# physical NICs). The A3 High / Mega GPUDirect guides: one VPC network + subnet + firewall rule
# per GPU NIC, MTU 8244. "RDMA network profiles": RoCE networks take the profile ZONE-vpc-roce,
# only MRDMA NICs, MTU 8896, instances in that zone only, implied allow rules.
GPU_NIC_PLANS: dict[str, GpuNicPlan] = {
    "a3-highgpu-8g": GpuNicPlan("GPUDirect-TCPX", 4, "GVNIC", rdma=False, host_nics=1, mtu=8244),
    "a3-megagpu-8g": GpuNicPlan("GPUDirect-TCPXO", 8, "GVNIC", rdma=False, host_nics=1, mtu=8244),
    "a3-ultragpu-8g": GpuNicPlan("GPUDirect RDMA (RoCE)", 8, "MRDMA", rdma=True, host_nics=2, mtu=8896),
    "a4-highgpu-8g": GpuNicPlan("GPUDirect RDMA (RoCE)", 8, "MRDMA", rdma=True, host_nics=2, mtu=8896),
}


def gpu_nic_plan(machine_type: str, nodes: int) -> GpuNicPlan | None:
    """The GPU NICs an environment builds: its shape's plan, for multi-node environments only."""
    return GPU_NIC_PLANS.get(machine_type) if nodes > 1 else None


def gpu_nic_refusal(machine_type: str, nodes: int, zone: str | None) -> Refusal | None:
    """RoCE networks are zonal: the nodes' zone must be known before the network is made."""
    plan = gpu_nic_plan(machine_type, nodes)
    if plan is None or not plan.rdma or zone:
        return None
    return Refusal(
        "zone",
        "zone",
        f"{machine_type} nodes talk over a RoCE network, which is zonal, and no zone is set",
        "set fullserver:zone to a zone offering the shape",
    )
