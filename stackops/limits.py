"""What a person may ask for: TTL spellings, and a real range for every duration and count.

Every number a flag takes is checked here before anything is created, against bounds that mean
something (an ephemeral stack lives at most ``MAX_TTL``; a retry waits at most a minute), so a
typo such as ``--ttl 100000000h`` is one line naming the flag (exit 2), never an
``OverflowError`` from ``datetime`` arithmetic, and ``nan`` or ``inf`` never slip through a
comparison (every comparison with ``nan`` is false, so a range check must be written as
"inside", which ``nan`` never is).
"""

from __future__ import annotations

import math
import re
from datetime import timedelta

from fullserver.errors import InputError

MAX_TTL = timedelta(days=30)
"""The longest an ephemeral stack may live: longer is a persistent stack under another name (every
profile's own ``ttl_hours`` is far below; the profile check then applies its own limit)."""
MAX_RETRIES = 20
"""Destroy attempts: with the backoff capped at a minute, 20 is already a 20-minute teardown."""
MAX_BACKOFF_S = 60.0
"""The longest wait between two attempts; also the cap the doubling stops at."""
MAX_GRACE_S = 3600.0
"""The longest the command may take to exit after a signal before it is killed."""

_TTL_PART = re.compile(r"(\d+(?:\.\d+)?)([dhms])")
_UNITS = {"d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
_TTL_HINT = "use e.g. 2h, 90m, 1h30m or 1d"


def parse_ttl(text: str) -> timedelta:
    """``2h``, ``90m``, ``1h30m``, ``1d``; a bare number is hours (as ``ttlHours`` is).

    The seconds are bounded before a ``timedelta`` is made: a huge count would overflow it."""
    s = text.strip().lower()
    try:
        hours = float(s)
    except ValueError:
        pass
    else:
        if not hours > 0 or not math.isfinite(hours):
            raise InputError("--ttl", f"'{text}' is not a positive duration", "e.g. 2h, 90m, 1h30m")
        return _bounded_ttl(text, hours * 3600)
    pos, seconds = 0, 0.0
    for m in _TTL_PART.finditer(s):
        if m.start() != pos:
            break
        seconds += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(s) or seconds <= 0:
        raise InputError("--ttl", f"'{text}' is not a duration", _TTL_HINT)
    return _bounded_ttl(text, seconds)


def _bounded_ttl(text: str, seconds: float) -> timedelta:
    if not seconds <= MAX_TTL.total_seconds():
        raise InputError("--ttl", f"'{text}' is longer than an ephemeral stack may live", _max_ttl_hint())
    return timedelta(seconds=seconds)


def check_ttl(ttl: timedelta) -> timedelta:
    """A TTL given as a ``timedelta`` (the Python API) gets the same range as one typed as text."""
    if ttl <= timedelta(0):
        raise InputError("--ttl", f"{ttl} is not a positive duration", _TTL_HINT)
    if ttl > MAX_TTL:
        raise InputError("--ttl", f"{ttl} is longer than an ephemeral stack may live", _max_ttl_hint())
    return ttl


def _max_ttl_hint() -> str:
    return f"at most {MAX_TTL.days} days ({MAX_TTL.days * 24} h); the profile's ttl_hours is usually lower"


def check_count(flag: str, value: int, low: int, high: int, unit: str) -> int:
    """An integer flag inside ``[low, high]``, or one line naming the flag and the range."""
    if not low <= value <= high:
        raise InputError(flag, f"{value} is out of range", f"use {low} to {high} {unit}")
    return value


def check_seconds(flag: str, value: float, low: float, high: float) -> float:
    """A number of seconds inside ``[low, high]``; ``nan`` and ``inf`` are refused by the same test."""
    if not low <= value <= high:
        raise InputError(flag, f"{value:g} is out of range", f"use {low:g} to {high:g} seconds")
    return value
