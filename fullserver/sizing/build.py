"""Building the spec: everything attached to the chosen shape (disks provisioned within the
kind's limits, local SSDs, zone, access, the TPU's runtime), and declared bare-metal servers as
they are. Which disk kind a shape attaches, and the kinds' limits, are each platform's
(``fullserver.platforms``); sizing provisions within them.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from fullserver.balance import BalanceLine, Host, evaluate
from fullserver.capacity import CapacitySet, balanced_set
from fullserver.catalog import Catalog, Offer
from fullserver.catalog.model import AcceleratorKind, Platform
from fullserver.errors import InputError
from fullserver.nearmiss import near_misses
from fullserver.netcheck import placeholder_ranges_warning
from fullserver.platforms import DiskLimits, Refusal, Request, disk_limits, rules_for
from fullserver.profiles import Lifecycle, PricingModel, Profile, StoragePolicy
from fullserver.rules import environment_labels
from fullserver.sizing.rank import (
    Candidate,
    RankQuestion,
    alternative_shapes,
    check_region,
    efa_interfaces,
    local_nvme_count,
    nvme_need_gib,
    ranking,
)
from fullserver.spec import DataDisk, EnvironmentSpec, NearMiss, NetworkSpec, ShapeLimits, ShapeOption, TpuSpec
from fullserver.workload import DedicatedHost, Workload, autostop_minutes_for, lifecycle_for


def _data_disk(
    profile: Profile, workload: Workload, cand: Candidate, kind: str, limits: DiskLimits | None
) -> DataDisk | None:
    """The data disk of ``kind`` (the shape's, ``PlatformRules.disk_kind``, with its ``limits``)
    for the dataset with the profile's headroom, or for the storage the balance attaches,
    whichever is larger."""
    attach = math.ceil(cand.host.attached_storage_gib)
    dataset = math.ceil(workload.dataset_gib * profile.storage.dataset_headroom)
    size = max(attach, dataset)
    if size == 0 or cand.offer.hosts > 1:
        return None
    n = max(cand.offer.host.accelerator_count, 1)
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


def _zone(platform: Platform, offer: Offer, q: RankQuestion) -> str | None:
    """The zone to build in: the asked one, else the first the catalog lists in the region where
    the platform takes its zone from the catalog (TPU capacity is zonal and the catalog knows the
    zones); elsewhere an unset zone is left to the provider (AWS picks one; GCP uses the provider's
    ``gcp:zone`` config) and the plan says so (``PlatformRules.unset_zone_warning``).
    """
    rules = rules_for(platform)
    if q.zone or not rules.zone_from_catalog:
        return q.zone
    in_region = offer.zones_in(q.region)
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
    catalog: Catalog,
) -> None:
    """The platform's rules for what the environment asks (spot with a reservation, a queued TPU
    request that cannot be spot, a capacity block without its id, ...): the same rules, in the
    same words, as the components refuse at build time (``fullserver.platforms``).

    A rule reads the request alone (a frozen ``Request``), and stacks of one kind ask the same: one
    answer per platform and request and catalog (``Catalog.answer``)."""
    asked = Request(
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
    refusal = catalog.answer(_refusal, _CapacityQuestion(platform, asked))
    if refusal is not None:
        raise refused(refusal)


class _CapacityQuestion(NamedTuple):
    platform: Platform
    request: Request


def _refusal(q: _CapacityQuestion, catalog: Catalog) -> Refusal | None:
    """The platform's refusal of the request, if any (``PlatformRules.refusal``)."""
    return rules_for(q.platform).refusal(q.request)


