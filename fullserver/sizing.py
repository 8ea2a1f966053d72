"""Sizing: (profile, workload) -> the cheapest catalog shape that meets every balance minimum.

The search is exhaustive over the catalog's offers for the requested accelerator, so it is
deterministic and explainable: the winner is the lowest hourly compute rate under the
profile's pricing model (``fullserver.hourly``: the expected rate for spot with fallback, the
committed rate for reserved; ties broken by more vCPUs, more RAM, then name), and every rejected
shape is kept as a near-miss with the minimum it missed; every one cheaper than the winner is
shown, so nothing cheaper is passed over unexplained.

Minimums follow the topology: what only traffic between nodes needs (a scale-out fabric, the
internode network minimum) applies only when the environment has more than one node.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any

from fullserver.balance import BalanceLine, BalanceReport, Host, evaluate, required_attached_gib
from fullserver.catalog import Catalog, Offer
from fullserver.catalog.model import AcceleratorKind, Interconnect, Platform
from fullserver.errors import InputError, NothingFits
from fullserver.hourly import hourly_rate
from fullserver.nearmiss import near_misses, nothing_fits_hint
from fullserver.platforms import DiskLimits, Refusal, Request, disk_limits, option_refusal, rules_for
from fullserver.platforms.aws import efa_refusal
from fullserver.profiles import Fabric, Lifecycle, PricingModel, Profile, StoragePolicy, Topology
from fullserver.rules import environment_labels
from fullserver.spec import DataDisk, EnvironmentSpec, NearMiss, NetworkSpec, ShapeOption, TpuSpec
from fullserver.workload import DedicatedHost, Workload

# Which disk kind a shape attaches, and the kinds' limits, are each platform's
# (``fullserver.platforms``); sizing provisions within them.

_FABRIC_INTERCONNECTS: dict[Fabric, set[Interconnect]] = {
    Fabric.EFA: {Interconnect.EFA},
    Fabric.GPUDIRECT: {Interconnect.GPUDIRECT_TCPX, Interconnect.GPUDIRECT_TCPXO, Interconnect.GPUDIRECT_RDMA},
    Fabric.ICI: {Interconnect.ICI},
    Fabric.ANY: {i for i in Interconnect if i is not Interconnect.NONE},
}


@dataclass(frozen=True)
class Candidate:
    offer: Offer
    host: Host
    report: BalanceReport
    usd_hour: float
    spot: bool


def compute_price(offer: Offer, region: str, profile: Profile, catalog: Catalog) -> tuple[float, bool]:
    """Hourly rate of one node of an offer in a region under the profile's pricing, and whether
    it is requested as spot (``fullserver.hourly``: the rate the cost estimate charges)."""
    rate = hourly_rate(offer, region, profile, catalog)
    return rate.usd, rate.spot


def suggest(value: str, choices: set[str] | list[str]) -> str:
    """The "did you mean" of every name refused against a known set (regions, accelerators)."""
    close = sorted(difflib.get_close_matches(value, sorted(choices), n=3))
    listed = ", ".join(sorted(choices)) or "none"
    return f"did you mean {', '.join(close)}?" if close else f"choose one of: {listed}"


def _tpu_requested(workload: Workload, offer: Offer, accelerator_name: str | None) -> bool:
    if workload.accelerator == offer.name:
        return True
    return accelerator_name == offer.accelerator and workload.accelerator_count == offer.total_accelerators


def _resolve_accelerator(workload: Workload, catalog: Catalog) -> tuple[str | None, bool]:
    """The accelerator model named by the workload, and whether it names a TPU type (slice)."""
    assert workload.accelerator is not None
    if workload.accelerator in catalog.slice_types:
        return None, True
    return catalog.accelerator(workload.accelerator).name, False


def _candidates(profile: Profile, workload: Workload, platform: Platform, catalog: Catalog) -> list[Offer]:
    acc_name, is_tpu_type = _resolve_accelerator(workload, catalog)
    offers = catalog.offers_on(platform)
    if rules_for(platform).slices:
        matching = [o for o in offers if _tpu_requested(workload, o, acc_name)]
        if not matching:
            types = sorted(o.name for o in offers if acc_name in (None, o.accelerator))
            raise InputError(
                "fullserver:accelerator",
                f"no TPU type matches '{workload.accelerator}'"
                + (f" with {workload.accelerator_count} chips" if workload.accelerator_count else ""),
                suggest(workload.accelerator or "", types),
            )
        return matching
    if is_tpu_type:
        raise InputError("fullserver:accelerator", f"'{workload.accelerator}' is a TPU type", "use platform tpu-vm")
    count = workload.accelerator_count or 1
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


def assess(profile: Profile, offer: Offer, platform: Platform, nodes: int = 1) -> tuple[Host, BalanceReport, str]:
    """Balance of ``nodes`` nodes of one offer under a profile, with attachable storage added; a
    non-empty reason rejects it outright (what no balance line says: a disk a multi-host slice
    cannot take, a missing scale-out fabric). Sizing and the reference-design table both ask this."""
    balance = profile.balance_for(platform)
    attach = required_attached_gib(balance, offer.host)
    host = offer.host.model_copy(update={"attached_storage_gib": attach}) if attach else offer.host
    # A slice's hosts talk over ICI; an environment of one slice is one node to the balance.
    nodes = 1 if rules_for(platform).slices else nodes
    report = evaluate(balance, host, nodes)
    if attach and offer.hosts > 1:
        return host, report, "needs an attached read-write disk, which cannot attach to a multi-host TPU slice"
    if not _fabric_ok(profile.topology, offer, nodes):
        return host, report, f"no {_fabric_name(profile.topology.fabric)} (has {offer.interconnect.value})"
    return host, report, ""


def _check_region(workload: Workload, platform: Platform, catalog: Catalog) -> None:
    regions = catalog.regions(platform)
    if workload.region not in regions:
        raise InputError(
            "fullserver:region",
            f"no {platform.value} prices in region '{workload.region}'",
            suggest(workload.region, regions),
        )


def _zone_ok(offer: Offer, workload: Workload) -> bool:
    if not offer.zones:
        return True
    if workload.zone:
        return workload.zone in offer.zones
    return bool(offer.zones_in(workload.region))


def _distance(report: BalanceReport) -> float:
    """How far a shape is from feasible: the summed relative shortfall of its short dimensions."""
    return sum(1 - line.provided / line.required for line in report.short if line.required)


def rank(
    profile: Profile, workload: Workload, platform: Platform, catalog: Catalog
) -> tuple[list[Candidate], list[NearMiss]]:
    """Every feasible offer on one platform, cheapest first (never empty: ``NothingFits``), and the
    rejected near-misses with their reasons."""
    _check_region(workload, platform, catalog)
    feasible: list[Candidate] = []
    misses: list[tuple[float, float, NearMiss]] = []
    for offer in _candidates(profile, workload, platform, catalog):
        if workload.region not in offer.prices:
            misses.append(
                (99, math.inf, NearMiss(offer=offer.name, usd_hour=None, reason=f"not priced in {workload.region}"))
            )
            continue
        if not _zone_ok(offer, workload):
            zone = workload.zone or workload.region
            misses.append((98, math.inf, NearMiss(offer=offer.name, usd_hour=None, reason=f"not offered in {zone}")))
            continue
        usd, spot = compute_price(offer, workload.region, profile, catalog)
        host, report, reason = assess(profile, offer, platform, workload.nodes)
        if reason or not report.ok:
            why = reason or report.summary()
            misses.append(
                (_distance(report) + (10 if reason else 0), usd, NearMiss(offer=offer.name, usd_hour=usd, reason=why))
            )
            continue
        feasible.append(Candidate(offer, host, report, usd, spot))
    misses.sort(key=lambda m: (m[0], m[1], m[2].offer))
    near = [m[2] for m in misses]
    if not feasible:
        closest = "; ".join(f"{m.offer}: {m.reason}" for m in near[:3])
        raise NothingFits(
            f"profile '{profile.name}' on {platform.value} in {workload.region}",
            f"no shape meets every minimum; closest: {closest}",
            nothing_fits_hint(workload, platform, catalog),
        )
    feasible.sort(key=lambda c: (c.usd_hour, -c.host.vcpus, -c.host.memory_gib, c.offer.name))
    return feasible, near


# Spot alternatives: at most this many other shapes, each at most this many times the chosen
# shape's price, so that a spot request diversified over them cannot cost much more than planned.
MAX_ALTERNATIVE_SHAPES = 4
ALTERNATIVE_PRICE_RATIO = 1.5


def alternative_shapes(chosen: Candidate, feasible: list[Candidate], efa_interfaces: int) -> list[ShapeOption]:
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
        out.append(ShapeOption(offer=offer.name, machine_type=offer.machine_type, usd_hour=cand.usd_hour))
    return out[:MAX_ALTERNATIVE_SHAPES]


def _data_disk(profile: Profile, workload: Workload, cand: Candidate, platform: Platform) -> DataDisk | None:
    attach = math.ceil(cand.host.attached_storage_gib)
    dataset = math.ceil(workload.dataset_gib * profile.storage.dataset_headroom)
    size = max(attach, dataset)
    if size == 0 or cand.offer.hosts > 1:
        return None
    kind = rules_for(platform).disk_kind(cand.offer.family)
    n = max(cand.offer.host.accelerator_count, 1)
    limits = disk_limits(kind)
    pol = profile.storage
    if limits is None or (pol.iops_per_accelerator is None and pol.throughput_mbps_per_accelerator is None):
        return DataDisk(kind=kind, size_gib=size)
    return _provisioned(kind, size, limits, pol, n)


def _provisioned(kind: str, size: int, limits: DiskLimits, pol: StoragePolicy, n: int) -> DataDisk:
    """IOPS and throughput per accelerator, within the kind's limits; grow the disk if they need it.

    Growing a disk a few GiB costs less than missing the throughput the profile asks for, and the
    limits tie IOPS to size (IOPS per GiB) and throughput to IOPS (MiB/s per IOPS).
    """
    iops = math.ceil(pol.iops_per_accelerator.value * n) if pol.iops_per_accelerator else limits.min_iops
    mbps = (
        math.ceil(pol.throughput_mbps_per_accelerator.value * n)
        if pol.throughput_mbps_per_accelerator
        else limits.min_mbps
    )
    mbps = min(limits.max_mbps, max(limits.min_mbps, mbps))
    if limits.mbps_per_iops:
        iops = max(iops, math.ceil(mbps / limits.mbps_per_iops))
    iops = min(limits.max_iops, max(limits.min_iops, iops))
    size = max(size, math.ceil(iops / limits.iops_per_gib))
    return DataDisk(kind=kind, size_gib=size, iops=iops, throughput_mbps=mbps)


def _local_nvme(offer: Offer, balance_need_gib: float) -> int:
    """How many local SSDs to use: all of a fixed set, or the fewest selectable that meet the need."""
    counts = offer.local_nvme_selectable_counts
    if not counts:
        return offer.local_nvme_disks
    for count in counts:
        if count * offer.local_nvme_disk_gib + 1e-9 >= balance_need_gib:
            return count
    return counts[-1]


def _zone(platform: Platform, offer: Offer, workload: Workload) -> str | None:
    """The zone to build in: the asked one, else the first the catalog lists in the region where
    the platform takes its zone from the catalog (TPU capacity is zonal and the catalog knows the
    zones); elsewhere an unset zone is left to the provider (AWS picks one; GCP uses the provider's
    ``gcp:zone`` config) and the plan says so (``PlatformRules.unset_zone_warning``).
    """
    rules = rules_for(platform)
    if workload.zone or not rules.zone_from_catalog:
        return workload.zone
    in_region = offer.zones_in(workload.region)
    return in_region[0] if in_region else None


def _tpu_spec(offer: Offer, workload: Workload, queued: bool) -> TpuSpec:
    # The generic base image works with every framework (the framework is pip-installed on it);
    # it is listed first in the catalog for that reason.
    runtime = workload.image or offer.runtime_versions[0]
    if runtime not in offer.runtime_versions:
        raise InputError(
            "fullserver:image",
            f"runtime '{runtime}' is not valid for {offer.name}",
            f"choose one of: {', '.join(offer.runtime_versions)}",
        )
    return TpuSpec(
        accelerator_type=offer.name,
        topology=offer.topology,
        runtime_version=runtime,
        hosts=offer.hosts,
        queued=queued,
    )


def _access(profile: Profile, workload: Workload) -> tuple[bool, list[str]]:
    """Public IP and SSH source ranges: the stack may narrow the profile's, never widen them."""
    sec = profile.security
    ranges = workload.ssh_source_ranges if workload.ssh_source_ranges is not None else sec.ssh_source_ranges
    public_ip = sec.public_ip if workload.public_ip is None else workload.public_ip
    if public_ip and not sec.public_ip:
        raise InputError(
            "fullserver:publicIp",
            f"profile '{profile.name}' does not allow a public IP",
            "reach it through IAP or SSM instead",
        )
    return public_ip, list(ranges)


