"""The checks of ``check_workload`` (``fullserver.workload``) that need the catalog or the platforms
the stack may land on: a TPU slice's chip count, a dedicated host's accelerator, an attached
cluster's name and subnets; each refused with the key at fault."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from fullserver.catalog.model import Platform
from fullserver.errors import InputError
from fullserver.platforms import name_rules, pool_member_of, rules_for

if TYPE_CHECKING:
    from fullserver.catalog import Catalog
    from fullserver.workload import Workload


def check_tpu_count(workload: Workload, catalog: Catalog) -> None:
    """A TPU slice has the chips of its type: a count no type has is refused, never rounded."""
    count = workload.accelerator_count
    if count is None or workload.accelerator is None:
        return
    tpus = [o for o in catalog.offers if rules_for(o.platform).slices]
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
