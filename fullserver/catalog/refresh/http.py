"""Fetching the providers' published price data over plain HTTPS (standard library only).

Every fetch goes through an ``Opener``: a function from a URL to a readable binary stream. The
default one uses ``urllib``; tests pass one that serves recorded responses from files, so nothing in
the tests touches the network and the URLs a refresh asks for are checked exactly.

API keys travel in query strings (the Cloud Billing Catalog API's ``key=``), so every URL that can
reach a message, a report or a data file passes through ``redact`` first.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any, BinaryIO, cast

from fullserver.errors import FullserverError

Opener = Callable[[str], AbstractContextManager[BinaryIO]]
"""Opens a URL for reading; the context manager closes the connection."""

MAX_JSON_BYTES = 64 << 20
"""The largest JSON response read whole (a Cloud Billing page of 5,000 SKUs is a few MB)."""

USER_AGENT = "fullserver-catalog-refresh"

_SECRET_PARAM = re.compile(r"([?&](?:key|api_key|access_token)=)[^&#]*", re.IGNORECASE)


class FetchError(FullserverError):
    """A provider's price source could not be read (network, HTTP status, or an unexpected shape)."""


def redact(url: str) -> str:
    """The URL with API keys and tokens in its query string replaced by ``REDACTED``."""
    return _SECRET_PARAM.sub(r"\1REDACTED", url)


def urllib_opener(timeout_s: float = 120.0, headers: dict[str, str] | None = None) -> Opener:
    """The default opener: HTTPS GET with a timeout; HTTP errors become one ``FetchError`` line.
    ``headers`` (an ``Authorization`` bearer token) go with every request and into no message."""

    def open_url(url: str) -> AbstractContextManager[BinaryIO]:
        sent = {"User-Agent": USER_AGENT, "Accept": "application/json", **(headers or {})}
        request = urllib.request.Request(url, headers=sent)
        try:
            response = urllib.request.urlopen(request, timeout=timeout_s)
        except urllib.error.HTTPError as exc:
            raise FetchError(redact(url), f"HTTP {exc.code} {exc.reason}", _hint(exc.code)) from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise FetchError(redact(url), f"cannot fetch: {reason}", "check the network and retry") from None
        return cast(AbstractContextManager[BinaryIO], response)

    return open_url


def _hint(status: int) -> str:
    if status in (401, 403):
        return "check the API key or credentials and that the API is enabled for the project"
    if status == 404:
        return "the provider moved or renamed the file; check the index it came from"
    if status == 429:
        return "rate limited: retry later"
    return "retry later"


def get_json(opener: Opener, url: str, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """One JSON document, read whole (refused above ``max_bytes``)."""
    with opener(url) as stream:
        data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FetchError(redact(url), f"response larger than {max_bytes >> 20} MiB", "this is not the expected API")
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise FetchError(redact(url), f"not JSON: {exc}", "this is not the expected API response") from None


def pages(opener: Opener, url: Callable[[str], str], max_pages: int) -> Iterator[Any]:
    """Each page of a Google API listing (``url(token)`` addresses one), following ``nextPageToken``
    until a page has none; the caller checks a page's shape before the next is fetched. More than
    ``max_pages`` pages is an error, never an endless loop."""
    token = ""
    for _ in range(max_pages):
        page = get_json(opener, url(token))
        yield page
        token = str(page.get("nextPageToken") or "") if isinstance(page, dict) else ""
        if not token:
            return
    raise FetchError(redact(url("").split("?")[0]), f"more than {max_pages} pages", "the API kept paging; retry")