def refused(refusal: Refusal) -> InputError:
    """A platform rule's refusal as the plan says it: the stack key at fault, the rule's words."""
    return InputError(f"fullserver:{refusal.key}", refusal.what, refusal.hint)


def _check_capacity(
    profile: Profile,
    workload: Workload,
    offer: Offer,
    platform: Platform,
    zone: str | None,
    disk: DataDisk | None,
    queued: bool,
) -> None:
    """The platform's rules for what the environment asks (spot with a reservation, a queued TPU
    request that cannot be spot, a capacity block without its id, ...): the same rules, in the
    same words, as the components refuse at build time (``fullserver.platforms``)."""
    request = Request(
        shape=offer.name,
        hosts=offer.hosts,
        spot=profile.pricing is PricingModel.SPOT_WITH_FALLBACK,
        reservation=workload.reservation,
        zone=workload.zone if workload.reservation else zone,
        queued=queued,
        queued_asked=workload.queued,
        capacity_block=workload.capacity_block,
        data_disk=disk.kind if disk is not None else None,
        image=workload.image,
    )
    refusal = rules_for(platform).refusal(request)
    if refusal is not None:
        raise refused(refusal)


def build_spec(
    profile: Profile, workload: Workload, platform: Platform, catalog: Catalog, environment: str
) -> EnvironmentSpec:
    """Choose the shape and everything attached to it; the spec the components will build."""
    if platform not in profile.platforms:
        raise InputError(
            "fullserver:platform",
            f"platform {platform.value} is not allowed by profile '{profile.name}'",
            f"allowed: {', '.join(p.value for p in profile.platforms)}",
        )
    if workload.nodes > 1 and profile.topology.nodes == "single":
        raise InputError(
            "fullserver:nodes",
            f"profile '{profile.name}' is single-node",
            "use a multi-node profile such as scale-training",
        )
    rules = rules_for(platform)
    if workload.nodes > 1 and rules.multi_node is not None:
        raise refused(rules.multi_node)
    feasible, near = rank(profile, workload, platform, catalog)
    cand = feasible[0]
    offer = cand.offer
    warnings: list[str] = []
    if offer.local_nvme_disks == 0 and offer.host.local_nvme_gib > 0:
        warnings.append(
            f"{offer.name} has {offer.host.local_nvme_gib:,.0f} GiB of local NVMe whose per-disk split is not "
            "published: the balance counts it, but no RAID0 scratch is assembled from it"
        )
    warnings.extend(gap_warning(offer.name, line) for line in cand.report.gaps)
    if offer.host.network_gbps is None and not cand.report.gaps:
        warnings.append(f"no source publishes the host network bandwidth of {offer.name}")
    if profile.pricing is PricingModel.SPOT_WITH_FALLBACK and not cand.spot:
        warnings.append(f"no published spot price for {offer.name} in {workload.region}: priced and run on-demand")
    if cand.spot and rules.no_spot_fallback:
        warnings.append(rules.no_spot_fallback)
    # A slice is requested through a queued resource when the stack asks, or it spans hosts.
    queued = rules.slices and (workload.queued or offer.hosts > 1)
    if queued and workload.ssh_public_keys:
        warnings.append(
            "fullserver:sshPublicKeys is not installed on a queued TPU slice (pulumi-gcp 10.2's queued resource "
            "takes no metadata): its hosts take SSH keys from OS Login or the project's ssh-keys metadata"
        )
    if offer.hosts > 1 and workload.dataset_gib:
        warnings.append("multi-host TPU slice: stream the dataset from Cloud Storage (no read-write disk can attach)")
    # A serving group is regional and spreads over the shape's zones (fullserver.serving): it
    # takes a single zone only when the stack names one.
    zone = workload.zone if profile.serving else _zone(platform, offer, workload)
    if zone is None and rules.unset_zone_warning and profile.serving is None:
        warnings.append(rules.unset_zone_warning.format(accelerator=offer.accelerator))
    balance = profile.balance_for(platform)
    nvme_need = (
        balance.nvme_gib_per_accelerator.value * max(offer.host.accelerator_count, 1)
        if balance.nvme_gib_per_accelerator
        else 0.0
    )
    local = _local_nvme(offer, nvme_need)
    public_ip, ranges = _access(profile, workload)
    disk = _data_disk(profile, workload, cand, platform)
    _check_capacity(profile, workload, offer, platform, zone, disk, queued)
    lifecycle = profile.lifecycle
    if workload.ttl_hours is not None:
        if lifecycle.mode != "ephemeral":
            raise InputError(
                "fullserver:ttlHours",
                f"profile '{profile.name}' is persistent",
                "remove ttlHours or use an ephemeral profile",
            )
        lifecycle = lifecycle.model_copy(update={"ttl_hours": workload.ttl_hours})
    nodes = offer.hosts if rules.slices else workload.nodes
    efa = offer.efa_interfaces if profile.topology.fabric in (Fabric.EFA, Fabric.ANY) and nodes > 1 else 0
    fabric_refusal = efa_refusal(efa, offer.efa_interfaces, nodes, offer.machine_type, public_ip) if efa else None
    if fabric_refusal is not None:
        raise refused(fabric_refusal)
    return EnvironmentSpec(
        **_identity(profile, workload, environment, lifecycle),
        platform=platform,
        zone=zone,
        offer=offer.name,
        machine_type=offer.machine_type,
        accelerator=offer.accelerator,
        accelerator_count=offer.host.accelerator_count,
        accelerator_memory_gib=offer.host.accelerator_memory_gib,
        vcpus=offer.host.vcpus,
        memory_gib=offer.host.memory_gib,
        nodes=nodes,
        pricing=profile.pricing,
        spot=cand.spot,
        boot_disk_gib=profile.storage.boot_disk_gib,
        boot_disk_kind=rules.disk_kind(offer.family),
        data_disk=disk,
        local_nvme_disks=local,
        local_nvme_disk_gib=offer.local_nvme_disk_gib,
        scratch_raid0=local > 0,
        network=NetworkSpec(
            interconnect=offer.interconnect,
            efa_interfaces=efa,
            compact_placement=profile.topology.compact_placement and nodes > 1 and rules.compact_placement,
            public_ip=public_ip,
            ssh_source_ranges=list(ranges),
            ssh_public_keys=list(workload.ssh_public_keys or []),
            gbps_per_node=offer.host.network_gbps or 0,  # unknown: warned above
        ),
        tpu=_tpu_spec(offer, workload, queued) if rules.slices else None,
        serving=profile.serving,
        image=None if rules.image_is_runtime else workload.image,
        reservation=workload.reservation,
        capacity_block=workload.capacity_block,
        balance=cand.report,
        near_misses=near_misses(near, cand.usd_hour),
        alternative_shapes=alternative_shapes(cand, feasible, efa) if cand.spot else [],
        warnings=warnings,
    )


