"""What a platform's cloud tries for spot capacity, in order, and what each step bills
(``PlatformRules.spot_steps``): the steps of the plan's "capacity: on a stockout" table
(``fullserver.capacity``), as the VM platforms' ``capacity_steps`` give theirs. A platform answers from the
facts of one question, so the plan, the docs and the tests read the same steps."""

from __future__ import annotations

from dataclasses import dataclass

from fullserver.capacity import CapacityStep


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


def spot_step(what: str, usd_hour: float | None, how: str) -> CapacityStep:
    """One step at one rate per hour (``None``: nothing runs, no compute is billed)."""
    return CapacityStep(what=what, usd_hour_low=usd_hour, usd_hour_high=usd_hour, how=how)
