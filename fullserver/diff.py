"""What a change does to each stack: two plan documents in, one typed diff out.

Design notes: docs/design/core.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from fullserver.catalog.staleness import read_warning
from fullserver.errors import BudgetExceeded
from fullserver.plan_document import (
    SHAPE_FIELDS,
    Guardrail,
    PlanBalanceLine,
    PlanCostLine,
    PlanQuota,
    PlanResource,
    StackDoc,
    describe_shape,
)

Status = Literal["added", "removed", "changed", "unchanged"]
ResourceStatus = Literal["added", "removed", "replaced", "changed"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# --- the diff model -------------------------------------------------------------------------


class FieldChange(_Frozen):
    field: str
    before: str
    after: str


class BalanceChange(_Frozen):
    """One balance dimension whose requirement, provision or verdict changed (``None``: absent)."""

    dimension: str
    unit: str
    before: PlanBalanceLine | None
    after: PlanBalanceLine | None


class CostChange(_Frozen):
    item: str
    before_usd: float | None
    after_usd: float | None

    @property
    def delta_usd(self) -> float:
        return round((self.after_usd or 0.0) - (self.before_usd or 0.0), 2)


class QuotaChange(_Frozen):
    """A quota the change adds, drops or needs more or less of (``None``: not needed on that side)."""

    service: str
    code: str
    name: str
    scope: str
    unit: str
    before: float | None
    after: float | None


class ResourceChange(_Frozen):
    """A resource added, removed, replaced (the same logical name, another type) or changed (some
    inputs differ: the provider decides at ``pulumi preview`` whether that updates or replaces)."""

    name: str
    type: str
    status: ResourceStatus
    before_type: str | None = None
    inputs: list[str] = []
    """The inputs that differ (dotted paths, at most two levels deep)."""


class StackDiff(_Frozen):
    stack: str
    status: Status
    was: str = ""
    now: str = ""
    """The shape in one phrase on each side (``describe_shape``); empty where the stack is absent."""
    shape: list[FieldChange] = []
    balance: list[BalanceChange] = []
    cost: list[CostChange] = []
    usd_before: float = 0.0
    usd_after: float = 0.0
    quotas: list[QuotaChange] = []
    resources: list[ResourceChange] = []
    resources_before: int = 0
    resources_after: int = 0
    warnings_added: list[str] = []
    warnings_removed: list[str] = []
    guardrails_added: list[Guardrail] = []
    guardrails_removed: list[Guardrail] = []
    guardrails_now: list[Guardrail] | None = None
    """Findings on the working tree; set when the base side has no guardrail results to compare."""
    note: str = ""
    """Why a side is missing, when it is not simply absent (a base stack the current code cannot plan)."""
    budget_usd: float | None = None
    """The working tree's ``budgetMonthlyUsd`` of the stack, when it sets one."""
    unit_usd_hour_before: float | None = None
    unit_usd_hour_after: float | None = None
    """The compute's price an hour on each side (``None`` where absent or not in the document)."""

    @property
    def unit_price_moved(self) -> bool:
        """The same stack's compute costs another price an hour (a new catalog price, or a new shape)."""
        x, y = self.unit_usd_hour_before, self.unit_usd_hour_after
        return x is not None and y is not None and not math.isclose(x, y, rel_tol=0, abs_tol=5e-5)

    @property
    def price_only(self) -> bool:
        """Changed on the bill alone: the same shape at a new unit price. Why it matters: the
        table's before and after read the same, so the price is what the reader needs to see."""
        return self.status == "changed" and not self.shape and self.unit_price_moved

    @property
    def delta_usd(self) -> float:
        return round(self.usd_after - self.usd_before, 2)

    @property
    def over_budget(self) -> bool:
        """The working tree's estimate is above the stack's own budget (``plan`` exits 3 on it)."""
        return bool(self.now) and self.budget_usd is not None and self.usd_after > self.budget_usd


