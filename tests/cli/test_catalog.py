"""``fullserver catalog``: figures with their sources' age; ``catalog refresh`` refuses bad input in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from fullserver.errors import EXIT_INPUT
from fullserver_cli.app import app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def test_catalog_json_shows_the_age_of_every_figure_price_and_source() -> None:
    result = runner.invoke(app, ["catalog", "--accelerator", "L4", "--json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert all(isinstance(s["age_days"], int) for s in data["sources"].values())
    shape = data["shapes"][0]
    assert all(f["age_days"] is not None for f in shape["figures"].values())
    assert all(isinstance(p["age_days"], int) for p in shape["prices"].values())


def test_refresh_refuses_an_unknown_provider_and_a_region_for_two_clouds() -> None:
    bad = runner.invoke(app, ["catalog", "refresh", "--provider", "azure"])
    assert bad.exit_code == EXIT_INPUT and bad.stderr.startswith("error: --provider: unknown provider 'azure'")
    two = runner.invoke(app, ["catalog", "refresh", "--provider", "aws", "--provider", "gcp", "--region", "x"])
    assert two.exit_code == EXIT_INPUT and "give providers of one cloud only" in two.stderr


def test_plan_warns_about_prices_older_than_the_threshold_in_text_and_json() -> None:
    args = ["plan", "--stacks-dir", str(ROOT / "stacks"), "exp-aws-spot"]
    fresh = json.loads(runner.invoke(app, [*args, "--json", "--max-price-age-days", "3650"]).stdout)[0]
    stale = json.loads(runner.invoke(app, [*args, "--json", "--max-price-age-days", "1"]).stdout)[0]
    assert not any("days old" in w for w in fresh["warnings"])
    assert any("days old" in w and "catalog refresh" in w for w in stale["warnings"])


@pytest.mark.parametrize("provider", ["aws-spot", "aws-types"])
def test_ec2_refresh_without_credentials_says_in_one_line_what_credentials_it_needs(
    provider: str, no_aws_credentials: None
) -> None:
    result = runner.invoke(app, ["catalog", "refresh", "--provider", provider, "--dry-run"])
    assert result.exit_code == EXIT_INPUT
    assert result.stderr.splitlines() == [
        "error: AWS credentials: none found (environment, AWS_PROFILE, ~/.aws, instance role) (export AWS_PROFILE "
        "(aws configure, or aws sso login), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"
    ]


def test_ec2_refresh_offline_names_the_endpoint_that_could_not_be_reached(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # the discard port: nothing listens
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    result = runner.invoke(app, ["catalog", "refresh", "--provider", "aws-spot", "--dry-run"])
    assert result.exit_code == EXIT_INPUT
    assert result.stderr.splitlines() == [
        "error: http://127.0.0.1:9/: could not be reached (check the network; HTTPS_PROXY, NO_PROXY and "
        "AWS_ENDPOINT_URL if set)"
    ]
