"""The place of a stack with ``fullserver:location``: every option ranked, the choice, and the pin."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text

from fullserver.placement import PIN_COMMAND, Placement
from fullserver_cli.render import money
from fullserver_cli.tables import table

SHOWN = 8
"""Options listed per stack: the winner, the runner-up and the next few (the JSON has them all)."""


def placement_view(stack: str, placement: Placement) -> Group:
    """The ranked options, the verdict, and what the stack's pin says of it."""
    t = table("#", "platform", "region", "shape", "compute etc.", "dataset move", "USD/month", title="place")
    for i, o in enumerate(placement.options[:SHOWN], start=1):
        move = money(o.transfer_usd) if o.transfer_note else "-"
        t.add_row(str(i), o.platform.value, o.region, o.offer, money(o.usd_month), move, money(o.total))
    parts: list[object] = [t, Text(placement.verdict())]
    if len(placement.options) > SHOWN:
        parts.append(Text(f"{len(placement.options) - SHOWN} more option(s) in --json"))
    if placement.skipped:
        parts.append(
            Text(
                f"{len(placement.skipped)} platform x region(s) skipped (no prices, or nothing fits): --json lists why"
            )
        )
    parts.append(_pin_line(stack, placement))
    return Group(*parts)  # type: ignore[arg-type]


def _pin_line(stack: str, placement: Placement) -> Text:
    w = placement.winner
    if not placement.pinned:
        return Text(
            f"not pinned: planned on {w.platform.value} in {w.region}; pulumi up refuses the stack until "
            f"`{PIN_COMMAND} {stack}` writes the place into the stack file",
            style="yellow",
        )
    at = placement.pinned_option
    if at is None:
        return Text(f"pinned outside the location's options; the location's best is {w.describe()}", style="yellow")
    if at == w:
        return Text(f"pinned: {at.platform.value} in {at.region}, still the cheapest")
    return Text(
        f"pinned: {at.platform.value} in {at.region}, ${at.total - w.total:,.2f}/month more than the location's "
        f"best now; `{PIN_COMMAND} {stack}` would move it",
        style="yellow",
    )
