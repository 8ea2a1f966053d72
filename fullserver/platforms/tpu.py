"""Cloud TPU VMs and slices (``tpu-vm``): everything fullserver knows about them.

Design notes: docs/design/platforms.md.
"""

from __future__ import annotations

import json

from fullserver.capacity import CapacityStep
from fullserver.errors import InputError
from fullserver.nodes import NodeAccess, NodeGroupAccess
from fullserver.platform import AcceleratorKind, Platform, PricingModel
from fullserver.platforms import gcp
from fullserver.platforms.base import (
    CAPACITY_RULES,
    CLOUD_LOGIN,
    Leaning,
    PlatformRules,
    Refusal,
    Request,
    disk_kind_refusal,
)
from fullserver.platforms.capacity import SpotQuestion, spot_step
from fullserver.platforms.quota import tpu as quota
from fullserver.platforms.supply import SLICES
from fullserver.platforms.tpu_autostop import autostop

QUEUED_RESOURCE_TYPE = "pulumi-python:dynamic/fullserver:TpuQueuedResource"
"""A queued slice is this dynamic resource, not pulumi-gcp's ``tpu.V2QueuedResource``, whose
queued node takes no service account or labels (``components.tpu.queued``)."""

NAME_RULES = {
    "gcp:tpu/v2Vm:V2Vm": (gcp.compute_name("TPU node id"),),
    QUEUED_RESOURCE_TYPE: (gcp.compute_name("queued resource id", autoname=False),),
}
"""Cloud TPU node and queued resource ids follow Compute Engine's naming (RFC 1035, 63)."""

DATA_DISK_KINDS = ("pd-balanced", "hyperdisk-balanced")
HYPERDISK_ONLY = (r"^(v6e|tpu7x)", "hyperdisk-balanced")
"""TPU v6e and TPU7x attach Hyperdisk only; v4, v5e and v5p use pd-balanced."""

DATA_DEVICE = "/dev/disk/by-id/google-persistent-disk-1"
"""The first data disk of a TPU VM (TPU VMs name attached disks persistent-disk-N)."""

QUEUED_LIMIT = "fullserver creates it with gcloud (components.tpu.queued) and passes none"
"""Why a queued resource takes no reservation or data disk: its create command names neither."""
QUEUED_STATES = ("WAITING_FOR_RESOURCES", "SUSPENDED", "FAILED")
"""Cloud TPU ``QueuedResourceState.State``: waiting in the queue; its resources deleted (by the
user or the service, a Spot preemption among them) and "no longer eligible for further
allocation"; its window expired or the request was bad. The last two hold no TPU: such a request
is only ever deleted (Cloud TPU "Manage queued resources"; ``google.cloud.tpu_v2`` State)."""
GONE_STATES = QUEUED_STATES[1:]


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


# --- spot capacity: what Cloud TPU tries, in order (the plan's "spot capacity" table) -------------
# Cloud TPU "Manage TPU Spot VMs" (2025-08-11): Spot TPUs have no run-time limit, "can't be
# restarted" and must be recreated after preemption; created directly or as queued resources
# (``gcloud compute tpus queued-resources create --spot``, GA). "Manage queued resources": a request
# waits in WAITING_FOR_RESOURCES until the resources are free or its optional valid-until time
# passes (fullserver sets none); a SUSPENDED request is "no longer eligible for further allocation".
# A slice is one TPU node with one state (the TPU API's ``Node.state``, PREEMPTED among its values),
# so one preempted host takes the whole slice.


def _recreate(queued: bool) -> str:
    """How the stack gets a preempted spot TPU back: it cannot be restarted, only recreated."""
    if queued:
        return (
            "Spot TPUs cannot be restarted, only recreated: pulumi up --refresh replaces a request Cloud TPU has "
            "given up on (SUSPENDED or FAILED) with a new one that queues again (step 1), and pulumi up --replace "
            "on the queued resource does it by hand; no TPU runs until then"
        )
    return (
        "Spot TPUs cannot be restarted, only recreated: pulumi up --replace on the TPU VM (its URN: pulumi "
        "stack --show-urns) deletes it and creates it again (step 1); no TPU runs until then"
    )


def spot_steps(q: SpotQuestion) -> tuple[CapacityStep, ...]:
    """A spot TPU VM or queued spot slice: how it is obtained, what it bills, and how it comes back
    after a preemption (the comment above gives the sources)."""
    where = f"in {q.zone}" if q.zone else "in its zone"
    slice_ = f"{q.shape} ({q.hosts} hosts)" if q.hosts > 1 else q.shape
    rate = f"the spot price of the whole slice ({q.on_demand_usd_hour:,.2f}/h on-demand)"
    if q.queued:
        first = spot_step(
            f"queue a spot request for {slice_} {where}",
            None,
            "pulumi up returns once the request is queued; it waits in WAITING_FOR_RESOURCES until the whole slice "
            "is free, with no valid-until window (until filled or deleted); no TPU exists meanwhile",
        )
    else:
        first = spot_step(
            f"create the spot TPU VM {slice_} {where}",
            None,
            "at once or not at all: on a stockout pulumi up fails (no queue, no on-demand fallback); run it "
            "again later, or set fullserver:queued: true to wait in Cloud TPU's queue instead",
        )
    running = spot_step(f"{slice_} runs on spot", q.spot_usd_hour, rate)
    lost = "the whole slice goes, all hosts at once (one TPU node, one state)" if q.hosts > 1 else "the TPU VM stops"
    preempted = spot_step("preempted (any time, no run-time limit)", None, f"{lost}; {_recreate(q.queued)}")
    return (first, running, preempted)


