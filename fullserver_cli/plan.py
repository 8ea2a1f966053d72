"""``fullserver plan``: the summary table first, then each stack's decision, cost and resources.

The core plans every stack in milliseconds, so the summary prints at once; each stack's resource
graph (the real program under Pulumi's mock runtime, importing only the provider SDK that stack
uses) follows as it is computed.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from fullserver import collector
from fullserver.catalog import Catalog, load_catalog
from fullserver.catalog.staleness import DEFAULT_MAX_PRICE_AGE_DAYS, plan_staleness_warnings
from fullserver.errors import FullserverError
from fullserver.images import plan_image_warnings
from fullserver.pinning import pin_stack
from fullserver.plan import StackPlan, check_budget, check_max_monthly_usd, plan_paths
from fullserver.stacks import find_stacks
from fullserver_cli import render
from fullserver_cli.output import STACKS_DIR as STACKS_DIR
from fullserver_cli.output import console, emit_json, fail
from fullserver_cli.placement_view import placement_view


def plan(
    stacks: Annotated[
        Optional[list[str]], typer.Argument(help="stack names (default: every stacks/Pulumi.*.yaml)")
    ] = None,
    stacks_dir: Annotated[Path, typer.Option("--stacks-dir", help="where the stack configs live")] = STACKS_DIR,
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output for CI")] = False,
    summary: Annotated[bool, typer.Option("--summary", help="print only the summary table")] = False,
    max_monthly_usd: Annotated[
        Optional[float], typer.Option(help="exit 3 if any stack's monthly estimate exceeds this")
    ] = None,
    max_price_age_days: Annotated[
        int,
        typer.Option(min=1, max=3650, help="warn about any price used that is older than this many days"),
    ] = DEFAULT_MAX_PRICE_AGE_DAYS,
    pin: Annotated[
        bool,
        typer.Option("--pin", help="write each located stack's chosen region and platform into its stack file"),
    ] = False,
) -> None:
    """Plan stacks offline: shape, balance, cost and warnings for each (no credentials, no Pulumi CLI)."""
    # Planning, the warnings and the summary in one batch (``fullserver.collector``): each batch's
    # end lets the collector scan all the batch kept, every plan, so two batches scanned it twice.
    with collector.batch():
        try:
            check_max_monthly_usd(max_monthly_usd)  # a cap that is no number is bad input before any work
            catalog = load_catalog()
            # The summary table shows no comparison row: a text summary plans without them.
            compared = as_json or not summary
            plans = plan_paths(find_stacks(stacks_dir, stacks or []), catalog=catalog, compared=compared)
        except FullserverError as exc:
            raise fail(exc) from None
        today = dt.date.today()
        warnings = {p.stack: [*p.warnings, *dated_warnings(p, catalog, today, max_price_age_days)] for p in plans}
        _print(plans, warnings, as_json, summary, max_monthly_usd)
    if pin:
        _pin(plans, today, as_json)
    try:
        check_budget(plans, max_monthly_usd)
    except FullserverError as exc:
        raise fail(exc) from None


def _pin(plans: list[StackPlan], today: dt.date, as_json: bool) -> None:
    """Pin every stack with a location to its winner (``fullserver.pinning``); one line per stack,
    on stderr beside --json so the document stays one JSON value."""
    con = console(stderr=as_json)
    for p in plans:
        if p.placement is None:
            con.print(f"{p.stack}: names a region, nothing to pin")
            continue
        try:
            changed = pin_stack(Path(p.path), p.placement, today)
        except FullserverError as exc:
            raise fail(exc) from None
        w = p.placement.winner
        what = "pinned" if changed else "already pinned"
        con.print(f"{p.stack}: {what} to {w.platform.value} in {w.region} ({p.path})")


def dated_warnings(plan: StackPlan, catalog: Catalog, today: dt.date, max_price_age_days: int) -> list[str]:
    """What the plan says because of the date: prices older than the limit, boot images near or
    past their end of patch (``plan`` and ``diff`` both add them to the core's warnings)."""
    return [
        *plan_staleness_warnings(plan, catalog, today, max_price_age_days),
        *plan_image_warnings(plan, catalog, today),
    ]


def plan_document(plan: StackPlan, warnings: list[str], resources: list[dict[str, Any]]) -> dict[str, Any]:
    """One stack as ``plan --json`` writes it, and as ``diff --base-plan`` reads it back."""
    return {
        **plan.model_dump(mode="json"),
        "usd_month": plan.cost.usd_month,
        "usd_hour": plan.cost.usd_hour,
        "warnings": warnings,
        "resources": resources,
    }


def _print(
    plans: list[StackPlan],
    warnings: dict[str, list[str]],
    as_json: bool,
    summary: bool,
    max_monthly_usd: float | None,
) -> None:
    """Every warning (the core's, stale prices, the program's) is shown the same way in text and JSON.

    The resource graph imports Pulumi (only here, never in the core), which takes longer than the
    whole plan: in text the summary is printed first, and Pulumi imported after it."""
    if as_json:
        from components.graph import fast_graph, rows_json

        try:
            graphs = [fast_graph(p) for p in plans]
        except FullserverError as exc:
            raise fail(exc) from None
        emit_json(
            [
                plan_document(p, [*warnings[p.stack], *g.warnings], rows_json(g))
                for p, g in zip(plans, graphs, strict=True)
            ]
        )
    else:
        con = console()
        con.print(render.summary_table(plans, warnings, max_monthly_usd))
        con.print(render.total_line(plans))
        if not summary:
            from components.graph import fast_graph
            from fullserver_cli.graph_view import graph_table

            for p in plans:
                try:
                    g = fast_graph(p)
                except FullserverError as exc:
                    raise fail(exc) from None
                con.print(render.stack_plan(p, [*warnings[p.stack], *g.warnings]))
                if p.placement is not None:
                    con.print(placement_view(p.stack, p.placement))
                con.print(graph_table(g))
                con.print()
