"""The verify a cloud ``pulumi up`` runs last (``components.node_verify``), on the test bed.

``NodeVerifyProvider.create`` is called as the engine calls it, with the ``nodes`` rows the
components export. The nodes are network-namespace hosts with real sshd; ``gcloud`` and ``aws``
are stand-ins on PATH that answer the rows' ``hostKeysCommand`` as the clouds do (guest
attributes JSON, EC2 console output with cloud-init's host-key block) and carry SSH to a node
for its ``proxyCommand`` (IAP, Session Manager). The host keys verify pins come only from those
answers: nothing else could make the connections succeed.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from components.node_verify import NodeVerifyProvider, verify_warnings
from fullserver.nodes import NodeAccess
from fullserver.platforms import aws, gcp
from tests.baremetal.testbed import SshdHost, Testbed

STAND_IN = """#!{python}
# Stand-in gcloud / aws: host keys from world.json, tunnels carry stdin/stdout to the node's sshd.
import json, os, socket, sys, threading
here = os.path.dirname(os.path.abspath(__file__))
tool, args = os.path.basename(sys.argv[0]), sys.argv[1:]
with open(os.path.join(here, "calls.log"), "a") as log:
    log.write(json.dumps([tool, *args]) + "\\n")
world = json.load(open(os.path.join(here, "world.json")))

def tunnel(node, port):
    sock = socket.create_connection((world["nodes"][node], int(port)), timeout=10)
    sock.settimeout(None)
    def up():
        while (data := os.read(0, 65536)):
            sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
    threading.Thread(target=up, daemon=True).start()
    while (data := sock.recv(65536)):
        os.write(1, data)

def key(node):
    kind, blob = world["keys"][node].split()[:2]
    return kind, blob

if tool == "gcloud" and args[:3] == ["compute", "instances", "get-guest-attributes"]:
    node = args[3]
    if node not in world["keys"]:
        sys.exit(f"ERROR: (gcloud.compute.instances.get-guest-attributes) NOT_FOUND: guest attributes of {{node}}")
    kind, blob = key(node)
    print(json.dumps([
        {{"key": "hostname", "namespace": "guestInventory", "value": node}},
        {{"key": kind, "namespace": "hostkeys", "value": blob}},
    ]))
elif tool == "aws" and args[:2] == ["ec2", "get-console-output"]:
    node = args[args.index("--instance-id") + 1]
    text = "[    4.1] cloud-init[612]: Cloud-init v. 24.1 running 'modules:final'\\n"
    if node in world["keys"]:
        kind, blob = key(node)
        text += f"-----BEGIN SSH HOST KEY KEYS-----\\n{{kind}} {{blob}} root@ip-10-0-1-4\\n-----END SSH HOST KEY KEYS-----\\n"
    print(json.dumps({{"InstanceId": node, "Output": text, "Timestamp": "2026-11-23T20:00:00+00:00"}}))
elif tool == "gcloud" and args[:2] == ["compute", "start-iap-tunnel"] and "--listen-on-stdin" in args:
    tunnel(args[2], args[3])
elif tool == "aws" and args[:2] == ["ssm", "start-session"] and "AWS-StartSSHSession" in args:
    tunnel(args[args.index("--target") + 1], args[args.index("--parameters") + 1].split("=")[1])
else:
    sys.exit(f"stand-in {{tool}}: unexpected {{' '.join(args)}}")
