"""ELB's naming rule for what Pulumi autonames (``fullserver.platforms.aws.elb_logical_name``)."""

from __future__ import annotations

import re

import pytest

from fullserver.platforms.aws import AUTONAME_SUFFIX, ELB_NAME_MAX, elb_logical_name

VALID = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?")


@pytest.mark.parametrize("logical", ["serve-aws-realtime-alb", "a-alb", "x" * 24])
def test_a_load_balancer_name_whose_autoname_fits_is_kept(logical: str) -> None:
    assert elb_logical_name(logical, autoname_truncates=False) == logical


@pytest.mark.parametrize(
    "logical",
    [
        "x" * 25 + "-alb",
        "serve_llama.70b-alb",
        "internal-api-alb",
        "-edge-alb",
        "___-alb",
        "prod.eu.serving-stack-long-alb",
    ],
)
def test_a_load_balancer_name_that_would_break_elbs_rule_is_rewritten_within_it(logical: str) -> None:
    name = elb_logical_name(logical, autoname_truncates=False)
    assert len(name) + AUTONAME_SUFFIX <= ELB_NAME_MAX and VALID.fullmatch(name), name
    assert not name.startswith("internal-")
    assert elb_logical_name(logical, autoname_truncates=False) == name  # the same on every run


def test_target_groups_are_truncated_by_their_own_autoname_so_only_their_alphabet_matters() -> None:
    long = "serve-llama-70b-production-eu-tg"
    assert elb_logical_name(long, autoname_truncates=True) == long
    assert VALID.fullmatch(elb_logical_name("serve_llama.70b-tg", autoname_truncates=True))


def test_distinct_names_that_share_a_cut_stay_distinct() -> None:
    a = elb_logical_name("serving-cluster-number-one-alb", autoname_truncates=False)
    b = elb_logical_name("serving-cluster-number-two-alb", autoname_truncates=False)
    assert a != b and a[:17] == b[:17]
