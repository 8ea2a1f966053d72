"""The hourly compute rate of one offer under a profile's pricing model: one answer for sizing
(which shape is cheapest) and for the cost estimate (what it costs), so the shape chosen is the
shape that costs least.

Design notes: docs/design/core.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from fullserver.catalog import Catalog, Offer, Same
from fullserver.catalog.staleness import UsedPrice, commitment_read, offer_reads
from fullserver.comparable import ON_DEMAND, SPOT
from fullserver.platform import Platform
from fullserver.platforms import rules_for
from fullserver.profiles import PricingModel, Profile


@dataclass(frozen=True)
class Rate:
    """USD per hour of one node of the offer (a whole TPU slice), and how it was reached."""

    usd: float
    spot: bool
    """Requested as spot capacity."""
    note: str
    warning: str = ""
    basis: str = ON_DEMAND
    """The pricing model the rate is on, as comparisons label it: ``spot``, ``reserved N-year``
    or ``on-demand``; the cost estimate carries it (``CostEstimate.basis``)."""
    peak_usd: float | None = None
    """The most one node's hour can cost when that is more than ``usd``: spot with the on-demand
    fallback its platform builds running beside it (AWS VMs' fallback group, GKE and EKS on-demand
    pools; docs/design/core.md, ``fullserver/hourly.py``)."""
    prices: tuple[UsedPrice, ...] = ()
    """The catalog entries the rate read (``fullserver.catalog.staleness`` judges their age)."""


class RateQuestion(NamedTuple):
    """What a rate depends on: the offer and region, the profile's pricing, and only what the rate
    reads of the rest (``Catalog.answer``): the spot share where spot with a fallback is priced,
    the commitment term where reserved, and of the platform that builds it its cloud (the
    commitment's) and whether it builds a spot fallback. So a node pool and its VMs, which sizing
    prices alike, ask one question unless their fallbacks differ. A named tuple, as
    ``RankQuestion`` is: built and hashed by the interpreter, for every offer every ranking prices."""

    offer: Same[Offer]
    region: str
    provider: str
    pricing: PricingModel
    spot_share: float
    commitment_years: int
    fallback_built: bool
    """Spot with a fallback only: the platform builds the on-demand fallback (``no_spot_fallback``)."""


def units_billed(platform: Platform, nodes: int, replicas: int) -> int:
    """How many of its offer's hourly rates an environment runs: each node (a TPU slice is one) of
    each replica. Sizing's expected cost and the estimate both count them here."""
    return rules_for(platform).supply.units(nodes) * replicas


def hourly_rate(
    offer: Offer, region: str, profile: Profile, catalog: Catalog, platform: Platform | None = None
) -> Rate:
    """The rate ``offer`` costs in ``region`` under ``profile``'s pricing (each model's rate:
    docs/design/core.md, ``fullserver/hourly.py``). ``platform``: what builds it, when not the
    offer's own (a node pool of the offer's VMs, which gets an on-demand fallback pool where the VMs
    alone get none). Ranking and costing both ask here with the platform that builds the shape, so
    the shape ranked cheapest is the one billed cheapest. Sizing, every estimate and every
    comparison row ask again: one answer per catalog."""
    cost, pricing = profile.cost, profile.pricing
    rules = rules_for(platform or offer.platform)
    spot = pricing is PricingModel.SPOT_WITH_FALLBACK
    asked = RateQuestion(
        Same(offer),
        region,
        rules.provider,
        pricing,
        cost.spot_share if spot else 0.0,
        cost.commitment_years if pricing is PricingModel.RESERVED else 0,
        spot and not rules.no_spot_fallback,
    )
    return catalog.answer(_rate, asked)


def _rate(q: RateQuestion, catalog: Catalog) -> Rate:
    offer, region = q.offer.of, q.region
    price = offer.prices[region]
    od = price.on_demand
    reads = offer_reads(offer, region, catalog)
    if q.pricing is PricingModel.SPOT_WITH_FALLBACK and price.spot is not None and not q.fallback_built:
        note = f"spot {price.spot:.2f}/h (no on-demand fallback is built)"
        return Rate(price.spot, True, note, basis=SPOT, prices=reads.spot)
    if q.pricing is PricingModel.SPOT_WITH_FALLBACK and price.spot is not None:
        share = q.spot_share
        usd = share * price.spot + (1 - share) * od
        return Rate(
            usd,
            True,
            f"expected {usd:.2f}/h: {share:.0%} of hours spot {price.spot:.2f}/h, "
            f"{1 - share:.0%} on-demand fallback {od:.2f}/h",
            basis=SPOT,
            peak_usd=price.spot + od,
            prices=(*reads.spot, reads.on_demand),
        )
    on_demand = (reads.on_demand,)
    if q.pricing is PricingModel.RESERVED:
        years = q.commitment_years or 1
        disc = catalog.commitment(q.provider, offer.family, years, offer.name)
        if disc is None:
            return Rate(
                od,
                False,
                f"on-demand {od:.2f}/h (no commitment price found)",
                f"no published {years}-year commitment discount for {offer.name} ({offer.family}) in the catalog: "
                "priced at on-demand",
                prices=on_demand,
            )
        return Rate(
            od * (1 - disc.discount),
            False,
            f"{years}-year commitment: {disc.discount:.0%} off {od:.2f}/h",
            basis=f"reserved {years}-year",
            prices=(*on_demand, commitment_read(q.provider, offer.family, years, disc.source)),
        )
    return Rate(od, False, f"on-demand {od:.2f}/h", prices=on_demand)
