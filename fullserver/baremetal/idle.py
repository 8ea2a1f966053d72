"""Is a host idle, and what does it cost idle: the idle agent's own sample, read over SSH.

The agent (``components/autostop_agent.py``) is the one definition of "idle" (accelerators, SSH
and Session Manager sessions, the keep marker): ``audit`` and ``verify`` send its source to the
host's ``python3`` and run its ``--report`` mode, so a host is idle exactly when the agent would
count it idle. A dedicated server is never stopped (it bills by the month either way): the report
prices its idle time at the dedicated monthly price, prorated. Design notes:
docs/design/bare-metal.md.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from fullserver.baremetal.errors import CommandFailed, CommandTimeout
from fullserver.baremetal.transport import Runner
from fullserver.rules import HOURS_PER_MONTH

RENTED = "a rented server is never stopped: it bills by the month whether it runs or not"
"""What an inventory's idle host does (an inventory lists dedicated servers; a stack says its own)."""
REPORT_TIMEOUT = 60.0
"""nvidia-smi is given 30 s by the agent; the scan of /proc takes well under a second."""


@dataclass(frozen=True)
class IdleProbe:
    """How to ask a host whether it is idle, and what its idleness costs.

    ``agent`` is the agent's source, ``config`` its configuration (``components.autostop.
    agent_config``: the busy threshold, keep marker, state file, device root); ``monthly_usd`` the
    stack's dedicated price per server (None for an inventory, which carries no price); ``stop``
    how the host's platform stops an idle host, or why it does not."""

    agent: str = field(repr=False)
    config: Mapping[str, object]
    stop: str
    monthly_usd: float | None = None


class Idleness(BaseModel):
    """One host's idleness at the time it was read. ``idle`` None: it could not be read."""

    model_config = ConfigDict(frozen=True)

    idle: bool | None
    why: str = ""
    """What keeps it busy, or why it could not be read."""
    since: float | None = None
    """Unix time the agent's state on the host counts idleness from (None: no agent records it)."""
    hours: float | None = None
    usd_hour: float | None = None
    """The dedicated price prorated by the hour: what every idle hour costs."""
    usd_so_far: float | None = None
    stop: str = ""

    def line(self) -> str:
        """One line: idle or busy, since when, what the idleness costs and whether it stops."""
        if self.idle is None:
            return f"idleness not read: {self.why}"
        if not self.idle:
            return f"busy: {self.why}"
        since = (
            f"idle for {self.hours:.1f} h (since {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(self.since))})"
            if self.since is not None and self.hours is not None
            else "idle now (since when is not known: no idle agent records it on this host)"
        )
        cost = ""
        if self.usd_hour is not None:
            month = self.usd_hour * HOURS_PER_MONTH
            so_far = f"${self.usd_so_far:,.2f} so far, " if self.usd_so_far is not None else ""
            cost = (
                f"; {so_far}${self.usd_hour:,.2f} an hour, ${month:,.0f} an idle month (the dedicated price, prorated)"
            )
        return f"{since}{cost}; {self.stop}"


def idleness(sample: Mapping[str, object], probe: IdleProbe) -> Idleness:
    """The agent's ``--report`` sample → ``Idleness``, priced (pure)."""
    why, since, now = sample.get("busy"), sample.get("idle_since"), sample.get("now")
    usd_hour = probe.monthly_usd / HOURS_PER_MONTH if probe.monthly_usd is not None else None
    if why is not None:
        return Idleness(idle=False, why=str(why), usd_hour=usd_hour, stop=probe.stop)
    hours = None
    if isinstance(since, (int, float)) and isinstance(now, (int, float)):
        hours = max(0.0, (now - since) / 3600)
    return Idleness(
        idle=True,
        since=float(since) if hours is not None and isinstance(since, (int, float)) else None,
        hours=hours,
        usd_hour=usd_hour,
        usd_so_far=round(usd_hour * hours, 2) if usd_hour is not None and hours is not None else None,
        stop=probe.stop,
    )


def read_idleness(runner: Runner, probe: IdleProbe) -> Idleness:
    """Run the agent's ``--report`` on the host (as root: other users' open device files are
    only visible to root) and read its sample; a host where it cannot run says why, never "idle"."""
    command = ["python3", "-", "--report", json.dumps(dict(probe.config), sort_keys=True)]
    try:
        res = runner.run(
            command,
            stdin=probe.agent.encode(),
            sudo=True,
            timeout=REPORT_TIMEOUT,
            check=False,
            label="idle report",
        )
    except (CommandFailed, CommandTimeout) as exc:  # sudo refused, a hang: the host is still reachable
        return Idleness(idle=None, why=exc.what, stop=probe.stop)
    if res.exit_status == 127:
        return Idleness(
            idle=None, why="python3 is not installed on the host (the idle agent needs it)", stop=probe.stop
        )
    try:
        sample = json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return Idleness(
            idle=None, why=f"the idle report failed (exit {res.exit_status}): {res.tail(160)}", stop=probe.stop
        )
    if not isinstance(sample, dict):
        return Idleness(idle=None, why=f"the idle report printed {res.stdout.strip()[:80]!r}", stop=probe.stop)
    return idleness(sample, probe)
