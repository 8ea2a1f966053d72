"""The offline plan of one stack: spec, balance, cost and the same job on the other platforms.

Design notes: docs/design/core.md.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from fullserver import collector
from fullserver.autostop.plan import KEY as AUTOSTOP_KEY
from fullserver.autostop.plan import Autostop
from fullserver.autostop.plan import decide as decide_autostop
from fullserver.catalog import Catalog, load_catalog
from fullserver.catalog.model import Platform
from fullserver.comparable import (
    DEDICATED,
    ON_DEMAND,
    Capacity,
    as_on_demand,
    fees_stated,
    of_spec,
    pool_alternatives,
    units_covering,
)
from fullserver.cost import CostEstimate, estimate, estimate_at_minimum, pricing_basis
from fullserver.errors import BudgetExceeded, FullserverError, InputError
from fullserver.kube.access import check_api_reach
from fullserver.placement import Placement, placed
from fullserver.platforms import option_refusal, rules_for
from fullserver.platforms.quota import QuotaNeed
from fullserver.profiles import Profile, get_profile, load_profiles
from fullserver.quotas import CapacityAdvice, capacity_paths, quotas_for
from fullserver.sizing import complete_spec, size, spec_for
from fullserver.spec import EnvironmentSpec
from fullserver.stacks import Stack, cloud_project, load_stack
from fullserver.stockout import with_spot_steps
from fullserver.workload import CONFIG_NAMESPACE, Alternative, Workload
from fullserver.workload_checks import check_workload
from fullserver.yamlio import read_yaml


class Comparison(BaseModel):
    """The same workload priced on another platform the profile allows (or why it cannot be).

    ``pricing`` names the pricing model of ``usd_month``, the same for every cloud row of one
    plan; ``capacity`` is what the row holds and ``capacity_ratio`` its accelerator memory over
    the chosen environment's (``fullserver.comparable``): 1.0 is the same job.
    """

    model_config = ConfigDict(frozen=True)

    platform: Platform
    offer: str | None
    region: str
    usd_month: float | None
    usd_per_productive_hour: float | None
    note: str
    pricing: str | None = None
    capacity: str | None = None
    capacity_ratio: float | None = None


class StackPlan(BaseModel):
    model_config = ConfigDict(frozen=True)

    stack: str
    path: str
    spec: EnvironmentSpec
    cost: CostEstimate
    comparison: list[Comparison]
    budget_monthly_usd: float | None = None
    baseline: Comparison | None = None
    """The chosen environment as a comparison row: its price on the comparison's pricing model."""
    quotas: list[QuotaNeed] = []
    """Each quota the stack counts against, at the most it reaches (``fullserver.quotas``)."""
    capacity_paths: list[CapacityAdvice] = []
    """Where its accelerator quota starts at 0 in a new account: the ways to get capacity that fit."""
    placement: Placement | None = None
    """A stack with ``fullserver:location``: every platform x region ranked, and whether it is pinned."""
    autostop: Autostop | None = None
    """Its idle autostop and its price beside always-on (``fullserver.autostop.plan``); None: off."""

    @property
    def warnings(self) -> list[str]:
        return [*self.spec.warnings, *self.cost.warnings]


def _alternatives(profile: Profile, workload: Workload, chosen: Platform) -> list[Alternative]:
    """Explicit alternatives from the stack, else the same accelerator on the profile's other
    platforms that rent GPUs by the hour (``PlatformRules.hourly_gpus``) and on its platforms
    across the node-pool line (``_pool_rows``)."""
    explicit = [a for a in workload.alternatives if a.platform is not chosen]
    if explicit:
        return explicit
    return [*_hourly_alternatives(tuple(profile.platforms), chosen), *_pool_rows(tuple(profile.platforms), chosen)]


@functools.cache
def _pool_rows(platforms: tuple[Platform, ...], chosen: Platform) -> tuple[Alternative, ...]:
    """The profile's platforms across the node-pool line from ``chosen`` (``comparable.pool_alternatives``)."""
    return tuple(Alternative(platform=p) for p in pool_alternatives(platforms, chosen))


