"""The platforms fullserver builds on and the hardware vocabulary shared by every layer."""

from __future__ import annotations

from enum import StrEnum


class Platform(StrEnum):
    """Where an environment runs; one Pulumi component per platform. What each one is and does
    (its provider, disks, zones, billables, ...) is its ``fullserver.platforms`` module's."""

    TPU_VM = "tpu-vm"
    AWS_GPU = "aws-gpu"
    GCP_GPU = "gcp-gpu"
    BARE_METAL = "bare-metal"
    GKE_GPU = "gke-gpu"
    GKE_TPU = "gke-tpu"
    EKS_GPU = "eks-gpu"


class PricingModel(StrEnum):
    """How capacity is paid for; which platforms take which is each platform's rule
    (``fullserver.platforms``), so the enum lives here, below both profiles and platforms."""

    SPOT_WITH_FALLBACK = "spot-with-fallback"
    ON_DEMAND = "on-demand"
    RESERVED = "reserved"
    DEDICATED_MONTHLY = "dedicated-monthly"


class AcceleratorKind(StrEnum):
    GPU = "gpu"
    TPU = "tpu"
    TRAINIUM = "trainium"
    INFERENTIA = "inferentia"


class Interconnect(StrEnum):
    """The scale-out fabric a shape offers between nodes (not NVLink inside a node)."""

    NONE = "none"
    EFA = "efa"
    GPUDIRECT_TCPX = "gpudirect-tcpx"
    GPUDIRECT_TCPXO = "gpudirect-tcpxo"
    GPUDIRECT_RDMA = "gpudirect-rdma"
    ICI = "ici"
