"""Platform -> its component package, as each platform's ``PlatformRules.components`` names it.

Like pulumi-eks's one map from type name to factory: a platform's package
(``components/<platform>/``) defines ``ENTRY`` in its ``__init__`` (or ``ENTRIES``, by platform,
for a package serving several: ``components.gke``): everything the program, the graph and
verify need to know about the platform. Callers ask the entry; nothing outside a platform's
package compares platform names.

Design notes: docs/design/components.md.
"""

from __future__ import annotations

import importlib

from components.args import refuse
from components.entry import PlatformEntry as PlatformEntry  # re-exported: what callers ask
from fullserver.platform import Platform
from fullserver.platforms import all_rules

PACKAGES: dict[Platform, str] = {r.platform: r.components for r in all_rules()}
"""Each platform's component package (it defines ``ENTRY``), as its ``PlatformRules.components``
names it: the registry adds no line of its own for a new platform."""


def entry(platform: Platform) -> PlatformEntry:
    """The platform's entry, importing its package on first use."""
    path = PACKAGES[platform]
    try:
        module = importlib.import_module(path)
    except ModuleNotFoundError as exc:
        if exc.name != path:
            raise
        raise refuse(
            "platform",
            f"{platform.value} environments are not available in this build ({path.replace('.', '/')} is missing)",
            "plan another platform, or update fullserver",
        ) from None
    entries: dict[Platform, PlatformEntry] | None = getattr(module, "ENTRIES", None)  # a package of several
    found: PlatformEntry = entries[platform] if entries is not None else module.ENTRY
    return found


def entries() -> list[PlatformEntry]:
    """Every platform's entry (imports every package: for the component provider host)."""
    return [entry(p) for p in PACKAGES]