MULTISLICE = Refusal("nodes", "nodes", "multislice TPU environments are not supported", "use one larger slice")
"""An environment is one slice: more nodes means a larger type, not more slices."""


# --- the way into the workers ------------------------------------------------------------------

HOSTNAME_KEY = "hostname"
"""The guest attribute that names a worker's Compute Engine instance (namespace ``deviceInfo``,
value like ``t1v-n-cca1e90f-w-0``). ``gcloud alpha compute tpus tpu-vm ssh --tunnel-through-iap``
reads it as the IAP tunnel's instance (``GetFromGuestAttributes(..., worker, 'hostname')`` in
googlecloudsdk/command_lib/compute/tpus/tpu_vm/ssh.py, which matches the key in any namespace, as
``group_members`` does)."""


def group_list_command(node: str, zone: str, project: str) -> list[str]:
    """Every worker's guest attributes, hostname and SSH host keys among them, in one call
    (``gcloud compute tpus tpu-vm get-guest-attributes``, GA since gcloud 382.0.0, over the TPU
    API v2 ``nodes.getGuestAttributes``, where no ``workerIds`` means every worker). No
    ``--query-path``: the
    answer stays small (a few entries per worker), and the host keys in it are what a person pins
    (docs/deploying.md "Pinning the nodes' host keys")."""
    return [
        "gcloud",
        "compute",
        "tpus",
        "tpu-vm",
        "get-guest-attributes",
        node,
        f"--zone={zone}",
        f"--project={project}",
        "--format=json",
    ]


def group_members(data: object, group: NodeGroupAccess) -> list[NodeAccess]:
    """``gcloud compute tpus tpu-vm get-guest-attributes --format=json`` -> one ``NodeAccess`` per
    worker, reached through IAP at the instance its ``hostname`` guest attribute names.

    The answer is not the API's ``GetGuestAttributesResponse`` (``guestAttributes[]``, one per
    worker in worker order, each ``{queryPath, queryValue: {items: [{namespace, key, value}]}}``,
    with no worker id of its own: cloud.google.com/tpu/docs/reference/rest/v2/
    projects.locations.nodes/getGuestAttributes):
    gcloud flattens it (``TransformGuestAttributes`` in
    googlecloudsdk/command_lib/compute/tpus/tpu_vm/util.py) into one object per attribute,
    ``{"key", "namespace", "value", "worker_id"}``, ``worker_id`` being the worker's index in that
    list, and its JSON printer sorts the keys. The attributes carry no address, so a worker's
    ``private_ip`` is ``group.private_ips`` at its index (the node's ``networkEndpoints``, exported
    at deploy time in the same worker order). A worker that has not published its hostname yet
    (still booting) stops the listing: verifying without it would measure a smaller slice."""
    if not isinstance(data, list):
        raise ValueError("expected a JSON list of guest attributes")
    hostnames: dict[int, str] = {}
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise ValueError("a guest attribute without a key")
        worker = worker_of(item)
        if worker is None:
            raise ValueError(f"guest attribute '{item['key']}' without a worker_id")
        if item["key"] == HOSTNAME_KEY and item.get("value"):
            hostnames[worker] = str(item["value"])
    node = ", ".join(group.groups)
    nodes = []
    for worker in sorted(set(range(len(group.private_ips))) | set(hostnames)):
        if worker not in hostnames:
            raise InputError(
                f"TPU {node} worker {worker}",
                "has published no hostname guest attribute, which names the instance an IAP tunnel reaches",
                "wait until the TPU is READY and its workers have booted, then run verify again",
            )
        name = hostnames[worker]
        nodes.append(
            NodeAccess(
                name=name,
                private_ip=group.private_ips[worker] if worker < len(group.private_ips) else "",
                user=group.user,
                keys=group.keys,
                via="iap",
                proxy_command=gcp.iap_proxy(name, group.zone, group.project),
            )
        )
    return nodes


def host_keys_command(node: str, zone: str, project: str) -> list[str]:
    """A worker's SSH host keys: the TPU's guest attributes (every worker's, one call: the same
    as ``group_list_command``), which ``parse_host_keys`` narrows to the worker."""
    return group_list_command(node, zone, project)


