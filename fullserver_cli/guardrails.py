"""The guardrail policy pack (``policy/``) run over a stack's offline resource graph.

``pulumi preview --policy-pack policy/`` hands each policy the resources the engine registers;
here the same policies get the resources the mock evaluation registered (``components.graph``),
as inputs for resource policies and as mock outputs for stack policies, with the pack's default
config (``monthly-budget`` has no cap then and reports itself not applicable). ``pulumi-policy``
is a development dependency: without it the guardrails are not run and ``None`` says so.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from fullserver.plan_document import Guardrail

if TYPE_CHECKING:
    from components.graph import Graph

PROJECT = "fullserver"
NOT_INSTALLED = "guardrails not run: pulumi-policy is not installed (pip install 'pulumi-policy>=1.13')"


def available() -> bool:
    try:
        import pulumi_policy  # noqa: F401

        import policy.guardrails  # noqa: F401
    except ImportError:
        return False
    return True


def run_guardrails(graph: Graph) -> list[Guardrail] | None:
    """Every violation the pack's policies report for the graph (``None`` without pulumi-policy)."""
    try:
        from pulumi_policy import (
            PolicyCustomTimeouts,
            PolicyResource,
            PolicyResourceOptions,
            ResourceValidationArgs,
            ResourceValidationPolicy,
            StackValidationArgs,
            StackValidationPolicy,
        )

        from components.graph import GraphMocks
        from policy.guardrails import POLICIES
    except ImportError:
        return None

    def options() -> PolicyResourceOptions:
        return PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])

    rows = [r for r in graph.rows if r.custom]
    mocks = GraphMocks()
    urns = {(r.type, r.name): f"urn:pulumi:{graph.stack}::{PROJECT}::{r.type}::{r.name}" for r in rows}
    stack_resources = []
    for r in rows:
        outputs: dict[str, Any] = {
            **copy.deepcopy(r.inputs),
            **mocks._computed(r.type, r.name, dict(r.inputs)),
            "id": f"{r.name}-id",
        }
        stack_resources.append(
            PolicyResource(r.type, outputs, urns[(r.type, r.name)], r.name, options(), None, None, [], {})
        )
    found: list[Guardrail] = []
    for policy in POLICIES:
        level = str(getattr(policy.enforcement_level, "value", policy.enforcement_level) or "")
        messages: list[str] = []

        def report(message: str, urn: str | None = None, sink: list[str] = messages) -> None:
            sink.append(message)

        try:
            if isinstance(policy, StackValidationPolicy):
                policy.validate(StackValidationArgs(stack_resources, {}, {}), report)
            elif isinstance(policy, ResourceValidationPolicy):
                for r in rows:
                    args = ResourceValidationArgs(
                        r.type, r.inputs, urns[(r.type, r.name)], r.name, options(), None, {}, {}
                    )
                    try:
                        policy.validate(args, report)
                    except Exception as exc:
                        if type(exc).__name__ != "_NotApplicableError":
                            raise
        except Exception as exc:
            if type(exc).__name__ != "_NotApplicableError":  # the pack's "does not apply here"
                raise
        found.extend(Guardrail(policy=policy.name, level=level, message=m) for m in dict.fromkeys(messages))
    return found
