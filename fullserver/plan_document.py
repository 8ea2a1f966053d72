"""A plan document read back: what ``fullserver plan --json`` printed, as typed ``StackDoc``s.

A plan document is a list, one entry per stack; ``fullserver diff`` builds the same entries for
both sides of a change, with the guardrail results added. Reading is lenient about what it does
not use (documents gain fields over time) and strict about what it does: a missing field, a
duplicate stack or a figure that is not a finite number of USD is one line naming the entry and
the field. ``fullserver.diff`` compares two of them.

Pure: no git, no Pulumi, no printing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, FiniteFloat, ValidationError

from fullserver.errors import InputError

# The spec fields that say what a stack *is*: where it runs, on which shape, with which accelerators.
SHAPE_FIELDS = (
    "profile",
    "platform",
    "region",
    "zone",
    "offer",
    "machine_type",
    "accelerator",
    "accelerator_count",
    "accelerator_memory_gib",
    "vcpus",
    "memory_gib",
    "nodes",
    "pricing",
    "spot",
    "local_nvme_disks",
)


class _Read(BaseModel):
    """A part of a plan document: unknown fields are ignored (documents gain fields over time)."""

    model_config = ConfigDict(frozen=True, extra="ignore")


class PlanBalanceLine(_Read):
    dimension: str
    unit: str = ""
    required: FiniteFloat
    provided: FiniteFloat
    ok: bool


class PlanCostLine(_Read):
    item: str
    usd_month: FiniteFloat
    """NaN or infinity would make every sum NaN, and every cap compared with it false."""
    note: str = ""


class PlanResource(_Read):
    type: str
    name: str
    inputs: dict[str, Any] = {}


class PlanQuota(_Read):
    """One quota a stack needs (``plan --json``'s ``quotas``): keyed by service, code and scope."""

    service: str
    code: str
    name: str = ""
    scope: str
    amount: FiniteFloat
    unit: str = ""

    @property
    def key(self) -> str:
        return f"{self.service} {self.code} {self.scope}"


class Guardrail(_Read):
    """One guardrail finding: the policy that reported it, its enforcement level, the message."""

    policy: str
    level: str = ""
    message: str


class StackDoc(BaseModel):
    """What the diff reads of one stack's plan document."""

    model_config = ConfigDict(frozen=True)

    stack: str
    shape: dict[str, str]
    balance: list[PlanBalanceLine]
    cost: list[PlanCostLine]
    usd_month: float
    warnings: list[str]
    resources: list[PlanResource]
    guardrails: list[Guardrail] | None
    """``None`` when the document carries no guardrail results (a saved ``plan --json``)."""
    budget_usd: float | None = None
    """The stack's own ``budgetMonthlyUsd``, when it sets one."""
    quotas: list[PlanQuota] = []
    """The quotas the stack needs (none in a document saved before plans named them)."""
    unit_usd_hour: float | None = None
    """What its compute costs an hour while running (``cost.compute_usd_hour``): the unit price."""


def _shape_value(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def describe_shape(shape: Mapping[str, str]) -> str:
    """``p5.48xlarge, 8 x H100-80GB, 2 nodes, aws-gpu us-east-1``: what a stack is, in one phrase."""
    parts = [shape.get("offer", "-")]
    if shape.get("accelerator", "-") != "-":
        parts.append(f"{shape.get('accelerator_count', '?')} x {shape['accelerator']}")
    if shape.get("nodes", "1") != "1":
        parts.append(f"{shape['nodes']} nodes")
    parts.append(f"{shape.get('platform', '-')} {shape.get('region', '')}".strip())
    return ", ".join(parts)


def read_document(data: Any, where: str) -> list[StackDoc]:
    """A plan document (``plan --json``'s list), read into ``StackDoc``s; one line naming the
    entry and field that is wrong otherwise."""
    if not isinstance(data, list):
        raise InputError(
            where,
            "is not a plan document (a JSON list, one entry per stack)",
            "save one with `fullserver plan --json > plan.json`",
        )
    out: list[StackDoc] = []
    seen: set[str] = set()
    for i, entry in enumerate(data):
        at = f"{where}: entry {i}"
        if not isinstance(entry, Mapping):
            raise InputError(at, "is not an object", "save the plan with `fullserver plan --json`")
        spec = entry.get("spec")
        cost = entry.get("cost")
        if not isinstance(entry.get("stack"), str) or not isinstance(spec, Mapping) or not isinstance(cost, Mapping):
            raise InputError(at, "needs 'stack', 'spec' and 'cost'", "save the plan with `fullserver plan --json`")
        name = entry["stack"]
        if name in seen:
            raise InputError(at, f"stack '{name}' appears twice", "save the plan with `fullserver plan --json`")
        seen.add(name)
        try:
            balance = [PlanBalanceLine.model_validate(x) for x in (spec.get("balance") or {}).get("lines", [])]
            lines = [PlanCostLine.model_validate(x) for x in cost.get("lines", [])]
            resources = [PlanResource.model_validate(x) for x in entry.get("resources", [])]
            raw_guards = entry.get("guardrails")
            guards = None if raw_guards is None else [Guardrail.model_validate(x) for x in raw_guards]
            warnings = [str(w) for w in entry.get("warnings", [])]
            quotas = [PlanQuota.model_validate(x) for x in entry.get("quotas", [])]
        except (ValidationError, AttributeError, TypeError) as exc:
            first = exc.errors()[0] if isinstance(exc, ValidationError) else None
            what = f"field '{'.'.join(str(p) for p in first['loc'])}': {first['msg']}" if first else str(exc)
            raise InputError(f"{at} (stack '{name}')", what, "save the plan with `fullserver plan --json`") from None
        usd = _usd_month(entry.get("usd_month"), lines, f"{at} (stack '{name}')")
        budget = entry.get("budget_monthly_usd")
        budget_usd = None if budget is None else _finite_usd(budget, "budget_monthly_usd", f"{at} (stack '{name}')")
        unit = cost.get("compute_usd_hour")
        unit_usd_hour = None if unit is None else _finite_usd(unit, "cost.compute_usd_hour", f"{at} (stack '{name}')")
        out.append(
            StackDoc(
                stack=name,
                shape={k: _shape_value(spec.get(k)) for k in SHAPE_FIELDS if k in spec},
                balance=balance,
                cost=lines,
                usd_month=usd,
                warnings=warnings,
                resources=resources,
                guardrails=guards,
                budget_usd=budget_usd,
                quotas=quotas,
                unit_usd_hour=unit_usd_hour,
            )
        )
    return out


def _usd_month(total: Any, lines: list[PlanCostLine], where: str) -> float:
    """The stack's monthly total: the document's own, or the sum of its lines when it has none.

    Why: a NaN total (which JSON readers accept) printed "-$nan" and made every comparison with
    a cap false, so ``--max-increase-usd 0`` passed a rise; it is refused like any bad field."""
    if total is None:
        return round(sum(line.usd_month for line in lines), 2)
    return _finite_usd(total, "usd_month", where)


def _finite_usd(value: Any, field: str, where: str) -> float:
    """A number of USD from a plan document, refused in one line unless finite."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InputError(
            where,
            f"field '{field}': {value!r} is not a finite number of USD",
            "save the plan again with `fullserver plan --json`",
        )
    return float(value)
