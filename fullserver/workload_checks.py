"""What a stack's keys mean for its profile and the catalog, checked before any sizing.

The model (``fullserver.workload``) checks each key alone and the keys against an explicit
platform; ``check_workload`` here adds what needs the profile (its TTL, its serving group), the
catalog (TPU chip counts, accelerator kinds and aliases, a dedicated host's accelerator) or the
platforms the stack may land on (keys none of them takes, an attached cluster's name). Each
refusal names the key at fault.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import TYPE_CHECKING

from fullserver.catalog.model import AcceleratorKind, Platform
from fullserver.errors import InputError
from fullserver.platforms import all_rules, name_rules, option_refusal, pool_member_of, rules_for
from fullserver.workload import Workload, lifecycle_for, platforms_for

if TYPE_CHECKING:
    from fullserver.catalog import Catalog
    from fullserver.profiles import Profile


def check_tpu_count(workload: Workload, catalog: Catalog) -> None:
    """A TPU slice has the chips of its type: a count no type has is refused, never rounded."""
    count = workload.accelerator_count
    if count is None or workload.accelerator is None:
        return
    tpus = [o for o in catalog.offers if o.name in catalog.slice_types]
    named = next((o for o in tpus if o.name == workload.accelerator), None)
    if named is not None:
        if count != named.total_accelerators:
            raise InputError(
                "fullserver:acceleratorCount",
                f"is {count}, but {named.name} has {named.total_accelerators} chips",
                f"remove acceleratorCount or set it to {named.total_accelerators}",
            )
        return
    model = catalog.accelerator(workload.accelerator).name
    counts = sorted({o.total_accelerators for o in tpus if o.accelerator == model})
    if counts and count not in counts:
        raise InputError(
            "fullserver:acceleratorCount",
            f"no {model} slice has {count} chips",
            f"slices have {', '.join(map(str, counts))} chips",
        )


def check_dedicated_accelerator(workload: Workload, catalog: Catalog) -> None:
    assert workload.dedicated is not None and workload.accelerator is not None
    declared = workload.dedicated.host.accelerator
    wanted = catalog.accelerator(workload.accelerator).name
    have = catalog.accelerator(declared, where="fullserver:dedicated.host.accelerator").name if declared else None
    if wanted != have:
        raise InputError(
            "fullserver:accelerator",
            f"is {wanted}, but the dedicated host has {have or 'no accelerator'}",
            "make them agree: fullserver:dedicated.host is what was rented",
        )


def check_attached_cluster(workload: Workload, platforms: Collection[Platform]) -> None:
    """An existing cluster's name meets the name rule of the clusters fullserver creates on that
    provider, and no subnet is listed twice.

    Why: the rule was applied only to created clusters, so ``ML_Prod`` or ``ml-prød`` as an
    attached GKE cluster planned and failed at ``up`` (no cluster can have that name); a subnet
    listed twice is refused by EKS ``CreateNodegroup``."""
    if workload.cluster is not None:
        for platform in sorted(platforms, key=lambda p: p.value):
            member = pool_member_of(platform)
            rules = name_rules(member.cluster_type) if member is not None else ()
            problem = next((found for rule in rules if (found := rule.problem(workload.cluster))), None)
            if problem is not None:
                raise InputError(
                    "fullserver:cluster", f"{problem}: no such cluster can exist", "name it as its console lists it"
                )
    subnets = workload.subnets or []
    twice = next((s for i, s in enumerate(subnets) if s in subnets[:i]), None)
    if twice is not None:
        raise InputError("fullserver:subnets", f"lists '{twice}' twice", "list each subnet once")


KIND_NAMES = {
    AcceleratorKind.GPU: "GPU",
    AcceleratorKind.TPU: "TPU",
    AcceleratorKind.TRAINIUM: "Trainium",
    AcceleratorKind.INFERENTIA: "Inferentia",
}


def _natural(name: str) -> tuple[object, ...]:
    """v4-8 before v4-16: names sorted by their numbers as numbers."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def check_accelerator_kind(workload: Workload, catalog: Catalog) -> None:
    """A stack that names its platform names an accelerator of a kind that platform takes
    (``PlatformRules.accelerator_kinds``): L4 on gke-tpu ended in "no TPU type matches 'L4'
    (choose one of: none)". The refusal lists what the platform offers (a node pool's: its
    nodes' platform's) and which platforms take the accelerator named."""
    platform, named = workload.platform, workload.accelerator
    if platform is None or named is None:
        return
    is_type = named in catalog.slice_types
    kind = AcceleratorKind.TPU if is_type else catalog.accelerators[catalog.accelerator(named).name].kind
    takes = rules_for(platform).accelerator_kinds
    if kind in takes:
        return
    member = pool_member_of(platform)
    sized_as = member.sized_as[platform] if member is not None else platform
    supply = rules_for(sized_as).supply
    offered = sorted({supply.offered_as(o.name, o.accelerator) for o in catalog.offers_on(sized_as)}, key=_natural)
    kinds = [KIND_NAMES[k] for k in AcceleratorKind if k in takes]
    what = " and ".join([", ".join(kinds[:-1]), kinds[-1]] if len(kinds) > 1 else kinds)
    what += f" {supply.offered_noun}"
    takers = [r.platform.value for r in all_rules() if kind in r.accelerator_kinds]
    raise InputError(
        "fullserver:accelerator",
        f"'{named}' is a {KIND_NAMES[kind]}, and {platform.value} takes {what}: {', '.join(offered)}",
        f"name one of those, or use fullserver:platform {', '.join(takers)} for {named}",
    )


def check_workload(workload: Workload, profile: Profile, catalog: Catalog) -> None:
    """What the stack's keys mean for its profile and the catalog, before any sizing.

    The model checks each key alone and the keys against an explicit platform; this checks what
    needs the profile (its TTL, whether it serves) and the catalog (TPU chip counts, accelerator
    aliases and kinds, a dedicated server's accelerator), an attached cluster's name and subnets,
    and keys that apply to none of the platforms the stack can land on. Errors name the key.
    ``fullserver.plan.plan_workload`` runs it before sizing: the one place it runs.
    """
    lifecycle_for(profile, workload)
    if workload.serving is not None and profile.serving is None:
        raise InputError(
            "fullserver:serving",
            f"profile '{profile.name}' runs no serving group",
            "remove fullserver:serving or use a profile with serving, e.g. realtime-inference",
        )
    check_accelerator_kind(workload, catalog)
    platforms = set(platforms_for(profile, workload, catalog))
    if not platforms:
        return  # sizing names the accelerator the profile's platforms lack
    for key in workload.platform_keys():
        # A key no platform owns (sshSourceRanges, publicIp) is allowed wherever it is not lacked;
        # every platform that allows it is worked out only to name them in the refusal.
        if all(option_refusal(key, p) is not None for p in platforms):
            allowed = {p for p in Platform if option_refusal(key, p) is None}
            landing = ", ".join(sorted(p.value for p in platforms))
            raise InputError(
                f"fullserver:{key}",
                f"applies only to {', '.join(sorted(p.value for p in allowed))}; this stack lands on {landing}",
                f"remove fullserver:{key} or set fullserver:platform",
            )
    check_attached_cluster(workload, platforms)
    if any(rules_for(p).supply.named_by_type for p in platforms):
        check_tpu_count(workload, catalog)
    if not any(rules_for(p).supply.from_catalog for p in platforms) and workload.accelerator and workload.dedicated:
        check_dedicated_accelerator(workload, catalog)
