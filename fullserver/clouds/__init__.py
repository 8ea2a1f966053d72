"""The clouds fullserver builds on, one module each: what a cloud answers about itself.

A cloud is what every platform on it shares (``PlatformRules.provider`` is its key): its price
refresh sources and what they re-price, its quota reader, its CLI's install hint, how the offline
graph answers its provider and shows its resources, the policy pack's view of its compute types.
Callers ask ``cloud(key)`` instead of keeping a table per cloud; a module of this package that
defines ``CLOUD`` is registered. The package imports no member at import time, so a member may
import the modules whose questions it answers (``quotacheck``) without a cycle.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import TYPE_CHECKING

from fullserver.clouds.base import Cloud, MockSession, PriceRefresh, RefreshSource, Summary

if TYPE_CHECKING:
    from fullserver.platforms.quota import QuotaNeed, QuotaTable
    from fullserver.quotacheck import Reader

__all__ = ["Cloud", "MockSession", "PriceRefresh", "RefreshSource", "Summary", "all_clouds", "cloud", "of_type"]


def _modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.ispkg)


@cache
def _registry() -> dict[str, Cloud]:
    found = (getattr(importlib.import_module(f"{__name__}.{m}"), "CLOUD", None) for m in _modules())
    return {c.key: c for c in found if isinstance(c, Cloud)}


def all_clouds() -> tuple[Cloud, ...]:
    return tuple(_registry().values())


def cloud(key: str) -> Cloud | None:
    """The cloud a provider key names; None for a platform on no cloud (bare metal)."""
    return _registry().get(key)


def install_hint(program: str) -> str | None:
    """How to install a cloud's CLI by its command name (``Cloud.cli_install``); None: no cloud's."""
    return next((c.cli_install[program] for c in all_clouds() if program in c.cli_install), None)


def of_type(resource_type: str) -> Cloud | None:
    """The cloud whose provider a resource type token belongs to (``aws:ec2/...``)."""
    return cloud(resource_type.split(":", 1)[0])


def readers_for(needs: list[QuotaNeed], table: QuotaTable, gcp_project: str | None) -> dict[str, Reader]:
    """A quota reader for each cloud the needs are on, by provider key (``QuotaNeed.cloud``);
    raises ``NoCredentials`` for a cloud it cannot read."""
    wanted = {n.cloud for n in needs}
    return {c.key: c.quota_reader(table, gcp_project) for c in all_clouds() if c.key in wanted}
