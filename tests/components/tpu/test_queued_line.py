"""A queued slice's gcloud commands: shown to a person (no gcloud here, or a failure), one line a
shell runs as is (spaces quoted, the ``ssh-keys`` metadata's lines in ``$'...'``); new login
metadata reaches the running node in one ``tpu-vm update``."""

from __future__ import annotations

import subprocess

import pytest

from components.tpu.queued import metadata_update_command, shell_line


def test_the_line_gives_bash_the_same_arguments() -> None:
    command = ["printf", "%s|", "fullserver slice: v5p-64 (2x2x8)", "it's", "ubuntu:k1 a@b\nubuntu:k2 c\\d", "^;^a=b"]
    line = shell_line(command)
    assert "\n" not in line
    done = subprocess.run(["bash", "-c", line], capture_output=True, text=True, check=True)
    assert done.stdout == "".join(f"{arg}|" for arg in command[2:])


def _props(metadata: dict[str, str]) -> dict[str, object]:
    node = {"metadata": metadata}
    return {"zone": "us-east5-a", "project": "p", "tpu": {"nodeSpecs": [{"nodeId": "slice-tpu", "node": node}]}}


def test_new_keys_reach_the_running_node_in_one_update_with_a_delimiter_no_value_holds() -> None:
    old = {"enable-oslogin": "TRUE", "block-project-ssh-keys": "TRUE"}
    new = {"enable-oslogin": "FALSE", "block-project-ssh-keys": "TRUE", "ssh-keys": "ubuntu:ssh-ed25519 AAA a;b@c"}
    command = metadata_update_command(_props(old), _props(new))
    assert command is not None and command[:7] == [
        "gcloud",
        "alpha",
        "compute",
        "tpus",
        "tpu-vm",
        "update",
        "slice-tpu",
    ]
    flag = command[command.index("--update-metadata") + 1]
    assert flag == "^|^enable-oslogin=FALSE|ssh-keys=ubuntu:ssh-ed25519 AAA a;b@c"  # ';' is in a key's comment
    assert "--remove-metadata" not in command
    assert metadata_update_command(_props(new), _props(dict(new))) is None


def test_metadata_holding_every_delimiter_is_refused_in_one_line() -> None:
    with pytest.raises(ValueError, match="every delimiter gcloud could split on"):
        metadata_update_command(_props({}), _props({"ssh-keys": "ubuntu:k ;|~#%"}))