def gap_warning(offer: str, line: BalanceLine) -> str:
    """What the plan says of a minimum it could not check: a gap in the sources, not a refusal."""
    return (
        f"{offer}: {line.shortfall}, so this minimum is unchecked: give the figure (with its source) in the "
        f"catalog, or measure it on the host ({line.reason})"
    )


def _identity(profile: Profile, workload: Workload, environment: str, lifecycle: Lifecycle) -> dict[str, Any]:
    """What every spec says about who it is for; the labels policies and the janitor read."""
    labels = environment_labels(
        profile=profile.name,
        environment=environment,
        owner=workload.owner,
        lifecycle=lifecycle.mode,
        ttl_hours=lifecycle.ttl_hours,
    )
    return {
        "environment": environment,
        "profile": profile.name,
        "stage": profile.stage,
        "purpose": profile.purpose,
        "framework": workload.framework,
        "owner": workload.owner,
        "region": workload.region,
        "lifecycle": lifecycle,
        "labels": labels,
    }


def declared_host(hw: DedicatedHost, catalog: Catalog) -> Host:
    """A declared dedicated server as the balance check sees it."""
    acc = catalog.accelerator(hw.accelerator) if hw.accelerator else None
    return Host(
        accelerator=acc.name if acc else None,
        accelerator_count=hw.accelerator_count,
        accelerator_memory_gib=acc.memory_gib if acc else 0.0,
        vcpus=hw.vcpus,
        physical_cores=hw.physical_cores,
        memory_gib=hw.memory_gib,
        local_nvme_gib=hw.local_nvme_gib,
        network_gbps=hw.network_gbps,
    )


