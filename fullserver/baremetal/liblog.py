"""Third-party log records (paramiko's) through fullserver's own output: one line, or nothing.

Design notes: docs/design/bare-metal.md.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

LIBRARY_LOGGERS = ("paramiko",)
LINE_CAP = 200


def _log(line: str) -> None:
    logging.getLogger("fullserver.baremetal").warning(line)


_sink: Callable[[str], None] = _log
_sink_lock = threading.Lock()


class OneLineHandler(logging.Handler):
    """Forwards a library's WARNING records to the sink as one capped line; drops the rest."""

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno < logging.WARNING or record.levelno >= logging.ERROR:
            return
        try:
            text = " ".join(record.getMessage().split())
        except Exception:  # a record with bad %-args must not raise in paramiko's thread
            return
        if not text:
            return
        if len(text) > LINE_CAP:
            text = text[: LINE_CAP - 3] + "..."
        with _sink_lock:
            sink = _sink
        try:
            sink(f"ssh: {text}")
        except Exception:  # the output went away (a closed console): never a traceback for it
            return


def install() -> None:
    """Route every library logger of ``LIBRARY_LOGGERS`` through ``OneLineHandler`` (idempotent)."""
    for name in LIBRARY_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(h, OneLineHandler) for h in logger.handlers):
            logger.addHandler(OneLineHandler())
        logger.propagate = False


@contextmanager
def output(sink: Callable[[str], None]) -> Iterator[None]:
    """Send library warnings to ``sink`` (one line each) inside the block; the logger again after."""
    global _sink
    with _sink_lock:
        before, _sink = _sink, sink
    try:
        yield
    finally:
        with _sink_lock:
            _sink = before
