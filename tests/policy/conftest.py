"""Resources captured from every example stack, as the policy engine would hand them to the pack.

Capture reuses ``components.graph``: it evaluates the real program for a stack under Pulumi's mock
runtime in a fresh context with its own mocks, so nothing here calls ``set_mocks`` (which is
process-global and owned by ``tests/components/conftest.py``).

* Resource policies get each resource's *inputs* (``ResourceValidationArgs.props``).
* Stack policies get *outputs* (``PolicyResource.props``): the inputs plus what the mock provider
  computes (``id``, names, self links), and ``property_dependencies`` found the way the engine
  records them: an input that carries another resource's id or self link depends on it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.policy import _NotApplicableError

from components.graph import Graph, GraphMocks, Row, plan_with_graphs
from fullserver.plan import StackPlan, plan_paths
from fullserver.stacks import find_stacks
from policy import guardrails

STACKS = Path(__file__).resolve().parents[2] / "stacks"
PROJECT = "fullserver"
NOT_APPLICABLE = "<not applicable>"


def urn(stack: str, typ: str, name: str) -> str:
    return f"urn:pulumi:{stack}::{PROJECT}::{typ}::{name}"


def options() -> PolicyResourceOptions:
    return PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])


@dataclass
class Captured:
    """One registered resource: its type, name, inputs and mock outputs."""

    stack: str
    type: str
    name: str
    inputs: dict[str, Any]
    outputs: dict[str, Any]

    @property
    def urn(self) -> str:
        return urn(self.stack, self.type, self.name)


@dataclass
class CapturedStack:
    stack: str
    plan: StackPlan
    resources: list[Captured] = field(default_factory=list)

    def one(self, typ: str, name_suffix: str = "") -> Captured:
        found = [r for r in self.resources if r.type == typ and r.name.endswith(name_suffix)]
        assert len(found) == 1, (
            f"{self.stack}: expected one {typ} ending {name_suffix!r}, found {[r.name for r in found]}"
        )
        return found[0]

    def copy(self) -> CapturedStack:
        """A deep copy to mutate into a crafted bad stack."""
        return CapturedStack(self.stack, self.plan, copy.deepcopy(self.resources))


def _mock_outputs(row: Row) -> dict[str, Any]:
    """What the mock provider returns for a resource: inputs, computed fields, and its id."""
    computed = GraphMocks()._computed(row.type, row.name, dict(row.inputs))
    return {**copy.deepcopy(row.inputs), **computed, "id": f"{row.name}-id"}


def _refs(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value}
    if isinstance(value, Mapping):
        return {s for v in value.values() for s in _refs(v)}
    if isinstance(value, list):
        return {s for v in value for s in _refs(v)}
    return set()


def policy_resources(stack: CapturedStack, *, with_dependencies: bool = True) -> list[PolicyResource]:
    """The stack as ``StackValidationArgs.resources``: outputs, and property dependencies from inputs
    that carry another resource's id or self link (what the engine records from Output flow)."""
    made = {
        r.urn: PolicyResource(r.type, r.outputs, r.urn, r.name, options(), None, None, [], {}) for r in stack.resources
    }
    if not with_dependencies:
        return list(made.values())
    handles: dict[str, str] = {}
    for r in stack.resources:
        for key in ("id", "arn", "selfLink", "selfLinkUnique"):
            if isinstance(r.outputs.get(key), str):
                handles[r.outputs[key]] = r.urn
    for r in stack.resources:
        res = made[r.urn]
        for key, value in r.inputs.items():
            deps = sorted({handles[s] for s in _refs(value) if s in handles and handles[s] != r.urn})
            if deps:
                res.property_dependencies[key] = [made[d] for d in deps]
                res.dependencies.extend(made[d] for d in deps if made[d] not in res.dependencies)
    return list(made.values())