def dedicated_spec(profile: Profile, workload: Workload, catalog: Catalog, environment: str) -> EnvironmentSpec:
    """A bare-metal environment: the hardware is declared (and audited later), not chosen."""
    ded = workload.dedicated
    if ded is None:
        raise InputError("fullserver:dedicated", "missing", "add monthlyUsd and host for a bare-metal stack")
    hw = ded.host
    host = declared_host(hw, catalog)
    report = evaluate(profile.balance_for(Platform.BARE_METAL), host, len(ded.hosts) or workload.nodes)
    warnings = [] if report.ok else [f"declared host is {report.summary()}"]
    public_ip, ranges = _access(profile, workload)
    return EnvironmentSpec(
        **_identity(profile, workload, environment, profile.lifecycle),
        platform=Platform.BARE_METAL,
        zone=workload.zone,
        offer=f"dedicated ({ded.provider or 'own'})",
        machine_type="dedicated",
        accelerator=host.accelerator,
        accelerator_count=host.accelerator_count,
        accelerator_memory_gib=host.accelerator_memory_gib,
        vcpus=host.vcpus,
        memory_gib=host.memory_gib,
        nodes=len(ded.hosts) or workload.nodes,
        pricing=profile.pricing,
        spot=False,
        boot_disk_gib=profile.storage.boot_disk_gib,
        local_nvme_disks=0,
        scratch_raid0=hw.local_nvme_gib > 0,
        network=NetworkSpec(public_ip=public_ip, ssh_source_ranges=ranges, gbps_per_node=hw.network_gbps),
        dedicated=ded,
        balance=report,
        warnings=warnings,
    )


