"""``fullserver diff`` as a person reads it: tables in the terminal, or one pull-request comment.

The Markdown starts with a hidden marker (``COMMENT_MARKER``) so a CI job can find and update its
own comment instead of adding one per push; then a summary line with the total monthly delta, a
table of the stacks that changed, and a collapsible ``<details>`` section per stack.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from fullserver.catalog.staleness import read_warning
from fullserver.diff import BalanceChange, PlanDiff, StackDiff, stale_sources
from fullserver_cli.guardrails import NOT_INSTALLED
from fullserver_cli.tables import table

COMMENT_MARKER = "<!-- fullserver-diff -->"
STACK_COLUMNS = ("stack", "change", "before", "after", "$/month before", "$/month after", "delta")
"""The changed stacks' table, in the PR comment and a wide terminal alike."""


def usd(value: float | None) -> str:
    return "-" if value is None else f"${value:,.2f}"


def delta(value: float) -> str:
    if abs(value) < 0.005:
        return "$0.00"
    return f"{'+' if value > 0 else '-'}${abs(value):,.2f}"


def stack_usd(s: StackDiff) -> tuple[str, str]:
    """A stack's $/month before and after: ``-`` on a side it is absent from (not ``$0.00``)."""
    return (usd(s.usd_before) if s.was else "-", usd(s.usd_after) if s.now else "-")


def per_hour(value: float | None) -> str:
    """A unit price to the cent's hundredth, as catalogs publish them (``$0.5260/h``)."""
    return "-" if value is None else f"${value:,.4f}/h"


def change(s: StackDiff) -> str:
    """The stack's status; a price-only change with its unit price before and after; flagged
    when the working tree puts it over its own budget."""
    text: str = s.status
    if s.price_only:
        text += f", unit price {per_hour(s.unit_usd_hour_before)} -> {per_hour(s.unit_usd_hour_after)}"
    return f"{text}, OVER its budget {usd(s.budget_usd)}" if s.over_budget else text


STALE_TITLES = ("stale prices, each source once", "stale-price warnings gone, each source once")


def stale_lines(result: PlanDiff, gone: bool = False) -> list[str]:
    """Each catalog source past the price-age threshold, once, with the prices and stacks it is
    new for (``gone``: no longer warned of; ``stale_sources``); their warnings leave the stacks'
    own warning tables."""
    return [
        f"{x.source}: {x.age_days} days old (as of {x.when}); prices {'; '.join(x.prices)} "
        f"for {', '.join(x.stacks)}: {'; '.join(x.remedies)}"
        for x in stale_sources(result.changed, gone)
    ]


def pct(value: float | None) -> str:
    return "new" if value is None else f"{value:+.1f}%"


def headline(result: PlanDiff, base: str) -> str:
    """The summary line: the total's change and how many stacks moved."""
    changed = result.changed
    counts = {k: sum(s.status == k for s in changed) for k in ("added", "removed", "changed")}
    moved = ", ".join(f"{n} {k}" for k, n in counts.items() if n) or "no stack changed"
    return (
        f"{delta(result.delta_usd)} / month ({pct(result.delta_pct)}): {usd(result.usd_before)} -> "
        f"{usd(result.usd_after)}; {moved} of {len(result.stacks)} stack(s); base: {base}"
    )


def guardrails_line(result: PlanDiff, guardrails_run: bool) -> str:
    """Whether the guardrail policy pack ran, and on which sides: said on every diff.

    Why: against a git base nothing said so, and "no finding" could not be told from "not run"."""
    if not guardrails_run:
        return NOT_INSTALLED
    if any(s.guardrails_now is not None for s in result.stacks):
        return "guardrails: run on the working tree only (the base has no guardrail results to compare)"
    new = sum(len(s.guardrails_added) for s in result.stacks)
    gone = sum(len(s.guardrails_removed) for s in result.stacks)
    return f"guardrails: run on both sides; {new} new finding(s), {gone} gone"


def _balance_cell(line: BalanceChange, side: str) -> str:
    got = line.before if side == "before" else line.after
    if got is None:
        return "-"
    verdict = "ok" if got.ok else "SHORT"
    return f"{round(got.provided, 1):g} of {round(got.required, 1):g} {got.unit} {verdict}"


def _amount(amount: float | None, unit: str) -> str:
    return "-" if amount is None else f"{amount:g} {unit}"


def _stack_details(s: StackDiff) -> list[tuple[str, list[str], list[list[str]]]]:
    """The sections of one stack's change as (title, header, rows); renderers lay them out."""
    out: list[tuple[str, list[str], list[list[str]]]] = []
    if s.shape:
        out.append(("shape", ["field", "before", "after"], [[f.field, f.before, f.after] for f in s.shape]))
    if s.balance:
        rows = [[b.dimension, _balance_cell(b, "before"), _balance_cell(b, "after")] for b in s.balance]
        out.append(("balance", ["dimension", "before", "after"], rows))
    if s.cost:
        rows = [[c.item, usd(c.before_usd), usd(c.after_usd), delta(c.delta_usd)] for c in s.cost]
        rows.append(["total", usd(s.usd_before), usd(s.usd_after), delta(s.delta_usd)])
        out.append(("cost per month", ["item", "before", "after", "delta"], rows))
    if s.quotas:
        rows = [
            [f"{q.code} ({q.service})", q.scope, _amount(q.before, q.unit), _amount(q.after, q.unit)] for q in s.quotas
        ]
        out.append(("quotas needed", ["quota", "where", "before", "after"], rows))
    if s.resources:
        rows = []
        for r in s.resources:
            what: str = r.status
            if r.status == "replaced":
                what = f"replaced (was {r.before_type})"
            elif r.status == "changed":
                what = "changed: " + ", ".join(r.inputs)
            rows.append([r.type, r.name, what])
        title = f"resources ({s.resources_before} -> {s.resources_after})"
        out.append((title, ["type", "name", "change"], rows))
    guards = [["new", g.policy, g.level, g.message] for g in s.guardrails_added]
    guards += [["gone", g.policy, g.level, g.message] for g in s.guardrails_removed]
    guards += [["now", g.policy, g.level, g.message] for g in s.guardrails_now or []]
    if guards:
        out.append(("guardrails", ["", "policy", "level", "finding"], guards))
    if s.unit_price_moved:
        unit = [["compute, while running", per_hour(s.unit_usd_hour_before), per_hour(s.unit_usd_hour_after)]]
        out.append(("unit price", ["", "before", "after"], unit))
    added = [w for w in s.warnings_added if read_warning(w) is None]  # stale prices: once, above
    removed = [w for w in s.warnings_removed if read_warning(w) is None]
    warns = [["new", w] for w in added] + [["gone", w] for w in removed]
    if warns:
        out.append(("warnings", ["", "warning"], warns))
    return out


