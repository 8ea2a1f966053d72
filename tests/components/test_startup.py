"""The boot script: idempotent RAID0 scratch and a data disk that is never reformatted."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from components.aws.boot import AWS_INSTANCE_STORE, aws_image_id, aws_secret_command
from components.gcp.boot import GCP_DATA, gcp_image, gcp_secret_command
from components.gcp.labels import gcp_labels, gcp_name
from components.startup import (
    CONTAINER_RUNTIME,
    DiskPlan,
    authorized_keys_script,
    boot_script,
    disks_script,
    model_server_script,
)
from tests.components.conftest import rsa_4096_line


def test_script_guards_and_stable_device_names() -> None:
    text = disks_script(
        DiskPlan(scratch_glob=AWS_INSTANCE_STORE, scratch_devices=8, data_glob=GCP_DATA, data_disk=True)
    )
    assert 'mountpoint -q "$SCRATCH_DIR" && return 0' in text
    assert "mdadm --assemble" in text and "mdadm --create" in text
    assert 'has_signature "$dev" || mkfs.ext4' in text  # never over a filesystem or partition table
    assert "/dev/disk/by-id/nvme-Amazon_EC2_NVMe_Instance_Storage_*" in text
    assert "nofail" in text


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash needed")
def test_scripts_are_valid_bash(tmp_path: Path) -> None:
    path = tmp_path / "boot.sh"
    path.write_text(
        boot_script(
            DiskPlan(scratch_glob="/nonexistent/*", scratch_devices=2, data_glob="/nonexistent", data_disk=True)
        )
    )
    subprocess.run(["bash", "-n", str(path)], check=True)
    inner = tmp_path / "disks.sh"
    inner.write_text(
        disks_script(
            DiskPlan(scratch_glob="/nonexistent/*", scratch_devices=0, data_glob="/nonexistent", data_disk=False)
        )
    )
    subprocess.run(["bash", "-n", str(inner)], check=True)


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash needed")
def test_the_model_server_runs_the_image_with_every_argument_intact(tmp_path: Path) -> None:
    """The wrapper the unit runs, executed with stand-in ``docker`` and ``nvidia-smi``: the container
    gets the GPUs, the port, the cache on scratch, and each argument as one word (spaces, quotes and
    ``$`` reach the server as written, never the shell)."""
    script = model_server_script(
        "vllm/vllm-openai:v0.10.2", ["--model", "org/m", "--chat-template", "a b'$HOME\""], 8000
    )
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)
    assert "systemctl enable fullserver-model.service" in script and "Restart=always" in script
    assert "docker pull" not in script.split("[Service]", 1)[1].split("[Install]", 1)[0]  # not before every start
    wrapper = script.split("cat > /usr/local/sbin/fullserver-model <<'FULLSERVER_EOF'\n", 1)[1].split(
        "FULLSERVER_EOF", 1
    )[0]
    bin_dir, scratch, argv = tmp_path / "bin", tmp_path / "scratch", tmp_path / "argv"
    bin_dir.mkdir()
    scratch.mkdir()
    (bin_dir / "nvidia-smi").write_text("#!/bin/bash\nexit 0\n")
    calls = tmp_path / "calls"
    (bin_dir / "docker").write_text(
        f'#!/bin/bash\necho "$1 $2" >> {calls}\n[ "$1" = run ] && printf "%s\\n" "$@" > {argv}\n'
        f'[ "$1 $2" = "image inspect" ] && exit "$(cat {tmp_path}/cached 2>/dev/null || echo 1)"\nexit 0\n'
    )
    for tool in ("nvidia-smi", "docker"):
        (bin_dir / tool).chmod(0o755)
    (scratch / "model-cache").mkdir()
    link = tmp_path / "scratch-link"
    link.symlink_to(scratch)  # the DLAMI's /scratch is a link to its NVMe mount
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "FULLSERVER_SCRATCH_DIR": str(link),
        "FULLSERVER_MODEL_ENV": str(tmp_path / "absent.env"),
        "FULLSERVER_MODEL_CACHE": str(tmp_path / "fallback"),
    }
    subprocess.run(["bash", "-c", wrapper], env=env, check=True)
    assert "pull vllm/vllm-openai:v0.10.2" in calls.read_text()  # not cached yet: pulled first
    (tmp_path / "cached").write_text("0")
    calls.unlink()
    subprocess.run(["bash", "-c", wrapper], env=env, check=True)  # a restart with the image cached
    assert "pull" not in calls.read_text()  # needs no registry
    assert argv.read_text().splitlines() == [
        "run",
        "--rm",
        "--name",
        "fullserver-model",
        "--gpus",
        "all",
        "--ipc=host",
        "-p",
        "8000:8000",
        "-v",
        f"{link}/model-cache:/root/.cache/huggingface",
        "vllm/vllm-openai:v0.10.2",
        "--model",
        "org/m",
        "--chat-template",
        "a b'$HOME\"",
    ]


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash needed")
def test_docker_is_restarted_only_when_the_nvidia_runtime_configuration_changed(tmp_path: Path) -> None:
    """The runtime part of the boot script, run on three boots with stand-in docker, nvidia-ctk and
    systemctl: the first boot (``nvidia-ctk`` writes the runtime into daemon.json) restarts docker,
    a reboot with the file unchanged only makes sure docker runs, an image whose daemon.json lacks
    the runtime again restarts it."""
    assert CONTAINER_RUNTIME in model_server_script("vllm/vllm-openai:v0.10.2", [], 8000)
    bin_dir, daemon_json, calls = tmp_path / "bin", tmp_path / "daemon.json", tmp_path / "calls"
    bin_dir.mkdir()
    stand_ins = {
        "docker": "#!/bin/sh\nexit 0\n",
        # what `nvidia-ctk runtime configure` does: the runtime added to the file, once
        "nvidia-ctk": (
            "#!/bin/bash\n"
            'for a in "$@"; do case "$a" in --config=*) f="${a#--config=}";; esac; done\n'
            'grep -q nvidia-container-runtime "$f" 2>/dev/null '
            '|| printf \'{"runtimes": {"nvidia": {"path": "nvidia-container-runtime"}}}\\n\' > "$f"\n'
        ),
        "systemctl": f'#!/bin/sh\necho "$*" >> {calls}\n[ "$1" = is-active ] && exit 0\nexit 0\n',
    }
    for name, body in stand_ins.items():
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "FULLSERVER_DOCKER_DAEMON_JSON": str(daemon_json)}

    def boot() -> list[str]:
        calls.unlink(missing_ok=True)
        subprocess.run(["bash", "-c", "set -euo pipefail\n" + CONTAINER_RUNTIME], env=env, check=True)
        return [c for c in calls.read_text().splitlines() if "docker" in c]

    assert boot() == ["enable docker", "is-active --quiet docker", "restart docker"]  # first boot
    assert "nvidia-container-runtime" in daemon_json.read_text()
    assert boot() == ["enable docker", "start docker"]  # a reboot: docker untouched if it runs
    daemon_json.write_text('{"log-driver": "json-file"}\n')  # an image whose file lacks the runtime
    assert boot()[-1] == "restart docker"


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash needed")
def test_the_secrets_are_fetched_at_start_into_a_root_only_file_never_into_the_script(tmp_path: Path) -> None:
    """The Hugging Face token and the endpoint's API key reach the container as HF_TOKEN and
    VLLM_API_KEY (vLLM's OpenAI server then asks every /v1 request for the key)."""
    secrets = {"token": aws_secret_command("us-east-1", "hf/token"), "api_key": aws_secret_command("us-east-1", "k")}
    script = model_server_script("img:1", ["--model", "org/gated"], 8000, secrets, keep_alive_seconds=620)
    assert "hf_secret_value" not in script
    wrapper = script.split("cat > /usr/local/sbin/fullserver-model <<'FULLSERVER_EOF'\n", 1)[1].split(
        "FULLSERVER_EOF", 1
    )[0]
    bin_dir, calls, argv = tmp_path / "bin", tmp_path / "aws-calls", tmp_path / "argv"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text("#!/bin/bash\nexit 0\n")
    (bin_dir / "aws").write_text(
        f'#!/bin/bash\nprintf "%s\\n" "$@" >> {calls}\n[ "$6" = k ] && echo key_value || echo hf_secret_value\n'
    )
    (bin_dir / "docker").write_text(f'#!/bin/bash\n[ "$1" = run ] && printf "%s\\n" "$@" > {argv}\nexit 0\n')
    for tool in ("nvidia-smi", "aws", "docker"):
        (bin_dir / tool).chmod(0o755)
    env_file = tmp_path / "etc" / "model-server.env"
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "FULLSERVER_SCRATCH_DIR": str(tmp_path / "no-scratch"),
        "FULLSERVER_MODEL_ENV": str(env_file),
        "FULLSERVER_MODEL_CACHE": str(tmp_path / "cache"),
    }
    subprocess.run(["bash", "-c", wrapper], env=env, check=True)
    assert calls.read_text().split() == [
        *aws_secret_command("us-east-1", "hf/token")[1:],
        *aws_secret_command("us-east-1", "k")[1:],
    ]
    assert "/hf/token" in calls.read_text().split()
    assert env_file.read_text() == "HF_TOKEN=hf_secret_value\nVLLM_API_KEY=key_value\n"
    assert env_file.stat().st_mode & 0o777 == 0o600
    got = argv.read_text().splitlines()
    assert got[got.index("--env-file") + 1] == str(env_file) and got.index("--env-file") < got.index("img:1")
    # the keep-alive reaches the server beside the token file (the token alone does not drop it)
    assert got[got.index("--env") + 1] == "VLLM_HTTP_TIMEOUT_KEEP_ALIVE=620" and got.index("--env") < got.index("img:1")
    assert gcp_secret_command("hf-token") == ["gcloud", "secrets", "versions", "access", "latest", "--secret=hf-token"]


