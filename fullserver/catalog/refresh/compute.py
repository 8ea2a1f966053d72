"""Where Compute Engine sells each machine series and each attachable GPU, from its own API.

Design notes: docs/design/catalog.md.
"""

from __future__ import annotations

import datetime as dt
import urllib.parse
from collections.abc import Callable, Iterable, Iterator

from fullserver.catalog.model import CatalogFile, Source
from fullserver.catalog.refresh.http import FetchError, Opener, pages
from fullserver.catalog.refresh.rows import Fetched, Row
from fullserver.platform import Platform
from fullserver.platforms import rules_for

API = "https://compute.googleapis.com/compute/v1"
DOCS_URL = "https://cloud.google.com/compute/docs/reference/rest/v1/machineTypes/aggregatedList"
SOURCE_KEY = "gcp-compute-zones"
MAX_PAGES = 50

_GCE = rules_for(Platform.GCP_GPU)
"""Compute Engine's platform: how its zones and machine series are named."""


def _series(machine_type: str) -> str:
    assert _GCE.machine_series is not None  # Compute Engine names its machine series
    return _GCE.machine_series(machine_type)


def _aggregated_url(project: str, collection: str, names: str, page_token: str) -> str:
    """One page of ``{collection}.aggregatedList`` filtered on a name pattern (RE2, whole name)."""
    query = {"filter": f'name eq "{names}"', "maxResults": "500", "returnPartialSuccess": "true"}
    if page_token:
        query["pageToken"] = page_token
    return f"{API}/projects/{urllib.parse.quote(project)}/aggregated/{collection}?{urllib.parse.urlencode(query)}"


def _listed(opener: Opener, project: str, collection: str, url: Callable[[str], str]) -> Iterator[tuple[str, str]]:
    """(name, zone) of every entry of an aggregated list, following ``nextPageToken``; entries sit
    under ``items["zones/<zone>"][collection]`` (a zone with nothing on a page holds a warning)."""
    for page in pages(opener, url, MAX_PAGES):
        items = page.get("items") if isinstance(page, dict) else None
        if not isinstance(items, dict):
            raise FetchError(
                url("").split("?")[0], "no 'items' map in the response", f"not {collection}.aggregatedList"
            )
        for scope, listing in items.items():
            for entry in (listing or {}).get(collection, []) if isinstance(listing, dict) else []:
                zone = str(entry.get("zone", "")).rsplit("/", 1)[-1] or scope.removeprefix("zones/")
                yield str(entry.get("name", "")), zone


def machine_types_url(project: str, series: Iterable[str], page_token: str = "") -> str:
    return _aggregated_url(project, "machineTypes", f"({'|'.join(sorted(series))})-.*", page_token)


def zones_by_series(opener: Opener, project: str, series: set[str]) -> dict[str, set[str]]:
    """Every zone offering each series (a series is a machine type's name without its size)."""
    found: dict[str, set[str]] = {s: set() for s in series}
    for name, zone in _listed(opener, project, "machineTypes", lambda t: machine_types_url(project, series, t)):
        s = _series(name)
        if s in found and _GCE.region_of_zone(zone):
            found[s].add(zone)
    return found


def fetch_zones(data: CatalogFile, opener: Opener, project: str, today: dt.date, regions: Iterable[str]) -> Fetched:
    """machine_zones rows for the file's series and attachable_gpus zone rows for its attachable
    GPUs, restricted to ``regions``."""
    series = {row.series for row in data.machine_zones}
    wanted = set(regions)
    source = Source(
        title="Compute Engine API machineTypes and acceleratorTypes aggregatedList (zones per machine series and "
        "per attachable GPU)",
        url=DOCS_URL,
        as_of=today,
        as_of_kind="retrieved",
        note=(
            f"Written by `fullserver catalog refresh --provider gcp-zones` on {today.isoformat()} for the "
            f"regions {', '.join(sorted(wanted))}: the zones in which the project could create any size of "
            "each series, and in which each attachable GPU could be attached. A zone without capacity at the "
            "moment still lists them."
        ),
    )
    fetched = Fetched(SOURCE_KEY, source)
    attachable = {(a.accelerator, a.machine_family) for a in data.attachable_gpus}
    if attachable:
        by_gpu = zones_by_accelerator(opener, project)
        for acc, family in sorted(attachable):
            kept = sorted(z for z in by_gpu.get(acc, set()) if _GCE.region_of_zone(z) in wanted)
            if kept:
                fetched.rows.append(Row("attachable_gpus", (acc, family), {}, lists={"zones": kept}))
            else:
                fetched.problems.append(f"{acc}: attachable in none of {', '.join(sorted(wanted))}; its zones are kept")
    for name, zones in sorted(zones_by_series(opener, project, series).items()):
        kept = sorted(z for z in zones if _GCE.region_of_zone(z) in wanted)
        if kept:
            fetched.rows.append(Row("machine_zones", (name,), {}, lists={"zones": kept}))
        else:
            fetched.problems.append(f"{name}: sold in none of {', '.join(sorted(wanted))}; its zones are kept")
    return fetched


ACCELERATOR_TYPES = {
    # Compute Engine accelerator type -> the catalog's attachable GPU (gcp.yaml attachable_gpus)
    "nvidia-tesla-t4": "T4",
    "nvidia-tesla-p4": "P4",
    "nvidia-tesla-v100": "V100-16GB",
    "nvidia-tesla-p100": "P100",
}
"""The GPUs attached to N1 hosts, by the names acceleratorTypes.aggregatedList gives them."""


def accelerator_types_url(project: str, page_token: str = "") -> str:
    return _aggregated_url(project, "acceleratorTypes", f"({'|'.join(sorted(ACCELERATOR_TYPES))})", page_token)


def zones_by_accelerator(opener: Opener, project: str) -> dict[str, set[str]]:
    """Every zone offering each attachable GPU."""
    found: dict[str, set[str]] = {acc: set() for acc in ACCELERATOR_TYPES.values()}
    for name, zone in _listed(opener, project, "acceleratorTypes", lambda t: accelerator_types_url(project, t)):
        ours = ACCELERATOR_TYPES.get(name)
        if ours and _GCE.region_of_zone(zone):
            found[ours].add(zone)
    return found


def bearer_headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


__all__ = [
    "ACCELERATOR_TYPES",
    "SOURCE_KEY",
    "accelerator_types_url",
    "bearer_headers",
    "fetch_zones",
    "machine_types_url",
    "zones_by_accelerator",
    "zones_by_series",
]
