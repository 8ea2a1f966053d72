"""What a refresh produces and reports: price rows keyed as the data files key them, and changes.

A provider module turns its API's responses into ``Row``s (one per data-file row it can price)
plus the ``scope`` it looked in, so a row the file has but the provider no longer prices can be
told apart from one the refresh never looked for. ``apply.py`` compares them with the file.
"""

from __future__ import annotations

import datetime as dt
import difflib
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

from fullserver.catalog.model import Source


@dataclass(frozen=True)
class Section:
    """One list of a data file: the fields that identify a row and the figures it holds.

    ``spot`` names the figure that may keep its own source (``spot_source``) when a refresh
    updates the rest of the row from a source that publishes no spot price (AWS Price List).
    """

    name: str
    ident: tuple[str, ...]
    values: tuple[str, ...]
    spot: str | None = None
    replace_lists: tuple[str, ...] = ()
    """Lists a refresh rewrites when its source says otherwise (a series' zones); any other list
    that differs leaves the row as it is (a discount's shapes)."""
    list_source: str = "source"
    """The field naming where the row's lists come from (``zones_source`` on an attachable GPU,
    whose ``source`` is its limits' table)."""


SECTIONS: dict[str, Section] = {
    s.name: s
    for s in (
        Section("shape_prices", ("shape", "region"), ("on_demand_usd_hour", "spot_usd_hour"), "spot_usd_hour"),
        Section(
            "accelerator_prices", ("accelerator", "region"), ("on_demand_usd_hour", "spot_usd_hour"), "spot_usd_hour"
        ),
        Section(
            "tpu_prices",
            ("generation", "region"),
            ("on_demand_usd_chip_hour", "spot_usd_chip_hour"),
            "spot_usd_chip_hour",
        ),
        Section(
            "storage_prices",
            ("provider", "kind", "region"),
            ("usd_gib_month", "usd_iops_month", "usd_mbps_month", "free_iops", "free_mbps"),
        ),
        Section("egress_prices", ("provider", "region"), ("usd_per_gb",)),
        Section("commitment_discounts", ("provider", "applies_to", "term_years"), ("discount",)),
        Section("machine_zones", ("series",), (), replace_lists=("zones",)),
        Section(
            "attachable_gpus",
            ("accelerator", "machine_family"),
            (),
            replace_lists=("zones",),
            list_source="zones_source",
        ),
        Section(
            "shapes",
            ("name",),
            (
                "accelerator_count",
                "vcpus",
                "memory_gib",
                "local_nvme_disks",
                "local_nvme_disk_gb",
                "network_gbps",
                "efa_interfaces",
                "pods",
            ),
        ),
    )
}

Ident = tuple[str, ...]
RowKey = tuple[str, Ident]


@dataclass(frozen=True)
class Row:
    """A row a provider can vouch for: its identity and the figures its source gives."""

    section: str
    ident: tuple[str | int, ...]
    values: dict[str, Decimal]
    lists: dict[str, list[str]] = field(default_factory=dict)
    """Lists the row is written with and must already hold to be updated (a commitment discount's
    ``shapes``): a file row whose list differs is left as it is and reported, never re-pointed."""

    @property
    def key(self) -> RowKey:
        return (self.section, tuple(str(i) for i in self.ident))


def label(key: RowKey) -> str:
    """``shape_prices g5.xlarge us-east-1``: how a row is named in reports."""
    section, ident = key
    return f"{section} {' '.join(ident)}"


@dataclass
class Fetched:
    """What one provider's sources gave for one data file."""

    source_key: str
    source: Source
    rows: list[Row] = field(default_factory=list)
    scope: set[RowKey] = field(default_factory=set)
    """Rows looked for: a file row in scope that no fetched row matches is "gone"."""
    not_in_catalog: list[str] = field(default_factory=list)
    """Shapes added: what the provider sells, in families the catalog tracks, that the catalog lacks."""
    shapes_gone: list[str] = field(default_factory=list)
    """Catalog shapes the provider prices in none of the regions read."""
    problems: list[str] = field(default_factory=list)
    """Prices found but not used (ambiguous SKUs, unexpected units), each in one line."""
    figures_only: bool = False
    """The source gives shapes' own figures (EC2 DescribeInstanceTypes), not prices: each figure is
    written with this source in the row's ``figure_sources``; rows are never added or called gone."""
    spot_only: bool = False
    """The source gives spot prices only (EC2 spot price history): each is written with this
    source as the row's ``spot_source``; the row's other figures and ``source`` stay; a row the
    file lacks is not added, since it would have no on-demand price."""


