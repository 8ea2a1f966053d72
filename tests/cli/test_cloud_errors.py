"""Every command that reads a cloud, fed every kind of cloud SDK error where it reads: one line on
stderr, the README's exit code 2, no traceback.

The kinds are the rows of ``fullserver.cloud_errors.ANSWERS`` (each SDK class answered on its own,
its fallbacks included); tests/core/test_cloud_errors.py holds every class of each SDK to a row.
AWS errors are raised where each command first reaches AWS (boto3's ``Session.client``), Google
ones where the quota reader sends a request (google-auth refreshes its token there)."""

from __future__ import annotations

from pathlib import Path

import boto3.session
import google.auth
import google.auth.credentials
import google.auth.transport.requests
import pytest
from typer.testing import CliRunner

from fullserver.cloud_errors import ANSWERS
from fullserver.errors import EXIT_INPUT
from fullserver_cli.app import app
from tests.core.test_cloud_errors import instance

STACKS = str(Path(__file__).resolve().parents[2] / "stacks")
runner = CliRunner()

AWS_COMMANDS = {
    "quota": ["quota", "--stacks-dir", STACKS, "exp-aws-spot"],
    "ephemeral": ["ephemeral", "--stacks-dir", STACKS, "--stack", "exp-aws-spot", "--", "true"],
    "refresh aws-spot": ["catalog", "refresh", "--provider", "aws-spot", "--dry-run"],
    "refresh aws-types": ["catalog", "refresh", "--provider", "aws-types", "--dry-run"],
}
GCP_COMMANDS = {
    "quota": ["quota", "--stacks-dir", STACKS, "train-tpu-v5e"],
    "ephemeral": ["ephemeral", "--stacks-dir", STACKS, "--stack", "finetune-gcp-g2", "--", "true"],
}


def classes(*modules: str) -> list[type[BaseException]]:
    """The SDK class of each row of the table, for the given modules."""
    import importlib

    return [getattr(importlib.import_module(m), name) for m, name in ANSWERS if m in modules]


def assert_one_line(result: object) -> None:
    stderr: str = result.stderr  # type: ignore[attr-defined]
    assert result.exit_code == EXIT_INPUT, stderr  # type: ignore[attr-defined]
    [line] = stderr.splitlines()
    assert line.startswith("error: ") and "Traceback" not in line


@pytest.mark.parametrize("command", AWS_COMMANDS)
@pytest.mark.parametrize("cls", classes("botocore.exceptions"), ids=lambda c: c.__name__)
def test_every_aws_error_is_one_line_in_every_aws_command(
    command: str, cls: type[BaseException], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")

    def fail(*args: object, **kwargs: object) -> None:
        raise instance(cls)

    monkeypatch.setattr(boto3.session.Session, "client", fail)
    assert_one_line(runner.invoke(app, AWS_COMMANDS[command]))


@pytest.mark.parametrize("command", GCP_COMMANDS)
@pytest.mark.parametrize(
    "cls", classes("google.auth.exceptions", "requests.exceptions", "urllib3.exceptions"), ids=lambda c: c.__name__
)
def test_every_google_and_http_error_is_one_line_in_every_gcp_command(
    command: str, cls: type[BaseException], monkeypatch: pytest.MonkeyPatch
) -> None:
    credentials = google.auth.credentials.AnonymousCredentials()  # type: ignore[no-untyped-call]
    monkeypatch.setattr(google.auth, "default", lambda **_: (credentials, "my-ml-project"))

    def fail(*args: object, **kwargs: object) -> None:
        raise instance(cls)

    monkeypatch.setattr(google.auth.transport.requests.AuthorizedSession, "request", fail)
    assert_one_line(runner.invoke(app, GCP_COMMANDS[command]))


def test_no_application_default_credentials_is_one_line_naming_what_to_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/key.json")
    result = runner.invoke(app, GCP_COMMANDS["quota"])
    assert_one_line(result)
    assert "/nonexistent/key.json" in result.stderr and "gcloud auth application-default login" in result.stderr


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"AWS_PROFILE": "no-such-profile"}, "error: AWS_PROFILE: names the profile 'no-such-profile'"),
        ({"AWS_ACCESS_KEY_ID": "AKIAEXAMPLE"}, "error: AWS_SECRET_ACCESS_KEY: is missing"),
    ],
)
@pytest.mark.parametrize("command", AWS_COMMANDS)
def test_a_profile_that_does_not_exist_or_a_key_without_its_secret_is_named(
    env: dict[str, str], named: str, command: str, no_aws_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    result = runner.invoke(app, AWS_COMMANDS[command])
    assert_one_line(result)
    assert result.stderr.startswith(named)


def test_a_config_file_botocore_cannot_parse_is_named(no_aws_credentials: None, tmp_path: Path) -> None:
    binary = tmp_path / "config"
    binary.write_bytes(bytes(range(256)) * 4)
    result = runner.invoke(app, AWS_COMMANDS["quota"], env={"AWS_CONFIG_FILE": str(binary), "AWS_PROFILE": "x"})
    assert_one_line(result)
    assert result.stderr.startswith(f"error: {binary}: is not an AWS config file")