"""

_n = itertools.count(1)


@pytest.fixture
def trio(bed: Testbed) -> Iterator[tuple[SshdHost, SshdHost, SshdHost]]:
    n = next(_n)  # the bed lives for the session: namespace names must not repeat
    hosts = tuple(bed.add_netns_host(f"nv{n}{x}") for x in "abc")
    try:
        yield hosts  # type: ignore[misc]
    finally:
        for h in hosts:
            h.stop()


@pytest.fixture
def cloud(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in CLIs first on PATH (the provider runs them as the engine's process would)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("gcloud", "aws"):
        exe = bin_dir / tool
        exe.write_text(STAND_IN.format(python=sys.executable))
        exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


def _key(tmp_path: Path, hosts: tuple[SshdHost, ...]) -> str:
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "verify", "-f", str(key)], check=True)
    for h in hosts:
        h.authorize("root", key.with_suffix(".pub").read_text().strip())
    return key.read_text()


def _world(bin_dir: Path, nodes: dict[str, SshdHost], published: set[str]) -> None:
    world = {
        "nodes": {name: h.address for name, h in nodes.items()},
        "keys": {name: h.host_key_line for name, h in nodes.items() if name in published},
    }
    (bin_dir / "world.json").write_text(json.dumps(world))


def _calls(bin_dir: Path) -> list[list[str]]:
    log = bin_dir / "calls.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _props(rows: list[NodeAccess], key: str, **extra: object) -> dict[str, object]:
    return {
        "nodes": [r.exported() for r in rows],
        "private_key": key,
        "profile": "fine-tuning",
        "platform": "gcp-gpu",
        "scratch": "/mnt/none",
        "fio_seconds": 1,
        "fio_size_mib": 1,
        **extra,
    }


def gcp_row(name: str, h: SshdHost) -> NodeAccess:
    return NodeAccess(
        name=name,
        private_ip=h.address,
        user="root",
        keys=True,
        via="iap",
        proxy_command=gcp.iap_proxy(name, "us-central1-b", "ml-prod"),
        host_keys_command=gcp.host_keys_command(name, "us-central1-b", "ml-prod"),
    )


def test_two_gcp_nodes_are_pinned_from_their_guest_attributes_and_measured_over_iap(
    trio: tuple[SshdHost, SshdHost, SshdHost], cloud: Path, tmp_path: Path
) -> None:
    a, b, _ = trio
    key = _key(tmp_path, (a, b))
    nodes = {"train-0": a, "train-1": b}
    _world(cloud, nodes, published=set(nodes))

    result = NodeVerifyProvider().create(_props([gcp_row(n, h) for n, h in nodes.items()], key))

    assert result.outs is not None
    status = result.outs["node_status"]
    assert set(status) == set(nodes)
    for name in nodes:
        assert status[name]["status"] != "error" and "vCPUs" in status[name]["summary"], status[name]  # probed
        # iperf3 ran from each node to the other's privateIp (the ring), through the tunnels
        assert status[name]["lines"]["network iperf3"]["delivered"] > 0, status[name]
    calls = _calls(cloud)
    assert {c[4] for c in calls if c[1:4] == ["compute", "instances", "get-guest-attributes"]} == set(nodes)
    assert {c[3] for c in calls if c[1:3] == ["compute", "start-iap-tunnel"]} == set(nodes)
    assert key not in json.dumps(status)


def test_a_node_whose_host_keys_never_appear_is_reported_and_the_others_are_measured(
    trio: tuple[SshdHost, SshdHost, SshdHost], cloud: Path, tmp_path: Path
) -> None:
    a, b, c = trio
    key = _key(tmp_path, trio)
    ids = {"i-0aaa": a, "i-0bbb": b, "i-0ccc": c}
    _world(cloud, ids, published={"i-0aaa", "i-0bbb"})  # i-0ccc never printed its keys
    rows = [
        NodeAccess(
            name=iid,
            private_ip=h.address,
            user="root",
            keys=True,
            via="ssm",
            proxy_command=aws.ssm_proxy(iid, "us-east-1"),
            host_keys_command=aws.host_keys_command(iid, "us-east-1"),
        )
        for iid, h in ids.items()
    ]

    result = NodeVerifyProvider().create(_props(rows, key, platform="aws-gpu", key_wait_seconds=2, key_retry_seconds=1))

    assert result.outs is not None
    status = result.outs["node_status"]
    assert status["i-0ccc"]["status"] == "unverified"
    assert status["i-0ccc"]["summary"] == "i-0ccc: host keys not pinned: no host keys published within 2s"
    for iid in ("i-0aaa", "i-0bbb"):
        assert status[iid]["status"] != "error", status[iid]
    polls = [c for c in _calls(cloud) if c[1:3] == ["ec2", "get-console-output"] and "i-0ccc" in c]
    assert 2 <= len(polls) <= 4  # retried within the budget, then given up
    assert not [c for c in _calls(cloud) if c[1:3] == ["ssm", "start-session"] and "i-0ccc" in c]
    warnings = verify_warnings(status)
    assert "verify: unverified: i-0ccc: host keys not pinned: no host keys published within 2s" in warnings


def test_a_node_that_cannot_be_reached_is_reported_not_raised(
    trio: tuple[SshdHost, SshdHost, SshdHost], cloud: Path, tmp_path: Path
) -> None:
    """Keys published, but the node's sshd is gone: an ``error`` naming the node, the ``up`` goes on."""
    a, b, _ = trio
    key = _key(tmp_path, (a,))
    nodes = {"train-0": a, "train-9": b}
    _world(cloud, nodes, published=set(nodes))
    b.stop()

    outs = NodeVerifyProvider().create(_props([gcp_row(n, h) for n, h in nodes.items()], key)).outs
    assert outs is not None
    status = outs["node_status"]

    assert status["train-9"]["status"] == "error" and status["train-9"]["summary"].startswith("train-9: ")
    assert status["train-0"]["status"] != "error", status["train-0"]


def test_a_node_presenting_another_key_than_the_cloud_published_is_refused(
    trio: tuple[SshdHost, SshdHost, SshdHost], cloud: Path, tmp_path: Path
) -> None:
    """The pin is the cloud's word: a node whose sshd shows another key is never logged into."""
    a, b, _ = trio
    key = _key(tmp_path, (a, b))
    nodes = {"train-0": a, "train-1": b}
    _world(cloud, nodes, published=set(nodes))
    world = json.loads((cloud / "world.json").read_text())
    world["keys"]["train-0"] = b.host_key_line  # what the guest environment published is not what answers
    (cloud / "world.json").write_text(json.dumps(world))

    outs = NodeVerifyProvider().create(_props([gcp_row(n, h) for n, h in nodes.items()], key)).outs
    assert outs is not None
    status = outs["node_status"]

    assert status["train-0"]["status"] == "error" and "host key" in status["train-0"]["summary"], status["train-0"]
    assert status["train-1"]["status"] != "error", status["train-1"]