class StaleSource(_Frozen):
    """One catalog source whose prices are past the age threshold, with every price and stack it
    is new for: said once, however many stacks it prices."""

    source: str
    age_days: int
    when: str
    prices: list[str]
    stacks: list[str]
    remedies: list[str]


def stale_sources(stacks: Iterable[StackDiff], gone: bool = False) -> list[StaleSource]:
    """The stale-price warnings new in these stacks (``gone``: no longer given), one entry per
    source, oldest first. Why: a catalog source a year old priced every stack, and the comment
    repeated it for each."""
    found: dict[str, dict[str, Any]] = {}
    for s in stacks:
        for text in s.warnings_removed if gone else s.warnings_added:
            w = read_warning(text)
            if w is None:
                continue
            entry = found.setdefault(w.source, {"age_days": w.age_days, "when": w.when, "p": {}, "s": {}, "r": {}})
            entry["p"][w.what] = entry["s"][s.stack] = entry["r"][w.remedy] = None
    return sorted(
        (
            StaleSource(
                source=source,
                age_days=e["age_days"],
                when=e["when"],
                prices=list(e["p"]),
                stacks=list(e["s"]),
                remedies=list(e["r"]),
            )
            for source, e in found.items()
        ),
        key=lambda x: (-x.age_days, x.source),
    )


class PlanDiff(_Frozen):
    stacks: list[StackDiff] = Field(description="every stack on either side, in name order")
    usd_before: float
    usd_after: float

    @property
    def delta_usd(self) -> float:
        return round(self.usd_after - self.usd_before, 2)

    @property
    def delta_pct(self) -> float | None:
        """The total's change in percent of the base; ``None`` when the base costs nothing."""
        if self.usd_before == 0:
            return None if self.delta_usd else 0.0
        return 100 * self.delta_usd / self.usd_before

    @property
    def changed(self) -> list[StackDiff]:
        return [s for s in self.stacks if s.status != "unchanged"]

    def to_json(self) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        data["delta_usd"] = self.delta_usd
        data["delta_pct"] = None if self.delta_pct is None else round(self.delta_pct, 2)
        for stack, out in zip(self.stacks, data["stacks"], strict=True):
            out["delta_usd"] = stack.delta_usd
            out["over_budget"] = stack.over_budget
            for line, line_out in zip(stack.cost, out["cost"], strict=True):
                line_out["delta_usd"] = line.delta_usd
        return data


# --- comparing ------------------------------------------------------------------------------


