"""Physical names every provider accepts, for every stack name Pulumi accepts (``fullserver.naming``)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fullserver import naming
from fullserver.platforms import name_rules

TG = "aws:lb/targetGroup:TargetGroup"
ALB = "aws:lb/loadBalancer:LoadBalancer"
ROLE = "aws:iam/role:Role"
NET = "gcp:compute/network:Network"
SA = "gcp:serviceaccount/account:Account"
MIG = "gcp:compute/regionInstanceGroupManager:RegionInstanceGroupManager"
RFC1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
ELB = re.compile(r"[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?")

# Pulumi's stack-name rule: 1-100 of letters, digits, '-', '_', '.'.
stack_names = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.", min_size=1, max_size=100
)


@pytest.mark.parametrize(
    ("type_token", "logical"),
    [(TG, "serve-aws-tg"), (ALB, "serve-aws-realtime-alb"), (ROLE, "train-p5-cluster-role"), (NET, "exp-gcp-net")],
)
def test_a_name_that_fits_is_kept_so_existing_stacks_keep_their_resources(type_token: str, logical: str) -> None:
    assert naming.fit(type_token, logical) == logical


def test_a_target_group_of_a_long_stack_fits_elbs_32_characters_with_its_autoname() -> None:
    """pulumi-aws refuses a target group autoname over 32 characters rather than shortening it."""
    fitted = naming.fit(TG, "serve-realtime-production-east-tg")
    physical = naming.autoname(fitted)
    assert len(physical) <= 32 and ELB.fullmatch(physical) and fitted.endswith("-tg")


@pytest.mark.parametrize("stack", ["Team_ML.Serve.v2", "serve_llama.70b", "internal-api", "x" * 100])
def test_a_load_balancer_name_is_elbs_alphabet_and_never_internal(stack: str) -> None:
    physical = naming.autoname(naming.fit(ALB, f"{stack}-alb"))
    assert len(physical) <= 32 and ELB.fullmatch(physical) and not physical.startswith("internal-")


def test_compute_engine_names_are_lowercase_rfc1035_labels_of_63() -> None:
    for stack in ["Team_ML.Serve.v2", "a" * 46, "9lives", "_x_"]:
        physical = naming.autoname(naming.fit(NET, f"{stack}-autoscaler"))
        assert len(physical) <= 63 and RFC1035.fullmatch(physical), physical


def test_service_account_ids_of_stacks_sharing_a_long_prefix_differ() -> None:
    """fs-{stack} cut to 30 made ...-staging-east and ...-staging-west ask for one id (409)."""
    east = naming.fit_name(SA, "fs-mlplatform-serve-realtime-staging-east", "accountId")
    west = naming.fit_name(SA, "fs-mlplatform-serve-realtime-staging-west", "accountId")
    assert east != west and all(6 <= len(n) <= 30 and RFC1035.fullmatch(n) for n in (east, west))
    assert len(naming.fit_name(SA, "fs-a", "accountId")) >= 6  # at least 6 characters


def test_names_that_differ_only_in_case_or_punctuation_stay_distinct() -> None:
    names = {naming.fit(NET, f"{s}-net") for s in ("team-ml", "Team-ML", "team_ml", "team.ml")}
    assert len(names) == 4


@settings(max_examples=300, deadline=None)
@given(stack=stack_names)
def test_every_rule_takes_every_stack_name_fitted_and_says_the_same_on_every_run(stack: str) -> None:
    for type_token in ("aws:lb/targetGroup:TargetGroup", ALB, ROLE, NET, SA, MIG, "gcp:tpu/v2Vm:V2Vm"):
        for rule in name_rules(type_token):
            text = f"fs-{stack}" if rule.field == "accountId" else f"{stack}-x"
            if rule.autoname and rule.field == "name":
                name = naming.fit(type_token, text)
                assert rule.problem(naming.autoname(name, rule)) is None, (rule, name)
                assert naming.fit(type_token, text) == name
            else:
                name = naming.fit_name(type_token, text, rule.field)
                assert rule.problem(name) is None, (rule, name)


def test_the_graph_check_names_the_resource_and_the_limit() -> None:
    rows = [
        (TG, "serve-realtime-production-east-tg", {}),
        (SA, "s-sa", {"accountId": "fs-Team"}),
        ("aws:ec2/vpc:Vpc", "whatever_name.is.fine", {}),
    ]
    problems = naming.graph_problems(rows)
    assert problems == [
        "serve-realtime-production-east-tg (aws:lb/targetGroup:TargetGroup): target group name "
        "'serve-realtime-production-east-tg-0a1b2c3' is 41 characters; ELBv2 CreateTargetGroup takes 1-32",
        "s-sa (gcp:serviceaccount/account:Account): service account id 'fs-Team' does not match "
        "[a-z]([a-z0-9-]*[a-z0-9])? (IAM service accounts)",
    ]


def test_a_name_the_provider_lowercases_itself_is_kept_where_lowercase_fits() -> None:
    """pulumi-gcp lowercases a network's autoname (lowercaseAutoName), not a firewall's: a stack
    named "Team" built its network as team-net-xxxxxxx, which keeps its logical name (and URN)."""
    assert naming.fit(NET, "Team-net") == "Team-net"
    assert naming.autoname("Team-net", name_rules(NET)[0]) == "team-net" + naming.AUTONAME_SUFFIX
    firewall = naming.fit("gcp:compute/firewall:Firewall", "Team-ssh")
    assert firewall != "Team-ssh" and RFC1035.fullmatch(naming.autoname(firewall))