@dataclass(frozen=True)
class FigureChange:
    """One figure of one row: old and new value (``None`` when the figure is new or dropped)."""

    row: str
    field: str
    old: float | None
    new: float | None

    @property
    def direction(self) -> Literal["up", "down", "new", "dropped"]:
        if self.old is None:
            return "new"
        if self.new is None:
            return "dropped"
        return "up" if self.new > self.old else "down"

    @property
    def percent(self) -> float | None:
        if self.old is None or self.new is None or self.old == 0:
            return None
        return round((self.new - self.old) / self.old * 100, 2)

    def line(self) -> str:
        if self.old is None:
            return f"{self.row}: {self.field} new {self.new:.10g}"
        if self.new is None:
            return f"{self.row}: {self.field} {self.old:.10g} dropped"
        pct = abs(self.percent or 0)
        size = f"{pct:.2f}%" if pct >= 0.01 else "<0.01%"
        return f"{self.row}: {self.field} {self.old:.10g} -> {self.new:.10g} ({self.direction} {size})"


@dataclass
class RefreshReport:
    """What a refresh of one data file found and did; ``text`` is the file as it would be written."""

    provider: str
    path: str
    source_key: str
    source: Source
    changes: list[FigureChange] = field(default_factory=list)
    unchanged: int = 0
    """Rows whose figures were confirmed as they were (their source and date are updated)."""
    added: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    pruned: bool = False
    moved: list[str] = field(default_factory=list)
    """Lists rewritten, each with what came and went (a series' zones: ``+us-central1-f``)."""
    kept: list[str] = field(default_factory=list)
    """Rows in scope left as they were, and why (e.g. a figure the new source does not give)."""
    not_in_catalog: list[str] = field(default_factory=list)
    shapes_gone: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    original: str = ""
    """The file's text before the refresh."""
    text: str = ""
    """The file's text after it (written only when asked)."""
    written: bool = False

    @property
    def changed(self) -> bool:
        """Whether the refresh changes the file (figures, rows, or only sources and dates)."""
        return self.text != self.original

    def diff(self) -> str:
        """The change to the file as a unified diff (for a dry run)."""
        return "".join(
            difflib.unified_diff(
                self.original.splitlines(keepends=True),
                self.text.splitlines(keepends=True),
                fromfile=self.path,
                tofile=f"{self.path} (refreshed)",
            )
        )

    def lines(self) -> list[str]:
        """The report as lines a person reads (the command line prints them)."""
        out = [
            f"{self.path}: {len(self.changes)} figure(s) changed, {len(self.moved)} list(s) moved, "
            f"{self.unchanged} row(s) confirmed, "
            f"{len(self.added)} added, {len(self.gone)} gone{' (removed)' if self.pruned and self.gone else ''}"
            f" - source {self.source_key}, as of {self.source.as_of} ({self.source.as_of_kind})"
        ]
        out += [f"  {c.line()}" for c in self.changes]
        out += [f"  added: {a}" for a in self.added]
        out += [f"  gone: {g}{'' if self.pruned else ' (kept; --prune removes it)'}" for g in self.gone]
        out += [f"  moved: {m}" for m in self.moved]
        out += [f"  kept: {k}" for k in self.kept]
        out += [f"  shape added by the provider (not in the catalog): {n}" for n in self.not_in_catalog]
        out += [f"  shape gone (priced in no region read): {n}" for n in self.shapes_gone]
        out += [f"  problem: {p}" for p in self.problems]
        return out

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data (``--json``)."""
        return {
            "provider": self.provider,
            "path": self.path,
            "source_key": self.source_key,
            "source": self.source.model_dump(mode="json"),
            "changes": [
                {
                    "row": c.row,
                    "field": c.field,
                    "old": c.old,
                    "new": c.new,
                    "direction": c.direction,
                    "percent": c.percent,
                }
                for c in self.changes
            ],
            "unchanged": self.unchanged,
            "added": self.added,
            "gone": self.gone,
            "pruned": self.pruned,
            "moved": self.moved,
            "kept": self.kept,
            "not_in_catalog": self.not_in_catalog,
            "shapes_gone": self.shapes_gone,
            "problems": self.problems,
            "written": self.written,
        }


def date_of(timestamp: str) -> dt.date | None:
    """The UTC date of an RFC 3339 timestamp (``2023-03-28T23:47:21Z``), or None."""
    try:
        return dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).astimezone(dt.UTC).date()
    except (ValueError, AttributeError):
        return None