def resource_args(
    r: Captured, config: Mapping[str, Any] | None = None, stack_tags: Mapping[str, str] | None = None
) -> ResourceValidationArgs:
    return ResourceValidationArgs(
        r.type, r.inputs, r.urn, r.name, options(), None, dict(config or {}), dict(stack_tags or {})
    )


class Collect:
    """A ``report_violation`` callback that keeps every message."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def __call__(self, message: str, urn: str | None = None) -> None:
        self.messages.append(message)


def run_resource(
    policy: ResourceValidationPolicy,
    r: Captured,
    config: Mapping[str, Any] | None = None,
    stack_tags: Mapping[str, str] | None = None,
) -> list[str]:
    """Violations of one resource policy on one resource (``[NOT_APPLICABLE]`` when it says so)."""
    found = Collect()
    try:
        policy.validate(resource_args(r, config, stack_tags), found)
    except _NotApplicableError:
        return [NOT_APPLICABLE]
    return found.messages


def run_stack(
    policy: StackValidationPolicy,
    resources: list[PolicyResource],
    config: Mapping[str, Any] | None = None,
    stack_tags: Mapping[str, str] | None = None,
) -> list[str]:
    found = Collect()
    args = StackValidationArgs(resources, dict(config or {}), dict(stack_tags or {}))
    try:
        policy.validate(args, found)
    except _NotApplicableError:
        return [NOT_APPLICABLE]
    return found.messages


def violations(policy_name: str) -> Callable[..., list[str]]:
    """The runner for a policy by name: resource policies take a ``Captured``, stack policies a stack."""
    policy = by_name(policy_name)
    if isinstance(policy, StackValidationPolicy):

        def stack_runner(
            stack: CapturedStack, config: Mapping[str, Any] | None = None, stack_tags: Mapping[str, str] | None = None
        ) -> list[str]:
            return run_stack(policy, policy_resources(stack), config, stack_tags)

        return stack_runner
    assert isinstance(policy, ResourceValidationPolicy)

    def resource_runner(
        r: Captured, config: Mapping[str, Any] | None = None, stack_tags: Mapping[str, str] | None = None
    ) -> list[str]:
        return run_resource(policy, r, config, stack_tags)

    return resource_runner


def by_name(name: str) -> ResourceValidationPolicy | StackValidationPolicy:
    for p in guardrails.POLICIES:
        if p.name == name:
            assert isinstance(p, ResourceValidationPolicy | StackValidationPolicy)
            return p
    raise KeyError(name)


@pytest.fixture(scope="session")
def captured() -> dict[str, CapturedStack]:
    """Every example stack (sized by the core, built by the real program under mocks), by name."""
    return {plan.stack: capture(plan, graph) for plan, graph in plan_with_graphs(plan_paths(find_stacks(STACKS, [])))}


def capture(plan: StackPlan, graph: Graph) -> CapturedStack:
    """One stack's resources as the policy engine would hand them to the pack."""
    stack = CapturedStack(plan.stack, plan)
    for row in graph.rows:
        if row.custom:
            stack.resources.append(
                Captured(plan.stack, row.type, row.name, copy.deepcopy(row.inputs), _mock_outputs(row))
            )
    return stack


@pytest.fixture
def stacks(captured: dict[str, CapturedStack]) -> dict[str, CapturedStack]:
    """Fresh copies of the captured stacks, safe to mutate into bad ones."""
    return {name: s.copy() for name, s in captured.items()}


Stacks = dict[str, CapturedStack]


def made(typ: str, props: dict[str, Any], name: str = "hand-written") -> Captured:
    """A hand-written resource (no example stack registers it): the same props as inputs and outputs."""
    return Captured("crafted", typ, name, props, {**props, "id": f"{name}-id"})


def one_violation(found: list[str], *needles: str) -> str:
    """The one violation found, checked to contain each needle (what went wrong and how to fix it)."""
    assert len(found) == 1, found
    for needle in needles:
        assert needle in found[0], (needle, found[0])
    return found[0]