def test_the_model_server_refuses_a_port_that_is_not_one() -> None:
    with pytest.raises(ValueError, match="not a TCP port"):
        model_server_script("img", [], 70000)


def test_labels_fit_gcp_rules() -> None:
    assert gcp_labels({"Fullserver-Owner": "ML Research/Team", "1x": "y"}) == {
        "fullserver-owner": "ml-research-team",
        "l-1x": "y",
    }
    assert gcp_name("1-Bad_Name") == "fs-1-bad-name"


def test_images_default_to_deep_learning_images_and_can_be_pinned() -> None:
    assert aws_image_id(None, "trainium").startswith("resolve:ssm:/aws/service/neuron/")
    assert aws_image_id("ami-0abc", "gpu") == "ami-0abc"
    assert gcp_image(None, "jax").endswith("/family/common-cu128-ubuntu-2204-nvidia-570")
    assert gcp_image("my-family", "pytorch") == "projects/deeplearning-platform-release/global/images/family/my-family"


def test_keys_are_installed_once_each_keeping_those_already_there(tmp_path: Path) -> None:
    """The key part of the AWS user data, run by bash with the user's home in a temporary
    directory (id/getent/chown/install stand-ins: no user is created on this machine)."""
    home, bin_dir = tmp_path / "home", tmp_path / "bin"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "authorized_keys").write_text("ssh-ed25519 AAAAkeypair instance-key-pair\n")
    bin_dir.mkdir()
    stand_ins = {
        "id": '#!/bin/sh\n[ "$1" = -gn ] && echo ubuntu\nexit 0\n',
        "getent": f"#!/bin/sh\necho 'ubuntu:x:1000:1000::{home}:/bin/bash'\n",
        "install": "#!/bin/sh\nexit 0\n",
        "chown": "#!/bin/sh\nexit 0\n",
    }
    for name, body in stand_ins.items():
        (bin_dir / name).write_text(body)
        (bin_dir / name).chmod(0o755)
    keys = [rsa_4096_line(1), "ssh-ed25519 AAAAC3Nza 'quoted' $HOME `cmd` \\back", rsa_4096_line(1)]
    script = tmp_path / "keys.sh"
    script.write_text("set -euo pipefail\n" + authorized_keys_script(keys))
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    for _ in range(2):  # a second boot adds nothing
        subprocess.run(["bash", str(script)], check=True, env=env, capture_output=True)
    lines = (home / ".ssh" / "authorized_keys").read_text().splitlines()
    assert lines == ["ssh-ed25519 AAAAkeypair instance-key-pair", keys[0], keys[1]]
    assert script.read_text().count(keys[0]) == 1  # given twice, written once


def test_eight_rsa_4096_keys_fit_ec2s_user_data_and_too_many_are_refused_in_one_line() -> None:
    from fullserver.platforms import aws

    keys = [rsa_4096_line(i) for i in range(8)]
    eight = authorized_keys_script(keys)
    assert aws.user_data_problem(eight) is None
    assert len(eight.encode()) < sum(len(k) + 1 for k in keys) + 1_000  # each key once, not twice
    many = authorized_keys_script([rsa_4096_line(i) for i in range(32)])
    assert aws.user_data_problem(many) == (
        f"the boot script is {len(many.encode()):,} bytes of user data; EC2 takes at most 16,384"
    )
