"""Which stack keys only some platforms take, said once: on the model's own fields.

A field declared with ``Field(json_schema_extra=PLATFORM_SPECIFIC)`` is a platform-specific key:
its stack key is the field's alias (``serving.certificateArn`` inside a section), which platforms
take it and why is each platform's ``PlatformRules.options``/``lacks``, and setting it narrows
where the stack can land. ``Workload.platform_keys`` and the checks read these marks, and
``tests/core/test_workload_keys.py`` holds the platforms' declarations to them.
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

from pydantic import BaseModel
from pydantic.config import JsonDict
from pydantic.fields import FieldInfo

PLATFORM_SPECIFIC: JsonDict = {"platformSpecific": True}
"""A field's ``json_schema_extra``: its key is taken by some platforms only (or refused by some)."""


def is_platform_specific(field: FieldInfo) -> bool:
    extra = field.json_schema_extra
    return isinstance(extra, dict) and extra.get("platformSpecific") is True


def _section(field: FieldInfo) -> type[BaseModel] | None:
    """The model a section key holds (``serving``'s ``ServingConfig``), or ``None`` for a value."""
    for arg in (field.annotation, *getattr(field.annotation, "__args__", ())):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return None


class _Mark(NamedTuple):
    name: str
    key: str
    marked: bool
    section: bool  # a section holding marks
    by_default: bool  # its default is a value ``set_keys`` counts as set


@cache
def _marks(model: type[BaseModel]) -> tuple[tuple[_Mark, ...], frozenset[str], bool]:
    """The fields that matter here, their names, and whether any of them counts as set by its
    default; worked out once per model class (a class does not change)."""
    found = []
    for name, field in model.model_fields.items():
        section = _section(field)
        inner = section is not None and bool(declared_keys(section))
        if is_platform_specific(field) or inner:
            by_default = field.default_factory is not None or not (field.default is None or field.default is False)
            found.append(_Mark(name, str(field.alias or name), is_platform_specific(field), inner, by_default))
    return tuple(found), frozenset(m.name for m in found), any(m.by_default for m in found)


def declared_keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    """Every platform-specific key ``model`` declares, inside its sections too, in field order."""
    keys: list[str] = []
    for name, field in model.model_fields.items():
        alias = str(field.alias or name)
        if is_platform_specific(field):
            keys.append(prefix + alias)
        section = _section(field)
        if section is not None:
            keys += declared_keys(section, f"{prefix}{alias}.")
    return keys


def set_keys(values: BaseModel, prefix: str = "") -> list[str]:
    """The platform-specific keys ``values`` sets: a value other than its "not set" (``None``,
    ``False``; the model reads a declared empty default as ``None``).

    Only the fields given (``model_fields_set``) can hold anything but their default, so a model
    given none of them is answered without reading one: most stacks, each time a check asks."""
    marks, names, by_default = _marks(type(values))
    given = values.model_fields_set
    if not by_default and given.isdisjoint(names):
        return []
    keys: list[str] = []
    for name, alias, marked, inner, default_counts in marks:
        if name not in given and not default_counts:
            continue
        value = getattr(values, name)
        if marked and value is not None and value is not False:
            keys.append(prefix + alias)
        if inner and isinstance(value, BaseModel):
            keys += set_keys(value, f"{prefix}{alias}.")
    return keys
