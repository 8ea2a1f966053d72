"""The program runs verify as the last step of a cloud ``pulumi up`` only when asked: the profile
says ``verify: {on_up: true}`` and the stack holds ``fullserver:sshPrivateKey``, whose public half
the nodes then get for their login user. Under Pulumi's mocks (the real program, ``main``)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from components.graph import Graph, graph_for_config
from components.node_verify import host_keys_parser, verify_nodes, verify_warnings
from fullserver.nodes import NodeAccess
from fullserver.platforms import aws, gcp, tpu
from tests.core.test_stack_config import SECURE, stack_config

DYNAMIC = "pulumi-python:dynamic/fullserver:NodeVerify"


@pytest.fixture(scope="module")
def private_key(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A real ed25519 key pair (text, public line)."""
    path = tmp_path_factory.mktemp("key") / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "ci", "-f", str(path)], check=True)
    return path.read_text(), path.with_suffix(".pub").read_text().strip()


@pytest.fixture
def team_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Pulumi project whose own profile turns verify on, beside one that leaves it off."""
    (tmp_path / "Pulumi.yaml").write_text("name: team\nruntime: python\n")
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "verified-tuning.yaml").write_text(
        "extends: fine-tuning\n"
        "description: fine-tuning, and every node measured after pulumi up\n"
        "verify: {on_up: true, fio_seconds: 3, fio_size_mib: 64}\n"
        # on demand (in a zonal reservation, below): one VM per node, which verify reaches (a regional
        # group's members, spot or on demand, are not)
        "pricing: on-demand\n"
    )
    (tmp_path / "profiles" / "verified-spot-tuning.yaml").write_text(
        "extends: fine-tuning\ndescription: fine-tuning on spot, verified\nverify: {on_up: true}\n"
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _graph(profile: str, key: str | None, **changes: Any) -> Graph:
    config = stack_config("finetune-gcp-a2", profile=profile, **changes)
    if key is not None:
        config["fullserver:sshPrivateKey"] = key  # what the program is handed: Pulumi decrypted it
    return graph_for_config("finetune-gcp-a2", config)


def _verify_rows(g: Graph) -> list[Any]:
    return [r for r in g.rows if r.type == DYNAMIC]


def test_an_opted_in_profile_with_a_stack_key_verifies_the_nodes_last(
    team_project: Path, private_key: tuple[str, str]
) -> None:
    text, public = private_key
    g = _graph("verified-tuning", text, reservation="ml-reservation")  # a reservation keeps single VMs
    [row] = _verify_rows(g)
    assert row.inputs["profile"] == "verified-tuning"
    assert (row.inputs["fio_seconds"], row.inputs["fio_size_mib"], row.inputs["scratch"]) == (3, 64, "/scratch")
    assert [n["name"] for n in row.inputs["nodes"]] == [n["name"] for n in g.outputs["nodes"]]
    assert all(
        n["keys"] and n["hostKeysCommand"][:4] == gcp.host_keys_command("x", "z", "p")[:4] for n in row.inputs["nodes"]
    )
    # the key's public half is installed for the login user, so the rows say keys: true
    [vm, *_] = [r for r in g.rows if r.type == "gcp:compute/instance:Instance"]
    assert " ".join(public.split()[:2]) in vm.inputs["metadata"]["ssh-keys"]
    assert "PRIVATE KEY" not in json.dumps(vm.inputs) and "PRIVATE KEY" not in json.dumps(g.outputs)
    # spot: a regional group's members are listed at connect time (nodeGroups), not verified here
    spot = _graph("verified-spot-tuning", text)
    assert g.outputs["nodes"] and spot.outputs["nodes"] == [] and spot.outputs["nodeGroups"]
    assert all(row.inputs["nodes"] == [] for row in _verify_rows(spot))
    [template] = [r for r in spot.rows if r.type == "gcp:compute/instanceTemplate:InstanceTemplate"]
    assert " ".join(public.split()[:2]) in template.inputs["metadata"]["ssh-keys"]


def test_the_private_key_input_stays_secret(team_project: Path, private_key: tuple[str, str]) -> None:
    text, _ = private_key
    [row] = _verify_rows(_graph("verified-tuning", text))
    key = row.inputs["private_key"]
    # a secret input reaches the engine wrapped in Pulumi's secret signature, never as plain text
    assert isinstance(key, dict) and key.get("4dabf18193072939515e22adb298388d") == "1b47061264138c4ac30d75fd1eb44270"


def test_nothing_is_verified_unless_the_profile_asks(team_project: Path, private_key: tuple[str, str]) -> None:
    text, public = private_key
    g = _graph("fine-tuning", text)
    assert _verify_rows(g) == []
    # still installed (verify STACK -i uses it); on spot, the regional group's template carries it
    types = ("gcp:compute/instance:Instance", "gcp:compute/instanceTemplate:InstanceTemplate")
    [node, *_] = [r for r in g.rows if r.type in types]
    assert " ".join(public.split()[:2]) in node.inputs["metadata"]["ssh-keys"]


def test_nothing_is_verified_without_the_stack_key(team_project: Path) -> None:
    g = _graph("verified-tuning", None)
    assert _verify_rows(g) == []
    assert all(not n["keys"] for n in g.outputs["nodes"])


def test_the_stack_key_is_taken_on_every_cloud_platform_and_still_refused_in_plain_text() -> None:
    from fullserver.stacks import workload_from_config

    for stack in ("finetune-gcp-a2", "exp-aws-spot", "train-tpu-v5e"):
        assert workload_from_config(stack_config(stack, sshPrivateKey=SECURE), stack).ssh_private_key is True


# --- the provider's pieces that need no node ----------------------------------------------------


def test_each_host_keys_command_is_read_by_its_platform() -> None:
    assert host_keys_parser("gcp-gpu") is gcp.parse_host_keys
    assert host_keys_parser("aws-gpu") is aws.parse_host_keys
    assert host_keys_parser("tpu-vm") is tpu.parse_host_keys
    with pytest.raises(ValueError, match="bare-metal nodes publish no host keys"):
        host_keys_parser("bare-metal")


def test_a_node_nothing_can_reach_is_an_error_before_any_command_runs() -> None:
    base = {"name": "i-0abc", "private_ip": "10.0.0.4", "user": "ubuntu"}
    no_keys = NodeAccess(**base, keys=False, via="ssm", proxy_command=aws.ssm_proxy("i-0abc", "us-east-1"))
    assert (refusal := no_keys.unreachable("i-0abc")) and refusal.what == (
        "no SSH key is installed for its login user 'ubuntu'"
    )
    no_address = NodeAccess(**base, keys=True, via="ssh").unreachable("i-0abc")
    assert no_address and no_address.what == "it has no public address and no proxy command"
    status = verify_nodes({"nodes": [no_keys.exported()], "private_key": "unused", "profile": "fine-tuning"})
    assert status == {
        "i-0abc": {"status": "error", "summary": "i-0abc: no SSH key is installed for its login user 'ubuntu'"}
    }
    assert verify_warnings(status) == ["verify: error: i-0abc: no SSH key is installed for its login user 'ubuntu'"]
    assert verify_warnings({"a": {"status": "delivers", "summary": "a: delivers"}}) == []


def test_a_row_without_a_host_keys_command_is_reported_not_trusted() -> None:
    row = NodeAccess(name="n", private_ip="10.0.0.2", public_ip="203.0.113.9", user="ubuntu", keys=True, via="ssh")
    status = verify_nodes({"nodes": [row.exported()], "private_key": "unused", "profile": "fine-tuning"}, 0, 0)
    assert status["n"] == {
        "status": "unverified",
        "summary": "n: host keys not pinned: no command reads its host keys from the cloud",
    }


def test_a_verify_that_cannot_run_reports_every_node_instead_of_failing_the_up(monkeypatch: pytest.MonkeyPatch) -> None:
    import components.node_verify as nv
    from fullserver.nodes import NodeAccess
    from fullserver.platforms import gcp

    key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
    row = NodeAccess(
        name="train-0",
        private_ip="10.0.0.2",
        user="ubuntu",
        keys=True,
        via="iap",
        proxy_command=gcp.iap_proxy("train-0", "us-central1-a", "p"),
        host_keys_command=gcp.host_keys_command("train-0", "us-central1-a", "p"),
    )
    monkeypatch.setattr(nv, "fetch_host_keys", lambda node, parse, wait, retry: [key])
    props = {"nodes": [row.exported()], "private_key": "k", "profile": "no-such-profile", "platform": "gcp-gpu"}
    status = nv.verify_nodes(props)
    assert status == {
        "train-0": {"status": "error", "summary": "train-0: verify could not run: KeyError: 'no-such-profile'"}
    }
