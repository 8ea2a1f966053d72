"""What ``fullserver start`` does for a stopped stack, read from its ``autostop`` output
(``fullserver.autostop.start``): up where the program restores the nodes, else the platforms' own
start commands and nothing else."""

from __future__ import annotations

from typing import Any

import pytest

from fullserver.autostop.start import start_plan
from fullserver.errors import InputError

GCP = ["gcloud", "compute", "instances", "start", "vm-0", "--zone", "us-central1-a", "--project", "p1"]
AWS = ["aws", "ec2", "start-instances", "--instance-ids", "i-0abc", "--region", "us-east-1"]
TPU = ["gcloud", "compute", "tpus", "tpu-vm", "start", "tpu-0", "--zone", "us-west4-a", "--project", "p1"]


def outputs(restored: bool, commands: list[Any]) -> dict[str, Any]:
    return {"autostop": {"minutes": 30, "restoredByUp": restored, "startCommands": commands}}


def test_a_stack_the_program_restores_is_brought_back_by_up() -> None:
    plan = start_plan("exp", outputs(True, []))
    assert (plan.up, plan.commands) == (True, ())


def test_stopped_nodes_are_started_by_their_own_commands_in_order() -> None:
    plan = start_plan("ft", outputs(False, [GCP, AWS, TPU]))
    assert plan.up is False
    assert plan.commands == (tuple(GCP), tuple(AWS), tuple(TPU))


@pytest.mark.parametrize(
    "command",
    [
        ["sh", "-c", "curl evil | sh"],
        [*GCP[:4], "--impersonate-service-account=x", *GCP[5:]],  # a value read as an option
        [*GCP, "--async"],  # a word more than the platform's command
        GCP[:-1],
        [*AWS[:4], "", *AWS[5:]],
        "gcloud compute instances start vm-0",  # a shell string, not an argv
    ],
)
def test_anything_but_a_platform_s_start_command_is_refused(command: Any) -> None:
    with pytest.raises(InputError, match=r"^stack 'ft' output 'autostop': .*not"):
        start_plan("ft", outputs(False, [GCP, command]))


def test_a_stack_without_autostop_says_so_and_how_to_restore_it() -> None:
    with pytest.raises(InputError) as err:
        start_plan("serve", {"platform": "aws-gpu"})
    assert err.value.line() == (
        "stack 'serve': has no 'autostop' output: its nodes do not stop themselves "
        "(`pulumi up --refresh --stack serve` restores anything else)"
    )


def test_an_output_from_before_start_existed_asks_for_one_up() -> None:
    with pytest.raises(InputError, match=r"run `pulumi up --refresh --stack old` once"):
        start_plan("old", {"autostop": {"minutes": 30, "start": "gcloud compute instances start for each node"}})


def test_nothing_to_start_is_an_error_not_a_silent_success() -> None:
    with pytest.raises(InputError, match="lists no node to start"):
        start_plan("ft", outputs(False, []))


@pytest.mark.parametrize(
    ("running", "said"),
    [
        (0, "ft: stopped, as of its last pulumi up (or pulumi refresh --run-program)"),
        (2, "ft: 2 node(s) running, as of its last pulumi up (or pulumi refresh --run-program)"),
        (None, "ft: its outputs do not say whether it is stopped (run `pulumi up` once)"),
        ("0", "ft: its outputs do not say whether it is stopped (run `pulumi up` once)"),  # not a count
        (True, "ft: its outputs do not say whether it is stopped (run `pulumi up` once)"),
    ],
)
def test_the_plan_says_whether_the_nodes_are_stopped_and_as_of_when(running: Any, said: str) -> None:
    out = outputs(True, [])
    if running is not None:
        out["autostop"]["runningNodes"] = running
    assert start_plan("ft", out).state() == said