_OWN_CLUSTER = ("cluster", "clusterLocation", "subnets")
"""Keys naming the stack's own cluster and network: another platform's row creates its own."""
_THE_JOB = ("serving", "dedicated")
"""Keys that are the job itself: a row whose platform refuses them says so, never drops them."""


def _row_keys(workload: Workload, platform: Platform) -> dict[str, object]:
    """The stack's keys a row on ``platform`` leaves at their defaults: those naming the stack's own
    cluster, and the platform-only keys ``platform`` refuses (a node pool takes no SSH ranges, a VM no
    control-plane ranges), so that each row is the same job as that platform would build it."""
    dropped = [
        key
        for key in workload.platform_keys()
        if key in _FIELDS and key not in _THE_JOB and (key in _OWN_CLUSTER or option_refusal(key, platform))
    ]
    return {_FIELDS[key]: Workload.model_fields[_FIELDS[key]].get_default() for key in dropped}


_FIELDS = {field.alias: name for name, field in Workload.model_fields.items()}
"""The stack model's field name of each stack key (the model's, fixed when it is defined)."""


@functools.cache
def _hourly_alternatives(platforms: tuple[Platform, ...], chosen: Platform) -> tuple[Alternative, ...]:
    """``platforms`` that rent GPUs by the hour, other than ``chosen``, when ``chosen`` does too: made
    once per answer (each stack of a profile asks the same; an ``Alternative`` is frozen)."""
    if not rules_for(chosen).hourly_gpus:
        return ()
    return tuple(Alternative(platform=p) for p in platforms if rules_for(p).hourly_gpus and p is not chosen)


def _nodes_for(alt: Alternative, workload: Workload, reference: Capacity | None, catalog: Catalog) -> int:
    """Nodes of the alternative whose accelerator memory holds the chosen environment's (the
    capacity measure of ``fullserver.comparable``): a v5p-128 slice, 64 chips of 95 GiB, is
    matched by 10 nodes of 8 H100s (6,400 GiB), not by 8 nodes (5,120 GiB) as chip for chip."""
    supply = rules_for(alt.platform).supply
    if supply.named_by_type:
        return 1  # a slice is one TPU resource, whatever its host count
    if alt.nodes:
        return alt.nodes
    if not supply.from_catalog:
        dedicated = alt.dedicated or workload.dedicated
        per_node = dedicated.host.accelerator_count if dedicated else 0
        accelerator = dedicated.host.accelerator if dedicated else None
    else:
        per_node = alt.accelerator_count or workload.accelerator_count or 1
        accelerator = alt.accelerator or workload.accelerator
    if not per_node or accelerator is None or reference is None:
        return workload.nodes
    return units_covering(reference, per_node * catalog.accelerator(accelerator).memory_gib)


@dataclass(frozen=True)
class _Row:
    """One row of the comparison before it is priced: the environment it would be, or why not."""

    platform: Platform
    region: str
    profile: Profile
    workload: Workload
    spec: EnvironmentSpec | None
    why_not: str = ""
    other_profile: str | None = None


def _variant(
    profile: Profile,
    workload: Workload,
    alt: Alternative,
    catalog: Catalog,
    env: str,
    profiles: dict[str, Profile],
    reference: Capacity | None,
) -> _Row:
    region = alt.region or default_region(alt.platform, workload.region, catalog)
    try:
        changes: dict[str, object] = {
            "platform": alt.platform,
            "region": region,
            "zone": None,
            "image": None,
            "nodes": _nodes_for(alt, workload, reference, catalog),
        }
        if alt.accelerator:
            changes["accelerator"] = alt.accelerator
            changes["accelerator_count"] = alt.accelerator_count
        if alt.dedicated:
            changes["dedicated"] = alt.dedicated
        changes |= _row_keys(workload, alt.platform)
        variant = workload.model_copy(update=changes)
        if alt.profile:
            profile = get_profile(alt.profile, profiles, where="fullserver:alternatives.profile")
        spec = spec_for(profile, variant, alt.platform, catalog, env)
    except FullserverError as exc:
        return _Row(alt.platform, region, profile, workload, None, exc.what)
    return _Row(alt.platform, region, profile, variant, spec, other_profile=alt.profile)


