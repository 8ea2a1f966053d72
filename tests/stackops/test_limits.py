"""What a person may ask for: TTL spellings, and a real range for every duration and count."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest

from fullserver.errors import InputError
from stackops.limits import MAX_TTL, check_count, check_seconds, check_ttl, parse_ttl


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2h", timedelta(hours=2)),
        ("90m", timedelta(minutes=90)),
        ("1h30m", timedelta(minutes=90)),
        ("1d", timedelta(days=1)),
        ("3", timedelta(hours=3)),
    ],
)
def test_ttl_accepts_the_usual_spellings(text: str, expected: timedelta) -> None:
    assert parse_ttl(text) == expected


@pytest.mark.parametrize("text", ["", "0", "-1", "2x", "h2", "2h 5"])
def test_a_bad_ttl_is_an_input_error(text: str) -> None:
    with pytest.raises(InputError, match="--ttl"):
        parse_ttl(text)


# -- every duration and count has a real range (issue 14.5) ------------------------------------


@pytest.mark.parametrize("text", ["100000000h", "1e300", "9" * 400 + "h", "31d", "721", "1e400", "nan", "inf"])
def test_a_ttl_beyond_any_ephemeral_stack_is_an_input_error_not_an_overflow(text: str) -> None:
    """``--ttl 100000000h`` used to end in ``OverflowError`` (a ``datetime`` past year 9999)."""
    with pytest.raises(InputError, match=r"^--ttl: "):
        parse_ttl(text)


def test_the_longest_ttl_is_accepted_as_text_and_as_a_timedelta() -> None:
    assert parse_ttl(f"{MAX_TTL.days}d") == MAX_TTL == parse_ttl(f"{MAX_TTL.days * 24}")
    assert check_ttl(MAX_TTL) == MAX_TTL


@pytest.mark.parametrize("ttl", [timedelta(0), -timedelta(hours=1), MAX_TTL + timedelta(seconds=1), timedelta.max])
def test_a_ttl_given_as_a_timedelta_gets_the_same_range(ttl: timedelta) -> None:
    with pytest.raises(InputError, match=r"^--ttl: "):
        check_ttl(ttl)


@pytest.mark.parametrize("value", [0, -1, 21, 10**30])
def test_a_count_out_of_range_is_one_line_naming_the_flag(value: int) -> None:
    with pytest.raises(InputError, match=r"^--retries: -?\d+ is out of range \(use 1 to 20 attempts\)$"):
        check_count("--retries", value, 1, 20, "attempts")
    assert check_count("--retries", 20, 1, 20, "attempts") == 20


@pytest.mark.parametrize("value", [-0.5, 61.0, math.inf, -math.inf, math.nan, 1e308])
def test_seconds_out_of_range_are_one_line_naming_the_flag(value: float) -> None:
    """``nan`` compares false with everything: the check is "inside the range", which it never is."""
    with pytest.raises(InputError, match=r"^--backoff: \S+ is out of range \(use 0 to 60 seconds\)$"):
        check_seconds("--backoff", value, 0.0, 60.0)
    assert check_seconds("--backoff", 60.0, 0.0, 60.0) == 60.0
