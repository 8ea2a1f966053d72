"""Inventory hosts reached through a proxy command (IAP, Session Manager) and their peer address."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from fullserver.baremetal.inventory import Inventory, Target, expand_proxy, inventory_from_data
from fullserver.errors import InputError

IAP = ["gcloud", "compute", "start-iap-tunnel", "%h", "%p", "--listen-on-stdin", "--zone=us-central1-a"]


def _key() -> str:
    blob = b"\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20" + bytes(range(32))
    return "ssh-ed25519 " + base64.b64encode(blob).decode()


def _inv(tmp_path: Path, *hosts: dict[str, Any], defaults: dict[str, Any] | None = None) -> Inventory:
    data = {"defaults": {"hostKeys": [_key()], **(defaults or {})}, "hosts": list(hosts)}
    return inventory_from_data(data, tmp_path, "inv.yaml")


def test_proxy_tokens_are_substituted_per_word_as_openssh_does(tmp_path: Path) -> None:
    inv = _inv(
        tmp_path,
        {
            "name": "gpu-a",
            "address": "node-a",
            "port": 2222,
            "user": "ops",
            "proxyCommand": ["connect", "%r@%h:%p", "--label=%n", "100%%", "%%h", "%h%%%p"],
        },
    )
    t = inv.target(inv.entries[0])
    # %% is a percent sign and is not read again: "%%h" is "%h" literally, not the address
    assert t.proxy == ("connect", "ops@node-a:2222", "--label=gpu-a", "100%", "%h", "node-a%2222")
    assert t.address == "node-a" and t.lookup == "[node-a]:2222"  # keys are pinned under the node name


def test_a_substituted_value_is_not_expanded_again() -> None:
    assert expand_proxy(["%h", "%n"], address="a%pb", port=22, user="root", name="%%") == ("a%pb", "%%")


def test_defaults_proxy_command_gives_each_host_its_own_words(tmp_path: Path) -> None:
    inv = _inv(
        tmp_path,
        {"name": "gpu-a", "address": "node-a"},
        {"name": "gpu-b", "address": "node-b", "proxyCommand": None},  # this one is reached directly
        defaults={"proxyCommand": IAP},
    )
    a, b = (inv.target(e) for e in inv.entries)
    assert a.proxy == ("gcloud", "compute", "start-iap-tunnel", "node-a", "22", "--listen-on-stdin", IAP[-1])
    assert b.proxy is None


@pytest.mark.parametrize(
    ("proxy", "message"),
    [
        (
            [],
            "field 'proxyCommand': empty: give the proxy's argv, e.g. [gcloud, compute, start-iap-tunnel, '%h', '%p']",
        ),
        (["", "%h"], "field 'proxyCommand': the first word must name the proxy's program (e.g. gcloud)"),
        (["gcloud", "%d"], "field 'proxyCommand': unknown token '%d' in '%d': use %h, %p, %r, %n or %%"),
        (["gcloud", "50%"], "field 'proxyCommand': unknown token '%' in '50%': use %h, %p, %r, %n or %%"),
        ("gcloud compute start-iap-tunnel %h %p", "field 'proxyCommand': Input should be a valid list"),
    ],
)
def test_a_malformed_proxy_command_is_refused_when_read(tmp_path: Path, proxy: Any, message: str) -> None:
    with pytest.raises(InputError) as exc:
        _inv(tmp_path, {"name": "gpu-a", "address": "node-a", "proxyCommand": proxy})
    assert exc.value.line() == f"inv.yaml: hosts[0]: {message} (fix the value)"


def test_proxy_command_with_a_jump_host_is_refused_naming_the_host(tmp_path: Path) -> None:
    with pytest.raises(InputError) as exc:
        _inv(
            tmp_path,
            {"name": "gpu-a", "address": "node-a", "jump": "bastion", "proxyCommand": IAP},
            {"name": "bastion", "address": "203.0.113.1"},
        )
    assert exc.value.line() == (
        "inv.yaml: host 'gpu-a' field 'proxyCommand': cannot be combined with jump "
        "(reach the host through the proxy command or the jump host, not both)"
    )


def test_a_target_cannot_have_both_a_proxy_and_a_jump_host() -> None:
    bastion = Target("bastion", "203.0.113.1")
    with pytest.raises(ValueError, match="not both"):
        Target("gpu-a", "node-a", 22, "root", (), bastion, proxy=("gcloud",))
    with pytest.raises(ValueError, match="empty proxy command"):
        Target("gpu-a", "node-a", proxy=())


def test_peer_address_defaults_to_the_address_and_can_be_set(tmp_path: Path) -> None:
    inv = _inv(
        tmp_path,
        {"name": "gpu-a", "address": "node-a", "proxyCommand": IAP, "peerAddress": "10.128.0.7"},
        {"name": "gpu-b", "address": "203.0.113.11"},
    )
    a, b = (inv.target(e) for e in inv.entries)
    assert (a.address, a.peer_address, a.peer) == ("node-a", "10.128.0.7", "10.128.0.7")
    assert (b.address, b.peer_address, b.peer) == ("203.0.113.11", "", "203.0.113.11")
    # positional construction is unchanged; the new fields come last with defaults
    assert Target("x", "10.0.0.1", 22).peer == "10.0.0.1" and Target("x", "10.0.0.1").proxy is None
    with pytest.raises(InputError, match="peerAddress"):
        _inv(tmp_path, {"name": "gpu-a", "address": "node-a", "peerAddress": ""})