def worker_of(item: dict[str, object]) -> int | None:
    """A flattened guest attribute's ``worker_id``: gcloud prints the index as a number; a digit
    string is read the same, so a printer that quotes it does not hide every worker."""
    worker = item.get("worker_id")
    if isinstance(worker, str) and worker.isdigit():
        return int(worker)
    if isinstance(worker, int) and not isinstance(worker, bool) and worker >= 0:
        return worker
    return None


def worker_index(name: str) -> int:
    """Worker ``i`` of a TPU reached directly is the ``nodes`` row ``<node>-w<i>``."""
    head, sep, index = name.rpartition("-w")
    if not sep or not head or not index.isdigit():
        raise ValueError(f"'{name}' is not a TPU worker row (<node>-w<i>)")
    return int(index)


def parse_host_keys(stdout: str, node: NodeAccess) -> list[str]:
    """``host_keys_command``'s JSON (gcloud's flattened guest attributes, ``worker_id`` each; see
    ``group_members``) -> the host key lines of ``node``'s worker only."""
    data = json.loads(stdout or "[]")
    if not isinstance(data, list):
        raise ValueError(f"{node.name}: expected a JSON list of guest attributes")
    worker = worker_index(node.name)
    return gcp.guest_host_keys([x for x in data if isinstance(x, dict) and worker_of(x) == worker])


_GOOGLE = ("gcp", "any")
"""Clouds on which a TPU can be had: the team's own, or any."""
_JAX_TF = ("jax", "tensorflow")
LEANINGS = (
    Leaning({"framework": ("pytorch",)}, -2, "PyTorch on TPU runs through PyTorch/XLA, which lags the CUDA ecosystem"),
    Leaning(
        {
            "framework": _JAX_TF,
            "maturity": ("stable", "production"),
            "purpose": ("training",),
            "scale": ("multi-node",),
            "cloud": _GOOGLE,
        },
        3,
        "stable JAX/TensorFlow training at scale can favour TPUs",
    ),
    Leaning({"maturity": ("exploring",)}, -1, "experiment on GPUs first; move validated models to TPUs later"),
    Leaning(
        {"purpose": ("inference",), "traffic": ("steady-batch",), "cloud": _GOOGLE},
        2,
        "high-volume, steady-batch inference can favour TPUs",
    ),
    Leaning(
        {"maturity": ("production",), "framework": _JAX_TF, "cloud": _GOOGLE},
        1,
        "production of validated JAX/TensorFlow models may move to TPUs",
    ),
    Leaning(
        {"portability": (True,)},
        -2,
        "portability is required and TPUs tie the workload to Google Cloud and XLA: never first",
        never_first=2,
    ),
)
"""Where ``fullserver recommend`` leans towards TPUs or away from them."""

RULES = PlatformRules(
    platform=Platform.TPU_VM,
    provider="gcp",
    short="tpu",
    components="components.tpu",
    order=30,
    policy_reader="policy.gcp_nodes",
    accelerator_kinds=frozenset({AcceleratorKind.TPU}),
    pricing=frozenset({PricingModel.SPOT_WITH_FALLBACK, PricingModel.ON_DEMAND, PricingModel.RESERVED}),
    options={
        "queued": "a queued resource is a Cloud TPU request",
        "reservation": "a Cloud TPU reservation name",
        "image": "a TPU runtime version",
        "autostopMinutes": "its nodes run the idle agent and stop themselves",
        **CLOUD_LOGIN,
    },
    supply=SLICES,
    boot_image=lambda _image: None,  # fullserver:image names the runtime version (TpuSpec)
    disk_kinds=gcp.DISKS,
    family_disk_kinds=(HYPERDISK_ONLY,),
    default_disk_kind="pd-balanced",
    boot_disk_sized=False,  # the boot disk is part of the TPU; it has no size input
    project=gcp.PROJECT,
    zone_form=gcp.ZONES,
    zone_from_catalog=True,  # capacity is zonal and the catalog lists the zones per type
    region_peers=gcp.REGION_PEERS,
    no_spot_fallback=(
        "tpu-vm has no on-demand fallback for spot (Cloud TPU has none): a spot TPU VM is created at once or "
        "pulumi up fails, a queued spot slice waits in the queue, and a preempted spot TPU cannot be restarted "
        "(the spot capacity table says how the stack gets it back)"
    ),
    spot_steps=spot_steps,
    rules=(
        *CAPACITY_RULES,
        zone_needed,
        no_local_ssds,
        read_only_on_slices,
        data_disk_kind,
        queued_reservation,
        queued_data_disk,
    ),
    multi_node=MULTISLICE,
    quotas=quota.quotas,
    default_region=gcp.RULES.default_region,
    leanings=LEANINGS,
    cloud_affinity={"aws": (-4, "TPUs exist only on Google Cloud"), "gcp": (1, "the team's cloud is Google Cloud")},
    network=gcp.NETWORK,  # a TPU VM is billed Google Cloud's network
    group_members=group_members,
    catalog_forms=("tpu_types",),
    autostop=autostop,
    host_keys_parser=parse_host_keys,
)

PLATFORMS = (RULES,)
"""What this module registers (``fullserver.platforms`` finds every module's)."""
