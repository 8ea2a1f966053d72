"""The plan's "spot capacity" table: what the cloud tries for a spot environment, in order, and
what each step bills, as its platform answers (``PlatformRules.spot_steps``). The rates are the
catalog's for the whole shape (a TPU slice is priced whole), the same entries the cost reads."""

from __future__ import annotations

from fullserver.catalog import Catalog
from fullserver.platforms import rules_for
from fullserver.platforms.capacity import CapacityStep, SpotQuestion
from fullserver.spec import EnvironmentSpec


def spot_question(spec: EnvironmentSpec, catalog: Catalog) -> SpotQuestion | None:
    """What the platform is asked of a spot environment; ``None``: not on spot, or no spot price
    (such a shape runs and is priced on-demand, and the plan already says so)."""
    offer = catalog.offer(spec.offer)
    price = offer.prices.get(spec.region) if offer is not None else None
    if not spec.spot or price is None or price.spot is None:
        return None
    tpu = spec.tpu
    return SpotQuestion(
        shape=spec.offer,
        hosts=tpu.hosts if tpu is not None else spec.nodes,
        zone=spec.zone,
        queued=tpu is not None and tpu.queued,
        spot_usd_hour=price.spot,
        on_demand_usd_hour=price.on_demand,
    )


def spot_capacity(spec: EnvironmentSpec, catalog: Catalog) -> list[CapacityStep]:
    """The steps, in order; empty where the platform states none or the environment is not spot."""
    steps = rules_for(spec.platform).spot_steps
    question = spot_question(spec, catalog) if steps is not None else None
    return list(steps(question)) if steps is not None and question is not None else []
