"""no-open-admin-ports: admin ports open to much of the internet fail, by the core's SSH rule."""

from __future__ import annotations

from typing import Any

import pytest

from fullserver.netcheck import check_ssh_ranges
from policy.resources import AWS_SECURITY_GROUP, AWS_SG_INGRESS_RULE, AWS_SG_RULE, GCP_FIREWALL
from tests.policy.conftest import (
    Stacks,
    made,
    one_violation,
    violations,
)

admin_ports = violations("no-open-admin-ports")


def test_ssh_from_anywhere_in_a_security_group(stacks: Stacks) -> None:
    sg = stacks["exp-aws-spot"].one(AWS_SECURITY_GROUP)
    sg.inputs["ingress"][0]["cidrBlocks"] = ["0.0.0.0/0"]
    one_violation(admin_ports(sg), "22 (SSH)", "0.0.0.0/0", "sshSourceRanges", "Session Manager")


def test_all_traffic_from_ipv6_anywhere(stacks: Stacks) -> None:
    sg = stacks["train-p5-cluster"].one(AWS_SECURITY_GROUP)
    sg.inputs["ingress"].append({"protocol": "-1", "fromPort": 0, "toPort": 0, "ipv6CidrBlocks": ["::/0"]})
    msg = one_violation(admin_ports(sg), "::/0", "3389 (RDP)", "8888 (Jupyter)")
    assert "22 (SSH)" in msg


@pytest.mark.parametrize(
    ("typ", "props", "port"),
    [
        (
            AWS_SG_INGRESS_RULE,
            {"ipProtocol": "tcp", "fromPort": 3389, "toPort": 3389, "cidrIpv4": "0.0.0.0/0"},
            "3389 (RDP)",
        ),
        (AWS_SG_INGRESS_RULE, {"ipProtocol": "-1", "cidrIpv6": "::/0"}, "6443 (Kubernetes API)"),
        (
            AWS_SG_RULE,
            {"type": "ingress", "protocol": "tcp", "fromPort": 8000, "toPort": 9000, "cidrBlocks": ["0.0.0.0/0"]},
            "8888 (Jupyter)",
        ),
        (
            GCP_FIREWALL,
            {"direction": "INGRESS", "sourceRanges": ["0.0.0.0/0"], "allows": [{"protocol": "tcp"}]},
            "22 (SSH)",
        ),
        (GCP_FIREWALL, {"sourceRanges": ["0.0.0.0/0"], "allows": [{"protocol": "all"}]}, "5900 (VNC)"),
        (
            GCP_FIREWALL,
            {"sourceRanges": ["10.0.0.0/8", "::/0"], "allows": [{"protocol": "tcp", "ports": ["2375-2376"]}]},
            "2376 (Docker API (TLS))",
        ),
        # No source at all: GCE applies the rule to every source.
        (GCP_FIREWALL, {"allows": [{"protocol": "tcp", "ports": ["8888"]}]}, "8888 (Jupyter)"),
    ],
)
def test_admin_ports_from_anywhere(typ: str, props: dict[str, Any], port: str) -> None:
    one_violation(admin_ports(made(typ, props)), port, "restrict the source")


@pytest.mark.parametrize(
    ("typ", "props"),
    [
        (AWS_SG_RULE, {"type": "egress", "protocol": "-1", "cidrBlocks": ["0.0.0.0/0"]}),
        (AWS_SG_INGRESS_RULE, {"ipProtocol": "tcp", "fromPort": 443, "toPort": 443, "cidrIpv4": "0.0.0.0/0"}),
        (GCP_FIREWALL, {"direction": "EGRESS", "destinationRanges": ["0.0.0.0/0"], "allows": [{"protocol": "all"}]}),
        (GCP_FIREWALL, {"sourceRanges": ["0.0.0.0/0"], "allows": [{"protocol": "icmp"}]}),
        (
            GCP_FIREWALL,
            {"sourceRanges": ["0.0.0.0/0"], "allows": [{"protocol": "tcp", "ports": ["22"]}], "disabled": True},
        ),
        (GCP_FIREWALL, {"sourceRanges": ["203.0.113.0/24"], "allows": [{"protocol": "tcp", "ports": ["22"]}]}),
    ],
)
def test_harmless_rules_pass(typ: str, props: dict[str, Any]) -> None:
    assert admin_ports(made(typ, props)) == []


def test_admin_ports_are_configurable() -> None:
    rule = made(AWS_SG_INGRESS_RULE, {"ipProtocol": "tcp", "fromPort": 5432, "toPort": 5432, "cidrIpv4": "0.0.0.0/0"})
    assert admin_ports(rule) == []
    one_violation(admin_ports(rule, {"ports": [5432]}), "5432")


SPLIT_INTERNET = ["0.0.0.0/1", "128.0.0.0/1"]


def _core_says(ranges: list[str], opens: str = "SSH") -> str:
    with pytest.raises(ValueError) as refused:
        check_ssh_ranges(ranges, opens=opens)
    return str(refused.value)


def test_ssh_from_the_internet_in_two_halves(stacks: Stacks) -> None:
    """0.0.0.0/1 + 128.0.0.0/1 is the whole IPv4 internet: refused with the core's own message."""
    sg = stacks["exp-aws-spot"].one(AWS_SECURITY_GROUP)
    sg.inputs["ingress"].insert(0, {"protocol": "tcp", "fromPort": 22, "toPort": 22, "cidrBlocks": SPLIT_INTERNET})
    one_violation(admin_ports(sg), "22 (SSH)", "0.0.0.0/1, 128.0.0.0/1", _core_says(SPLIT_INTERNET), "Session Manager")


@pytest.mark.parametrize(
    ("typ", "props", "opens", "port"),
    [
        (
            GCP_FIREWALL,
            {"sourceRanges": SPLIT_INTERNET, "allows": [{"protocol": "tcp", "ports": ["22"]}]},
            "SSH",
            "22 (SSH)",
        ),
        (
            AWS_SG_RULE,
            {"type": "ingress", "protocol": "tcp", "fromPort": 3389, "toPort": 3389, "cidrBlocks": SPLIT_INTERNET},
            "RDP",
            "3389 (RDP)",
        ),
    ],
)
def test_split_internet_on_every_admin_port(typ: str, props: dict[str, Any], opens: str, port: str) -> None:
    one_violation(admin_ports(made(typ, props)), port, _core_says(SPLIT_INTERNET, opens), "restrict the source")


def test_rules_of_one_group_add_up(stacks: Stacks) -> None:
    """Two SSH rules of one security group, each narrow enough alone, open two /8s together."""
    sg = stacks["exp-aws-spot"].one(AWS_SECURITY_GROUP)
    sg.inputs["ingress"][0]["cidrBlocks"] = ["12.0.0.0/8"]
    assert admin_ports(sg) == []
    sg.inputs["ingress"].append({"protocol": "tcp", "fromPort": 22, "toPort": 22, "cidrBlocks": ["11.0.0.0/8"]})
    one_violation(admin_ports(sg), "22 (SSH)", _core_says(["12.0.0.0/8", "11.0.0.0/8"]))
