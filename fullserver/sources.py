"""Where a figure comes from and the date it describes: one model for every data file that cites
its sources (the shape catalog, the network prices, the quota table).

A leaf module (it imports only ``fullserver.errors``, itself a leaf) so the platforms' own data can cite sources
without importing the catalog package.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Container
from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

from fullserver.errors import InputError

_COMMIT_PIN = re.compile(r"github\.com/[^/]+/[^/]+/(?:blob|tree|raw)/([0-9a-f]{40})/")


def commit_pin(url: str) -> str | None:
    """The commit a GitHub URL pins (``.../blob/<40 hex>/path``), or None for a moving URL."""
    match = _COMMIT_PIN.search(url)
    return match.group(1) if match else None


def check_snapshot_date(url: str, as_of_kind: str) -> None:
    """A source pinned to a commit is a snapshot with a date of its own (the commit's, or the file's
    generation stamp): dating it by the day it was read would make months-old prices look fresh and
    silence their staleness warnings, so ``retrieved`` is refused for it."""
    pin = commit_pin(url)
    if pin is not None and as_of_kind == "retrieved":
        raise ValueError(
            f"the url pins commit {pin[:12]}: date the source by that snapshot (its commit date as published, "
            "or the file's generation stamp as generated), not by the day it was read (retrieved)"
        )


class Source(BaseModel):
    """Where a figure comes from and the date it describes.

    ``as_of_kind`` says how sure that date is: ``published`` (the page's or commit's own date),
    ``generated`` (a data file's generation stamp), ``approximate`` (bounded by evidence stated in
    the note), or ``retrieved`` (the source states no date: the day its stored copy was read). A
    source pinned to a commit always has a date of its own, so it is never ``retrieved``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    title: str
    url: str
    as_of: dt.date
    as_of_kind: Literal["published", "generated", "approximate", "retrieved"] = "published"
    note: str = ""
    secondary: str = ""
    """Set when the figures were not read from the provider's own page or a dataset dated by its
    generation (a blog, a wiki, a transcription): what the source is and the primary page to confirm
    them against. Every plan whose prices rest on it says so (``fullserver.catalog.staleness``)."""

    @model_validator(mode="after")
    def _dated_by_its_snapshot(self) -> Source:
        check_snapshot_date(self.url, self.as_of_kind)
        return self


def check_cited(where: str, source: str | None, sources: Container[str]) -> None:
    """A row's source is one its file lists: a figure whose source can't be looked up can't be
    dated, so it would never warn when it goes stale. ``None`` is an optional source left out."""
    if source is not None and source not in sources:
        raise InputError(where, f"names unknown source '{source}'", "add it under sources")
