"""Cloud TPU VMs and slices (``tpu-vm``): everything fullserver knows about them.

A TPU is bought as a slice of a type (``v5litepod-8``, ``v5p-128``): one resource, priced as a
whole, whose hosts are the environment's nodes. Sources (Google Cloud documentation): Cloud TPU
"TPU regions and zones", "Attach durable block storage" (Hyperdisk on v6e/TPU7x, read-only disks
on multi-host slices), "Queued resources"; pulumi-gcp 10.2's ``tpu.V2QueuedResource`` (no
scheduling, data disks, service account, labels, metadata or tags).
"""

from __future__ import annotations

from fullserver.platform import AcceleratorKind, Platform, PricingModel
from fullserver.platforms import gcp
from fullserver.platforms.base import CAPACITY_RULES, CLOUD_LOGIN, PlatformRules, Refusal, Request, disk_kind_refusal

DATA_DISK_KINDS = ("pd-balanced", "hyperdisk-balanced")
HYPERDISK_ONLY = (r"^(v6e|tpu7x)", "hyperdisk-balanced")
"""TPU v6e and TPU7x attach Hyperdisk only; v4, v5e and v5p use pd-balanced."""

DATA_DEVICE = "/dev/disk/by-id/google-persistent-disk-1"
"""The first data disk of a TPU VM (TPU VMs name attached disks persistent-disk-N)."""

QUEUED_LIMIT = "pulumi-gcp 10.2's V2QueuedResource has no field for it"


def _queued(req: Request) -> str:
    """Why the request is queued, in words: every multi-host slice is."""
    return f"{req.shape} is requested as a queued resource" + (f" ({req.hosts} hosts)" if req.hosts > 1 else "")


def zone_needed(req: Request) -> Refusal | None:
    """Cloud TPUs are zonal: the node is created in one zone, which must be known."""
    if req.zone:
        return None
    return Refusal(
        "zone", "zone", "Cloud TPUs are zonal and no zone is set", "set fullserver:zone to a zone offering the type"
    )


def no_local_ssds(req: Request) -> Refusal | None:
    if not req.local_ssds:
        return None
    return Refusal("platform", "local_nvme_disks", f"TPU VMs have no local SSDs ({req.local_ssds} requested)", "")


def queued_spot(req: Request) -> Refusal | None:
    if not (req.queued and req.spot):
        return None
    return Refusal(
        "queued" if req.queued_asked else "accelerator",
        "spot",
        f"{_queued(req)}, which cannot be spot: {QUEUED_LIMIT}",
        "use an on-demand or reserved profile for this slice, or a single-host type without queued",
    )


def queued_reservation(req: Request) -> Refusal | None:
    if not (req.queued and req.reservation):
        return None
    return Refusal(
        "reservation",
        "reservation",
        f"{_queued(req)}, which cannot name a reservation: {QUEUED_LIMIT}",
        "remove fullserver:reservation",
    )


def queued_data_disk(req: Request) -> Refusal | None:
    if not (req.queued and req.data_disk):
        return None
    return Refusal(
        "datasetGib",
        "data_disk",
        f"{_queued(req)}, which cannot attach a data disk: {QUEUED_LIMIT}",
        "stream the dataset from Cloud Storage",
    )


def read_only_on_slices(req: Request) -> Refusal | None:
    """A multi-host slice attaches disks read-only, so a read-write data disk cannot be on one."""
    if req.hosts < 2 or not req.data_disk or req.data_disk_read_only:
        return None
    return Refusal(
        "datasetGib",
        "data_disk",
        f"a read-write data disk cannot attach to the multi-host slice {req.shape} ({req.hosts} hosts)",
        "stream the dataset from Cloud Storage, or attach the disk read-only",
    )


def data_disk_kind(req: Request) -> Refusal | None:
    if req.data_disk is None:
        return None
    return disk_kind_refusal(
        req.data_disk, DATA_DISK_KINDS, "TPU VMs attach pd-balanced or hyperdisk-balanced, not {kind}"
    )


MULTISLICE = Refusal("nodes", "nodes", "multislice TPU environments are not supported", "use one larger slice")
"""An environment is one slice: more nodes means a larger type, not more slices."""


COMPONENT = "tpu"
"""Which args of the ``Environment`` component build this platform (``components.args``)."""

RULES = PlatformRules(
    platform=Platform.TPU_VM,
    provider="gcp",
    accelerator_kinds=frozenset({AcceleratorKind.TPU}),
    pricing=frozenset({PricingModel.SPOT_WITH_FALLBACK, PricingModel.ON_DEMAND, PricingModel.RESERVED}),
    options={
        "queued": "a queued resource is a Cloud TPU request",
        "reservation": "a Cloud TPU reservation name",
        "image": "a TPU runtime version",
        **CLOUD_LOGIN,
    },
    slices=True,
    image_is_runtime=True,
    disk_kinds=gcp.DISKS,
    family_disk_kinds=(HYPERDISK_ONLY,),
    default_disk_kind="pd-balanced",
    boot_disk_sized=False,  # the boot disk is part of the TPU; it has no size input
    zone_form=gcp.ZONES,
    zone_from_catalog=True,  # capacity is zonal and the catalog lists the zones per type
    region_peers=gcp.REGION_PEERS,
    no_spot_fallback=(
        "tpu-vm has no on-demand fallback for spot (Cloud TPU has none, and a queued request cannot be spot): "
        "when spot capacity is out, pulumi up fails to create the TPU VM, and a preempted TPU VM stays "
        "preempted until it is recreated (pulumi up --replace on the TPU) or the stack moves to an on-demand profile"
    ),
    rules=(
        *CAPACITY_RULES,
        zone_needed,
        no_local_ssds,
        read_only_on_slices,
        data_disk_kind,
        queued_spot,
        queued_reservation,
        queued_data_disk,
    ),
    multi_node=MULTISLICE,
)