def platforms_for(profile: Profile, workload: Workload, catalog: Catalog) -> list[Platform]:
    """The profile's platforms, in its order, that can serve the workload's accelerator (whether
    they take the stack's platform-specific keys is ``Workload.takes_keys``, asked by ``size``)."""
    if workload.platform is not None:
        return [workload.platform]
    if workload.accelerator is None:
        return [p for p in profile.platforms if rules_for(p).declared_hardware]
    acc_name, is_tpu_type = _resolve_accelerator(workload, catalog)
    kind = AcceleratorKind.TPU if is_tpu_type else catalog.accelerators[str(acc_name)].kind
    return [
        p
        for p in profile.platforms
        if kind in rules_for(p).accelerator_kinds and (not rules_for(p).declared_hardware or workload.dedicated)
    ]


def spec_for(
    profile: Profile, workload: Workload, platform: Platform, catalog: Catalog, environment: str
) -> EnvironmentSpec:
    """The spec on one platform: declared servers as they are, else the shape sizing chooses."""
    if rules_for(platform).declared_hardware:
        return dedicated_spec(profile, workload, catalog, environment)
    return build_spec(profile, workload, platform, catalog, environment)


def size(profile: Profile, workload: Workload, catalog: Catalog, environment: str) -> EnvironmentSpec:
    """Size on the profile's platforms: the cheapest balanced option across them by expected
    hourly cost (the profile's order breaks ties), or, when the profile declares its order a
    requirement (``platform_order``), the first platform where a shape fits.

    A platform that cannot take the workload, for bad input (no prices in the region) or because
    no shape meets the minimums (``NothingFits``), gives way to the others. When none can, the
    error names each platform's reason, so the person sees every way out rather than the first
    dead end. When the option taken is not the cheapest balanced one, the plan says what the
    choice costs.
    """
    platforms = platforms_for(profile, workload, catalog)
    if not platforms:
        raise InputError(
            "fullserver:accelerator",
            f"profile '{profile.name}' allows {', '.join(p.value for p in profile.platforms)}, none of which offers {workload.accelerator}",
            "pick an accelerator those platforms offer, or set fullserver:platform",
        )
    # A key only some platforms take (capacityBlock, queued, serving, ...) is a choice of platform:
    # sizing never lands the stack where the key would be ignored.
    taking = [p for p in platforms if workload.takes_keys(p)]
    if not taking:
        refused = {p: [k for k in workload.platform_keys() if option_refusal(k, p)] for p in platforms}
        keys = dict.fromkeys(k for ks in refused.values() for k in ks)
        raise InputError(
            ", ".join(f"fullserver:{k}" for k in keys),
            "no platform the profile allows takes them all: "
            + "; ".join(f"{p.value} refuses {', '.join(ks)}" for p, ks in refused.items()),
            "remove the keys of the platform you do not want, or set fullserver:platform",
        )
    errors: list[tuple[Platform, InputError | NothingFits]] = []
    fits: list[tuple[EnvironmentSpec, float | None]] = []
    for platform in taking:
        try:
            spec = spec_for(profile, workload, platform, catalog, environment)
        except (InputError, NothingFits) as exc:
            errors.append((platform, exc))
            continue
        fits.append((spec, expected_usd_hour(spec, profile, workload, catalog)))
    if not fits:
        raise _none_fits(profile, workload, errors)
    if len(fits) == 1:
        return fits[0][0]
    priced = [(spec, usd) for spec, usd in fits if usd is not None]
    cheapest = min(priced, key=lambda f: f[1]) if priced else fits[0]  # min keeps the first of equals
    chosen = fits[0] if profile.platform_order == "requirement" else cheapest
    return _with_choice_note(profile, chosen, cheapest, fits)


