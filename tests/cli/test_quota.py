"""`fullserver quota`: what a person sees without credentials, and for a stack that needs none.

The readers themselves (enough, short, unknown against stubbed AWS and recorded GCP responses)
are specified in tests/core/test_quotacheck.py."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from fullserver.errors import EXIT_INPUT
from fullserver_cli.app import app

STACKS = Path(__file__).resolve().parents[2] / "stacks"
runner = CliRunner()


def test_without_credentials_one_line_says_what_the_check_needs(no_aws_credentials: None) -> None:
    result = runner.invoke(app, ["quota", "--stacks-dir", str(STACKS), "exp-aws-spot"])
    assert result.exit_code == EXIT_INPUT
    assert result.stderr.splitlines() == [
        "error: AWS: no credentials to read Service Quotas and EC2 with "
        "(set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"
    ]
    assert "Traceback" not in result.output


def test_a_bare_metal_stack_needs_no_cloud_quota() -> None:
    result = runner.invoke(app, ["quota", "--stacks-dir", str(STACKS), "dedicated-h100"])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "dedicated-h100: needs no cloud quota"
