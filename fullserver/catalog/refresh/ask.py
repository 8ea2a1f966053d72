"""What one ``catalog refresh --provider``'s fetcher may need (``fullserver.clouds``' sources)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fullserver.catalog.model import CatalogFile
from fullserver.catalog.refresh.http import Opener


@dataclass
class Ask:
    """The data file, its regions (and those asked for), the clients and credentials the caller
    gave, and the Cloud Billing SKUs (listed once for every Google Cloud file of a refresh)."""

    provider: str
    data: CatalogFile
    where: list[str]
    extra: list[str]
    opener: Opener
    given_opener: Opener | None
    today: dt.date
    now: dt.datetime | None
    ec2_client_for: Callable[[str], Any] | None
    gcp_api_key: str | None
    gcp_project: str | None
    gcp_access_token: str | None
    skus: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