def expected_usd_hour(spec: EnvironmentSpec, profile: Profile, workload: Workload, catalog: Catalog) -> float | None:
    """The expected compute cost of an environment an hour, as sizing ranks it
    (``fullserver.hourly``: the expected rate under the profile's pricing), every node included;
    ``None`` for declared servers, which are priced by their contract, not the catalog."""
    offer = catalog.offer(spec.offer)
    if offer is None:
        return None
    per_offer = hourly_rate(offer, workload.region, profile, catalog).usd
    return per_offer * (1 if rules_for(spec.platform).slices else spec.nodes)


def _with_choice_note(
    profile: Profile,
    chosen: tuple[EnvironmentSpec, float | None],
    cheapest: tuple[EnvironmentSpec, float | None],
    fits: list[tuple[EnvironmentSpec, float | None]],
) -> EnvironmentSpec:
    """The chosen spec, with a warning saying why it is not on the profile's first platform, or
    what the profile's required order costs over the cheapest balanced option."""
    spec, usd = chosen
    other, other_usd = cheapest
    first, first_usd = fits[0]
    if spec is other and spec is first:
        return spec
    if spec is other and first_usd is not None and usd is not None:
        note = (
            f"platform left open: {spec.platform.value} ({spec.offer}, ${usd:,.2f}/h expected) is the cheapest "
            f"balanced option; the profile's first platform, {first.platform.value} ({first.offer}), "
            f"would cost ${first_usd:,.2f}/h (+{first_usd / usd - 1:.0%})"
        )
    elif usd is not None and other_usd is not None:
        note = (
            f"profile '{profile.name}' requires its platform order: {spec.platform.value} ({spec.offer}) "
            f"costs ${usd:,.2f}/h expected, ${usd - other_usd:,.2f}/h (+{usd / other_usd - 1:.0%}) more than "
            f"the cheapest balanced option, {other.platform.value} ({other.offer}) at ${other_usd:,.2f}/h"
        )
    else:
        return spec
    return spec.model_copy(update={"warnings": [*spec.warnings, note]})