def _keyed(names: Iterable[str]) -> list[str]:
    """Names made unique by occurrence (``data disk``, ``data disk #2``): lines keep their own key."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} #{seen[name]}")
    return out


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=0, abs_tol=0.005)


def _input_paths(before: Any, after: Any, prefix: str = "", depth: int = 2) -> list[str]:
    if before == after:
        return []
    if depth > 0 and isinstance(before, Mapping) and isinstance(after, Mapping):
        out: list[str] = []
        for key in sorted(set(before) | set(after), key=str):
            out += _input_paths(before.get(key), after.get(key), f"{prefix}{key}.", depth - 1)
        return out
    return [prefix.rstrip(".") or "(inputs)"]


def _balance(before: list[PlanBalanceLine], after: list[PlanBalanceLine]) -> list[BalanceChange]:
    b = dict(zip(_keyed(x.dimension for x in before), before, strict=True))
    a = dict(zip(_keyed(x.dimension for x in after), after, strict=True))
    out = []
    for key in [*b, *(k for k in a if k not in b)]:
        x, y = b.get(key), a.get(key)
        if (
            x is not None
            and y is not None
            and (x.ok, x.unit) == (y.ok, y.unit)
            and _close(x.required, y.required)
            and _close(x.provided, y.provided)
        ):
            continue
        unit = y.unit if y is not None else x.unit if x is not None else ""
        out.append(BalanceChange(dimension=key, unit=unit, before=x, after=y))
    return out


def _cost(before: list[PlanCostLine], after: list[PlanCostLine]) -> list[CostChange]:
    b = dict(zip(_keyed(x.item for x in before), before, strict=True))
    a = dict(zip(_keyed(x.item for x in after), after, strict=True))
    out = []
    for key in [*b, *(k for k in a if k not in b)]:
        x, y = b.get(key), a.get(key)
        if x is not None and y is not None and _close(x.usd_month, y.usd_month):
            continue
        out.append(CostChange(item=key, before_usd=x.usd_month if x else None, after_usd=y.usd_month if y else None))
    return out


def _quotas(before: list[PlanQuota], after: list[PlanQuota]) -> list[QuotaChange]:
    """Quotas by service, code and scope whose amount changed, appeared or went: what a change
    asks more (or less) of the account."""
    b = {q.key: q for q in before}
    a = {q.key: q for q in after}
    out = []
    for key in [*a, *(k for k in b if k not in a)]:
        x, y = b.get(key), a.get(key)
        if x is not None and y is not None and _close(x.amount, y.amount):
            continue
        q = y if y is not None else b[key]
        out.append(
            QuotaChange(
                service=q.service,
                code=q.code,
                name=q.name,
                scope=q.scope,
                unit=q.unit,
                before=x.amount if x else None,
                after=y.amount if y else None,
            )
        )
    return out


def _resources(before: list[PlanResource], after: list[PlanResource]) -> list[ResourceChange]:
    """By (type, logical name): Pulumi's own identity of a resource within a stack. A name that
    leaves with one type and returns with another (once on each side) is a replacement."""
    b = {(r.type, r.name): r for r in before}
    a = {(r.type, r.name): r for r in after}
    gone = [k for k in b if k not in a]
    new = [k for k in a if k not in b]
    gone_names = [n for _, n in gone]
    new_names = [n for _, n in new]
    out: list[ResourceChange] = []
    for key in sorted(set(b) | set(a), key=lambda k: (k[1], k[0])):
        typ, name = key
        x, y = b.get(key), a.get(key)
        swapped = gone_names.count(name) == 1 and new_names.count(name) == 1
        if x is None and y is not None:
            if swapped:
                was = next(t for t, n in gone if n == name)
                out.append(ResourceChange(name=name, type=typ, status="replaced", before_type=was))
            else:
                out.append(ResourceChange(name=name, type=typ, status="added"))
        elif y is None and x is not None:
            if not swapped:
                out.append(ResourceChange(name=name, type=typ, status="removed"))
        elif x is not None and y is not None and x.inputs != y.inputs:
            out.append(ResourceChange(name=name, type=typ, status="changed", inputs=_input_paths(x.inputs, y.inputs)))
    return out


def _guard_key(g: Guardrail) -> tuple[str, str]:
    return (g.policy, g.message)


def compare_stack(before: StackDoc | None, after: StackDoc | None, note: str = "") -> StackDiff:
    """One stack's change; ``before``/``after`` is ``None`` where the stack is absent on that side."""
    side = after if after is not None else before
    if side is None:
        raise ValueError("compare_stack needs the stack on at least one side")
    name = side.stack
    empty = StackDoc(stack=name, shape={}, balance=[], cost=[], usd_month=0.0, warnings=[], resources=[], guardrails=[])
    x, y = before or empty, after or empty
    shape = [
        FieldChange(field=k, before=x.shape.get(k, "-"), after=y.shape.get(k, "-"))
        for k in SHAPE_FIELDS
        if (k in x.shape or k in y.shape) and x.shape.get(k, "-") != y.shape.get(k, "-")
    ]
    guards_added: list[Guardrail] = []
    guards_removed: list[Guardrail] = []
    guards_now: list[Guardrail] | None = None
    if x.guardrails is not None and y.guardrails is not None:
        was = {_guard_key(g) for g in x.guardrails}
        now = {_guard_key(g) for g in y.guardrails}
        guards_added = [g for g in y.guardrails if _guard_key(g) not in was]
        guards_removed = [g for g in x.guardrails if _guard_key(g) not in now]
    elif after is not None:
        guards_now = y.guardrails
    diff = StackDiff(
        stack=name,
        status="added" if before is None else "removed" if after is None else "changed",
        was=describe_shape(before.shape) if before else "",
        now=describe_shape(after.shape) if after else "",
        shape=shape,
        balance=_balance(x.balance, y.balance),
        cost=_cost(x.cost, y.cost),
        quotas=_quotas(x.quotas, y.quotas),
        usd_before=x.usd_month,
        usd_after=y.usd_month,
        resources=_resources(x.resources, y.resources),
        resources_before=len(x.resources),
        resources_after=len(y.resources),
        warnings_added=[w for w in dict.fromkeys(y.warnings) if w not in x.warnings],
        warnings_removed=[w for w in dict.fromkeys(x.warnings) if w not in y.warnings],
        guardrails_added=guards_added,
        guardrails_removed=guards_removed,
        guardrails_now=guards_now,
        note=note,
        budget_usd=after.budget_usd if after is not None else None,
        unit_usd_hour_before=before.unit_usd_hour if before else None,
        unit_usd_hour_after=after.unit_usd_hour if after else None,
    )
    moved = (
        diff.shape
        or diff.balance
        or diff.cost
        or diff.quotas
        or diff.resources
        or diff.warnings_added
        or diff.warnings_removed
        or diff.guardrails_added
        or diff.guardrails_removed
        or not _close(diff.usd_before, diff.usd_after)
    )
    if diff.status == "changed" and not moved:
        return diff.model_copy(update={"status": "unchanged"})
    return diff


