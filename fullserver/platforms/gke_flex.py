"""GKE flex-start (Dynamic Workload Scheduler) node pools: when a stack may ask for them, the GKE
versions that serve them, and the caveats the plan states (``PoolRules.flex_start_warnings``).
Kept beside ``gke`` so that module stays readable end to end."""

from __future__ import annotations

from fullserver.platforms.base import Refusal, Request


def flex_not_spot(req: Request) -> Refusal | None:
    """Flex-start capacity is its own provisioning model: Cluster Toolkit rejects it with spot,
    a reservation or a static node count."""
    if not (req.queued and (req.spot or req.reservation)):
        return None
    return Refusal(
        "flexStart",
        "flex_start",
        "flex-start (Dynamic Workload Scheduler) capacity cannot be spot or consume a reservation",
        "use an on-demand profile with fullserver:flexStart, or drop flexStart",
    )


FLEX_START_MIN_VERSION = {"gpu": "1.32.2-gke.1652000", "tpu": "1.33.0-gke.1712000"}
"""Flex-start pools without queued provisioning ("flex-start VMs"): pending pods that ask for the
pool's accelerators make the autoscaler create flex-start nodes, so a plain Job gets them. GKE
"About flex-start" (kubernetes-engine/docs/concepts/dws): "To use flex-start in GKE, your cluster
must use version 1.32.2-gke.1652000 or later"; "To run TPUs, use GKE version 1.33.0-gke.1712000 or
later". Multi-host TPU slice pools take it so too: xpk, Google's TPU tool, has created every TPU
flex-start pool without queued provisioning since AI-Hypercomputer/xpk#900 ("FSQ only for GPUs",
2025-12-03: ``is_queued_cluster`` is true for GPUs only), a multi-host one with exactly this pool's
settings (``src/xpk/core/capacity.py`` and ``nodepool.py`` @367c8382: ``--flex-start
--enable-autoscaling --location-policy=ANY --reservation-affinity=none --no-enable-autorepair
--max-nodes=<VMs per slice> --num-nodes=0`` in one ``--node-locations`` zone, ``--placement-type=COMPACT
--tpu-topology`` and 15 pods per node). A GPU pool's COMPACT placement does not go with flex-start
(``FLEX_START_NO_COMPACT``). fullserver does not enable queued provisioning (``queued_provisioning.enabled``): such a
pool's nodes "can be only obtained through queuing via the Cluster Autoscaler ProvisioningRequest
API" (pulumi-gcp NodePool), so the exported Job would never get one without a PodTemplate, a
ProvisioningRequest (class ``queued-provisioning.gke.io``) and pods annotated to consume it,
created afresh for every run (a request is consumed once, and its nodes are held only briefly for
the pods); public write-ups disagree on the annotations' prefix. What is given up: a multi-node GPU
pool's nodes come as capacity allows, not all at once (a multi-host TPU slice pool is all or nothing
anyway)."""
FLEX_START_PARTIAL = (
    "flex-start without queued provisioning: the {nodes} nodes of this GPU pool come as capacity allows, not all "
    "at once, so the Job's pods may wait for each other; GKE's queued provisioning (ProvisioningRequest) is not used"
)
FLEX_START_ATTACHED = (
    "the existing GKE cluster must run GKE {version} or later for a flex-start pool to give pending pods nodes "
    "(GKE 'About flex-start')"
)


FLEX_START_NO_COMPACT = (
    "flex-start GPU pool without COMPACT placement: GKE combines flex-start with compact placement only on A3 Ultra, "
    "A4 and H4D, through a workload policy fullserver does not build, so the {nodes} nodes are placed as capacity allows"
)
"""Cluster Toolkit, Google's: "Compact placement with DWS Flex Start is supported **only** on **A3
Ultra** (``a3-ultragpu-8g``), **A4** (``a4-highgpu-8g``, ``a4-megagpu-8g``), and **H4D**
(``h4d-highgpu-8g``). It is **not supported** on A3 Mega or A3 High", and there through a
``HIGH_THROUGHPUT`` workload policy rather than a group placement policy
(GoogleCloudPlatform/cluster-toolkit docs/gke-consumption-options.md; its ``gke-node-pool`` module
refuses ``enable_flex_start`` with ``placement_policy.type = COMPACT`` on any other machine type,
cluster-toolkit#5737, merged 2026-06-04; xpk: "COMPACT placement and Flex don't work together" for
GPUs). So a flex-start GPU pool drops the group placement (``fullserver.kube.pool``); a TPU slice
keeps its COMPACT placement with ``tpu_topology``, as xpk builds it."""


def flex_start_warnings(nodes: int, tpu: bool, attached: bool, compact: bool = False) -> list[str]:
    """A flex-start pool's caveats: a multi-node GPU pool is not provisioned at once (a multi-host
    TPU slice pool is all or nothing anyway) nor placed compactly (``FLEX_START_NO_COMPACT``); an
    attached cluster must run a version that serves it."""
    out = [FLEX_START_PARTIAL.format(nodes=nodes)] if nodes > 1 and not tpu else []
    out += [FLEX_START_NO_COMPACT.format(nodes=nodes)] if compact and not tpu else []
    version = FLEX_START_MIN_VERSION["tpu" if tpu else "gpu"]
    return out + ([FLEX_START_ATTACHED.format(version=version)] if attached else [])
