"""Sizing: (profile, workload) -> the cheapest catalog shape that meets every balance minimum.

Design notes: docs/design/core.md.
"""

from __future__ import annotations

from typing import NamedTuple

from fullserver.catalog import Catalog, Same
from fullserver.catalog.model import Platform
from fullserver.errors import InputError, NothingFits
from fullserver.hourly import hourly_rate, units_billed
from fullserver.kube import SIZED_AS, karpenter, kube_plan
from fullserver.kube.access import (
    KUBE_KEYS,
    ClusterAccess,
    api_ranges_problem,
    control_plane_warning,
    one_zone_warning,
)
from fullserver.kube.attached import autoscaler_warnings
from fullserver.kube.model import zonal
from fullserver.kube.pool import KubePlan
from fullserver.netcheck import placeholder_ranges_warning
from fullserver.platforms import option_refusal, rules_for
from fullserver.profiles import Profile
from fullserver.sizing.build import (
    build_spec,
    check_platform,
    declared_host,
    dedicated_spec,
    gap_warning,
    refused,
    sized_spec,
)
from fullserver.sizing.finish import complete_spec
from fullserver.sizing.rank import (
    ALTERNATIVE_PRICE_RATIO,
    MAX_ALTERNATIVE_SHAPES,
    Candidate,
    alternative_shapes,
    assess,
    compute_price,
    rank,
    suggest,
)
from fullserver.spec import EnvironmentSpec
from fullserver.workload import Workload, platforms_for

__all__ = [
    "ALTERNATIVE_PRICE_RATIO",
    "MAX_ALTERNATIVE_SHAPES",
    "Candidate",
    "alternative_shapes",
    "assess",
    "build_spec",
    "complete_spec",
    "compute_price",
    "declared_host",
    "dedicated_spec",
    "expected_usd_hour",
    "gap_warning",
    "kube_spec",
    "platforms_for",
    "rank",
    "refused",
    "size",
    "spec_for",
    "suggest",
]


def spec_for(
    profile: Profile, workload: Workload, platform: Platform, catalog: Catalog, environment: str
) -> EnvironmentSpec:
    """The spec on one platform: declared servers as they are, else the shape sizing chooses."""
    if not rules_for(platform).supply.from_catalog:
        return dedicated_spec(profile, workload, catalog, environment, platform)
    if platform in SIZED_AS:
        return kube_spec(profile, workload, platform, catalog, environment)
    return build_spec(profile, workload, platform, catalog, environment)


def kube_spec(
    profile: Profile, workload: Workload, platform: Platform, catalog: Catalog, environment: str
) -> EnvironmentSpec:
    """A Kubernetes node-pool platform: sized as the VM platform its nodes are (``SIZED_AS``:
    that platform's offers, prices and zones), then turned into pools (``fullserver.kube``). The
    spec names the node-pool platform and carries the ``KubePlan``; the plan's warnings join the
    spec's."""
    vm = SIZED_AS[platform]
    check_platform(profile, workload, vm, catalog, pool=platform)
    # The profile's node pools, sized as their VMs: one copy per profile and VM platform, kept in
    # the catalog's memo, so that the shape kept for it (``_shape``, whose ``RankQuestion`` holds
    # the profile by identity) is found again.
    as_vm = catalog.answer(_as_vm, _AsVm(Same(profile), vm))
    # A zonal cluster's pools go to its zone unless the stack names another of the region's.
    location = _location(workload)
    zone = workload.zone or (location if zonal(location) else None)
    # Shapes balanced by the node's shape, as VMs, with room for the workload pod (rank.assess).
    sized = sized_spec(
        as_vm, workload.model_copy(update={"platform": vm, "zone": zone}), vm, catalog, environment, pool=platform
    )
    access = cluster_access(workload)
    pools = kube_plan(
        sized,
        platform,
        cluster=workload.cluster,
        flex_start=workload.flex_start,
        deploy_workload=workload.deploy_workload,
        provisioner=access.provisioner,
        access=access,
        catalog=catalog,
    )
    too_many = api_ranges_problem(access.api_ranges, pools.provider) if pools.create_cluster else None
    if too_many is not None:  # a stack whose platform was left open: known only now
        raise InputError(
            "fullserver:controlPlaneSourceRanges", f"{too_many} ({platform.value})", "list fewer, wider ranges"
        )
    said = _created_api(pools, access, workload.deploy_workload) if pools.create_cluster else []
    if access.subnets and (pools.efa_interfaces or pools.compact_placement):
        said.append(one_zone_warning(pools.zone))
    pools = pools.model_copy(update={"warnings": [*pools.warnings, *said]}) if said else pools
    vm_only = _VM_ONLY[vm]
    kept = [w for w in sized.warnings if not w.startswith(vm_only)]
    tpu = sized.tpu.model_copy(update={"queued": False}) if sized.tpu else None  # a pool, not a queued resource
    held = sized.capacity
    if held is not None and pools.provisioner == karpenter.KARPENTER:  # one NodePool over the set, not groups
        held = karpenter.capacity(held, karpenter.is_spot(pools), karpenter.object_name(pools.environment))
    return sized.model_copy(
        update={
            "platform": platform,
            "capacity": held,
            "kube": pools,
            "tpu": tpu,
            "warnings": [*kept, *pools.warnings, *autoscaler_warnings(pools)],
        }
    )


