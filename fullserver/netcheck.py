"""SSH source ranges: one check for profiles, stack config, components and the policy pack.

A range must parse as a network (no host bits set), and must not be wider than a /8 for IPv4
(/32 for IPv6); and the ranges of one family together must not cover more addresses than one such
range (private and shared space not counted: the three RFC 1918 ranges of a VPN are fine), or a
list of narrow ranges could add up to the internet: ``0.0.0.0/0``, ``0.0.0.0/1`` +
``128.0.0.0/1`` and 300 x /16 would all open SSH to much of it. Components (served to other
languages, where the core's config validation is not in the path) and the policy pack call this
function rather than a check of their own, so the rule cannot differ between them.
"""

from __future__ import annotations

import ipaddress

MIN_PREFIX = {4: 8, 6: 32}
"""The widest prefix allowed, per IP version; also the most addresses all ranges of one version may cover."""

BITS = {4: 32, 6: 128}

FIX = "use your office or VPN range, or IAP/SSM"

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

NOT_INTERNET: tuple[Network, ...] = tuple(
    ipaddress.ip_network(n)
    for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7", "fe80::/10")
)
"""Private (RFC 1918, RFC 4193), shared (RFC 6598) and IPv6 link-local space: a VPN's ranges there
reach no one on the internet, so they do not count towards the total (each range is still at most
/8, /32 for IPv6)."""


def _internet_addresses(net: Network) -> int:
    """How many of ``net``'s addresses are outside ``NOT_INTERNET`` (those ranges are disjoint)."""
    inside = 0
    for private in NOT_INTERNET:
        if private.version != net.version:
            continue
        if net.subnet_of(private):  # type: ignore[arg-type]
            return 0
        if private.subnet_of(net):  # type: ignore[arg-type]
            inside += private.num_addresses
    return net.num_addresses - inside


def _parse(text: str) -> Network:
    try:
        return ipaddress.ip_network(text.strip(), strict=True)
    except ValueError as exc:
        try:
            fixed = ipaddress.ip_network(text.strip(), strict=False)
        except ValueError:
            raise ValueError(f"'{text}' is not a CIDR range ({exc}); write e.g. 203.0.113.0/24") from None
        raise ValueError(f"'{text}' has host bits set; did you mean {fixed}?") from None


def check_ssh_ranges(ranges: list[str], *, opens: str = "SSH") -> list[str]:
    """The ranges, validated; a ``ValueError`` names the first bad one (or, for a set too wide
    together, the set) and what to write instead.

    ``opens`` names what the ranges would reach in the message: the policy pack holds RDP,
    Jupyter and the other admin ports to this same rule."""
    parsed: list[tuple[str, Network]] = []
    for text in ranges:
        net = _parse(text)
        widest = MIN_PREFIX[net.version]
        if net.prefixlen == 0:
            raise ValueError(
                f"{text.strip()} would open {opens} to the whole internet (anything wider than /{widest} would open "
                f"{opens} to much of the internet); {FIX}"
            )
        if net.prefixlen < widest:
            raise ValueError(f"'{text}' is wider than /{widest} and would open {opens} to much of the internet; {FIX}")
        parsed.append((text, net))
    # collapse_addresses merges overlapping and adjacent ranges, so each address is counted once
    v4 = ipaddress.collapse_addresses(n for _, n in parsed if isinstance(n, ipaddress.IPv4Network))
    v6 = ipaddress.collapse_addresses(n for _, n in parsed if isinstance(n, ipaddress.IPv6Network))
    covered = {4: sum(_internet_addresses(n) for n in v4), 6: sum(_internet_addresses(n) for n in v6)}
    for version, widest in MIN_PREFIX.items():
        limit = 2 ** (BITS[version] - widest)
        if covered[version] > limit:
            texts = [text for text, net in parsed if net.version == version]
            shown = ", ".join(f"'{t}'" for t in texts[:3]) + (", ..." if len(texts) > 3 else "")
            raise ValueError(
                f"the {len(texts)} IPv{version} ranges ({shown}) together cover {covered[version]:,} addresses, more "
                f"than a /{widest} ({limit:,}), and would open {opens} to much of the internet; {FIX}"
            )
    return ranges


DOCUMENTATION: tuple[Network, ...] = tuple(
    ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")
)
"""The blocks reserved for documentation (RFC 5737 TEST-NET-1/2/3; RFC 3849 for IPv6): no host
anyone deploys from has such an address, so a range inside one is an example left in place."""


def _documentation(net: Network) -> bool:
    return any(net.subnet_of(d) for d in DOCUMENTATION if d.version == net.version)  # type: ignore[arg-type]


def placeholder_ranges_warning(ranges: list[str], key: str, reach: str) -> str | None:
    """The plan's warning for ranges (``key``: the stack key) inside ``DOCUMENTATION``: placeholders
    to replace with the addresses ``reach`` is done from, or ``None``. One rule for the SSH and the
    Kubernetes API ranges alike (run after ``check_ssh_ranges``, so each range parses)."""
    found = [r.strip() for r in ranges if _documentation(_parse(r))]
    if not found:
        return None
    return (
        f"fullserver:{key}: {', '.join(found)} {'is a placeholder' if len(found) == 1 else 'are placeholders'} (RFC 5737 and RFC 3849 reserve it for documentation): "
        f"replace it with the egress ranges of the machines {reach}"
    )