def _guardrail_note(s: StackDiff) -> str:
    if s.guardrails_now is None:
        return ""
    if not s.guardrails_now:
        return "guardrails: no finding (the base has no guardrail results to compare)"
    return "guardrails: findings below are the working tree's (the base has no guardrail results to compare)"


# --- terminal -------------------------------------------------------------------------------


def terminal(result: PlanDiff, base: str, guardrails_run: bool = True) -> Group:
    parts: list[RenderableType] = [Text(headline(result, base), style="bold")]
    parts.append(Text(guardrails_line(result, guardrails_run), style="" if guardrails_run else "yellow"))
    changed = result.changed
    if changed:
        before, after = STACK_COLUMNS[2:4]
        narrow = [STACK_COLUMNS[:2], (before, after), STACK_COLUMNS[4:]]
        t = table(*STACK_COLUMNS, narrow=narrow)
        for s in changed:
            t.add_row(s.stack, change(s), s.was or "-", s.now or "-", *stack_usd(s), delta(s.delta_usd))
        parts.append(t)
    for title, gone in zip(STALE_TITLES, (False, True), strict=True):
        stale = stale_lines(result, gone)
        if stale:
            parts.append(Text(f"\n{title}:", style="bold yellow"))
            parts += [Text(f"- {line}", style="yellow") for line in stale]
    for s in changed:
        parts.append(Text(f"\n{s.stack}: {change(s)}, {delta(s.delta_usd)} / month", style="bold"))
        for note in (s.note, _guardrail_note(s)):
            if note:
                parts.append(Text(note, style="yellow"))
        for title, header, rows in _stack_details(s):
            details = table(*header, title=title)
            for row in rows:
                details.add_row(*row)
            parts.append(details)
    unchanged = len(result.stacks) - len(changed)
    if unchanged:
        parts.append(Text(f"\n{unchanged} stack(s) unchanged"))
    return Group(*parts)


# --- markdown -------------------------------------------------------------------------------


def _cell(text: str) -> str:
    """Text safe in a Markdown table cell: one line, ``&`` and ``<`` escaped (no tag or entity can
    start), pipes escaped. ``>`` alone starts nothing inside a line, so ``->`` stays ``->``."""
    return " ".join(text.split()).replace("&", "&amp;").replace("<", "&lt;").replace("|", "\\|")


def _md_table(header: list[str], rows: list[list[str]], right: set[int] | None = None) -> list[str]:
    align = ["---:" if right and i in right else "---" for i in range(len(header))]
    lines = ["| " + " | ".join(_cell(h) or " " for h in header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return lines


def markdown(result: PlanDiff, base: str, guardrails_run: bool = True) -> str:
    """One pull-request comment: marker, summary line, a table of changed stacks, and a
    ``<details>`` section per changed stack (closed, so a long diff stays one screen)."""
    lines = [COMMENT_MARKER, f"**fullserver diff**: {_cell(headline(result, base))}", ""]
    lines += [f"_{_cell(guardrails_line(result, guardrails_run))}_", ""]
    changed = result.changed
    if not changed:
        lines.append("No stack's shape, balance, cost, resources, guardrails or warnings change.")
        return "\n".join(lines) + "\n"
    rows = [[s.stack, change(s), s.was or "-", s.now or "-", *stack_usd(s), delta(s.delta_usd)] for s in changed]
    lines += _md_table(list(STACK_COLUMNS), rows, right={4, 5, 6})
    for title, gone in zip(STALE_TITLES, (False, True), strict=True):
        stale = stale_lines(result, gone)
        if stale:
            lines += ["", f"**{title.capitalize()}**:", "", *(f"- {_cell(line)}" for line in stale)]
    for s in changed:
        summary = f"<b>{_cell(s.stack)}</b>: {_cell(change(s))}, {_cell(delta(s.delta_usd))} / month"
        lines += ["", "<details>", f"<summary>{summary}</summary>", ""]
        for note in (s.note, _guardrail_note(s)):
            if note:
                lines += [f"_{_cell(note)}_", ""]
        for title, header, body in _stack_details(s):
            right = {1, 2, 3} if title.startswith("cost") else None
            lines += [f"**{_cell(title)}**", "", *_md_table(header, body, right), ""]
        lines += ["</details>"]
    unchanged = len(result.stacks) - len(changed)
    if unchanged:
        lines += ["", f"{unchanged} stack(s) unchanged."]
    return "\n".join(lines) + "\n"
