"""What a provider accepts as a resource's physical name (``NameRule``), shared by every platform's
``NAME_RULES`` table and ``fullserver.naming``; kept apart from ``base`` so each reads end to end."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class NameRule:
    """What a provider's API accepts as one resource's physical name (``fullserver.naming`` fits
    names to it and checks the resource graph against it).

    ``autoname``: when the program sets no ``field``, the Pulumi provider names the resource
    itself, as the logical name, ``-`` and ``autoname_hex`` random hex characters (seven for the
    bridged providers, tfbridge's ``AutoName``; eight for pulumi-kubernetes, ``NewUniqueHex``'s
    default), never shortened: over the bridge's own limit it refuses at preview, over the API's
    the API refuses at create time. ``lowercases``: the provider lowercases that name first
    (pulumi-gcp's ``lowercaseAutoName`` for networks, subnetworks, routers, Cloud NAT, backend
    services, URL maps, target proxies and security policies). ``separator``: the name is parts
    joined by it, each part matching the rule (a DNS-1123 subdomain's and a Helm release's ``.``)."""

    what: str
    """The name as the provider's documentation calls it (in refusals): "ELB target group name"."""
    max_len: int
    alphabet: str
    """The characters allowed, as a regular-expression class body: ``a-z0-9-``."""
    first: str
    """The characters allowed first, likewise."""
    last: str
    """The characters allowed last, likewise."""
    source: str
    min_len: int = 1
    field: str = "name"
    autoname: bool = True
    lowercases: bool = False
    reserved_prefix: str = ""
    """A prefix the API keeps for itself (ELB: ``internal-``)."""
    autoname_hex: int = 7
    separator: str = ""

    @property
    def pattern(self) -> str:
        """The whole name's regular expression (full match), as the refusals show it."""
        part = f"[{self.first}]([{self.alphabet}]*[{self.last}])?"
        return f"{part}(\\{self.separator}{part})*" if self.separator else part

    def problem(self, name: str) -> str | None:
        """Why the provider refuses ``name``, or ``None``."""
        if not self.min_len <= len(name) <= self.max_len:
            return f"{self.what} '{name}' is {len(name)} characters; {self.source} takes {self.min_len}-{self.max_len}"
        if not re.fullmatch(self.pattern, name):
            return f"{self.what} '{name}' does not match {self.pattern} ({self.source})"
        if self.reserved_prefix and name.startswith(self.reserved_prefix):
            return f"{self.what} '{name}' starts with '{self.reserved_prefix}', which {self.source} reserves"
        return None


RFC1035 = "a-z0-9-", "a-z", "a-z0-9"
"""Compute Engine and Cloud TPU names: ``[a-z]([-a-z0-9]*[a-z0-9])?`` (RFC 1035 labels)."""

AUTONAME_SUFFIX = "-0a1b2c3"
"""What bridged autonaming adds: ``-`` and seven random hex characters (these stand for them in checks)."""

_HEX = "0a1b2c3d4e5f"
_DIGEST = 6


def autoname_suffix(rule: NameRule | None = None) -> str:
    """What ``rule``'s provider adds to a logical name: ``-`` and its count of hex characters."""
    return "-" + _HEX[: rule.autoname_hex] if rule is not None else AUTONAME_SUFFIX


def autoname(logical: str, rule: NameRule | None = None) -> str:
    """The name a provider's autonaming gives ``logical`` (its random part stood in for)."""
    name = logical + autoname_suffix(rule)
    return name.lower() if rule is not None and rule.lowercases else name


def fit_to(rule: NameRule, text: str, suffix: str = "", autonamed: bool = False) -> str:
    """``text`` if the API takes it (with ``suffix`` after it: the autoname's, or the room kept),
    else the rule's alphabet, cut, and a digest of ``text``."""

    def refused(name: str) -> str | None:  # what the API sees: the autoname, or the name itself
        return rule.problem(autoname(name, rule) if autonamed else name + suffix)

    if refused(text) is None:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:_DIGEST]
    base = text if re.fullmatch(f"[{rule.alphabet}]", "A") else text.lower()
    base = re.sub(f"[^{rule.alphabet}]+", "-", base)
    if rule.reserved_prefix:
        base = base.removeprefix(rule.reserved_prefix)
    base = re.sub(f"^[^{rule.first}]+", "", base)
    room = rule.max_len - len(suffix) - _DIGEST - 1
    # The resource's own part ("-tg", "-net") stays readable at the end; the stack's is cut.
    head, dash, tail = base.rpartition("-")
    kind = f"-{tail}" if dash and head and 0 < len(tail) <= min(12, room // 3) else ""
    if kind:
        base = head
    base = re.sub(f"[^{rule.last}]+$", "", base[: room - len(kind)])
    if not base:
        base = "fs"
    name = f"{base}-{digest}{kind}"
    assert refused(name) is None, (rule, name)
    return name
