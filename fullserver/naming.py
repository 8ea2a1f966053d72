"""Physical names the providers accept, for every stack name Pulumi accepts.

A stack name may be 100 characters of letters, digits, ``-``, ``_`` and ``.``; the resources a
stack creates are named after it, by the program (a TPU node id, a service account id) or by the
Pulumi provider's autonaming (the logical name, ``-`` and seven random hex characters, never
shortened; lowercased for a few GCP types). Each API has its own rule (``NameRule``, kept by
each platform's module: ELB allows 32 characters, IAM roles 64, Compute Engine lowercase RFC
1035 labels of 63), and a name that breaks it fails the update: at preview where the provider
knows the limit, at create time (after the network already exists) where only the API does.

So every name is fitted here before Pulumi sees it, and the offline graph is judged by the same
rules (``graph_problems``), so ``fullserver plan`` refuses what a provider would. A name that
already fits is kept as it is (existing stacks keep their resources; a stack whose name broke the
rule never created that resource); one that does not becomes the rule's alphabet, cut to leave
room, plus six hex characters of a hash of the whole original, so it stays stable across runs
and distinct from every other stack's (``Team_ML`` and ``team-ml`` differ, and so do two long
names that share their first 40 characters).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from fullserver.platforms import name_rules
from fullserver.platforms.base import NameRule

AUTONAME_SUFFIX = "-0a1b2c3"
"""What autonaming adds: ``-`` and seven random hex characters (these stand for them in checks)."""

_DIGEST = 6


def autoname(logical: str, rule: NameRule | None = None) -> str:
    """The name a provider's autonaming gives ``logical`` (its random part stood in for)."""
    name = logical + AUTONAME_SUFFIX
    return name.lower() if rule is not None and rule.lowercases else name


def fit(type_token: str, logical: str) -> str:
    """The logical name to give a resource of ``type_token`` so that its autoname is valid."""
    for rule in name_rules(type_token):
        if rule.autoname and rule.field == "name":
            return _fit(rule, logical, autonamed=True)
    return logical


def fit_name(type_token: str, text: str, field: str = "name") -> str:
    """A physical name set by the program (``field`` of ``type_token``) that its API accepts."""
    for rule in name_rules(type_token):
        if rule.field == field:
            return _fit(rule, text, autonamed=False)
    raise KeyError(f"no naming rule for {type_token}.{field}")


def _fit(rule: NameRule, text: str, autonamed: bool) -> str:
    def refused(name: str) -> str | None:  # what the API sees: the autoname, or the name itself
        return rule.problem(autoname(name, rule) if autonamed else name)

    if refused(text) is None:
        return text
    room_for = len(AUTONAME_SUFFIX) if autonamed else 0
    digest = hashlib.sha256(text.encode()).hexdigest()[:_DIGEST]
    base = text if re.fullmatch(f"[{rule.alphabet}]", "A") else text.lower()
    base = re.sub(f"[^{rule.alphabet}]+", "-", base)
    if rule.reserved_prefix:
        base = base.removeprefix(rule.reserved_prefix)
    base = re.sub(f"^[^{rule.first}]+", "", base)
    room = rule.max_len - room_for - _DIGEST - 1
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


def physical_names(type_token: str, logical: str, inputs: Mapping[str, Any]) -> list[tuple[NameRule, str]]:
    """Each name the provider will be asked to create for one resource: the program's own, or
    the autoname of ``logical`` where the program leaves the name to the provider."""
    found = []
    for rule in name_rules(type_token):
        value = inputs.get(rule.field)
        if isinstance(value, str):
            found.append((rule, value))
        elif value is None and rule.autoname:
            found.append((rule, autoname(logical, rule)))
    return found


def graph_problems(rows: Iterable[tuple[str, str, Mapping[str, Any]]]) -> list[str]:
    """Every name in a resource graph (type token, logical name, inputs) its API would refuse."""
    problems = []
    for type_token, logical, inputs in rows:
        for rule, name in physical_names(type_token, logical, inputs):
            problem = rule.problem(name)
            if problem is not None:
                problems.append(f"{logical} ({type_token}): {problem}")
    return problems
