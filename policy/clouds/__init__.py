"""Each cloud's policy reader (``Cloud.policy_reader``): what the shared policies ask of a cloud.

A reader module defines ``CLEAR_TEXT`` (resource type -> the clear-text verdicts of one resource),
``LOAD_BALANCERS`` (resource type -> the network item one such resource bills, given how many came
before), and how a node pool's
Kubernetes load balancers bill on it (``SERVICE_ANNOTATION``, ``SERVICE_ITEM``, ``GATEWAY_ITEM``),
and ``autostop_grants`` (each autostop grant that reaches beyond the stack, with why).
"""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType

from fullserver.clouds import all_clouds


@cache
def readers() -> tuple[ModuleType, ...]:
    """Every cloud's policy reader, in the clouds' order."""
    return tuple(importlib.import_module(c.policy_reader) for c in all_clouds() if c.policy_reader)
