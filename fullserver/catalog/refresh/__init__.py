"""Refreshing the catalog's prices from the providers' own published sources.

``refresh(["aws", "gcp", "tpu"], today=...)`` compares each provider's price source with its data
file and returns one ``RefreshReport`` per provider, in the order asked (several may edit one file,
each from the text the previous left): figures up or down, rows added or gone, shapes the catalog
lacks or no longer sells, and what it could not use. ``write=True`` writes the edited file, but
only after the whole catalog, edited files included, loads and validates.

Design notes: docs/design/catalog.md.
"""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from fullserver.catalog import DATA_DIR, catalog_from_data, load_catalog
from fullserver.catalog.model import CatalogFile
from fullserver.catalog.network import NOT_SHAPES
from fullserver.catalog.refresh.apply import apply_rows
from fullserver.catalog.refresh.ask import Ask
from fullserver.catalog.refresh.http import FetchError, Opener, redact, urllib_opener
from fullserver.catalog.refresh.rows import FigureChange, RefreshReport
from fullserver.clouds import RefreshSource, all_clouds
from fullserver.errors import FullserverError, InputError
from fullserver.yamlio import load_yaml_text, parse, read_yaml

__all__ = [
    "PROVIDER_FILES",
    "FetchError",
    "FigureChange",
    "Opener",
    "RefreshReport",
    "file_regions",
    "redact",
    "refresh",
]


SOURCES: dict[str, RefreshSource] = {name: src for c in all_clouds() for name, src in c.refresh_sources.items()}
"""Each ``--provider``: the data file it refreshes and the fetcher that reads its source (each
cloud's own, ``fullserver.clouds``)."""

DEFAULT_PROVIDERS = tuple(name for name, src in SOURCES.items() if src.default)
"""What ``catalog refresh`` runs when no ``--provider`` is named: the public price sources."""

PROVIDER_FILES = {provider: src.file for provider, src in SOURCES.items()}
"""The data file each ``--provider`` refreshes (``aws-spot`` and ``aws-types``: the EC2 API, with
credentials; ``aws-savings-plans``: the public Savings Plans files; ``gcp-zones``: the Compute
Engine API, with a project and an access token; each works on the file the
previous provider left when several are asked for)."""

_PRICE_SECTIONS = ("shape_prices", "accelerator_prices", "tpu_prices", "storage_prices", "egress_prices")


def file_regions(data: CatalogFile) -> list[str]:
    """The regions a data file prices anything in, in the order they first appear."""
    seen: dict[str, None] = {}
    for name in _PRICE_SECTIONS:
        for row in getattr(data, name):
            seen.setdefault(row.region, None)
    return list(seen)


def refresh(
    providers: Iterable[str],
    *,
    today: dt.date,
    data_dir: Path = DATA_DIR,
    opener: Opener | None = None,
    gcp_api_key: str | None = None,
    regions: Iterable[str] = (),
    prune: bool = False,
    write: bool = False,
    ec2_client_for: Callable[[str], Any] | None = None,
    now: dt.datetime | None = None,
    gcp_project: str | None = None,
    gcp_access_token: str | None = None,
) -> list[RefreshReport]:
    """Refresh the data files of ``providers`` (keys of ``PROVIDER_FILES``); see the module docstring.

    ``regions`` adds regions to those each file already prices. ``prune`` removes rows the provider
    no longer prices (they are reported either way). Nothing is written unless ``write`` is true and
    the whole catalog, with every edited file, validates.
    """
    wanted = list(dict.fromkeys(providers))
    unknown = [p for p in wanted if p not in PROVIDER_FILES]
    if unknown:
        raise InputError("--provider", f"unknown provider '{unknown[0]}'", f"use {', '.join(PROVIDER_FILES)}")
    given_opener = opener
    opener = opener or urllib_opener()
    extra = list(regions)
    # the non-shape data files (``NOT_SHAPES``: network, quotas, kubernetes, images, ...) are read apart
    texts = {p.name: p.read_text(encoding="utf-8") for p in sorted(data_dir.glob("*.yaml")) if p.name not in NOT_SHAPES}
    parsed = {name: read_yaml(data_dir / name) for name in texts}
    skus: dict[str, list[dict[str, Any]]] = {}
    reports: list[RefreshReport] = []
    for provider in wanted:
        name, fetch = SOURCES[provider].file, SOURCES[provider].fetch
        path = data_dir / name
        if name not in texts:
            raise InputError(str(path), "no such data file", "run the refresh against the catalog's data directory")
        data = parse(CatalogFile, parsed[name], str(path))
        ask = Ask(
            provider,
            data,
            list(dict.fromkeys([*file_regions(data), *extra])),  # the file's regions and those asked for
            extra,
            opener,
            given_opener,
            today,
            now,
            ec2_client_for,
            gcp_api_key,
            gcp_project,
            gcp_access_token,
            skus,
        )
        fetched = fetch(ask)
        report = RefreshReport(provider, str(path), fetched.source_key, fetched.source, original=texts[name])
        report.text = apply_rows(texts[name], parsed[name], fetched, report, prune)
        report.not_in_catalog = fetched.not_in_catalog
        report.shapes_gone = fetched.shapes_gone
        report.problems = fetched.problems
        parsed[name] = _validate(path, report.text)
        texts[name] = report.text
        reports.append(report)
    try:
        catalog_from_data([(str(data_dir / n), d) for n, d in parsed.items()])
    except FullserverError as exc:
        raise InputError(
            exc.where, f"the refreshed catalog would not load: {exc.what}", "nothing was written"
        ) from None
    if write:
        for report in reports:
            if report.changed:
                _write_atomic(Path(report.path), report.text)
                report.written = True
        load_catalog.cache_clear()
    return reports


def _validate(path: Path, text: str) -> dict[str, Any]:
    """The edited text parsed with a file's guards (``load_yaml_text``) and checked against the
    file schema."""
    try:
        data = load_yaml_text(text, str(path))
    except FullserverError as exc:
        raise InputError(str(path), f"the refreshed file would not parse: {exc.what}", "nothing was written") from None
    if not isinstance(data, dict):  # an edited mapping stays one
        raise InputError(str(path), "the refreshed file is not a mapping", "nothing was written")
    parse(CatalogFile, data, f"{path} (refreshed)")
    return data


def _write_atomic(path: Path, text: str) -> None:
    """Write through a temporary file in the same directory, so a reader never sees half a file."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
