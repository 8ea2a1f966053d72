"""A stack's autostop: its idle minutes, how its platform stops it, and its price beside always-on.

The price model: always on, a pay-as-you-go machine is paid for ``productive / (1 - idle_share)``
hours a month (``fullserver.cost``), the difference being idle. With autostop, each idle stretch
(``cost.idle_stretches_per_month`` of the profile: one per working session or run; unset, one per
day the machine is up) bills at most the autostop minutes, so the idle hours become
``min(idle, stretches x minutes / 60)`` at the same compute rate. Disks, addresses and fees are
left as always-on prices them (an upper bound); the lines the stopped state still bills are
listed. Reserved capacity bills every hour whether its nodes run or not: nothing is saved.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from fullserver.autostop.way import StopWay
from fullserver.cost import CostEstimate
from fullserver.errors import InputError
from fullserver.platforms import rules_for
from fullserver.profiles import PricingModel, Profile
from fullserver.spec import EnvironmentSpec
from fullserver.workload import Workload

KEY = "fullserver:autostopMinutes"
COMMITTED = (PricingModel.RESERVED, PricingModel.DEDICATED_MONTHLY)


class StoppedBill(BaseModel):
    model_config = ConfigDict(frozen=True)

    item: str
    usd_month: float


class Autostop(BaseModel):
    """What the plan shows and the components build: ``minutes`` > 0 and ``way`` set, or ``off``
    saying why this stack's nodes do not stop themselves."""

    model_config = ConfigDict(frozen=True)

    minutes: int
    way: str = ""
    how: str = ""
    lost: str = ""
    start: str = ""
    restored_by_up: bool = False
    off: str = ""
    idle_stretches: float = 0
    idle_hours_always_on: float = 0
    idle_hours_with_autostop: float = 0
    usd_month_always_on: float = 0
    usd_month_with_autostop: float = 0
    bills_while_stopped: list[StoppedBill] = []

    @property
    def on(self) -> bool:
        return self.minutes > 0 and bool(self.way)


def decide(
    spec: EnvironmentSpec, profile: Profile, workload: Workload, cost: CostEstimate, where: str = KEY
) -> Autostop | None:
    """The stack's autostop; None where nothing stops and nothing needs saying (0 minutes).

    A stack that asks for autostop where its environment cannot stop itself is refused; a
    profile's default there is reported off, with the platform's reason."""
    minutes = spec.autostop_minutes  # the stack's, else the profile's (workload.autostop_minutes_for)
    if minutes == 0:
        return None
    asked = workload.autostop_minutes is not None
    if spec.serving is not None:
        why = f"a serving group never stops: its floor is its minimum replicas ({spec.serving.min_replicas})"
        if asked:
            raise InputError(where, why, "set 0 or remove it")
        return Autostop(minutes=0, off=why)
    way = rules_for(spec.platform).autostop(spec)
    if isinstance(way, str):
        if asked:
            raise InputError(where, f"{spec.platform.value}: {way}", "remove it")
        return Autostop(minutes=0, off=way)
    return _priced(way, minutes, profile, cost)


def _priced(way: StopWay, minutes: int, profile: Profile, cost: CostEstimate) -> Autostop:
    idle = max(0.0, cost.paid_hours - cost.productive_hours)
    stretches = profile.cost.idle_stretches_per_month or cost.paid_hours / 24
    capped = idle if profile.pricing in COMMITTED else min(idle, stretches * minutes / 60)
    saved = cost.compute_usd_hour * (idle - capped)
    always_on = cost.usd_month  # a sum of the lines: added up once
    return Autostop(
        minutes=minutes,
        way=way.key,
        how=way.how,
        lost=way.lost,
        start=way.start,
        restored_by_up=way.restored_by_up,
        idle_stretches=round(stretches, 1),
        idle_hours_always_on=round(idle, 1),
        idle_hours_with_autostop=round(capped, 1),
        usd_month_always_on=always_on,
        usd_month_with_autostop=round(always_on - saved, 2),
        bills_while_stopped=[
            StoppedBill(item=line.item, usd_month=line.usd_month)
            for line in cost.lines
            if line.item in way.bills_while_stopped
        ],
    )


def idle_sentence(spec: EnvironmentSpec, autostop: Autostop | None) -> str:
    """What an idle node of this stack does, in words: the last part of the idle report of
    ``fullserver verify`` (``fullserver.baremetal.idle``; audit's rented hosts say ``RENTED``)."""
    if autostop is not None and autostop.on:
        return f"it stops itself after {autostop.minutes} idle minutes ({autostop.how})"
    if autostop is not None and autostop.off:
        return autostop.off
    way = rules_for(spec.platform).autostop(spec)
    return way if isinstance(way, str) else "autostop is off for this stack (0 minutes): it is not stopped"
