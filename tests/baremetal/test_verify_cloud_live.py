"""``fullserver verify STACK`` on private cloud nodes: reached through IAP (GCP) and Session Manager
(AWS) as the stack's ``nodes`` and ``nodeGroups`` outputs say, measured on the test bed.

The nodes are network-namespace hosts with real sshd. The cloud CLIs are stand-ins the test writes:
``gcloud compute start-iap-tunnel … --listen-on-stdin`` and ``aws ssm start-session --document-name
AWS-StartSSHSession`` carry the SSH stream to the node the name or instance id maps to (as the real
tunnels do), ``aws ec2 describe-instances`` answers with a group's members in EC2's JSON. Host keys
are pinned under node names only, which no resolver knows: a connection that skipped the proxy
could not be made, let alone trusted.
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

from fullserver.errors import EXIT_INPUT, EXIT_SHORT
from fullserver.nodes import NodeAccess, NodeGroupAccess
from fullserver.platforms import aws, gcp
from tests.baremetal.testbed import SshdHost, Testbed

ROOT = Path(__file__).parents[2]

STAND_IN_PULUMI = """#!{python}
import json, sys
args = [a for a in sys.argv[1:] if a != "--non-interactive"]
if args[:1] == ["version"]:
    print("v3.272.0")
elif args[:3] == ["stack", "output", "--json"] and "--show-secrets" not in args:
    print({outputs})
else:
    sys.exit("stand-in pulumi: unexpected " + " ".join(args))
"""

STAND_IN_CLOUD = """#!{python}
# Stand-in gcloud / aws: tunnels carry stdin/stdout to the node's sshd; listings answer from a file.
import json, os, socket, sys, threading
here = os.path.dirname(os.path.abspath(__file__))
tool, args = os.path.basename(sys.argv[0]), sys.argv[1:]
with open(os.path.join(here, "calls.log"), "a") as log:
    log.write(json.dumps([tool, *args]) + "\\n")
world = json.load(open(os.path.join(here, "world.json")))

def tunnel(node, port):
    if node not in world["nodes"]:
        sys.exit(f"ERROR: ({{tool}}) no such instance: {{node}}")
    sock = socket.create_connection((world["nodes"][node], int(port)), timeout=10)
    sock.settimeout(None)
    def up():
        while (data := os.read(0, 65536)):
            sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
    threading.Thread(target=up, daemon=True).start()
    while (data := sock.recv(65536)):
        os.write(1, data)

if tool == "gcloud" and args[:2] == ["compute", "start-iap-tunnel"] and "--listen-on-stdin" in args:
    tunnel(args[2], args[3])
elif tool == "aws" and args[:2] == ["ssm", "start-session"] and "AWS-StartSSHSession" in args:
    tunnel(args[args.index("--target") + 1], args[args.index("--parameters") + 1].split("=")[1])
elif tool == "aws" and args[:2] == ["ec2", "describe-instances"]:
    print(json.dumps(world["describe-instances"]))
else:
    sys.exit(f"stand-in {{tool}}: unexpected {{' '.join(args)}}")
"""


_pairs = itertools.count(1)


@pytest.fixture
def pair(bed: Testbed) -> Iterator[tuple[SshdHost, SshdHost]]:
    n = next(_pairs)  # the bed lives for the session: namespace names must not repeat
    a, b = bed.add_netns_host(f"cloud{n}a"), bed.add_netns_host(f"cloud{n}b")
    try:
        yield a, b
    finally:
        a.stop()
        b.stop()


def _key(tmp_path: Path, hosts: tuple[SshdHost, ...], passphrase: str = "") -> Path:
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", "verify", "-f", str(key)], check=True)
    for h in hosts:
        h.authorize("root", key.with_suffix(".pub").read_text().strip())
    return key


def _tools(tmp_path: Path, outputs: dict[str, object], world: dict[str, object]) -> Path:
    """The stand-in pulumi, gcloud and aws in one bin directory; returns it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pulumi").write_text(STAND_IN_PULUMI.format(python=sys.executable, outputs=repr(json.dumps(outputs))))
    for tool in ("gcloud", "aws"):
        (bin_dir / tool).write_text(STAND_IN_CLOUD.format(python=sys.executable))
    for exe in bin_dir.iterdir():
        exe.chmod(0o755)
    (bin_dir / "world.json").write_text(json.dumps(world))
    return bin_dir