def check_platform(
    profile: Profile, workload: Workload, platform: Platform, catalog: Catalog, pool: Platform | None = None
) -> None:
    """The platform is the profile's, takes as many nodes as the stack asks, and has prices in the
    stack's region: asked, in that order, before any sizing, so that a comparison row on a platform
    that prices no such region costs one lookup (``check_region``). ``pool``: the machines are nodes
    of that node-pool platform, which is what the profile must allow; ``platform`` is its VMs'."""
    allowed = pool or platform
    if allowed not in profile.platforms:
        raise InputError(
            "fullserver:platform",
            f"platform {allowed.value} is not allowed by profile '{profile.name}'",
            f"allowed: {', '.join(p.value for p in profile.platforms)}",
        )
    if workload.nodes > 1 and profile.topology.nodes == "single":
        raise InputError(
            "fullserver:nodes",
            f"profile '{profile.name}' is single-node",
            "use a multi-node profile such as scale-training",
        )
    multi_node = rules_for(platform).multi_node
    if workload.nodes > 1 and multi_node is not None:
        raise refused(multi_node)
    check_region(workload.region, platform, catalog)


def _shape_warnings(profile: Profile, region: str, cand: Candidate, platform: Platform) -> list[str]:
    """What the plan says about the chosen shape: figures no source gives, spot it cannot have,
    and what its platform does not do for it (the same for every stack asking the ranking's question)."""
    offer, rules = cand.offer, rules_for(platform)
    warnings: list[str] = []
    if offer.local_nvme_disks == 0 and offer.host.local_nvme_gib > 0:
        warnings.append(
            f"{offer.name} has {offer.host.local_nvme_gib:,.0f} GiB of local NVMe whose per-disk split is not "
            "published: the balance counts it, but no RAID0 scratch is assembled from it"
        )
    gaps = cand.report.gaps
    warnings.extend(gap_warning(offer.name, line) for line in gaps)
    if offer.host.network_gbps is None and not gaps:
        warnings.append(f"no source publishes the host network bandwidth of {offer.name}")
    if profile.pricing is PricingModel.SPOT_WITH_FALLBACK and not cand.spot:
        warnings.append(f"no published spot price for {offer.name} in {region}: priced and run on-demand")
    if cand.spot and rules.no_spot_fallback:
        warnings.append(rules.no_spot_fallback)
    return warnings


def _stack_warnings(workload: Workload, offer: Offer) -> list[str]:
    """What the plan says of what this stack asks of the shape: a dataset no disk of a multi-host
    slice can hold."""
    warnings: list[str] = []
    if offer.hosts > 1 and workload.dataset_gib:
        warnings.append("multi-host TPU slice: stream the dataset from Cloud Storage (no read-write disk can attach)")
    return warnings


def _local_disks(profile: Profile, offer: Offer, platform: Platform) -> int:
    """Local SSDs to use for the profile's NVMe minimum (``local_nvme_count``)."""
    return local_nvme_count(offer, nvme_need_gib(profile, offer, platform))


def _check_fabric(offer: Offer, platform: Platform, efa: int, nodes: int, public_ip: bool) -> None:
    """The platform's rule for the EFA interfaces asked (``PlatformRules.fabric_refusal``)."""
    rule = rules_for(platform).fabric_refusal
    found = rule(efa, offer.efa_interfaces, nodes, offer.machine_type, public_ip) if efa and rule else None
    if found is not None:
        raise refused(found)


class _Shape(NamedTuple):
    """The chosen shape and what the spec says of it that the ranking's question alone decides
    (``RankQuestion``). Worked out once with the ranking (``Catalog.answer``), so that each stack
    of one kind, and each comparison row, works out only what is its own (its dataset, owner,
    keys, access and network). Immutable: its sequences are tuples."""

    cand: Candidate
    nodes: int
    zone: str | None
    warnings: tuple[str, ...]
    """``_shape_warnings``."""
    zone_warning: tuple[str, ...]
    """The platform's word on an unset zone where it says one (``PlatformRules.unset_zone_warning``)."""
    local_disks: int
    disk_kind: str
    disk_limits: DiskLimits | None
    efa: int
    near_misses: tuple[NearMiss, ...]
    alternatives: tuple[ShapeOption, ...]
    capacity: CapacitySet | None
    """The balanced set (``fullserver.capacity``), its steps not yet said; ``None`` where the platform
    states no steps (``PlatformRules.capacity_steps``), which is where a spec carries none."""
    accelerator_kind: AcceleratorKind | None
    compact_placement: bool
    """Multi-node, on a platform that places nodes close, under a profile that asks it."""