def _none_fits(
    profile: Profile, workload: Workload, errors: list[tuple[Platform, InputError | NothingFits]]
) -> InputError | NothingFits:
    """One error for every platform tried: the only one when all say the same, else each by name.

    It is ``NothingFits`` when some platform got as far as comparing shapes, else ``InputError``.
    """
    first = errors[0][1]
    if len({(exc.where, exc.what) for _, exc in errors}) == 1:
        return first
    # Each reason may hold "; " itself (a list of near-misses), so a platform's name in brackets
    # starts each one.
    reasons = " ".join(
        f"[{platform.value}] {exc.what}"
        if isinstance(exc, NothingFits)
        else f"[{platform.value}] {exc.where}: {exc.what}"
        for platform, exc in errors
    )
    where = f"profile '{profile.name}' in {workload.region}"
    what = f"no platform the profile allows fits: {reasons}"
    fewer = [exc.hint for _, exc in errors if isinstance(exc, NothingFits) and exc.hint.startswith("lower")]
    hint = (
        "lower the accelerator count, pick another region, or relax the profile"
        if fewer
        else "pick another region, or relax the profile"
    )
    if any(isinstance(exc, NothingFits) for _, exc in errors):
        return NothingFits(where, what, hint)
    return InputError(where, what, hint)
