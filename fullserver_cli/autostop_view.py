"""The plan's autostop rows: when the nodes stop, the month with autostop beside always-on, what the
stopped state still bills and loses, and how to keep a node up or start it again."""

from __future__ import annotations

from rich.markup import escape

from fullserver.autostop.plan import Autostop

KEEP = "sudo touch /var/lib/fullserver/keep"


def _money(usd: float) -> str:
    return f"${usd:,.2f}"


def autostop_rows(auto: Autostop | None) -> list[tuple[str, str]]:
    """Rows for the plan's head; none when the stack has no autostop to speak of."""
    if auto is None:
        return []
    if not auto.on:
        return [("autostop", escape(f"off: {auto.off}"))]
    bills = ", ".join(f"{b.item} {_money(b.usd_month)}" for b in auto.bills_while_stopped) or "nothing"
    return [
        (
            "autostop",
            escape(
                f"after {auto.minutes} idle minutes (no accelerator use, no SSH or Session Manager session, "
                f"no keep marker) {auto.how}; {_money(auto.usd_month_with_autostop)} / month with autostop, "
                f"{_money(auto.usd_month_always_on)} always on (idle {auto.idle_hours_always_on:g} h -> "
                f"{auto.idle_hours_with_autostop:g} h: {auto.idle_stretches:g} idle stretches x {auto.minutes} min)"
            ),
        ),
        (
            "stopped",
            escape(
                f"still bills {bills} (monthly, as always on); loses {auto.lost}; keep a node up: {KEEP}; "
                f"start again: {auto.start}"
            ),
        ),
    ]