def _compare(row: _Row, cost: CostEstimate | None, reference: Capacity | None, why: str = "") -> Comparison:
    """One row and its estimate (``None`` where the row has no spec), priced as ``_priced`` says."""
    if row.spec is None or cost is None:
        return Comparison(
            platform=row.platform,
            offer=None,
            region=row.region,
            usd_month=None,
            usd_per_productive_hour=None,
            note=row.why_not,
        )
    spec = row.spec
    held = of_spec(spec)
    note = "balanced" if spec.balance.ok else spec.balance.summary()
    note += f", {spec.nodes} node(s)"
    note += f" (profile {row.other_profile})" if row.other_profile else ""
    note += f"; {why}" if why else ""
    note += "" if cost.complete else f"; a lower bound: {', '.join(cost.unpriced)} not priced"
    fees = fees_stated(spec, cost)
    note += f"; {fees}" if fees else ""
    return Comparison(
        platform=row.platform,
        offer=spec.offer,
        region=row.region,
        usd_month=cost.usd_month,
        usd_per_productive_hour=cost.usd_per_productive_hour,
        note=note,
        pricing=cost.basis,
        capacity=held.describe() if held else None,
        capacity_ratio=held.ratio_to(reference) if held and reference else None,
    )


def _priced(
    row: _Row, basis: str, on_demand: bool, catalog: Catalog, cost: CostEstimate | None
) -> tuple[_Row, CostEstimate]:
    """The row as the comparison prices it: on demand where ``on_demand`` and its own basis is
    spot or reserved (the spec and profile as bought on demand), else on its own basis (``cost``:
    that estimate where the caller has it). Each row is estimated once, at its minimum replicas
    (``estimate_at_minimum``): a row shows no serving peak, so none is priced."""
    spec, profile = row.spec, row.profile
    assert spec is not None
    if on_demand and basis not in (ON_DEMAND, DEDICATED):
        spec, profile = as_on_demand(spec, profile)
        at_minimum = estimate_at_minimum(spec, profile, row.workload, catalog)
        return dataclasses.replace(row, spec=spec, profile=profile), at_minimum
    return row, cost or estimate_at_minimum(spec, profile, row.workload, catalog)


def compare(
    profile: Profile,
    workload: Workload,
    spec: EnvironmentSpec,
    catalog: Catalog,
    env: str,
    profiles: dict[str, Profile],
    cost: CostEstimate | None = None,
) -> tuple[list[Comparison], Comparison]:
    """The same job elsewhere, and the chosen environment as the row they are compared with
    (``cost``: the chosen spec's estimate where the caller has it, so it is not made twice).

    Alternatives are sized to hold at least the chosen environment's accelerator memory where
    the stack leaves their size open; an explicit size is kept and its ratio stated. Every cloud
    row is priced on one pricing model: the plan's own where every row has it, else on demand
    (a spot price beside an on-demand one is no comparison). A dedicated server keeps its
    monthly contract, labelled as such. Which model each row is on is known before any is priced
    (``pricing_basis``; the chosen environment's from ``cost``, its estimate's basis), so a row is
    estimated once, on the model it is compared on.
    """
    reference = of_spec(spec)
    rows = [
        _variant(profile, workload, a, catalog, env, profiles, reference)
        for a in _alternatives(profile, workload, spec.platform)
    ]
    chosen = _Row(spec.platform, spec.region, profile, workload, spec)
    bases: list[tuple[_Row, str | None]] = [
        (chosen, cost.basis if cost is not None else pricing_basis(spec, profile, catalog)),
        *((r, pricing_basis(r.spec, r.profile, catalog) if r.spec else None) for r in rows),
    ]
    by_basis: dict[str, list[str]] = {}
    for r, basis in bases:
        if basis is not None:
            by_basis.setdefault(basis, []).append(r.platform.value)
    by_basis.pop(DEDICATED, None)
    on_demand = len(by_basis) > 1
    found = "; ".join(f"{basis} for {', '.join(names)}" for basis, names in sorted(by_basis.items()))
    why = f"every row compared on demand, the one pricing model all have (their own: {found})" if on_demand else ""
    priced: list[tuple[_Row, CostEstimate | None]] = [
        _priced(r, basis, on_demand, catalog, cost if r is chosen else None) if basis else (r, None)
        for r, basis in bases
    ]
    (first, first_cost), others = priced[0], priced[1:]
    return [_compare(r, row_cost, reference) for r, row_cost in others], _compare(first, first_cost, reference, why)