def _verify(
    bin_dir: Path, stack: str, key: Path, known: Path, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    args = ["verify", stack, "--identity", str(key), "--known-hosts", str(known), "--json"]
    args += ["--pulumi-root", str(bin_dir.parent), "--backend", f"file://{bin_dir.parent}"]
    args += ["--scratch", "/mnt/none", "--fio-seconds", "1", "--iperf-seconds", "1", "--iperf-streams", "2", *extra]
    env = {**os.environ, **(env or {}), "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        [sys.executable, "-c", "from fullserver_cli.app import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=ROOT,
        env=env,
    )


def _calls(bin_dir: Path) -> list[list[str]]:
    log = bin_dir / "calls.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_private_gcp_nodes_are_reached_through_iap_and_measure_iperf3_over_their_private_addresses(
    pair: tuple[SshdHost, SshdHost], tmp_path: Path
) -> None:
    a, b = pair
    key = _key(tmp_path, pair, passphrase="correct horse")  # opened with --identity-passphrase-env
    names = {"train-a-0": a, "train-a-1": b}
    nodes = [
        NodeAccess(
            name=name,
            private_ip=h.address,
            user="root",
            keys=True,
            via="iap",
            proxy_command=gcp.iap_proxy(name, "us-central1-b", "ml-prod"),
        ).exported()
        for name, h in names.items()
    ]
    bin_dir = _tools(
        tmp_path,
        {"platform": "gcp-gpu", "nodes": nodes, "publicIps": []},
        {"nodes": {name: h.address for name, h in names.items()}},
    )
    known = tmp_path / "known_hosts"
    known.write_text("".join(f"{name} {h.host_key_line}\n" for name, h in names.items()))

    r = _verify(
        bin_dir,
        "finetune-gcp-a2",
        key,
        known,
        "--identity-passphrase-env",
        "KEY_PASS",
        env={"KEY_PASS": "correct horse"},
    )

    assert r.returncode in (0, EXIT_SHORT), r.stderr
    assert "correct horse" not in r.stdout + r.stderr
    by = {h["name"]: h for h in json.loads(r.stdout)}
    assert set(by) == set(names)
    for src, dst in (("train-a-0", "train-a-1"), ("train-a-1", "train-a-0")):
        assert by[src]["status"] != "error", by[src]  # logged in as the exported user, through the tunnel
        [net] = [x for x in by[src]["lines"] if x["dimension"] == "network iperf3"]
        assert net["delivered"] > 0 and net["detail"].startswith(f"to {dst}, 2 streams"), net
    tunnels = [c for c in _calls(bin_dir) if c[1:3] == ["compute", "start-iap-tunnel"]]
    assert {c[3] for c in tunnels} == set(names)
    assert all(
        c[4:] == ["22", "--listen-on-stdin", "--zone=us-central1-b", "--project=ml-prod", "--verbosity=warning"]
        for c in tunnels
    )


def test_a_serving_groups_members_are_listed_now_and_reached_through_session_manager(
    pair: tuple[SshdHost, SshdHost], tmp_path: Path
) -> None:
    a, _ = pair
    key = _key(tmp_path, pair)
    groups = ["serve-aws-realtime-spot", "serve-aws-realtime-od"]
    group = NodeGroupAccess(
        provider="aws",
        groups=groups,
        region="us-east-1",
        user="root",
        keys=True,
        via="ssm",
        list_command=aws.group_list_command(groups, "us-east-1"),
    )
    members = {
        "Reservations": [
            {
                "Instances": [
                    {"InstanceId": "i-0abc1234def567890", "PrivateIpAddress": a.address, "State": {"Name": "running"}}
                ]
            }
        ]
    }
    bin_dir = _tools(
        tmp_path,
        {"platform": "aws-gpu", "nodes": [], "nodeGroups": [group.exported()]},
        {"nodes": {"i-0abc1234def567890": a.address}, "describe-instances": members},
    )
    known = tmp_path / "known_hosts"
    known.write_text(f"i-0abc1234def567890 {a.host_key_line}\n")

    r = _verify(bin_dir, "serve-aws-realtime", key, known)

    assert r.returncode in (0, EXIT_SHORT), r.stderr
    [host] = json.loads(r.stdout)
    assert host["name"] == "i-0abc1234def567890" and host["status"] != "error", host
    calls = _calls(bin_dir)
    assert calls[0] == ["aws", *aws.group_list_command(groups, "us-east-1")[1:]]
    assert ["aws", *aws.ssm_proxy("i-0abc1234def567890", "us-east-1")[1:]] in calls


def test_a_node_without_installed_keys_is_named_before_anything_connects(tmp_path: Path) -> None:
    node = NodeAccess(
        name="train-a-0",
        private_ip="10.0.0.2",
        user="ubuntu",
        keys=False,
        via="iap",
        proxy_command=gcp.iap_proxy("train-a-0", "us-central1-b", "ml-prod"),
    )
    bin_dir = _tools(tmp_path, {"platform": "gcp-gpu", "nodes": [node.exported()]}, {"nodes": {}})
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    known = tmp_path / "known_hosts"
    known.write_text("")

    r = _verify(bin_dir, "finetune-gcp-a2", key, known)

    assert r.returncode == EXIT_INPUT, r.stderr
    assert r.stderr.strip().splitlines() == [
        "error: stack 'finetune-gcp-a2' node train-a-0: no SSH key is installed for its login user 'ubuntu' "
        "(add your public key to fullserver:sshPublicKeys and run `pulumi up`)"
    ]
    assert not [c for c in _calls(bin_dir) if c[0] == "gcloud"]
