"""Recorded provider responses served by URL, and small catalogs to refresh, for the refresh tests.

Nothing here touches the network: ``RecordedOpener`` serves files from tests/data/refresh by exact
URL and fails the test on any URL it was not given, so the URLs a refresh builds are checked too.
"""

from __future__ import annotations

import datetime as dt
import io
import shutil
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import BinaryIO

import pytest

from fullserver.catalog import DATA_DIR, load_catalog

DATA = Path(__file__).resolve().parents[2] / "data" / "refresh"
TODAY = dt.date(2026, 11, 23)
PRICING = "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/AmazonEC2"
AWS_URLS = {
    f"{PRICING}/current/region_index.json": DATA / "aws" / "region_index.json",
    f"{PRICING}/20261120180411/us-east-1/index.json": DATA / "aws" / "ec2-us-east-1.json",
    f"{PRICING}/20261119100000/eu-central-1/index.json": DATA / "aws" / "ec2-eu-central-1.json",
}
SAVINGS = "https://pricing.us-east-1.amazonaws.com/savingsPlan/v1.0/aws/AWSComputeSavingsPlan"
SP_URLS = {
    "https://pricing.us-east-1.amazonaws.com/offers/v1.0/aws/index.json": DATA / "aws" / "offer-index.json",
    f"{SAVINGS}/current/region_index.json": DATA / "aws" / "savings-plans-region-index.json",
    f"{SAVINGS}/20261121091502/us-east-1/index.json": DATA / "aws" / "savings-plans-us-east-1.json",
}
SKUS = "https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus"
API_KEY = "test-api-key-123"
GCP_URLS = {
    f"{SKUS}?key={API_KEY}&currencyCode=USD&pageSize=5000": DATA / "gcp" / "skus-page-1.json",
    f"{SKUS}?key={API_KEY}&currencyCode=USD&pageSize=5000&pageToken=CiAKGjBpNDd2Nmp2Zml2cXRx": DATA
    / "gcp"
    / "skus-page-2.json",
}


class RecordedOpener:
    """An ``Opener`` over recorded responses; ``requested`` lists every URL asked for, in order."""

    def __init__(self, urls: dict[str, Path]) -> None:
        self.urls = urls
        self.requested: list[str] = []

    def __call__(self, url: str) -> AbstractContextManager[BinaryIO]:
        self.requested.append(url)
        if url not in self.urls:
            pytest.fail(f"unexpected URL requested: {url}")
        return self._open(self.urls[url])

    @contextmanager
    def _open(self, path: Path) -> Iterator[BinaryIO]:
        with io.BytesIO(path.read_bytes()) as stream:
            yield stream


@pytest.fixture
def opener() -> RecordedOpener:
    return RecordedOpener(AWS_URLS | SP_URLS | GCP_URLS)


def data_dir(tmp_path: Path, *names: str) -> Path:
    """A catalog directory: the real accelerators.yaml plus the named files from tests/data/refresh/catalog."""
    out = tmp_path / "data"
    out.mkdir()
    shutil.copy(DATA_DIR / "accelerators.yaml", out / "accelerators.yaml")
    for name in names:
        shutil.copy(DATA / "catalog" / name, out / name)
    load_catalog.cache_clear()
    return out


def real_data_dir(tmp_path: Path) -> Path:
    """A copy of the shipped catalog (a refresh test must never write to the real files)."""
    out = tmp_path / "real"
    shutil.copytree(DATA_DIR, out)
    load_catalog.cache_clear()
    return out
