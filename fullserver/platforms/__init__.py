"""One module per platform answers every platform question; nothing else decides one.

``rules_for(platform)`` is that platform's ``PlatformRules`` (``base.py``): the accelerators and
pricing models it takes, its disks and their limits, how its zones are named, its nearest
regions for comparisons, the stack keys it accepts, and its refusal rules with their one message
each. Sizing, cost, the plan, the components' validators and the policy pack ask it. Facts of one
platform only (GCP's GPU NIC plans, AWS's EFA rule) are in its module; the list is in the notes.

Design notes: docs/design/platforms.md.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import ModuleType
from typing import Any

from fullserver.platform import AcceleratorKind, Platform
from fullserver.platforms.base import (
    DiskKind,
    DiskLimits,
    GroupMembers,
    NameRule,
    NetworkRules,
    PlatformRules,
    Refusal,
    Request,
    ZoneForm,
)
from fullserver.platforms.pool_rules import PoolRules
from fullserver.platforms.tpu import QUEUED_RESOURCE_TYPE as QUEUED_TPU_TYPE

__all__ = [
    "ANY_CLOUD",
    "QUEUED_TPU_TYPE",
    "DiskKind",
    "DiskLimits",
    "NameRule",
    "NetworkRules",
    "PlatformRules",
    "PoolRules",
    "Refusal",
    "Request",
    "ZoneForm",
    "all_rules",
    "catalog_names",
    "default_region",
    "disk",
    "disk_limits",
    "group_kinds",
    "group_members",
    "module_of",
    "name_members",
    "name_rules",
    "named",
    "option_refusal",
    "owners",
    "pool_member",
    "pool_member_of",
    "pool_members",
    "rules_for",
    "zone_problem",
]


def _modules() -> list[ModuleType]:
    """Every module of this package: only a platform module registers platforms (``PLATFORMS``), a
    node-pool member's module its ``POOL_RULES``, and any module the names its resources take
    (``NAME_RULES``, ``NAME_MEMBERS``: the platforms', ``kubernetes``'s, ``gke_gateway``'s,
    ``eks_karpenter``'s). Adding a platform adds its module; nothing here names it."""
    found = (m.name for m in pkgutil.iter_modules(__path__) if not m.ispkg)
    return [importlib.import_module(f"{__name__}.{name}") for name in sorted(found)]


_MODULES = _modules()
_HOME: dict[Platform, str] = {r.platform: m.__name__ for m in _MODULES for r in getattr(m, "PLATFORMS", ())}
_RULES: dict[Platform, PlatformRules] = {
    r.platform: r for r in sorted((r for m in _MODULES for r in getattr(m, "PLATFORMS", ())), key=lambda r: r.order)
}
"""Every platform's rules, in the registry's order (``PlatformRules.order``)."""
if set(_RULES) != set(Platform):  # a member without a module, or a module of no member
    raise RuntimeError(f"fullserver.platforms: no rules for {sorted(set(Platform) - set(_RULES))}")


def rules_for(platform: Platform) -> PlatformRules:
    """Everything fullserver knows about ``platform``."""
    return _RULES[platform]


def all_rules() -> Iterator[PlatformRules]:
    """Every platform's rules, in the registry's order."""
    return iter(_RULES.values())


ANY_CLOUD = next(r.default_region for r in _RULES.values() if AcceleratorKind.TPU in r.accelerator_kinds)
"""Where a question open to any cloud starts (``recommend``'s default region): the first TPU
platform's (Google Cloud's), so that a TPU comparison starts where TPUs are sold."""


def module_of(platform: Platform) -> str:
    """The module that registers ``platform`` (its core module: ``fullserver.platforms.aws``)."""
    return _HOME[platform]


def clouds() -> list[str]:
    """The providers of the platforms a cloud rents (declared hardware is no cloud), sorted: what
    ``recommend --cloud`` accepts besides ``any``."""
    return sorted({r.provider for r in _RULES.values() if r.supply.from_catalog})


def default_region(cloud: str) -> str:
    """Where a question about ``cloud`` (a provider key, or ``any``) starts when it names no region."""
    return next((r.default_region for r in _RULES.values() if r.provider == cloud and r.default_region), ANY_CLOUD)


def named(name: str) -> set[Platform]:
    """The platforms a short name or provider key names (``fullserver catalog --provider``): ``gcp``
    is every platform on Google Cloud, ``tpu`` the TPU VMs."""
    return {r.platform for r in _RULES.values() if name in (r.short, r.provider)}


def catalog_names() -> list[str]:
    """What ``fullserver catalog --provider`` takes (``named``): the short names and provider keys
    of the platforms whose offers come from the catalog, sorted."""
    return sorted({n for r in _RULES.values() if r.catalog_forms for n in (r.short, r.provider)})


def group_kinds() -> list[str]:
    """The node-group kinds (``NodeGroupAccess.provider``): the short names of the platforms that
    read a group's member list, sorted."""
    return sorted(r.short for r in _RULES.values() if r.group_members is not None)


def group_members(kind: str) -> GroupMembers:
    """The reader of a node group's member list, by the group's kind (``NodeGroupAccess.provider``)."""
    for rules in _RULES.values():
        if rules.short == kind and rules.group_members is not None:
            return rules.group_members
    raise KeyError(kind)


_OWNERS: dict[str, list[Platform]] = {
    key: [p for p, r in _RULES.items() if key in r.options] for rules in _RULES.values() for key in rules.options
}
"""The platforms taking each platform-specific stack key, in the registry's order: every stack's
keys are asked of every platform (``option_refusal``), so each key's takers are found once."""


def disk(kind: str) -> DiskKind | None:
    """A disk kind by name, whichever platform attaches it (a spec's disk names only its kind)."""
    for rules in _RULES.values():
        found = rules.disk_kinds.get(kind)
        if found is not None:
            return found
    return None


def disk_limits(kind: str) -> DiskLimits | None:
    """The provisioning limits of a disk kind; ``None`` where nothing is provisioned."""
    found = disk(kind)
    return found.limits if found is not None else None


_DECLARED = sorted({key for r in _RULES.values() for key in (*r.options, *r.lacks)})
"""Every key some platform takes or refuses: the model marks exactly these (``fullserver.workload_keys``)."""


def _declared(key: str) -> None:
    """A key no platform declares is a typo, never a key every platform takes: refused by name."""
    if key not in _DECLARED:
        close = difflib.get_close_matches(key, _DECLARED, n=1)
        raise ValueError(
            f"'{key}' is no platform-specific stack key" + (f"; did you mean '{close[0]}'?" if close else "")
        )


def owners(key: str) -> list[Platform]:
    """The platforms that take a platform-specific stack key."""
    _declared(key)
    return list(_OWNERS.get(key, ()))


def option_refusal(key: str, platform: Platform) -> str | None:
    """Why ``platform`` refuses the platform-specific stack key ``key`` (one message per key), or
    ``None``; a key no platform declares raises (``_declared``)."""
    _declared(key)
    rules = _RULES[platform]
    own = rules.lacks.get(key)
    if own is not None:
        return own
    takers = _OWNERS.get(key)
    if key in rules.options or not takers:
        return None
    why = _RULES[takers[0]].options[key]
    return f"applies only to {', '.join(p.value for p in takers)} ({why}); this stack is {platform.value}"


def zone_problem(zone: str, region: str, platform: Platform | None) -> str | None:
    """Why ``zone`` is not a zone of ``region`` (for ``platform``, or for any cloud when it is
    not known yet), or ``None``. A platform without a zone form takes any label (checked apart)."""
    candidates = [platform] if platform is not None else list(_RULES)
    forms = list(dict.fromkeys(f for p in candidates if (f := _RULES[p].zone_form) is not None))
    if not forms or any(form.fits(zone, region) for form in forms):
        return None
    rules = "; ".join(form.rule.format(region=region) for form in forms)
    return f"'{zone}' is not a zone of region {region} ({rules})"


def load_balancer_problem(platform: Platform, scheme: str) -> tuple[str, str] | None:
    """Why ``platform`` cannot put a serving group behind a ``scheme`` load balancer (what, hint),
    or ``None``: the one rule the plan (``fullserver.sizing.finish``) and the components' own
    argument checks (``components.args.check_serving``) both ask."""
    network = _RULES[platform].network
    schemes: tuple[str, ...] = network.load_balancer_schemes if network is not None else ()
    if scheme in schemes:
        return None
    return (
        f"{platform.value} builds no {scheme} load balancer (it builds: {', '.join(schemes) or 'none'})",
        "use a profile whose serving.load_balancer the platform builds, or another platform",
    )


_NAMES: dict[str, tuple[NameRule, ...]] = {k: v for m in _MODULES for k, v in getattr(m, "NAME_RULES", {}).items()}


def name_rules(type_token: str) -> tuple[NameRule, ...]:
    """What the provider accepts as each physical name of a resource type (``fullserver.naming``)."""
    return _NAMES.get(type_token, ())


NameMembers = Callable[[Mapping[str, Any]], Iterable[tuple[str, str, Mapping[str, Any]]]]
_MEMBERS: dict[str, NameMembers] = {k: v for m in _MODULES for k, v in getattr(m, "NAME_MEMBERS", {}).items()}


def name_members(type_token: str) -> NameMembers | None:
    """The reader of the objects a component of ``type_token`` creates from its inputs (type
    token, name, inputs of each: a Kubernetes ``ConfigGroup``'s manifests), or ``None``."""
    return _MEMBERS.get(type_token)


_POOLS: dict[str, PoolRules] = {r.key: r for m in _MODULES if (r := getattr(m, "POOL_RULES", None)) is not None}
"""The node-pool family's members by key (``KubePlan.provider``)."""


def pool_members() -> Iterator[PoolRules]:
    """Every member of the node-pool family."""
    return iter(_POOLS.values())


def pool_member(key: str) -> PoolRules:
    """The node-pool member ``key`` names (``KubePlan.provider``: ``gke``, ``eks``)."""
    return _POOLS[key]


_POOL_OF: dict[Platform, PoolRules] = {p: r for r in reversed(_POOLS.values()) for p in r.sized_as}
"""Each node-pool platform's member (the first that builds its pools, as members are listed)."""


def pool_member_of(platform: Platform) -> PoolRules | None:
    """The node-pool member whose pools ``platform`` builds, or ``None``: not a node-pool platform."""
    return _POOL_OF.get(platform)
