"""Physical names the providers accept, for every stack name Pulumi accepts.

Design notes: docs/design/core.md.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from fullserver.platforms import name_members, name_rules
from fullserver.platforms.base import NameRule

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


def fit(type_token: str, logical: str) -> str:
    """The logical name to give a resource of ``type_token`` so that its autoname is valid."""
    for rule in name_rules(type_token):
        if rule.autoname and rule.field == "name":
            return _fit(rule, logical, autoname_suffix(rule), autonamed=True)
    return logical


def fit_name(type_token: str, text: str, field: str = "name", room: int = 0) -> str:
    """A physical name set by the program (``field`` of ``type_token``) that its API accepts, with
    ``room`` characters to spare for what is derived from it (an Indexed Job's ``-<index>``)."""
    for rule in name_rules(type_token):
        if rule.field == field:
            return _fit(rule, text, "-" + "9" * (room - 1) if room else "", autonamed=False)
    raise KeyError(f"no naming rule for {type_token}.{field}")


def _fit(rule: NameRule, text: str, suffix: str, autonamed: bool) -> str:
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


def _value(inputs: Mapping[str, Any], field: str) -> Any:
    """``field`` of ``inputs``, a dotted path into nested inputs (``metadata.name``)."""
    value: Any = inputs
    for part in field.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def physical_names(type_token: str, logical: str, inputs: Mapping[str, Any]) -> list[tuple[NameRule, str]]:
    """Each name the provider will be asked to create for one resource: the program's own, or
    the autoname of ``logical`` where the program leaves the name to the provider."""
    found = []
    for rule in name_rules(type_token):
        value = _value(inputs, rule.field)
        if isinstance(value, str):
            found.append((rule, value))
        elif value is None and rule.autoname:
            found.append((rule, autoname(logical, rule)))
    return found


def creates_objects(type_token: str) -> bool:
    """Whether a component of ``type_token`` names in its inputs the objects it creates (a
    Kubernetes ``ConfigGroup``): its row is judged although it is no custom resource."""
    return name_members(type_token) is not None


def _resources(rows: Iterable[tuple[str, str, Mapping[str, Any]]]) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """The rows, and the objects each component among them creates from its inputs."""
    for type_token, logical, inputs in rows:
        yield type_token, logical, inputs
        members = name_members(type_token)
        if members is not None:
            for member_type, name, member_inputs in members(inputs):
                yield member_type, f"{logical}/{name}", member_inputs


def graph_problems(rows: Iterable[tuple[str, str, Mapping[str, Any]]]) -> list[str]:
    """Every name in a resource graph (type token, logical name, inputs) its API would refuse,
    the objects a Kubernetes ``ConfigGroup`` creates included."""
    problems = []
    for type_token, logical, inputs in _resources(rows):
        for rule, name in physical_names(type_token, logical, inputs):
            problem = rule.problem(name)
            if problem is not None:
                problems.append(f"{logical} ({type_token}): {problem}")
    return problems