def _network(shape: _Shape, public_ip: bool, ranges: list[str], keys: list[str]) -> NetworkSpec:
    """The shape's network with a stack's access (public address, SSH source ranges and keys):
    each spec its own, as its lists are its own."""
    offer = shape.cand.offer
    return NetworkSpec(
        interconnect=offer.interconnect,
        efa_interfaces=shape.efa,
        compact_placement=shape.compact_placement,
        public_ip=public_ip,
        ssh_source_ranges=list(ranges),
        ssh_public_keys=list(keys),
        gbps_per_node=offer.host.network_gbps or 0,  # unknown: warned (_shape_warnings)
    )


def _shape(q: RankQuestion, catalog: Catalog) -> _Shape:
    """The ranking's cheapest shape (``rank``), with what its question alone decides (``_Shape``)."""
    profile, platform = q.profile.of, q.platform
    feasible, near = ranking(q, catalog)
    cand = feasible[0]
    offer, rules = cand.offer, rules_for(platform)
    nodes = rules.supply.nodes(offer.hosts, q.nodes)
    # A serving group is regional and spreads over the shape's zones (fullserver.serving): it
    # takes a single zone only when the stack names one.
    zone = q.zone if profile.serving else _zone(platform, offer, q)
    unset = zone is None and rules.unset_zone_warning and profile.serving is None
    efa = efa_interfaces(profile, offer, nodes)
    kind = rules.disk_kind(offer.family)
    return _Shape(
        cand=cand,
        nodes=nodes,
        zone=zone,
        warnings=tuple(_shape_warnings(profile, q.region, cand, platform)),
        zone_warning=(rules.unset_zone_warning.format(accelerator=offer.accelerator),) if unset else (),
        local_disks=_local_disks(profile, offer, platform),
        disk_kind=kind,
        disk_limits=disk_limits(kind),
        efa=efa,
        near_misses=tuple(
            NearMiss(offer=m.offer, usd_hour=m.usd_hour, reason=m.reason) for m in near_misses(near, cand.usd_hour)
        ),
        alternatives=tuple(alternative_shapes(cand, feasible, efa)) if cand.spot else (),
        capacity=balanced_set(
            (offer, cand.usd_hour),
            [(c.offer, c.usd_hour) for c in feasible],
            q.region,
            q.zone,
            profile.cost.capacity_band,
            efa,
        )
        if rules.capacity_steps is not None
        else None,
        accelerator_kind=catalog.accelerators[offer.accelerator].kind if offer.accelerator else None,
        compact_placement=profile.topology.compact_placement and nodes > 1 and rules.compact_placement,
    )


def build_spec(
    profile: Profile, workload: Workload, platform: Platform, catalog: Catalog, environment: str
) -> EnvironmentSpec:
    """Choose the shape and everything attached to it; the spec the components will build."""
    check_platform(profile, workload, platform, catalog)
    return sized_spec(profile, workload, platform, catalog, environment)


