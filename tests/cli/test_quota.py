"""`fullserver quota`: what a person sees without credentials, and for a stack that needs none.

The readers themselves (enough, short, unknown against stubbed AWS and recorded GCP responses)
are specified in tests/core/test_quotacheck.py."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fullserver.errors import EXIT_INPUT, EXIT_SHORT
from fullserver.platforms.quota import QuotaNeed
from fullserver.quotacheck import QuotaStatus
from fullserver_cli import quota as quota_cli
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


def test_nothing_is_printed_before_an_error_of_a_later_stack(no_aws_credentials: None) -> None:
    """ "dedicated-h100: needs no cloud quota" printed before the error of the stack after it read
    as an answer from a command that had failed."""
    result = runner.invoke(app, ["quota", "--stacks-dir", str(STACKS), "dedicated-h100", "exp-aws-spot"])
    assert result.exit_code == EXIT_INPUT
    assert result.stdout == ""
    assert result.stderr.startswith("error: AWS: no credentials") and result.stderr.count("\n") == 1


class Account:
    """A cloud's answers: every quota at ``limit``, nothing in use (``fullserver.quotacheck`` readers)."""

    def __init__(self, limit: float) -> None:
        self.limit = limit

    def read(self, need: QuotaNeed) -> QuotaStatus:
        return QuotaStatus(need, self.limit, 0.0)

    def request(self, status: QuotaStatus) -> str:
        return f"raise {status.need.code} to {status.desired}"


@pytest.fixture
def account(monkeypatch: pytest.MonkeyPatch) -> Callable[[float], None]:
    def use(limit: float) -> None:
        monkeypatch.setattr(
            quota_cli, "readers_for", lambda needs, table, project: {"aws": Account(limit), "gcp": Account(limit)}
        )

    return use


def codes(output: str) -> set[str]:
    return set(re.findall(r"\b(L-[0-9A-F]{8}|[A-Z][A-Z0-9_]{3,})\b", output))


def test_an_eks_stack_lists_its_node_groups_and_clusters_quotas(account: Callable[[float], None]) -> None:
    account(0)  # a new account: 0 vCPUs of P instances
    result = runner.invoke(app, ["quota", "--stacks-dir", str(STACKS), "eks-gpu-cluster"], terminal_width=200)
    assert "needs no cloud quota" not in result.output
    assert {"L-417A185B", "L-1216C47A", "L-1194D53C", "L-FE5A380F"} <= codes(result.stdout)
    assert result.exit_code == EXIT_SHORT
    assert "L-417A185B (Running On-Demand P instances) in us-east-1: needs 384 vCPUs, limit 0" in result.stderr


def write(tmp_path: Path, name: str, accelerator: str, count: int, zone: str = "") -> Path:
    lines = [
        "config:",
        "  gcp:project: my-ml-project",
        "  fullserver:profile: fine-tuning",
        "  fullserver:platform: gcp-gpu",
        "  fullserver:region: us-central1",
        f"  fullserver:accelerator: {accelerator}",
        f"  fullserver:acceleratorCount: {count}",
        "  fullserver:owner: applied-ml",
    ]
    (tmp_path / f"Pulumi.{name}.yaml").write_text(
        "\n".join([*lines, *([f"  fullserver:zone: {zone}"] if zone else [])])
    )
    return tmp_path


@pytest.mark.parametrize(
    ("accelerator", "count", "zone", "expected"),
    [
        (
            "V100-16GB",
            1,
            "us-central1-a",
            {"PREEMPTIBLE_NVIDIA_V100_GPUS", "GPUS_ALL_REGIONS", "CPUS", "CPUS_ALL_REGIONS"},
        ),
        ("H200-141GB", 8, "", {"PREEMPTIBLE_NVIDIA_H200_GPUS", "GPUS_ALL_REGIONS", "CPUS_ALL_REGIONS"}),
    ],
)
def test_a_gpu_stack_lists_its_models_own_metric_and_the_project_wide_caps(
    account: Callable[[float], None], tmp_path: Path, accelerator: str, count: int, zone: str, expected: set[str]
) -> None:
    account(100_000)
    stacks = write(tmp_path, "gpu", accelerator, count, zone)
    result = runner.invoke(app, ["quota", "--stacks-dir", str(stacks), "gpu"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert expected <= codes(result.stdout)
