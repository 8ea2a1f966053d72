"""Where Compute Engine sells each machine series, from the Compute Engine API itself.

``machine_zones`` in ``gcp.yaml`` decides where a node is built and which zones a serving group
spreads over (``fullserver.sizing``, ``fullserver.serving``); a zone that stops selling a series
means a ``pulumi up`` that waits for capacity that is not there. This refresh rewrites each
series' zones from ``machineTypes.aggregatedList`` (REST: ``GET https://compute.googleapis.com/
compute/v1/projects/{project}/aggregated/machineTypes``), which lists, per zone, the machine types
the project can create there: ``{"items": {"zones/us-central1-a": {"machineTypes": [{"name":
"g2-standard-12", "zone": "us-central1-a", ...}]}, "zones/x": {"warning": {...}}}, "nextPageToken":
...}``. The request filters on the series' names (``filter=name eq "(a3-highgpu|g2-standard)-.*"``,
the API's regular-expression ``eq`` form) so the answer stays small.

It needs credentials (``compute.machineTypes.list`` on the project): an OAuth access token, e.g.
``gcloud auth print-access-token``, read from an environment variable so it never lands in shell
history, a report or a file. Zones are kept only in the regions the file prices (or those given),
so the list stays the catalog's, not Google's whole footprint.
"""

from __future__ import annotations

import datetime as dt
import urllib.parse
from collections.abc import Iterable

from fullserver.catalog.model import CatalogFile, Source
from fullserver.catalog.refresh.http import FetchError, Opener, get_json
from fullserver.catalog.refresh.rows import Fetched, Row
from fullserver.platforms import gcp as gce

API = "https://compute.googleapis.com/compute/v1"
DOCS_URL = "https://cloud.google.com/compute/docs/reference/rest/v1/machineTypes/aggregatedList"
SOURCE_KEY = "gcp-compute-machine-types"
MAX_PAGES = 50


def machine_types_url(project: str, series: Iterable[str], page_token: str = "") -> str:
    names = "|".join(sorted(series))
    query = {"filter": f'name eq "({names})-.*"', "maxResults": "500", "returnPartialSuccess": "true"}
    if page_token:
        query["pageToken"] = page_token
    return f"{API}/projects/{urllib.parse.quote(project)}/aggregated/machineTypes?{urllib.parse.urlencode(query)}"


def zones_by_series(opener: Opener, project: str, series: set[str]) -> dict[str, set[str]]:
    """Every zone offering each series (a series is a machine type's name without its size)."""
    found: dict[str, set[str]] = {s: set() for s in series}
    token = ""
    for _ in range(MAX_PAGES):
        url = machine_types_url(project, series, token)
        page = get_json(opener, url)
        items = page.get("items") if isinstance(page, dict) else None
        if not isinstance(items, dict):
            raise FetchError(url.split("?")[0], "no 'items' map in the response", "not machineTypes.aggregatedList")
        for scope, listing in items.items():
            for machine in (listing or {}).get("machineTypes", []) if isinstance(listing, dict) else []:
                name, zone = str(machine.get("name", "")), str(machine.get("zone", "")).rsplit("/", 1)[-1]
                if not zone and scope.startswith("zones/"):
                    zone = scope.removeprefix("zones/")
                s = gce.machine_series(name)
                if s in found and gce.RULES.region_of_zone(zone):
                    found[s].add(zone)
        token = str(page.get("nextPageToken") or "")
        if not token:
            return found
    raise FetchError(f"{API}/projects/{project}/aggregated/machineTypes", f"more than {MAX_PAGES} pages", "retry")


def fetch_zones(data: CatalogFile, opener: Opener, project: str, today: dt.date, regions: Iterable[str]) -> Fetched:
    """machine_zones rows for the file's series, restricted to ``regions``."""
    series = {row.series for row in data.machine_zones}
    wanted = set(regions)
    source = Source(
        title="Compute Engine API machineTypes.aggregatedList (zones per machine series)",
        url=DOCS_URL,
        as_of=today,
        as_of_kind="retrieved",
        note=(
            f"Written by `fullserver catalog refresh --provider gcp-zones` on {today.isoformat()} for the "
            f"regions {', '.join(sorted(wanted))}: the zones in which the project could create any size of "
            "each series. A zone without capacity at the moment still lists its machine types."
        ),
    )
    fetched = Fetched(SOURCE_KEY, source)
    for name, zones in sorted(zones_by_series(opener, project, series).items()):
        kept = sorted(z for z in zones if gce.RULES.region_of_zone(z) in wanted)
        if kept:
            fetched.rows.append(Row("machine_zones", (name,), {}, lists={"zones": kept}))
        else:
            fetched.problems.append(f"{name}: sold in none of {', '.join(sorted(wanted))}; its zones are kept")
    return fetched


def bearer_headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


__all__ = ["SOURCE_KEY", "bearer_headers", "fetch_zones", "machine_types_url", "zones_by_series"]