def _vm_only(vm: Platform) -> tuple[str, str]:
    """How the warnings start that the VM platform says of its own VMs (no spot fallback, the
    provider's default zone) and that are not so of node pools (a fallback pool; a regional
    cluster's zones); "\0" where it says none."""
    rules = rules_for(vm)
    return rules.no_spot_fallback or "\0", (rules.unset_zone_warning or "\0").split("{", 1)[0]


_VM_ONLY: dict[Platform, tuple[str, str]] = {vm: _vm_only(vm) for vm in SIZED_AS.values()}
"""``_vm_only`` of each VM platform node pools are sized as: its rules' alone, so worked out once."""


class _AsVm(NamedTuple):
    profile: Same[Profile]
    vm: Platform


def _as_vm(q: _AsVm, catalog: Catalog) -> Profile:
    """The profile with the VM platform its node pools are sized as as its only platform."""
    return q.profile.of.model_copy(update={"platforms": [q.vm]})


def _location(workload: Workload) -> str:
    """The cluster's location: the stack's ``clusterLocation``, else its region."""
    return workload.cluster_location or workload.region


def _created_api(pools: KubePlan, access: ClusterAccess, deploy_workload: bool) -> list[str]:
    """The plan's warnings of who reaches a created cluster's API, and of documentation ranges left
    in ``controlPlaneSourceRanges`` (a stack whose API ``pulumi up`` cannot reach is refused when
    planned: ``fullserver.plan.plan_workload``, not when sized, so recommendations still rank it)."""
    said = [
        control_plane_warning(pools.provider, access, deploy_workload),
        placeholder_ranges_warning(access.api_ranges, "controlPlaneSourceRanges", "pulumi up and kubectl run from"),
    ]
    return [w for w in said if w is not None]


def cluster_access(workload: Workload) -> ClusterAccess:
    """The stack's ``clusterLocation``, ``privateEndpoint``, ``clusterIdentity`` and ``subnets``
    (checked by ``Workload``), as the components take them."""
    return ClusterAccess(
        location=_location(workload),
        private_endpoint=workload.private_endpoint,
        identity=workload.cluster_identity or "pod-identity",
        provisioner=workload.node_provisioner or "cluster-autoscaler",
        subnets=list(workload.subnets or []),
        api_ranges=list(workload.control_plane_source_ranges or []),
        api_open=workload.control_plane_open_to_internet,
    )


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
    # A Kubernetes node pool is the stack's choice (fullserver:platform, or a Kubernetes key such as
    # fullserver:cluster), never sizing's: a team not on Kubernetes is not handed a cluster.
    taking = [
        p
        for p in platforms
        if workload.takes_keys(p) and (p not in SIZED_AS or workload.platform or _sets_kube_keys(workload))
    ]
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
    specs: list[EnvironmentSpec] = []
    for platform in taking:
        try:
            specs.append(spec_for(profile, workload, platform, catalog, environment))
        except (InputError, NothingFits) as exc:
            errors.append((platform, exc.with_traceback(None)))  # kept: its frames would hold ``errors``
    if not specs:
        raise _none_fits(profile, workload, errors)
    if len(specs) == 1:
        return specs[0]  # nothing to weigh it against
    fits = [(spec, expected_usd_hour(spec, profile, catalog)) for spec in specs]
    priced = [(spec, usd) for spec, usd in fits if usd is not None]
    cheapest = min(priced, key=lambda f: f[1]) if priced else fits[0]  # min keeps the first of equals
    chosen = fits[0] if profile.platform_order == "requirement" else cheapest
    return _with_choice_note(profile, chosen, cheapest, fits)


def _sets_kube_keys(workload: Workload) -> bool:
    """Whether the stack sets a Kubernetes key (``KUBE_KEYS``): asked only of a node-pool platform
    the stack does not name, as most stacks land on none."""
    return not set(KUBE_KEYS).isdisjoint(workload.platform_keys())


def expected_usd_hour(spec: EnvironmentSpec, profile: Profile, catalog: Catalog) -> float | None:
    """The expected compute cost of an environment an hour, as sizing ranks it and the cost
    estimate bills it (``fullserver.hourly``: the expected rate under the profile's pricing on the
    platform that builds it), every node of every replica included (``units_billed``); ``None``
    for declared servers, which are priced by their contract, not the catalog."""
    offer = catalog.offer(spec.offer)
    if offer is None:
        return None
    per_offer = hourly_rate(offer, spec.region, profile, catalog, spec.platform).usd
    return per_offer * units_billed(spec.platform, spec.nodes, spec.replicas)


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
        return first.afresh()  # raised, the kept one would hold ``errors``
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
