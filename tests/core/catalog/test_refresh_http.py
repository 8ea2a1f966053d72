"""``http.pages``: the one reader of Google's paged listings (SKUs, aggregated lists)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, BinaryIO

import pytest

from fullserver.catalog.refresh.http import FetchError, pages


class Pages:
    """Serves page N (``?pageToken=N``) with a token for page N+1 until ``last``; ``None``: forever."""

    def __init__(self, last: int | None) -> None:
        self.last = last
        self.requested: list[str] = []

    def __call__(self, url: str) -> AbstractContextManager[BinaryIO]:
        self.requested.append(url)
        n = int(url.partition("pageToken=")[2] or 0)
        page: dict[str, Any] = {"n": n}
        if self.last is None or n < self.last:
            page["nextPageToken"] = str(n + 1)
        return self._open(json.dumps(page).encode())

    @contextmanager
    def _open(self, body: bytes) -> Iterator[BinaryIO]:
        with io.BytesIO(body) as stream:
            yield stream


def url(token: str) -> str:
    return "https://api.example/v1/things?key=SECRET" + (f"&pageToken={token}" if token else "")


def test_every_page_is_read_once_in_order_until_one_has_no_token() -> None:
    opener = Pages(last=2)
    assert [p["n"] for p in pages(opener, url, max_pages=5)] == [0, 1, 2]
    assert opener.requested == [url(""), url("1"), url("2")]


def test_a_listing_that_never_ends_is_one_error_naming_it_without_its_key() -> None:
    opener = Pages(last=None)
    with pytest.raises(FetchError) as err:
        list(pages(opener, url, max_pages=3))
    assert len(opener.requested) == 3
    assert err.value.where == "https://api.example/v1/things" and "more than 3 pages" in err.value.what
