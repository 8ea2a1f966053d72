"""Rank what you bill (issue 37 item 3): the shape sizing chooses is the cheapest under the rate the
plan's cost estimate charges, node-pool platforms included (a GKE or EKS spot pool is billed with
its on-demand fallback pool, where the VMs alone are billed at the bare spot price).

The brute force reads prices and the fallback rule itself (``billed``); it calls nothing in
``fullserver.hourly`` or the ranking, so a mistake there cannot hide behind the same one here.
"""

from __future__ import annotations

import pytest

from fullserver.catalog import Offer, load_catalog
from fullserver.errors import InputError, NothingFits
from fullserver.hourly import hourly_rate
from fullserver.kube.pool import SIZED_AS
from fullserver.platform import Platform, PricingModel
from fullserver.platforms import rules_for
from fullserver.profiles import Profile, load_profiles
from fullserver.sizing import assess, spec_for
from fullserver.workload import Workload

CATALOG = load_catalog()
PROFILES = load_profiles()


def billed(offer: Offer, region: str, platform: Platform, spot_share: float) -> float:
    """One node's expected hour under spot with fallback, read from the catalog: the bare spot
    price where the platform builds no on-demand fallback, else the profile's spot/on-demand mix;
    on-demand where no spot price is published."""
    price = offer.prices[region]
    if price.spot is None:
        return price.on_demand
    if rules_for(platform).no_spot_fallback:
        return price.spot
    return spot_share * price.spot + (1 - spot_share) * price.on_demand


def test_8_h100_on_gke_gpu_spot_takes_the_shape_billed_cheapest() -> None:
    """fine-tuning (spot with fallback) on gke-gpu, 8 x H100 in us-central1: a3-highgpu-8g is
    billed $57.77/h expected (80 % spot, 20 % on-demand), a3-megagpu-8g $58.60/h; ranked at the
    bare spot price the dearer a3-megagpu-8g won."""
    profile = PROFILES["fine-tuning"]
    work = Workload.model_validate(
        {
            "profile": "fine-tuning",
            "platform": "gke-gpu",
            "region": "us-central1",
            "accelerator": "H100-80GB",
            "acceleratorCount": 8,
        }
    )
    spec = spec_for(profile, work, Platform.GKE_GPU, CATALOG, "h100")
    assert (spec.offer, spec.spot) == ("a3-highgpu-8g", True)
    chosen, other = CATALOG.offer("a3-highgpu-8g"), CATALOG.offer("a3-megagpu-8g")
    assert chosen is not None and other is not None
    rate = hourly_rate(chosen, "us-central1", profile, CATALOG, spec.platform)
    assert (
        rate.usd
        == pytest.approx(billed(chosen, "us-central1", Platform.GKE_GPU, 0.8))
        == pytest.approx(57.77, abs=0.01)
    )
    assert [(a.offer, round(a.usd_hour, 2)) for a in spec.alternative_shapes] == [("a3-megagpu-8g", 58.6)]
    assert billed(other, "us-central1", Platform.GKE_GPU, 0.8) == pytest.approx(58.60, abs=0.01)


def _spot_profile(platform: Platform) -> Profile:
    """A shipped profile allowing ``platform``, under spot with fallback (training first: its
    balance is the strictest)."""
    order = ["fine-tuning", "experimentation", "batch-inference", "scale-training", "realtime-inference"]
    name = next(n for n in order if platform in PROFILES[n].platforms)
    return PROFILES[name].model_copy(update={"pricing": PricingModel.SPOT_WITH_FALLBACK})


SPOT_PLATFORMS = [
    p
    for p in Platform
    if PricingModel.SPOT_WITH_FALLBACK in rules_for(p).pricing
    and CATALOG.offers_on(SIZED_AS.get(p, p))  # declared servers are priced by contract, not ranked
    and any(p in q.platforms for q in PROFILES.values())
]


def _asks(platform: Platform) -> list[tuple[str, str, int | None]]:
    """(region, accelerator, count) of each accelerator the platform's VMs sell, in each priced region."""
    vm = SIZED_AS.get(platform, platform)
    asks = set()
    for offer in CATALOG.offers_on(vm):
        if not offer.accelerator:
            continue
        tpu = offer.hosts > 1 or bool(offer.topology)
        for region in offer.prices:
            asks.add((region, offer.name, None) if tpu else (region, offer.accelerator, offer.host.accelerator_count))
    return sorted(asks, key=str)


def regret(platform: Platform) -> tuple[int, float]:
    """Over every request on ``platform`` that sizing answers with a shape: how many, and the most
    the chosen shape's billed rate exceeds the cheapest feasible shape's (0: none cheaper)."""
    profile, vm = _spot_profile(platform), SIZED_AS.get(platform, platform)
    pool = platform if platform in SIZED_AS else None
    share, sized, worst = profile.cost.spot_share, 0, 0.0
    for region, accelerator, count in _asks(platform):
        work = Workload.model_validate(
            {
                "profile": profile.name,
                "platform": platform.value,
                "region": region,
                "accelerator": accelerator,
                "acceleratorCount": count,
            }
        )
        try:
            spec = spec_for(profile, work, platform, CATALOG, "regret")
        except (InputError, NothingFits):
            continue
        chosen = CATALOG.offer(spec.offer)
        assert chosen is not None
        same = [o for o in CATALOG.offers_on(vm) if region in o.prices and _same_ask(o, chosen)]
        feasible = [o for o in same if _balanced(profile, o, vm, pool) and _offered(o, region)]
        cheapest = min(billed(o, region, platform, share) for o in feasible)
        sized += 1
        worst = max(worst, billed(chosen, region, platform, share) - cheapest)
    return sized, worst


def _same_ask(offer: Offer, chosen: Offer) -> bool:
    if chosen.hosts > 1 or chosen.topology:
        return offer.name == chosen.name
    return (offer.accelerator, offer.host.accelerator_count) == (chosen.accelerator, chosen.host.accelerator_count)


def _balanced(profile: Profile, offer: Offer, vm: Platform, pool: Platform | None) -> bool:
    _, report, reason = assess(profile, offer, vm, 1, pool)
    return report.ok and not reason


def _offered(offer: Offer, region: str) -> bool:
    return not offer.zones or bool(offer.zones_in(region))


@pytest.mark.parametrize("platform", SPOT_PLATFORMS, ids=lambda p: p.value)
def test_spot_regret_is_zero_on_every_platform(platform: Platform) -> None:
    """Every request the platform's VMs sell, in every priced region: the chosen shape is billed
    no more than the cheapest feasible one."""
    sized, worst = regret(platform)
    assert sized > 0
    assert worst == pytest.approx(0.0, abs=1e-9), f"{platform.value}: ${worst:.2f}/h over the cheapest"
