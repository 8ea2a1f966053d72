"""A spot TPU environment's stockout steps, as its platform answers them
(``PlatformRules.spot_steps``), in the one place every platform's steps live: the spec's balanced
set (``fullserver.capacity``), which the plan's "capacity: on a stockout" table reads. A slice
has no set to hand over (one shape, one zone); its steps say what the queue and a preemption do.
The rates are the catalog's for the whole shape, the same entries the cost reads."""

from __future__ import annotations

from fullserver.capacity import CapacitySet, member
from fullserver.catalog import Catalog
from fullserver.platforms import rules_for
from fullserver.platforms.capacity import SpotQuestion
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


def with_spot_steps(spec: EnvironmentSpec, catalog: Catalog) -> EnvironmentSpec:
    """The spec with its platform's spot steps as its capacity; unchanged where the platform states
    none, the environment is not spot, or sizing already gave it a set."""
    steps = rules_for(spec.platform).spot_steps
    question = spot_question(spec, catalog) if steps is not None and spec.capacity is None else None
    offer = catalog.offer(spec.offer)
    if steps is None or question is None or offer is None:
        return spec
    chosen = member(offer, spec.region, question.spot_usd_hour, spec.zone)
    found = CapacitySet(band=0.0, members=[chosen], zones=chosen.zones, steps=list(steps(question)))
    return spec.model_copy(update={"capacity": found})
