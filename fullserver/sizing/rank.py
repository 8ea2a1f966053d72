"""Ranking: every offer of the requested accelerator on one platform, feasible ones cheapest first,
the others kept as near-misses with the minimum they missed (``fullserver.sizing``).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence
from typing import NamedTuple

from fullserver.balance import BalanceLine, BalanceReport, Host, evaluate, required_attached_gib
from fullserver.catalog import Catalog, Offer, Same
from fullserver.catalog.model import Interconnect, Platform
from fullserver.errors import InputError, NothingFits
from fullserver.hourly import hourly_rate
from fullserver.kube.pool import NodeAsk, node_room
from fullserver.nearmiss import nothing_fits_hint
from fullserver.platforms import rules_for
from fullserver.platforms.pool_rules import NodeResources
from fullserver.profiles import Balance, Fabric, Profile, Topology
from fullserver.spec import ShapeOption
from fullserver.workload import Workload

_FABRIC_INTERCONNECTS: dict[Fabric, set[Interconnect]] = {
    Fabric.EFA: {Interconnect.EFA},
    Fabric.GPUDIRECT: {Interconnect.GPUDIRECT_TCPX, Interconnect.GPUDIRECT_TCPXO, Interconnect.GPUDIRECT_RDMA},
    Fabric.ICI: {Interconnect.ICI},
    Fabric.ANY: {i for i in Interconnect if i is not Interconnect.NONE},
}


class Candidate(NamedTuple):
    """A feasible offer as the ranking keeps it: its host and balance, and its rate in the region."""

    offer: Offer
    host: Host
    report: BalanceReport
    usd_hour: float
    spot: bool


def compute_price(
    offer: Offer, region: str, profile: Profile, catalog: Catalog, built_by: Platform | None = None
) -> tuple[float, bool]:
    """Hourly rate of one node of an offer in a region under the profile's pricing, and whether
    it is requested as spot: ``fullserver.hourly`` asked with the platform that builds it (a node
    pool's, where the cost estimate prices a spot pool with its on-demand fallback), so the
    ranking ranks by the rate the cost estimate charges."""
    rate = hourly_rate(offer, region, profile, catalog, built_by)
    return rate.usd, rate.spot


def suggest(value: str, choices: set[str] | list[str]) -> str:
    """The "did you mean" of every name refused against a known set (regions, accelerators)."""
    close = sorted(difflib.get_close_matches(value, sorted(choices), n=3))
    listed = ", ".join(sorted(choices)) or "none"
    return f"did you mean {', '.join(close)}?" if close else f"choose one of: {listed}"


class _Asked(NamedTuple):
    """What a stack asks of a platform's offers: the accelerator (or TPU type) and per-node count."""

    platform: Platform
    accelerator: str | None
    accelerator_count: int | None


def _tpu_requested(q: _Asked, offer: Offer, accelerator_name: str | None) -> bool:
    if q.accelerator == offer.name:
        return True
    return accelerator_name == offer.accelerator and q.accelerator_count == offer.total_accelerators


def _resolved(accelerator: str | None, catalog: Catalog) -> tuple[str | None, bool]:
    """The accelerator model a stack names, and whether it names a TPU type (a slice), as
    ``fullserver.workload.resolve_accelerator`` reads it from the stack."""
    if accelerator in catalog.slice_types:
        return None, True
    return catalog.accelerator(str(accelerator)).name, False


def _candidates(q: _Asked, catalog: Catalog) -> tuple[Offer, ...]:
    """The offers a ranking weighs, in catalog order (a stack asking for none the platform sells is
    refused): one answer per platform, accelerator and count (``Catalog.answer``, which keeps a
    refusal too), as every region and profile asks the same."""
    return tuple(_matching(q, catalog))


def _matching(q: _Asked, catalog: Catalog) -> list[Offer]:
    platform = q.platform
    acc_name, is_tpu_type = _resolved(q.accelerator, catalog)
    offers = catalog.offers_on(platform)
    if rules_for(platform).supply.named_by_type:
        matching = [o for o in offers if _tpu_requested(q, o, acc_name)]
        if not matching:
            types = sorted(o.name for o in offers if acc_name in (None, o.accelerator))
            raise InputError(
                "fullserver:accelerator",
                f"no TPU type matches '{q.accelerator}'"
                + (f" with {q.accelerator_count} chips" if q.accelerator_count else ""),
                suggest(q.accelerator or "", types),
            )
        return matching
    if is_tpu_type:
        raise InputError("fullserver:accelerator", f"'{q.accelerator}' is a TPU type", "use platform tpu-vm")
    count = q.accelerator_count or 1
    same_model = catalog.offers_on(platform, acc_name)
    if not same_model:
        raise InputError(
            "fullserver:accelerator",
            f"no {platform.value} shape offers {acc_name}",
            f"offered there: {', '.join(sorted({str(o.accelerator) for o in offers}))}",
        )
    matching = [o for o in same_model if o.host.accelerator_count == count]
    if not matching:
        counts = ", ".join(str(c) for c in sorted({o.host.accelerator_count for o in same_model}))
        raise InputError(
            "fullserver:acceleratorCount",
            f"no {platform.value} shape offers {count} x {acc_name} per node",
            f"offered counts: {counts}",
        )
    return matching


def _fabric_name(fabric: Fabric) -> str:
    """The fabric a near-miss lacks, in words: ``any`` means any scale-out fabric at all."""
    return "scale-out fabric" if fabric is Fabric.ANY else f"{fabric.value} fabric"


def _fabric_ok(topology: Topology, offer: Offer, nodes: int) -> bool:
    """A scale-out fabric carries traffic between nodes: one node needs none."""
    if topology.nodes == "single" or topology.fabric is Fabric.NONE or nodes <= 1:
        return True
    return offer.interconnect in _FABRIC_INTERCONNECTS[topology.fabric]


def local_nvme_count(offer: Offer, balance_need_gib: float) -> int:
    """How many local SSDs to use: all of a fixed set, or the fewest selectable that meet the need."""
    counts = offer.local_nvme_selectable_counts
    if not counts:
        return offer.local_nvme_disks
    for count in counts:
        if count * offer.local_nvme_disk_gib + 1e-9 >= balance_need_gib:
            return count
    return counts[-1]


def nvme_need_gib(profile: Profile, offer: Offer, platform: Platform) -> float:
    """The profile's NVMe minimum for one host of ``offer`` (0 where it sets none)."""
    return _nvme_need(profile.balance_for(platform), offer)


def _nvme_need(balance: Balance, offer: Offer) -> float:
    nvme = balance.nvme_gib_per_accelerator
    return nvme.value * max(offer.host.accelerator_count, 1) if nvme else 0.0


def efa_interfaces(profile: Profile, offer: Offer, nodes: int) -> int:
    """EFA interfaces per node where the profile's fabric is EFA and nodes talk to each other."""
    return _efa(profile.topology, offer, nodes)


def _efa(topology: Topology, offer: Offer, nodes: int) -> int:
    return offer.efa_interfaces if topology.fabric in (Fabric.EFA, Fabric.ANY) and nodes > 1 else 0


class Minimums(NamedTuple):
    """What weighing an offer (``assess``) reads of a profile on one platform: its balance there,
    its topology and its boot disk; nothing else. A node pool's copy of the profile (sized as its
    VMs, ``fullserver.sizing.kube_spec``) holds the very same objects, so both weigh once."""

    balance: Same[Balance]
    topology: Same[Topology]
    boot_disk_gib: int

    @classmethod
    def of(cls, profile: Profile, platform: Platform) -> Minimums:
        return cls(Same(profile.balance_for(platform)), Same(profile.topology), profile.storage.boot_disk_gib)


def pod_room(profile: Profile, offer: Offer, platform: Platform, pool: Platform, nodes: int = 1) -> NodeResources:
    """What one workload pod requests of a node of ``offer`` in a ``pool`` node pool: the node's
    allocatable after kubelet and system reservations (and the huge pages its EFA driver holds where
    ``nodes`` talk over EFA), less the DaemonSet allowance (``fullserver.kube.pool.pod_share``), its
    ephemeral storage on the local SSDs or instance store sizing uses, else on the boot disk."""
    return node_room(_node(Minimums.of(profile, platform), offer, pool, nodes)).share


def _node(m: Minimums, offer: Offer, pool: Platform, nodes: int) -> NodeAsk:
    """A node of ``offer`` in a ``pool`` node pool, with the local disks, boot disk and EFA
    interfaces sizing gives it: profiles and node counts that agree on these are one question."""
    host = offer.host
    return NodeAsk(
        pool,
        host.vcpus,
        host.memory_gib,
        local_nvme_count(offer, _nvme_need(m.balance.of, offer)),
        offer.local_nvme_disk_gib,
        m.boot_disk_gib,
        _efa(m.topology.of, offer, nodes),
        offer.pods,
    )


def pod_misfit(profile: Profile, offer: Offer, platform: Platform, pool: Platform, nodes: int = 1) -> str:
    """Why no workload pod fits a node of ``offer`` in a ``pool`` node pool ("" when one does).

    The pod's requests are the node's allocatable less the DaemonSet allowance (``pod_room``), so
    they fit whenever that is positive. The profile's minimums are not judged on them: they say
    what the accelerators need of the server (the clouds sell, and the profiles cite, p4d, p6-b200
    and a2-ultragpu as balanced), and what kubelet and the node's agents keep is the host's own
    work, as a VM's kernel and agents are (``docs/kubernetes.md``, "Balance: the node's shape")."""
    return _misfit(pod_room(profile, offer, platform, pool, nodes))


def _misfit(room: NodeResources) -> str:
    short = [what for what, left in (("CPU", room.cpu_m), ("memory", room.memory_mib)) if left < 1]
    short += ["ephemeral storage"] if room.ephemeral_mib < 1 else []
    return f"no room for a workload pod's {' or '.join(short)} after the node's reservations" if short else ""


def assess(
    profile: Profile, offer: Offer, platform: Platform, nodes: int = 1, pool: Platform | None = None
) -> tuple[Host, BalanceReport, str]:
    """Balance of ``nodes`` nodes of one offer under a profile, with attachable storage added; a
    non-empty reason rejects it outright (what no balance line says: a disk a multi-host slice
    cannot take, a missing scale-out fabric). The reference-design table asks this; sizing weighs
    the same way through ``_weighed`` (``_assess``, then the pod's room), once per weighing.

    ``pool``: the offer is a node of that Kubernetes node-pool platform. Its balance is the node's
    shape, as a VM's (a boot disk is never scratch, so block storage makes up the same NVMe: the
    pod's data volume is the VM's data disk), and the node must leave a workload pod room
    (``_misfit`` of ``node_room``, as ``pod_misfit`` says it), which comes before any other reason."""
    m = Minimums.of(profile, platform)
    host, report, reason = _assess(m, offer, platform, nodes)
    misfit = (
        _misfit(node_room(_node(m, offer, pool, rules_for(platform).supply.units(nodes))).share)
        if pool is not None
        else ""
    )
    return host, report, misfit or reason


def _assess(m: Minimums, offer: Offer, platform: Platform, nodes: int) -> tuple[Host, BalanceReport, str]:
    """``assess`` as a VM: what a node pool adds (``_misfit``) reads the same and no more."""
    balance, topology = m.balance.of, m.topology.of
    base = offer.host
    attach = required_attached_gib(balance, base)
    host = base.model_copy(update={"attached_storage_gib": attach}) if attach else base
    # A slice's hosts talk over ICI; an environment of one slice is one node to the balance.
    nodes = rules_for(platform).supply.units(nodes)
    report = evaluate(balance, host, nodes)
    if attach and offer.hosts > 1:
        return host, report, "needs an attached read-write disk, which cannot attach to a multi-host TPU slice"
    if not _fabric_ok(topology, offer, nodes):
        return host, report, f"no {_fabric_name(topology.fabric)} (has {offer.interconnect.value})"
    return host, report, ""


class RankQuestion(NamedTuple):
    """What a ranking, and the shape kept with it (``fullserver.sizing.build``), depend on: the
    profile (whole, by identity), the platform, the node-pool platform and the stack's region,
    zone, accelerator, count and nodes. The ranking reads these and nothing else
    (``Catalog.answer``), so stacks asking the same are answered once per catalog. The questions
    here are named tuples: built and hashed by the interpreter, as each distinct stack asks anew."""

    profile: Same[Profile]
    platform: Platform
    pool: Platform | None
    region: str
    zone: str | None
    accelerator: str | None
    accelerator_count: int | None
    nodes: int

    @classmethod
    def of(cls, profile: Profile, workload: Workload, platform: Platform, pool: Platform | None) -> RankQuestion:
        return cls(
            Same(profile),
            platform,
            pool,
            workload.region,
            workload.zone,
            workload.accelerator,
            workload.accelerator_count,
            workload.nodes,
        )


class Miss(NamedTuple):
    """A rejected offer as a ranking orders it (``far``, then ``usd``: unpriced and unsold ones
    last) with its rate and why. A plan shows only some of them (``fullserver.nearmiss``), so its
    ``NearMiss`` is made for those alone (``fullserver.sizing.build``)."""

    far: float
    usd: float
    offer: str
    usd_hour: float | None
    reason: str


class _RegionQuestion(NamedTuple):
    """A region a platform may not price, and the platform (``_region_refusal``)."""

    region: str
    platform: Platform


def check_region(region: str, platform: Platform, catalog: Catalog) -> None:
    """Refuses a region the platform has no prices in (``_region_refusal``), once per region and
    platform and catalog (``Catalog.answer``): sizing asks it last of its checks and before any
    sizing (``fullserver.sizing.build.check_platform``), a ranking first of its own."""
    catalog.answer(_region_refusal, _RegionQuestion(region, platform))


def _region_refusal(q: _RegionQuestion, catalog: Catalog) -> None:
    """Refuses a region the platform has no prices in (a comparison row asks it of every platform;
    its "did you mean" is worked out once per region and platform)."""
    regions = catalog.regions(q.platform)
    if q.region in regions:
        return
    raise InputError(
        "fullserver:region", f"no {q.platform.value} prices in region '{q.region}'", suggest(q.region, regions)
    )


def _zone_ok(offer: Offer, q: RankQuestion) -> bool:
    if not offer.zones:
        return True
    if q.zone:
        return q.zone in offer.zones
    return bool(offer.zones_in(q.region))


def _distance(short: list[BalanceLine]) -> float:
    """How far a shape is from feasible: the summed relative shortfall of its short dimensions."""
    return sum(1 - line.provided / line.required for line in short if line.required)


class _OffersQuestion(NamedTuple):
    """A ``RankQuestion`` less its region and zone, holding of the profile only what weighing reads
    (``Minimums``): which offers a ranking weighs and their balance (``assess``) do not depend on
    where each is priced or sold, nor on the profile's pricing or name, so every region asks once."""

    minimums: Minimums
    platform: Platform
    pool: Platform | None
    accelerator: str | None
    accelerator_count: int | None
    nodes: int


class _Weighed(NamedTuple):
    """One offer as a ranking weighs it wherever it is priced: ``assess``'s host, report and reason,
    then what a near-miss says of it (``why``: the reason, else the balance's shortfall; "" when it
    is feasible) and how far from feasible it ranks (``far``: a reason puts it past every shortfall)."""

    offer: Offer
    host: Host
    report: BalanceReport
    reason: str
    why: str
    far: float


def _verdict(offer: Offer, host: Host, report: BalanceReport, reason: str) -> _Weighed:
    """``assess``'s answer with its verdict, worked out once per weighing, not once per region."""
    short = report.short  # what ``ok`` and the summary read: worked out once here
    why = reason or (report.summary() if short else "")
    return _Weighed(offer, host, report, reason, why, _distance(short) + (10 if reason else 0))


def _weighed(q: _OffersQuestion, catalog: Catalog) -> tuple[_Weighed, ...]:
    """Each offer of the requested accelerator and count, with its ``assess`` (host, balance,
    reason) and verdict, in catalog order, or the refusal of ``_candidates``. A node pool's are its VMs'
    with the pod's room checked first (``assess``): only that is weighed afresh."""
    if q.pool is None:
        offers = catalog.answer(_candidates, _Asked(q.platform, q.accelerator, q.accelerator_count))
        return tuple(_verdict(o, *_assess(q.minimums, o, q.platform, q.nodes)) for o in offers)
    vms = catalog.answer(_weighed, q._replace(pool=None))
    units = rules_for(q.platform).supply.units(q.nodes)
    pool = q.pool
    misfits = [_misfit(catalog.answer(node_room, _node(q.minimums, w.offer, pool, units)).share) for w in vms]
    # A node with room for the pod is weighed as its VM was: the VM's verdict is kept as it is.
    return tuple(
        _verdict(w.offer, w.host, w.report, misfit) if misfit else w for w, misfit in zip(vms, misfits, strict=True)
    )


def rank(
    profile: Profile, workload: Workload, platform: Platform, catalog: Catalog, pool: Platform | None = None
) -> tuple[tuple[Candidate, ...], tuple[Miss, ...]]:
    """Every feasible offer on one platform, cheapest first (never empty: ``NothingFits``), and the
    rejected near-misses with their reasons; with ``pool``, each offer as a node of that node-pool
    platform, balanced by the node's shape with room for the workload pod (``assess``) and priced
    as the pool bills it. One answer per ``RankQuestion`` and catalog."""
    # a refusal is an answer too, raised afresh each time
    return catalog.answer(ranking, RankQuestion.of(profile, workload, platform, pool))


def ranking(q: RankQuestion, catalog: Catalog) -> tuple[tuple[Candidate, ...], tuple[Miss, ...]]:
    """``rank`` of a question, worked out: sizing keeps the shape chosen from it
    (``fullserver.sizing.build``), not the ranking as well."""
    profile, platform, pool, region = q.profile.of, q.platform, q.pool, q.region
    check_region(region, platform, catalog)
    feasible: list[Candidate] = []
    misses: list[Miss] = []
    weighing = _OffersQuestion(
        Minimums.of(profile, platform), platform, pool, q.accelerator, q.accelerator_count, q.nodes
    )
    weighed = catalog.answer(_weighed, weighing)
    for w in weighed:
        offer = w.offer
        if region not in offer.prices:
            misses.append(Miss(99, math.inf, offer.name, None, f"not priced in {region}"))
            continue
        if not _zone_ok(offer, q):
            zone = q.zone or region
            misses.append(Miss(98, math.inf, offer.name, None, f"not offered in {zone}"))
            continue
        usd, spot = compute_price(offer, region, profile, catalog, pool)
        if w.why:
            misses.append(Miss(w.far, usd, offer.name, usd, w.why))
            continue
        feasible.append(Candidate(offer, w.host, w.report, usd, spot))
    misses.sort(key=lambda m: (m.far, m.usd, m.offer))
    near = tuple(misses)
    if not feasible:
        closest = "; ".join(f"{m.offer}: {m.reason}" for m in near[:3])
        on = f"{pool.value} (nodes of {platform.value})" if pool else platform.value
        raise NothingFits(
            f"profile '{profile.name}' on {on} in {region}",
            f"no shape meets every minimum; closest: {closest}",
            nothing_fits_hint(q.accelerator, q.accelerator_count, platform, catalog),
        )
    feasible.sort(key=lambda c: (c.usd_hour, -c.host.vcpus, -c.host.memory_gib, c.offer.name))
    return tuple(feasible), near


# Spot alternatives: at most this many other shapes, each at most this many times the chosen
# shape's price, so that a spot request diversified over them cannot cost much more than planned.
MAX_ALTERNATIVE_SHAPES = 4
ALTERNATIVE_PRICE_RATIO = 1.5


def alternative_shapes(chosen: Candidate, feasible: Sequence[Candidate], efa_interfaces: int) -> list[ShapeOption]:
    """Other balanced shapes a spot request may run on instead of ``chosen`` (cheapest first).

    Spot capacity is per shape and zone; a request that may use several balanced shapes finds
    capacity far more often (AWS: "be flexible across instance types"). Only shapes that take the
    same launch template qualify: the same accelerator and count per node (same image, same
    balance) and, with EFA, the same number of EFA interfaces (one per network card); and only
    within ``ALTERNATIVE_PRICE_RATIO`` of the chosen shape's price.
    """
    out: list[ShapeOption] = []
    base = chosen.offer
    for cand in feasible:
        offer = cand.offer
        if offer.machine_type == base.machine_type or offer.hosts != base.hosts:
            continue
        if offer.accelerator != base.accelerator or offer.host.accelerator_count != base.host.accelerator_count:
            continue
        if efa_interfaces and offer.efa_interfaces != efa_interfaces:
            continue
        if cand.usd_hour > chosen.usd_hour * ALTERNATIVE_PRICE_RATIO:
            continue
        out.append(
            ShapeOption(offer=offer.name, machine_type=offer.machine_type, usd_hour=cand.usd_hour, pods=offer.pods)
        )
    return out[:MAX_ALTERNATIVE_SHAPES]
