"""What the command gets from the stack: outputs as variables and a file, secrets only by name."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pulumi import automation as auto

from fullserver.errors import InputError
from stackops.outputs import SECRET_MARK, EphemeralEnv, output_env_name, shared_outputs, write_outputs_file


def test_output_names_become_shell_variables() -> None:
    assert output_env_name("privateIps") == "FULLSERVER_OUTPUT_PRIVATE_IPS"
    assert output_env_name("connect") == "FULLSERVER_OUTPUT_CONNECT"
    assert output_env_name("gpu.count-1") == "FULLSERVER_OUTPUT_GPU_COUNT_1"


def raw_outputs() -> dict[str, auto.OutputValue]:
    return {
        "connect": auto.OutputValue("ssh ubuntu@host", False),
        "publicIps": auto.OutputValue(["198.51.100.7"], False),
        "apiToken": auto.OutputValue("s3cr3t-value", True),
    }


def env_for(outputs: dict[str, Any], passed: frozenset[str], tmp_path: Path) -> EphemeralEnv:
    return EphemeralEnv(
        stack="ci-x",
        backend="file:///state",
        expires_at=datetime(2026, 1, 1, tzinfo=UTC),
        outputs=outputs,
        secret_outputs=frozenset({"apiToken"}),
        outputs_file=tmp_path / "outputs.json",
        plan=None,  # type: ignore[arg-type]  # not read by environ()
        work_dir=tmp_path,
        passed_secrets=passed,
    )


def test_a_secret_output_not_named_is_masked_and_kept_out_of_the_environment(tmp_path: Path) -> None:
    outputs = shared_outputs(raw_outputs(), (), "stack 'ci-x'")
    assert outputs == {"connect": "ssh ubuntu@host", "publicIps": ["198.51.100.7"], "apiToken": SECRET_MARK}
    environ = env_for(outputs, frozenset(), tmp_path).environ()
    assert "FULLSERVER_OUTPUT_API_TOKEN" not in environ  # not even the mark: a script could take it for a value
    assert environ["FULLSERVER_OUTPUT_PUBLIC_IPS"] == '["198.51.100.7"]'


def test_a_secret_output_named_is_in_the_environment_and_never_in_the_file(tmp_path: Path) -> None:
    outputs = shared_outputs(raw_outputs(), ["apiToken"], "stack 'ci-x'")
    assert outputs["apiToken"] == "s3cr3t-value"
    env = env_for(outputs, frozenset({"apiToken"}), tmp_path)
    assert env.environ()["FULLSERVER_OUTPUT_API_TOKEN"] == "s3cr3t-value"
    assert "s3cr3t-value" not in repr(env)
    write_outputs_file(env.outputs_file, outputs, env.secret_outputs)
    assert json.loads(env.outputs_file.read_text())["apiToken"] == SECRET_MARK
    assert "s3cr3t-value" not in env.outputs_file.read_text()
    assert env.outputs_file.stat().st_mode & 0o077 == 0


def test_naming_an_output_that_does_not_exist_is_one_line_listing_the_outputs() -> None:
    with pytest.raises(InputError, match=r"^--secret-output apiTokn: stack 'ci-x' has no such output") as err:
        shared_outputs(raw_outputs(), ["apiTokn", "connect"], "stack 'ci-x'")
    assert "(its outputs: apiToken, connect, publicIps)" in str(err.value)
