"""``fullserver.netcheck``: the one rule for how wide an SSH source may be, per range and together.

Profiles, stack config, components and the policy pack all call ``check_ssh_ranges``; these cases
pin the rule itself, including the sets that pass range by range but add up to the internet.
"""

from __future__ import annotations

import re

import pytest

from fullserver.netcheck import check_ssh_ranges

SIXTEENS = [f"{a}.{b}.0.0/16" for a in range(20, 22) for b in range(150)]  # 300 x /16: 19.7M addresses


@pytest.mark.parametrize(
    "ranges",
    [
        [],
        ["203.0.113.0/24"],
        ["10.0.0.0/8"],
        ["10.0.0.0/9", "10.128.0.0/9"],  # 2 x /9: exactly one /8
        ["10.0.0.0/8", "10.1.0.0/16", "10.2.3.0/24"],  # overlaps count once
        SIXTEENS[:256],  # 256 x /16: exactly one /8
        ["10.0.0.0/8", "2001:db8::/32"],  # each family is held to its own limit
    ],
    ids=["empty", "one-24", "one-8", "two-9", "overlapping", "256x16", "both-families"],
)
def test_narrow_enough(ranges: list[str]) -> None:
    assert check_ssh_ranges(ranges) == ranges


def test_the_split_internet_is_refused() -> None:
    """0.0.0.0/1 + 128.0.0.0/1 is the whole IPv4 internet in two halves."""
    with pytest.raises(ValueError, match=re.escape("'0.0.0.0/1' is wider than /8")):
        check_ssh_ranges(["0.0.0.0/1", "128.0.0.0/1"])


@pytest.mark.parametrize(
    ("ranges", "message"),
    [
        (["12.0.0.0/8", "11.0.0.0/8"], "the 2 IPv4 ranges ('12.0.0.0/8', '11.0.0.0/8') together cover 33,554,432"),
        (SIXTEENS, "the 300 IPv4 ranges ('20.0.0.0/16', '20.1.0.0/16', '20.2.0.0/16', ...) together cover 19,660,800"),
        ([f"{n}.0.0.0/9" for n in range(1, 3)] + ["3.0.0.0/9"], "the 3 IPv4 ranges"),
        (["2001:db8::/32", "2001:db9::/32"], "more than a /32"),
    ],
    ids=["two-8", "300x16", "three-9", "two-ipv6-32"],
)
def test_ranges_that_add_up_to_more_than_one_widest_range_are_refused(ranges: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)) as err:
        check_ssh_ranges(ranges)
    assert "would open SSH to much of the internet" in str(err.value)


@pytest.mark.parametrize(
    ("cidr", "message"),
    [
        ("0.0.0.0/0", "0.0.0.0/0 would open SSH to the whole internet"),
        ("::/0", "::/0 would open SSH to the whole internet"),
        ("10.0.0.0/7", "'10.0.0.0/7' is wider than /8 and would open SSH to much of the internet"),
        ("10.0.0.1/24", "'10.0.0.1/24' has host bits set; did you mean 10.0.0.0/24?"),
        ("bogus", "'bogus' is not a CIDR range"),
    ],
)
def test_one_bad_range(cidr: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        check_ssh_ranges(["203.0.113.0/24", cidr])


def test_what_the_ranges_open_is_named() -> None:
    """The policy pack holds every admin port to the same rule, and names the one it found open."""
    with pytest.raises(ValueError, match=re.escape("0.0.0.0/0 would open RDP to the whole internet")):
        check_ssh_ranges(["0.0.0.0/0"], opens="RDP")


def test_the_private_ranges_of_a_vpn_together_are_not_the_internet() -> None:
    vpn = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"]
    assert check_ssh_ranges(vpn) == vpn
    with pytest.raises(ValueError, match="together cover"):
        check_ssh_ranges([*vpn, "11.0.0.0/8", "12.0.0.0/16"])  # private space buys no room for public space
