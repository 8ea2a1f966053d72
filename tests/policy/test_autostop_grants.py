"""``autostop-grants-scoped``: every example stack's autostop grant reaches its own environment
only, and a grant widened in each way it could be is refused, naming what to change."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from fullserver.autostop import grants
from fullserver.platforms import aws_autostop, tpu_autostop
from policy.clouds.aws import ROLE_POLICY
from policy.clouds.gcp import CUSTOM_ROLE, PROJECT_MEMBER, VM_MEMBER
from tests.policy.conftest import CapturedStack, Stacks, made, one_violation, violations

scoped = violations("autostop-grants-scoped")
MIG = "gcp:compute/regionInstanceGroupManager:RegionInstanceGroupManager"


def test_every_example_stacks_grants_are_scoped(stacks: Stacks) -> None:
    assert {name: scoped(stack) for name, stack in stacks.items() if scoped(stack)} == {}
    # the examples do carry grants: an AWS group stop and a Cloud TPU stop role, bound on the project;
    # the EKS cluster autoscaler's own Auto Scaling grant is not an autostop grant
    assert stacks["exp-aws-l4-spot"].one(ROLE_POLICY, "-autostop")
    assert stacks["train-tpu-v5e"].one(CUSTOM_ROLE, "-autostop") and stacks["train-tpu-v5e"].one(
        PROJECT_MEMBER, "-autostop"
    )


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (lambda st: st["Condition"]["StringEquals"].clear(), "is not conditioned on autoscaling:ResourceTag/"),
        (
            lambda st: st["Condition"]["StringEquals"].update(
                {"autoscaling:ResourceTag/fullserver-environment": "prod"}
            ),
            "but 'prod': scope it to the stack's own groups",
        ),
        (
            lambda st: st["Condition"].pop("NumericEquals"),
            "does not hold autoscaling:MinSize and autoscaling:MaxSize to 0",
        ),
        (
            lambda st: st.update({"Action": "autoscaling:*"}),
            "allows autoscaling:*: allow only autoscaling:UpdateAutoScalingGroup",
        ),
    ],
    ids=["no-tag-condition", "another-environment", "any-size", "every-action"],
)
def test_an_aws_group_grant_beyond_its_own_groups_or_above_zero_fails(
    stacks: Stacks, change: Callable[[dict[str, Any]], object], needle: str
) -> None:
    stack = stacks["exp-aws-l4-spot"]
    r = stack.one(ROLE_POLICY, "-autostop")
    document = json.loads(r.outputs["policy"])
    change(document["Statement"][1])
    r.outputs["policy"] = json.dumps(document)
    one_violation(scoped(stack), "RolePolicy 'exp-aws-l4-spot-autostop'", "statement OwnGroupsToZero", needle)


def test_a_grant_under_another_name_is_not_an_autostop_grant_and_the_component_builds_one_that_passes(
    stacks: Stacks,
) -> None:
    stack = stacks["eks-gpu-cluster"]
    assert (
        scoped(stack) == []
        and "autoscaling:SetDesiredCapacity" in stack.one(ROLE_POLICY, "-autoscaler").outputs["policy"]
    )
    policy = aws_autostop.group_stop_policy("exp-aws-l4-spot")
    assert aws_autostop.group_stop_problems(policy, {"exp-aws-l4-spot"}) == []
    assert aws_autostop.group_stop_problems(policy, {"other"}) != []


def test_a_tpu_stop_role_with_more_than_its_way_fails(stacks: Stacks) -> None:
    stack = stacks["train-tpu-v5e"]
    role = stack.one(CUSTOM_ROLE, "-autostop")
    role.outputs["permissions"] = [*role.outputs["permissions"], "tpu.nodes.create"]
    one_violation(
        scoped(stack),
        "IAMCustomRole 'train-tpu-v5e-autostop'",
        "holds tpu.nodes.create, beyond what one stop way needs",
    )


def _gcp_stack_with_a_compute_stop_role(stacks: Stacks, binding: str, props: dict[str, object]) -> CapturedStack:
    """train-tpu-v5e with its stop role turned into Compute Engine's and bound by ``binding``, and a
    managed instance group of this stack named ``own-group`` (a fresh copy each time)."""
    stack = stacks["train-tpu-v5e"].copy()
    role = stack.one(CUSTOM_ROLE, "-autostop")
    role.outputs["permissions"] = ["compute.instances.get", "compute.instances.stop"]
    stack.resources.remove(stack.one(PROJECT_MEMBER, "-autostop"))
    member = made(
        binding, {"role": f"projects/p/roles/{role.outputs['roleId']}", "member": "serviceAccount:x", **props}
    )
    stack.resources += [member, made(MIG, {"name": "own-group"}, name="own-group")]
    return stack


def test_a_gcp_stop_role_on_the_project_needs_a_condition_naming_the_stacks_group(stacks: Stacks) -> None:
    bare = _gcp_stack_with_a_compute_stop_role(stacks, PROJECT_MEMBER, {"project": "p"})
    one_violation(scoped(bare), "is on the whole project", "instanceGroupManagers/<this stack's group> (own-group)")
    expression = 'resource.name.endsWith("/instanceGroupManagers/own-group")'
    other = _gcp_stack_with_a_compute_stop_role(
        stacks,
        PROJECT_MEMBER,
        {"project": "p", "condition": {"title": "t", "expression": expression.replace("own", "their")}},
    )
    one_violation(scoped(other), "is on the whole project")
    longer = _gcp_stack_with_a_compute_stop_role(
        stacks,
        PROJECT_MEMBER,
        {"project": "p", "condition": {"title": "t", "expression": expression.replace("own-group", "own-group-2")}},
    )
    one_violation(scoped(longer), "is on the whole project")  # a group whose name only begins with ours
    own = _gcp_stack_with_a_compute_stop_role(
        stacks, PROJECT_MEMBER, {"project": "p", "condition": {"title": "t", "expression": expression}}
    )
    assert scoped(own) == []


def test_a_gcp_stop_role_bound_on_a_vm_must_be_on_one_of_the_stacks(stacks: Stacks) -> None:
    stack = _gcp_stack_with_a_compute_stop_role(stacks, VM_MEMBER, {"instanceName": "someone-elses", "zone": "z"})
    one_violation(scoped(stack), "is on VM 'someone-elses', not one of this stack's")
    stack.resources.append(made("gcp:compute/instance:Instance", {"name": "someone-elses"}, name="vm"))
    assert scoped(stack) == []


def test_every_declared_stop_way_passes_the_role_rule() -> None:
    for way in grants.stop_ways():
        assert grants.role_problem(way) is None
    assert grants.role_problem([*tpu_autostop.STOP_PERMISSIONS[tpu_autostop.TPU_STOP.key], "tpu.nodes.delete"])


def test_lifting_scale_in_protection_is_held_to_the_stacks_own_groups() -> None:
    """The stop lifts the fallback's scale-in protection (it cannot grow a group, so no size
    condition), but only on the stack's own groups."""
    policy = aws_autostop.group_stop_policy("exp-aws-l4-spot")
    statements: Any = policy["Statement"]
    unprotect = next(s for s in statements if s["Action"] == aws_autostop.UNPROTECT)
    del unprotect["Condition"]
    (problem,) = aws_autostop.group_stop_problems(policy, {"exp-aws-l4-spot"})
    assert problem.startswith("statement OwnGroupsUnprotected is not conditioned on autoscaling:ResourceTag/")
