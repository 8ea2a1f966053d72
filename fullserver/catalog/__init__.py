"""The hardware catalog: every purchasable node shape with its figures, prices and sources.

Data lives in ``data/*.yaml`` (see ``model.py`` for the schema). Loading validates the whole
catalog across files — duplicates, unknown accelerators, unknown sources, impossible values —
and flattens provider quirks into one list of ``Offer``s that sizing can compare:
an AWS instance type, a GCP machine type, a GCP N1 host with N attached GPUs, or a TPU slice.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from fullserver.catalog.loader import _Loader
from fullserver.catalog.memo import Same
from fullserver.catalog.network import NOT_SHAPES
from fullserver.catalog.offer import Catalog, Figure, Offer, Price
from fullserver.errors import InputError
from fullserver.yamlio import read_yaml

__all__ = ["DATA_DIR", "Catalog", "Figure", "Offer", "Price", "Same", "catalog_from_data", "load_catalog"]

DATA_DIR = Path(__file__).resolve().parent / "data"


@functools.lru_cache(maxsize=8)
def _load_directory(directory: Path) -> Catalog:
    # the non-shape data files (``NOT_SHAPES``: network, quotas, kubernetes, images, ...) are read apart
    paths = sorted(p for p in directory.glob("*.yaml") if p.name not in NOT_SHAPES)
    if not paths:
        raise InputError(str(directory), "no catalog data files", "add data/*.yaml files")
    return _Loader([(str(p), read_yaml(p)) for p in paths]).build()


class _CatalogLoader:
    """``load_catalog(directory)``: load and validate every ``*.yaml`` under ``directory`` (the
    shipped data by default), cached once per directory however it is named (``load_catalog()``
    and ``load_catalog(DATA_DIR)`` are one load, not two); the data is read-only."""

    def __call__(self, directory: Path = DATA_DIR) -> Catalog:
        return _load_directory(directory.resolve())

    def cache_clear(self) -> None:
        _load_directory.cache_clear()

    def cache_info(self) -> Any:
        return _load_directory.cache_info()


load_catalog = _CatalogLoader()


def catalog_from_data(files: list[tuple[str, dict[str, Any]]]) -> Catalog:
    """Build a catalog from already-parsed data files (``(name, data)`` pairs); validated the same way."""
    return _Loader(files).build()
