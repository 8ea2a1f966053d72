"""What a plan says about the shapes it did not choose: every cheaper one passed over, with
why, and only the ways out of "nothing fits" that exist."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from fullserver.catalog import Catalog
from fullserver.catalog.model import Platform
from fullserver.platforms import rules_for


def nothing_fits_hint(
    accelerator: str | None, accelerator_count: int | None, platform: Platform, catalog: Catalog
) -> str:
    """Only the ways out that exist: fewer accelerators only where the platform sells fewer per node
    (the stack's accelerator and count per node)."""
    ways = ["pick another region or platform", "relax the profile"]
    count = accelerator_count or 1
    acc = accelerator
    if not rules_for(platform).supply.named_by_type and acc is not None:
        name = catalog.aliases.get(acc.lower())
        fewer = sorted(
            {o.host.accelerator_count for o in catalog.offers_on(platform, name) if o.host.accelerator_count < count}
        )
        if fewer:
            ways.insert(
                0, f"lower the accelerator count ({platform.value} sells {', '.join(map(str, fewer))} per node)"
            )
    return ", or ".join([", ".join(ways[:-1]), ways[-1]])


MAX_NEAR_MISSES = 5
"""The most near-misses shown in all, unless more are cheaper than the chosen shape: those are all
shown, and the others only fill up to this many."""


class _Missed(Protocol):
    """A rejected shape as ``near_misses`` reads it (the ranking's ``Miss``, a spec's ``NearMiss``)."""

    @property
    def offer(self) -> str: ...
    @property
    def usd_hour(self) -> float | None: ...


M = TypeVar("M", bound=_Missed)


def near_misses(near: Sequence[M], chosen_usd: float) -> list[M]:
    """Every rejected shape cheaper than the chosen one (cheapest first, each with why), then the
    closest others up to ``MAX_NEAR_MISSES`` (``near``: closest first)."""
    cheaper = sorted(
        (m for m in near if m.usd_hour is not None and m.usd_hour < chosen_usd - 1e-9),
        key=lambda m: (m.usd_hour or 0.0, m.offer),
    )
    shown = {id(m) for m in cheaper}
    rest = [m for m in near if id(m) not in shown][: max(0, MAX_NEAR_MISSES - len(cheaper))]
    return cheaper + rest
