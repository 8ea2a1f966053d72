"""Teardown: ``destroy`` then ``stack rm``, each retried, and what the state says is left.

Shared by the ephemeral run (its own stack, on the way out) and the janitor (expired stacks whose
run could not tear them down). Progress goes out as events (``stackops.events``), tagged with
the command it belongs to.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from pulumi import automation as auto

from stackops.events import (
    By,
    Destroying,
    Notify,
    PendingKept,
    RefreshFailed,
    Refreshing,
    Removing,
    Retrying,
    StepFailed,
    pulumi_lines,
)
from stackops.workspace import error_line, run_cli


def pending_operations(ws: auto.LocalWorkspace, stack: str) -> list[str]:
    """What the state says was in flight when a CLI stopped without finishing (``stack export``,
    without ``--show-secrets``): ``creating urn:...`` and the like."""
    data = json.loads(run_cli(ws, ["stack", "export", "--stack", stack]).stdout or "{}")
    ops = (data.get("deployment") or {}).get("pending_operations") or []
    out = []
    for op in ops:
        res = op.get("resource") or {}
        out.append(f"{op.get('type', 'pending')} {res.get('urn', res.get('type', '?'))}")
    return out


@dataclass
class Teardown:
    """How far a destroy-and-remove got: both flags true means nothing is left."""

    destroyed: bool = False
    removed: bool = False
    attempts: int = 0
    last_error: str = ""
    pending: list[str] = field(default_factory=list)
    """Operations the state still lists as in flight after the destroy: resources that may exist
    in the cloud with no record Pulumi can destroy. The stack is kept so that record survives."""


def _refresh(stack: auto.Stack, name: str, by: By, notify: Notify, pulumi_output: bool) -> None:
    """``pulumi refresh`` once; a failure is reported and the destroy goes ahead."""
    notify(Refreshing(by, name))
    try:
        stack.refresh(on_output=pulumi_lines(notify, pulumi_output), message=f"fullserver {by} teardown")
    except auto.errors.StackNotFoundError:
        raise
    except auto.errors.CommandError as exc:
        notify(RefreshFailed(by, name, error_line(exc)))


def destroy_and_remove(
    ws: auto.LocalWorkspace,
    name: str,
    *,
    retries: int,
    backoff_s: float,
    max_backoff_s: float,
    notify: Notify,
    by: By,
    pulumi_output: bool = False,
    refresh: bool = False,
) -> Teardown:
    """``destroy`` then ``stack rm``, retrying the step that failed with bounded exponential
    backoff (``backoff_s``, doubling, at most ``max_backoff_s``). A stack that does not exist
    counts as removed: teardown may run before ``stack init`` finished, or after a janitor.

    ``refresh`` first runs ``pulumi refresh`` once (after an interrupted or failed update): it
    reads the resources back from the cloud and clears pending updates and deletes, so ``destroy``
    works from the truth. A failed refresh is reported and the destroy goes ahead. Pending
    *creates* survive a non-interactive refresh (the CLI cannot know the new resource's id), so
    after the destroy the state is checked for pending operations: if any remain, the stack is
    not removed, and ``pending`` names them for a person to resolve. ``pulumi_output`` passes the
    CLI's own lines on as ``PulumiOutput`` events.
    """
    t = Teardown()
    refreshed = not refresh
    for attempt in range(1, retries + 1):
        t.attempts = attempt
        try:
            try:
                stack = auto.Stack.select(name, ws)
            except auto.errors.StackNotFoundError:
                t.destroyed = t.removed = True
                return t
            if not refreshed:
                refreshed = True
                _refresh(stack, name, by, notify, pulumi_output)
            if not t.destroyed:
                notify(Destroying(by, name, attempt, retries))
                stack.destroy(on_output=pulumi_lines(notify, pulumi_output), message=f"fullserver {by} teardown")
                t.destroyed = True
            t.pending = pending_operations(ws, name)
            if t.pending:
                t.last_error = f"{len(t.pending)} pending operation(s) left in the state: {'; '.join(t.pending)}"
                notify(PendingKept(by, name, tuple(t.pending)))
                return t
            notify(Removing(by, name))
            ws.remove_stack(name)
            t.removed = True
            return t
        except auto.errors.StackNotFoundError:
            t.destroyed = t.removed = True
            return t
        except Exception as exc:
            t.last_error = error_line(exc)
            step = "stack rm" if t.destroyed else "destroy"
            notify(StepFailed(by, name, step, attempt, retries, t.last_error))
            if attempt < retries:
                delay = min(backoff_s * 2 ** (attempt - 1), max_backoff_s)
                notify(Retrying(by, name, delay))
                time.sleep(delay)
    return t