def default_region(platform: Platform, region: str, catalog: Catalog) -> str:
    """The region itself where the platform prices it, else its nearest peer on the platform's
    cloud (``PlatformRules.region_peers``)."""
    return rules_for(platform).nearest_region(region, catalog.regions(platform))


def plan_workload(
    stack: str,
    path: str,
    workload: Workload,
    profiles: dict[str, Profile],
    catalog: Catalog,
    *,
    compared: bool = True,
) -> StackPlan:
    """One stack's plan. ``compared=False``: without the comparison rows (``comparison`` empty,
    ``baseline`` None), for a caller that shows none (``plan --summary``): a row never fails a plan
    nor feeds any other field, so the rest of the plan is the same (``tests/core/test_plan.py``)."""
    profile = get_profile(workload.profile, profiles)
    check_workload(workload, profile, catalog)
    workload, placement = placed(profile, workload, catalog, stack)
    spec = with_spot_steps(complete_spec(size(profile, workload, catalog, stack), workload, catalog), catalog)
    if spec.kube is not None:
        check_api_reach(spec.kube)  # sizing ranks such a cluster (recommend); a stack of it cannot be applied
    cost = estimate(spec, profile, workload, catalog)
    comparison, baseline = compare(profile, workload, spec, catalog, stack, profiles, cost) if compared else ([], None)
    return StackPlan(
        stack=stack,
        path=path,
        spec=spec,
        cost=cost,
        comparison=comparison,
        budget_monthly_usd=workload.budget_monthly_usd,
        baseline=baseline,
        quotas=(quotas := quotas_for(spec, catalog=catalog)),
        capacity_paths=capacity_paths(spec, quotas, catalog),
        placement=placement,
        autostop=decide_autostop(spec, profile, workload, cost, f"{path}: {AUTOSTOP_KEY}"),
    )


def plan_stack(
    stack: Stack,
    profiles: dict[str, Profile],
    catalog: Catalog,
    environ: Mapping[str, str] | None = None,
    *,
    compared: bool = True,
) -> StackPlan:
    """One stack's plan; its platform's cloud project (``cloud_project``) must be named, in the stack
    or in ``environ`` (the process's environment unless given), as ``pulumi up`` needs it."""
    try:
        plan = plan_workload(stack.name, stack.path, stack.workload, profiles, catalog, compared=compared)
        cloud_project(plan.spec.platform, stack.config, os.environ if environ is None else environ)
        return plan
    except FullserverError as exc:
        # Name the stack file in front of the field the error names.
        exc.where = f"{stack.path}: {exc.where}" if exc.where else stack.path
        exc.args = (exc.line(),)
        raise


def plan_paths(
    paths: list[Path],
    profiles: dict[str, Profile] | None = None,
    catalog: Catalog | None = None,
    *,
    compared: bool = True,
) -> list[StackPlan]:
    """Each stack file's plan (``compared``: with its comparison rows, ``plan_workload``)."""
    profiles = profiles if profiles is not None else load_profiles()
    catalog = catalog if catalog is not None else load_catalog()
    with collector.batch():
        return [plan_stack(_load_stack(p, profiles), profiles, catalog, compared=compared) for p in paths]


