"""Reading one very large JSON object a member at a time, with the standard library only.

The AWS Price List offer file for EC2 in one region is hundreds of megabytes (all regions: gigabytes)
of one JSON object: ``products`` and ``terms`` hold a small object per SKU. ``json.load`` would hold
all of it in memory. This reader walks the outer objects member by member and decodes each small
inner value with ``json.JSONDecoder.raw_decode``, so memory stays at the size of one chunk plus one
value whatever the file size. No third-party parser (ijson) is needed, so a refresh runs wherever the
core runs.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from typing import Any, BinaryIO, NoReturn

from fullserver.errors import InputError

CHUNK_CHARS = 1 << 20
"""Characters read at a time (about 1 MiB)."""

MAX_VALUE_CHARS = 64 << 20
"""The largest single value decoded whole; the outer objects are walked, never decoded whole."""

_WHITESPACE = " \t\r\n"


class JsonStream:
    """A cursor over a JSON text read from ``stream`` in chunks.

    ``members()`` walks an object lazily; inside it, the caller decodes a member's value with
    ``value()``, walks it with ``members()`` (an array: ``elements()``), or leaves it: a value left
    alone is skipped when the walk moves on, so a consumer reads only the parts it needs.
    """

    def __init__(self, stream: BinaryIO, where: str, chunk_chars: int = CHUNK_CHARS) -> None:
        self._stream = stream
        self._where = where
        self._chunk = chunk_chars
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._json = json.JSONDecoder()
        self._buf = ""
        self._pos = 0
        self._base = 0  # characters dropped from the front of the buffer
        self._eof = False

    # -- buffer -------------------------------------------------------------------------------
    def _fill(self) -> bool:
        """Append the next chunk; False at the end of the stream."""
        if self._eof:
            return False
        raw = self._stream.read(self._chunk)
        if not raw:
            self._eof = True
            self._buf += self._decoder.decode(b"", final=True)
            return False
        if self._pos > self._chunk:  # drop what was consumed, so the buffer stays small
            self._buf = self._buf[self._pos :]
            self._base += self._pos
            self._pos = 0
        self._buf += self._decoder.decode(raw)
        return True

    def _peek(self) -> str:
        """The next non-blank character (not consumed), or '' at the end."""
        while True:
            while self._pos < len(self._buf) and self._buf[self._pos] in _WHITESPACE:
                self._pos += 1
            if self._pos < len(self._buf):
                return self._buf[self._pos]
            if not self._fill():
                return ""

    def _expect(self, char: str) -> None:
        got = self._peek()
        if got != char:
            self._fail(f"expected '{char}', found {got!r}" if got else f"expected '{char}', found the end")
        self._pos += 1

    def _fail(self, what: str) -> NoReturn:
        raise InputError(
            self._where, f"malformed JSON at character {self._base + self._pos}: {what}", "fetch the file again"
        )

    # -- values -------------------------------------------------------------------------------
    def value(self) -> Any:
        """Decode the next whole value (a member's value, or an array element)."""
        self._peek()
        while True:
            try:
                obj, end = self._json.raw_decode(self._buf, self._pos)
            except json.JSONDecodeError as exc:
                if len(self._buf) - self._pos > MAX_VALUE_CHARS:
                    self._fail(f"a value larger than {MAX_VALUE_CHARS} characters")
                if self._fill():
                    continue
                self._fail(exc.msg)
            # A number that ends where the buffer ends may continue in the next chunk.
            if end == len(self._buf) and self._fill():
                continue
            self._pos = end
            return obj

    def members(self) -> Iterator[str]:
        """Walk the object that comes next: yields each key; a value left unread is skipped."""
        self._expect("{")
        if self._peek() == "}":
            self._pos += 1
            return
        while True:
            key = self.value()
            if not isinstance(key, str):
                self._fail("an object key that is not a string")
            self._expect(":")
            self._peek()
            mark = self._base + self._pos
            yield key
            if self._base + self._pos == mark:
                self.value()  # the consumer left the value alone: skip it
            nxt = self._peek()
            self._pos += 1
            if nxt == "}":
                return
            if nxt != ",":
                self._pos -= 1
                self._fail(f"expected ',' or '}}', found {nxt!r}" if nxt else "the object is not closed")

    def elements(self) -> Iterator[int]:
        """Walk the array that comes next: yields each element's index; an element left unread is
        skipped (the Savings Plans files hold their products and terms in arrays, not objects)."""
        self._expect("[")
        if self._peek() == "]":
            self._pos += 1
            return
        index = 0
        while True:
            self._peek()
            mark = self._base + self._pos
            yield index
            if self._base + self._pos == mark:
                self.value()  # the consumer left the element alone: skip it
            index += 1
            nxt = self._peek()
            self._pos += 1
            if nxt == "]":
                return
            if nxt != ",":
                self._pos -= 1
                self._fail(f"expected ',' or ']', found {nxt!r}" if nxt else "the array is not closed")
