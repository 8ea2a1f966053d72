"""Every compute node of a stack, as the stack policies (balance, budget) judge them.

During ``pulumi preview`` a value that is not known yet raises ``UnknownValueError``: an unknown
value skips only the resource it belongs to, and the skip is reported, so one resource still to be
created does not blind the policies to the rest of the stack.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType

from pulumi_policy import PolicyResource
from pulumi_policy.proxy import UnknownValueError

from fullserver.platforms import all_rules
from policy.nodes import DiskReader, Node, NodeReader, TemplateOf
from policy.resources import describe


def _readers() -> list[ModuleType]:
    """Each platform's policy reader (``PlatformRules.policy_reader``), once, in the registry's order."""
    names = dict.fromkeys(r.policy_reader for r in all_rules() if r.policy_reader)
    return [importlib.import_module(name) for name in names]


_READERS = _readers()
NODE_READERS: dict[str, NodeReader] = {t: read for m in _READERS for t, read in m.NODE_READERS.items()}
"""Resource type -> what reads its nodes, from every platform's reader."""
LAUNCHERS: dict[str, TemplateOf] = {t: find for m in _READERS for t, find in m.LAUNCHERS.items()}
"""The resources whose launch template is read with them (an EC2 launch template)."""
DISK_READERS: dict[str, DiskReader] = {t: read for m in _READERS for t, read in m.DISK_READERS.items()}
"""Resource type -> what reads a disk of its own and its region (``policy.budget``)."""


def _nodes_of(r: PolicyResource, resources: Sequence[PolicyResource], used_templates: set[str]) -> list[Node]:
    """The nodes one resource runs; a launch template something launches is read with what launches it."""
    read = NODE_READERS.get(r.resource_type)
    return read(r, resources, used_templates) if read is not None else []


def accelerator_nodes(resources: Sequence[PolicyResource]) -> tuple[list[Node], list[str]]:
    """Every compute node in the stack (``offer`` is ``None`` for a shape the catalog does not
    list), and what was skipped because a value is not known yet (during preview); an unknown
    value skips only the resource it belongs to."""
    nodes: list[Node] = []
    skipped: list[str] = []
    used: set[str] = set()
    for r in resources:
        template_of = LAUNCHERS.get(r.resource_type)
        if template_of is not None:
            try:
                lt = template_of(r, resources)
            except UnknownValueError:
                continue
            if lt is not None:
                used.add(lt.urn)
    for r in resources:
        try:
            nodes.extend(_nodes_of(r, resources, used))
        except UnknownValueError as exc:
            skipped.append(f"{describe(r.resource_type, r.name)}: {exc.message}")
    return nodes, skipped
