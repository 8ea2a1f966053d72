"""What a platform's cloud tries for spot capacity, in order, and what each step bills
(``PlatformRules.spot_steps``): the plan's "spot capacity" table. A platform answers from the
facts of one question, so the plan, the docs and the tests read the same steps."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SpotQuestion:
    """One environment's spot capacity, as its platform is asked about it."""

    shape: str
    """The offer (``v5p-32``): a TPU slice is priced whole."""
    hosts: int
    zone: str | None
    queued: bool
    """Requested through a Cloud TPU queued resource."""
    spot_usd_hour: float
    """The catalog's spot price of the whole shape, per hour."""
    on_demand_usd_hour: float


@dataclass(frozen=True)
class CapacityStep:
    """One step, in the order the cloud takes them: what happens, and what it bills per hour
    (``None``: nothing is running for the step, so no compute is billed)."""

    step: str
    usd_hour: float | None
    how: str
