"""Physical names the providers accept, for every stack name Pulumi accepts.

Design notes: docs/design/core.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from fullserver.platforms import name_members, name_rules
from fullserver.platforms.base import NameRule
from fullserver.platforms.name_rule import AUTONAME_SUFFIX as AUTONAME_SUFFIX  # re-exported
from fullserver.platforms.name_rule import autoname as autoname
from fullserver.platforms.name_rule import autoname_suffix as autoname_suffix
from fullserver.platforms.name_rule import fit_to


def fit(type_token: str, logical: str) -> str:
    """The logical name to give a resource of ``type_token`` so that its autoname is valid."""
    for rule in name_rules(type_token):
        if rule.autoname and rule.field == "name":
            return fit_to(rule, logical, autoname_suffix(rule), autonamed=True)
    return logical


def fit_name(type_token: str, text: str, field: str = "name", room: int = 0) -> str:
    """A physical name set by the program (``field`` of ``type_token``) that its API accepts, with
    ``room`` characters to spare for what is derived from it (an Indexed Job's ``-<index>``)."""
    for rule in name_rules(type_token):
        if rule.field == field:
            return fit_to(rule, text, "-" + "9" * (room - 1) if room else "", autonamed=False)
    raise KeyError(f"no naming rule for {type_token}.{field}")


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
