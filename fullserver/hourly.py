"""The hourly compute rate of one offer under a profile's pricing model: one answer for sizing
(which shape is cheapest) and for the cost estimate (what it costs), so the shape chosen is the
shape that costs least.

- spot with on-demand fallback: the expected rate, the profile's ``spot_share`` of the hours at
  the spot price and the rest at on-demand. Ranking at the bare spot price would prefer a shape
  only because its spot price is known (a 64-vCPU g6.16xlarge, $3.40/h when it falls back, over a
  balanced g6.4xlarge at $1.32/h). Where the platform builds no fallback itself (Compute Engine,
  Cloud TPU) the rest is the on-demand capacity the work moves to while spot is out (the plan
  warns how). A shape without a published spot price runs on-demand, at on-demand.
- reserved: on-demand less the commitment discount published for that exact shape (or its whole
  family where the source prices every size); none found: on-demand, with a warning.
- otherwise on-demand.
"""

from __future__ import annotations

from dataclasses import dataclass

from fullserver.catalog import Catalog, Offer
from fullserver.comparable import ON_DEMAND, SPOT
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


def hourly_rate(offer: Offer, region: str, profile: Profile, catalog: Catalog) -> Rate:
    """The rate ``offer`` costs in ``region`` under ``profile``'s pricing (see the module doc)."""
    price = offer.prices[region]
    od = price.on_demand
    rules = rules_for(offer.platform)
    if profile.pricing is PricingModel.SPOT_WITH_FALLBACK and price.spot is not None:
        share = profile.cost.spot_share
        usd = share * price.spot + (1 - share) * od
        return Rate(
            usd,
            True,
            f"expected {usd:.2f}/h: {share:.0%} of hours spot {price.spot:.2f}/h, "
            f"{1 - share:.0%} on-demand fallback {od:.2f}/h",
            basis=SPOT,
        )
    if profile.pricing is PricingModel.RESERVED:
        years = profile.cost.commitment_years or 1
        disc = catalog.commitment(rules.provider, offer.family, years, offer.name)
        if disc is None:
            return Rate(
                od,
                False,
                f"on-demand {od:.2f}/h (no commitment price found)",
                f"no published {years}-year commitment discount for {offer.name} ({offer.family}) in the catalog: "
                "priced at on-demand",
            )
        return Rate(
            od * (1 - disc.discount),
            False,
            f"{years}-year commitment: {disc.discount:.0%} off {od:.2f}/h",
            basis=f"reserved {years}-year",
        )
    return Rate(od, False, f"on-demand {od:.2f}/h")
