"""The janitor's report as a person reads it in a scheduled job's log: a table of expired stacks
and what happened to each, then one line of notes. The sweep itself (``stackops.janitor``) only
returns data, so the same report also goes out as ``--json``."""

from __future__ import annotations

from datetime import datetime

from rich.console import Console

from fullserver_cli.tables import table
from stackops.janitor import EphemeralStack, JanitorReport
from stackops.naming import EXPIRES_FORMAT, TAG_EXPIRES_AT
from stackops.workspace import PulumiOptions


def _overdue(s: EphemeralStack, now: datetime) -> str:
    if s.expires_at is None:
        return "-"
    minutes = int((now - s.expires_at).total_seconds() // 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{minutes} min"


def render(report: JanitorReport, opts: PulumiOptions, destroy: bool, console: Console) -> None:
    """The table a person reads in a scheduled job's log."""
    title = f"expired ephemeral stacks in {opts.describe_backend()} at {report.now.strftime(EXPIRES_FORMAT)}"
    t = table(
        "stack",
        "from",
        "expired at",
        "overdue",
        "last update",
        "resources",
        "status",
        title=title,
        narrow=[("stack", "from"), ("expired at", "overdue"), ("last update", "resources"), ("status",)],
    )
    rows: list[tuple[EphemeralStack, str]] = []
    for s in report.expired:
        if s.name in report.destroyed:
            status = "[green]destroyed and removed[/]"
        elif s.name in report.failed:
            status = f"[bold red]LEFT: {report.failed[s.name]}[/]"
        else:
            status = "would destroy" if not destroy else "-"
        rows.append((s, status))
    rows += [(s, "[yellow]skipped: an update is in progress[/]") for s in report.busy]
    rows += [
        (s, ("[bold red]LEFT: " if destroy else "[yellow]will not destroy: ") + f"it {report.foreign_reason(s)}[/]")
        for s in report.foreign
    ]
    for s, status in sorted(rows, key=lambda r: (r[0].expires_at or report.now, r[0].name)):
        t.add_row(
            s.name,
            s.base_stack or "-",
            s.expires_at.strftime(EXPIRES_FORMAT) if s.expires_at else "-",
            _overdue(s, report.now),
            s.last_update or "-",
            "-" if s.resource_count is None else str(s.resource_count),
            status,
        )
    if rows:
        console.print(t)
    else:
        console.print(f"no expired ephemeral stacks in {opts.describe_backend()}")
    notes = [f"{len(report.waiting)} ephemeral stack(s) not yet expired"]
    if report.unreadable:
        names = ", ".join(s.name for s in report.unreadable)
        notes.append(f"{len(report.unreadable)} without a readable {TAG_EXPIRES_AT} tag, left alone: {names}")
    unchecked = [n for n in report.failed if n not in {s.name for s in (*report.expired, *report.foreign)}]
    if unchecked:
        notes.append(f"{len(unchecked)} could not be checked (see the errors below): {', '.join(unchecked)}")
    if report.expired and not destroy:
        notes.append("dry run: pass --destroy to destroy and remove them")
    console.print("; ".join(notes))
