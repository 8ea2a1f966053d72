"""SSH source ranges: one check for profiles, stack config and components.

A range must parse as a network (no host bits set), and must not be wider than a /8 for IPv4
(/32 for IPv6): ``0.0.0.0/0``, or ``0.0.0.0/1`` + ``128.0.0.0/1``, would open SSH to the internet.
"""

from __future__ import annotations

import ipaddress

MIN_PREFIX = {4: 8, 6: 32}


def check_ssh_ranges(ranges: list[str]) -> list[str]:
    """The ranges, validated; a ``ValueError`` names the first bad one and what to write instead."""
    for text in ranges:
        try:
            net = ipaddress.ip_network(text.strip(), strict=True)
        except ValueError as exc:
            try:
                fixed = ipaddress.ip_network(text.strip(), strict=False)
            except ValueError:
                raise ValueError(f"'{text}' is not a CIDR range ({exc}); write e.g. 203.0.113.0/24") from None
            raise ValueError(f"'{text}' has host bits set; did you mean {fixed}?") from None
        if net.prefixlen < MIN_PREFIX[net.version]:
            raise ValueError(
                f"'{text}' is wider than /{MIN_PREFIX[net.version]} and would open SSH to much of the internet;"
                " use your office or VPN range, or IAP/SSM"
            )
    return ranges