def unplanned_removal(stack: str, note: str) -> StackDiff:
    """A base stack the current code cannot plan, whose file is gone now: removed, at a cost
    nobody can say (``was`` stays empty). Why: left out, the diff said "no stack changed"."""
    return StackDiff(stack=stack, status="removed", note=f"{note}; it is deleted now")


def compare(before: list[StackDoc], after: list[StackDoc], notes: Mapping[str, str] | None = None) -> PlanDiff:
    """Every stack on either side, by name: added, removed, changed or unchanged."""
    b = {s.stack: s for s in before}
    a = {s.stack: s for s in after}
    notes = notes or {}
    stacks = [
        compare_stack(b.get(n), a.get(n), notes.get(n, "")) if n in a or n in b else unplanned_removal(n, notes[n])
        for n in sorted(set(b) | set(a) | set(notes))
    ]
    return PlanDiff(
        stacks=stacks,
        usd_before=round(sum(s.usd_month for s in before), 2),
        usd_after=round(sum(s.usd_month for s in after), 2),
    )


def check_increase(diff: PlanDiff, max_increase_usd: float | None, max_increase_pct: float | None) -> None:
    """Exit 3 (``BudgetExceeded``) when the total monthly estimate rises by more than either cap;
    the line names the rise, the cap and the stacks that rose most."""
    over: list[str] = []
    rise = diff.delta_usd
    if max_increase_usd is not None and rise > max_increase_usd:
        over.append(f"--max-increase-usd {max_increase_usd:,.2f}")
    pct = diff.delta_pct
    if max_increase_pct is not None and rise > 0 and (pct is None or pct > max_increase_pct):
        over.append(f"--max-increase-pct {max_increase_pct:g}")
    if not over:
        return
    risers = sorted((s for s in diff.stacks if s.delta_usd > 0), key=lambda s: -s.delta_usd)[:3]
    by = ", ".join(f"{s.stack} +{s.delta_usd:,.2f}" for s in risers)
    pct_text = "from nothing" if pct is None else f"{pct:+.1f}%"
    raise BudgetExceeded(
        "fullserver diff",
        f"the monthly estimate rises by {rise:,.2f} USD ({pct_text}), above {' and '.join(over)} ({by})",
        "choose smaller shapes or cheaper pricing, or raise the cap in CI",
    )