def _load_stack(path: Path, profiles: dict[str, Profile]) -> Stack:
    """The stack, or, when it does not validate and names no known profile, that profile's error:
    what the other keys must be depends on the profile, so a misspelt profile is the first thing
    to fix ("an accelerator is needed" sent a person after the wrong key)."""
    try:
        return load_stack(path)
    except InputError:
        config = read_yaml(path).get("config")
        named = config.get(f"{CONFIG_NAMESPACE}:profile") if isinstance(config, dict) else None
        if isinstance(named, str) and named not in profiles:
            get_profile(named, profiles, where=f"{path}: {CONFIG_NAMESPACE}:profile")
        raise


def check_max_monthly_usd(
    max_monthly_usd: float | None, flag: str = "--max-monthly-usd", unit: str = "USD"
) -> float | None:
    """The caller's cap, refused in one line unless a finite number at or above 0; ``unit`` is
    ``USD`` (a budget) or ``%`` (``diff --max-increase-pct``), named as such in the message.

    ``nan`` compares false with every estimate, so it would switch the guard off without a word; a
    negative cap would fail every plan with a message blaming the plan. Commands taking the flag
    call this before planning, so a bad cap fails fast; ``check_budget`` calls it too.
    """
    if max_monthly_usd is None:
        return None
    usd = unit == "USD"
    noun, quantity, example, suffix = (
        ("budget", "number of USD", "5000", " USD") if usd else ("cap", "percentage", "10", "%")
    )
    if isinstance(max_monthly_usd, bool) or not isinstance(max_monthly_usd, (int, float)):
        raise InputError(flag, f"'{max_monthly_usd}' is not a {quantity}", f"give a {noun} such as {example}")
    if math.isnan(max_monthly_usd) or math.isinf(max_monthly_usd):
        raise InputError(flag, f"'{max_monthly_usd}' is not a {noun}", f"give a finite {quantity}, such as {example}")
    if max_monthly_usd < 0:
        raise InputError(flag, f"{max_monthly_usd:g}{suffix} is negative", f"give a {noun} of 0{suffix} or more")
    return float(max_monthly_usd)


def check_budget(plans: list[StackPlan], max_monthly_usd: float | None) -> None:
    """Each stack against the caller's cap and its own ``budgetMonthlyUsd``; one error names
    every stack over (and each budget it is over), so CI shows the whole bill at once."""
    max_monthly_usd = check_max_monthly_usd(max_monthly_usd)
    over: list[tuple[str, str]] = []
    for plan in plans:
        exceeded = [
            f"{name if name == CALLER_CAP else f'{plan.path}: {name}'} {cap:,.2f}"
            for name, cap in budgets_exceeded(plan, max_monthly_usd)
        ]
        if exceeded:
            over.append(
                (
                    f"stack '{plan.stack}'",
                    f"estimated {_most(plan)} exceeds {' and '.join(exceeded)}",
                )
            )
    if over:
        (where, what), *rest = over
        raise BudgetExceeded(
            where,
            "; ".join([what, *(f"{w}: {t}" for w, t in rest)]),
            "choose a smaller shape, a cheaper pricing model, or raise the budget",
        )


CALLER_CAP = "--max-monthly-usd"


def _most(plan: StackPlan) -> str:
    """The estimate a budget is held to, in words."""
    c = plan.cost
    if c.usd_month_peak is None:
        return f"{c.usd_month:,.2f} USD/month"
    return f"{c.usd_month_peak:,.2f} USD/month {c.peak_what} ({c.usd_month:,.2f} expected)"


def budgets_exceeded(plan: StackPlan, max_monthly_usd: float | None) -> list[tuple[str, float]]:
    """Each budget this stack's estimate is above, by name, with its cap: the caller's and its own."""
    caps = [(CALLER_CAP, max_monthly_usd), ("fullserver:budgetMonthlyUsd", plan.budget_monthly_usd)]
    return [(name, cap) for name, cap in caps if cap is not None and plan.cost.usd_month_at_most > cap]


def budget_breaches(plan: StackPlan, max_monthly_usd: float | None) -> list[str]:
    """The names of the budgets this stack's estimate is above (the summary table's column)."""
    return [name for name, _ in budgets_exceeded(plan, max_monthly_usd)]