def sized_spec(
    profile: Profile,
    workload: Workload,
    platform: Platform,
    catalog: Catalog,
    environment: str,
    pool: Platform | None = None,
) -> EnvironmentSpec:
    """``build_spec`` past its checks (``check_platform``, which the caller has asked).
    ``pool``: the machines are nodes of that Kubernetes node-pool platform, balanced as VMs and
    leaving the workload pod room (``fullserver.sizing.rank.assess``)."""
    rules = rules_for(platform)
    shape = catalog.answer(_shape, RankQuestion.of(profile, workload, platform, pool))
    cand, nodes, zone = shape.cand, shape.nodes, shape.zone
    offer = cand.offer
    # A slice is requested through a queued resource when the stack asks, or it spans hosts.
    queued = rules.supply.queued(workload.queued, offer.hosts)
    warnings = [*shape.warnings, *_stack_warnings(workload, offer), *shape.zone_warning]
    public_ip, ranges = _access(profile, workload)
    placeholder = placeholder_ranges_warning(workload.ssh_source_ranges or [], "sshSourceRanges", "SSH connects from")
    warnings += [placeholder] if placeholder else []
    disk = _data_disk(profile, workload, cand, shape.disk_kind, shape.disk_limits)
    _check_capacity(profile, workload, offer, platform, zone, disk, queued, catalog)
    lifecycle = lifecycle_for(profile, workload)
    _check_fabric(offer, platform, shape.efa, nodes, public_ip)
    spec = EnvironmentSpec(
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
        boot_disk_kind=shape.disk_kind,
        data_disk=disk,
        local_nvme_disks=shape.local_disks,
        local_nvme_disk_gib=offer.local_nvme_disk_gib,
        scratch_raid0=shape.local_disks > 0,
        network=_network(shape, public_ip, ranges, workload.ssh_public_keys or []),
        tpu=_tpu_spec(offer, workload, queued) if rules.supply.named_by_type else None,
        serving=profile.serving,
        image=rules.boot_image(workload.image),
        reservation=workload.reservation,
        capacity_block=workload.capacity_block,
        balance=cand.report,
        near_misses=list(shape.near_misses),
        alternative_shapes=list(shape.alternatives),
        warnings=warnings,
        shape_limits=ShapeLimits(
            max_local_ssds=offer.local_nvme_disks,
            local_ssd_counts=list(offer.local_nvme_selectable_counts) if offer.local_nvme_selectable_counts else None,
            efa_interfaces=offer.efa_interfaces,
            pods=offer.pods,
        ),
        accelerator_kind=shape.accelerator_kind,
    )
    return _with_capacity(spec, shape.capacity)


def _with_capacity(spec: EnvironmentSpec, found: CapacitySet | None) -> EnvironmentSpec:
    """The spec with its balanced set and the steps its platform's cloud takes on a stockout
    (``PlatformRules.capacity_steps``); none where the platform states none (``found`` is then
    ``None``: ``_shape`` builds no set for it)."""
    steps = rules_for(spec.platform).capacity_steps
    return spec if steps is None or found is None else spec.model_copy(update={"capacity": steps(spec, found)})


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
        "autostop_minutes": autostop_minutes_for(profile, workload),
    }


def declared_host(hw: DedicatedHost, catalog: Catalog) -> Host:
    """A declared dedicated server as the balance check sees it."""
    acc = catalog.accelerator(hw.accelerator) if hw.accelerator else None
    return Host.of(
        acc,
        hw.accelerator_count,
        vcpus=hw.vcpus,
        physical_cores=hw.physical_cores,
        memory_gib=hw.memory_gib,
        local_nvme_gib=hw.local_nvme_gib,
        network_gbps=hw.network_gbps,
    )


def dedicated_spec(
    profile: Profile,
    workload: Workload,
    catalog: Catalog,
    environment: str,
    platform: Platform,
) -> EnvironmentSpec:
    """An environment of declared servers (bare metal): the hardware is declared (and audited
    later), not chosen."""
    ded = workload.dedicated
    if ded is None:
        raise InputError("fullserver:dedicated", "missing", "add monthlyUsd and host for a bare-metal stack")
    hw = ded.host
    host = declared_host(hw, catalog)
    report = evaluate(profile.balance_for(platform), host, len(ded.hosts) or workload.nodes)
    warnings = [] if report.ok else [f"declared host is {report.summary()}"]
    public_ip, ranges = _access(profile, workload)
    return EnvironmentSpec(
        **_identity(profile, workload, environment, profile.lifecycle),
        platform=platform,
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
