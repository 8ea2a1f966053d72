"""``fullserver verify`` on the test bed: real sshd hosts, real fio on a loop-device ext4 mounted as
the scratch filesystem, real iperf3 between two network namespaces, a stand-in nvidia-smi that
prints an 8 x H100 report with GPU 3 trained at x8."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from fullserver.baremetal.measure import SCRATCH_PREFIX, Caps
from fullserver.baremetal.verify import HostVerify, Line, Promise, verify_fleet
from fullserver.catalog import load_catalog
from fullserver.errors import EXIT_INPUT, EXIT_SHORT, EXIT_UNREACHABLE
from fullserver.profiles import get_profile, load_profiles
from fullserver_cli.fleet_view import exit_code
from tests.baremetal.testbed import H100_SXM, SshdHost, Testbed

GOLDEN = Path(__file__).parent / "golden" / "verify"
CAPS = Caps(fio_seconds=1, fio_size_mib=16, iperf_seconds=1, iperf_streams=2, gpu_seconds=10)
ROOT = Path(__file__).parents[2]


def _promise(scratch: Path) -> Promise:
    return Promise(profile=get_profile("fine-tuning", load_profiles()), catalog=load_catalog(), scratch=str(scratch))


def _line(r: HostVerify, name: str) -> Line:
    return next(x for x in r.lines if x.dimension == name)


def _iperf3_processes(namespaces: list[str]) -> list[str]:
    """iperf3 processes inside these hosts' network namespaces: an earlier test's, still ending
    on its own time limit in its own namespaces, is not this test's to answer for."""
    inodes = {os.stat(f"/run/netns/{ns}").st_ino for ns in namespaces}
    out = []
    for p in Path("/proc").iterdir():
        try:
            cmd = (p / "cmdline").read_bytes().split(b"\0")
            inside = os.stat(p / "ns" / "net").st_ino in inodes
        except OSError:
            continue
        if inside and any(c.endswith(b"iperf3") for c in cmd):
            out.append(b" ".join(cmd).decode())
    return out


def _scratch(bed: Testbed, host: SshdHost) -> Path:
    """A real ext4 on a loop device, mounted where the host's scratch lives (the bed unmounts it)."""
    mnt = host.dir / "scratch"
    mnt.mkdir()
    dev = bed.loop_device(f"{host.name}-scratch", 96)
    subprocess.run(["mkfs.ext4", "-q", dev], check=True, capture_output=True)
    subprocess.run(["mount", dev, str(mnt)], check=True, capture_output=True)
    return mnt


_hosts = itertools.count(1)


@pytest.fixture
def gpu_host(bed: Testbed) -> Iterator[SshdHost]:
    """An 8 x H100 host whose GPU 3 trained at x8 (a fresh one per test: the bed lives for the session)."""
    h = bed.add_host(f"verify-gpu{next(_hosts)}", [H100_SXM] * 8)
    h.set_gpu_report((GOLDEN / "dgx-h100.xml").read_text(), (GOLDEN / "dgx-h100-topo.txt").read_text())
    try:
        yield h
    finally:
        h.stop()


def test_measures_scratch_with_fio_and_names_the_gpu_below_its_pcie_width(bed: Testbed, gpu_host: SshdHost) -> None:
    mnt = _scratch(bed, gpu_host)
    stale, fresh = mnt / f"{SCRATCH_PREFIX}killed", mnt / f"{SCRATCH_PREFIX}running"
    stale.mkdir()
    fresh.mkdir()
    old = time.time() - 3600  # a run SIGKILLed an hour ago (its trap never ran); the other is running
    os.utime(stale, (old, old))
    [r] = verify_fleet([(gpu_host.target(), gpu_host.user_key)], _promise(mnt), CAPS)

    assert r.status == "short", r
    width = _line(r, "gpu pcie width")
    assert (width.promised, width.delivered, width.ratio) == (16, 8, 0.5)
    assert "GPU 3 (00000000:5D:00.0) at x8 of x16" in r.summary()
    assert _line(r, "nvlink").detail == "GPU 2-5 NV17"
    read, write, rand = (_line(r, d) for d in ("scratch seq read", "scratch seq write", "scratch 4k read"))
    assert read.promised == write.promised == 250 * 8  # fine-tuning: 250 MB/s per GPU
    assert rand.promised == 3000 * 8
    assert read.delivered and read.delivered > 0 and write.delivered and write.delivered > 0
    assert rand.delivered and rand.delivered > 0
    assert read.detail.startswith(f"{mnt} (/dev/loop")
    # its own directory is gone, so is a killed run's; one a run may still use is left alone
    assert sorted(p.name for p in mnt.iterdir()) == [fresh.name, "lost+found"]
    assert "network throughput not measured: no other reachable host in this inventory" in r.problems


def test_iperf3_between_two_namespaces_and_an_unmounted_scratch_is_left_alone(bed: Testbed) -> None:
    a, b = bed.add_netns_host("verify-a"), bed.add_netns_host("verify-b")
    plain = bed.base / "not-a-mount"
    plain.mkdir()
    try:
        results = verify_fleet([(h.target(), h.user_key) for h in (a, b)], _promise(plain), CAPS)
    finally:
        a.stop()
        b.stop()
    by = {r.name: r for r in results}
    for src, dst in (("verify-a", "verify-b"), ("verify-b", "verify-a")):
        net = _line(by[src], "network iperf3")
        assert net.promised == 5 and net.delivered is not None and net.delivered > 0, by[src]
        assert net.detail.startswith(f"to {dst}, 2 streams")
        assert not by[src].ok  # scratch not measured: never judged as delivering
        assert any(p.startswith(f"no filesystem mounted at {plain}: ") for p in by[src].problems)
        assert not [x for x in by[src].lines if x.dimension.startswith("scratch")]
    assert list(plain.iterdir()) == []
    namespaces = [h.netns for h in (a, b) if h.netns is not None]
    assert len(namespaces) == 2
    assert not [p for p in _iperf3_processes(namespaces) if f"-p {CAPS.iperf_port}" in p]


def _inventory(tmp_path: Path, hosts: list[SshdHost]) -> Path:
    entries = []
    for h in hosts:
        key = tmp_path / f"{h.name}.key"
        key.write_text(h.user_key)
        key.chmod(0o600)
        entries.append(
            {
                "name": h.name,
                "address": h.address,
                "port": h.port,
                "hostKeys": [h.host_key_line],
                "privateKeyFile": str(key),
            }
        )
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump({"hosts": entries}))
    return path


def _verify(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from fullserver_cli.app import main; main()", "verify", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def test_cli_json_and_exit_code_name_the_short_host(bed: Testbed, gpu_host: SshdHost, tmp_path: Path) -> None:
    mnt = _scratch(bed, gpu_host)
    inv = _inventory(tmp_path, [gpu_host])
    r = _verify(
        str(inv),
        "--profile",
        "fine-tuning",
        "--scratch",
        str(mnt),
        "--fio-seconds",
        "1",
        "--fio-size-mib",
        "16",
        "--json",
    )
    assert r.returncode == EXIT_SHORT, r.stderr
    [host] = json.loads(r.stdout)
    assert host["status"] == "short" and host["name"] == gpu_host.name
    width = next(x for x in host["lines"] if x["dimension"] == "gpu pcie width")
    assert (width["promised"], width["delivered"], width["ratio"], width["ok"]) == (16, 8, 0.5, False)
    assert f"short: {gpu_host.name}: " in r.stderr and "GPU 3 (00000000:5D:00.0) at x8 of x16" in r.stderr
    assert not any(p.name.startswith(SCRATCH_PREFIX) for p in mnt.iterdir())


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["train-p5-cluster"],
            "error: --identity: stack 'train-p5-cluster' logs in with a key verify cannot read from the stack (a "
            "Pulumi secret, or one installed from fullserver:sshPublicKeys) (pass the private key's file: --identity "
            "~/.ssh/KEY)",
        ),
        (
            ["dedicated-h100"],
            "error: --identity: stack 'dedicated-h100' logs in with a key verify cannot read from the stack (a Pulumi "
            "secret, or one installed from fullserver:sshPublicKeys) (pass the private key's file: --identity "
            "~/.ssh/KEY)",
        ),
        (
            ["dedicated-h100", "--profile", "fine-tuning"],
            "error: --profile: stack 'dedicated-h100' plans profile 'dedicated-steady', not 'fine-tuning' "
            "(drop --profile: a stack's promise is its plan's)",
        ),
        (
            ["dedicated-h100", "--identity", "/nonexistent/key"],
            "error: --identity /nonexistent/key: cannot read the private key: No such file or directory "
            "(name a readable key file)",
        ),
        (
            ["stacks/Pulumi.dedicated-h100.yaml", "--identity", "README.md"],
            "error: --identity README.md: the private key is not an OpenSSH/PEM ed25519, ecdsa or rsa key (give the "
            "whole private key text (-----BEGIN ... PRIVATE KEY----- to -----END ...), not a path or a public key)",
        ),
        (
            ["examples/fleet.yaml"],
            "error: --profile: an inventory needs the profile whose promises apply (e.g. --profile fine-tuning)",
        ),
    ],
)
def test_cli_stack_mistakes_are_one_line_exit_2(args: list[str], line: str) -> None:
    """Checked before any connection: a cloud stack says what to do instead, a bare-metal one
    needs the key file (never the stack's secret) and keeps its plan's profile."""
    r = _verify(*args)
    assert r.returncode == EXIT_INPUT, r.stderr
    assert r.stderr.strip().splitlines() == [line]


def test_cli_unknown_target_names_the_inventory_and_the_stack_it_looked_for() -> None:
    r = _verify("dev", "--profile", "fine-tuning")
    assert r.returncode == EXIT_INPUT
    [line] = r.stderr.strip().splitlines()
    assert line.startswith("error: dev: no such inventory file, and no stack stacks/Pulumi.dev.yaml (")
    assert "known stacks: " in line and "dedicated-h100" in line


def _stack(tmp_path: Path, hosts: list[dict[str, object]]) -> Path:
    """stacks/Pulumi.dedicated-h100.yaml as shipped, its hosts replaced by test-bed ones."""
    data = yaml.safe_load((ROOT / "stacks" / "Pulumi.dedicated-h100.yaml").read_text())
    data["config"]["fullserver:dedicated"]["hosts"] = hosts
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    (stacks / "Pulumi.bed-h100.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return stacks


def _shared_key(tmp_path: Path, hosts: list[SshdHost]) -> tuple[Path, str]:
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "verify", "-f", str(key)], check=True)
    pub = key.with_suffix(".pub").read_text().strip()
    for h in hosts:
        h.authorize("root", pub)
    return key, key.read_text()


def test_cli_verifies_a_bare_metal_stack_from_its_file(bed: Testbed, gpu_host: SshdHost, tmp_path: Path) -> None:
    """Hosts and pinned keys from fullserver:dedicated.hosts, the promise from the stack's plan
    (profile dedicated-steady; dedicated.host, 400 Gb/s, as the contract), the key from --identity."""
    mnt = _scratch(bed, gpu_host)
    key, text = _shared_key(tmp_path, [gpu_host])
    stacks = _stack(
        tmp_path,
        [
            {
                "name": gpu_host.name,
                "address": gpu_host.address,
                "port": gpu_host.port,
                "user": "root",
                "hostKeys": [gpu_host.host_key_line],
            }
        ],
    )
    r = _verify(
        "bed-h100",
        "--stacks-dir",
        str(stacks),
        "--identity",
        str(key),
        "--scratch",
        str(mnt),
        "--fio-seconds",
        "1",
        "--fio-size-mib",
        "16",
        "--json",
    )
    assert r.returncode == EXIT_SHORT, r.stderr
    [host] = json.loads(r.stdout)
    assert host["name"] == gpu_host.name and host["status"] == "short"
    lines = {x["dimension"]: x for x in host["lines"]}
    assert lines["network link (contract)"]["promised"] == 400  # the stack's dedicated.host
    assert lines["cpu"]["unit"] == "cores"  # dedicated-steady counts physical cores (fine-tuning: vCPUs)
    assert lines["nvme capacity"]["promised"] == 894 * 8  # dedicated-steady: a quarter of a 3.84 TB drive per GPU
    assert (lines["gpu pcie width"]["promised"], lines["gpu pcie width"]["delivered"]) == (16, 8)
    assert lines["scratch seq write"]["delivered"] > 0
    for secret in text.strip().splitlines()[1:-1]:  # the key's body never appears
        assert secret not in r.stdout and secret not in r.stderr
    assert not any(p.name.startswith(SCRATCH_PREFIX) for p in mnt.iterdir())


def test_cli_stack_host_keys_are_pinned_from_the_stack_file(bed: Testbed, gpu_host: SshdHost, tmp_path: Path) -> None:
    """A stack whose pinned key is not the server's: refused before login, the host unreachable (5)."""
    other = bed.add_host(f"verify-other{next(_hosts)}")
    try:
        key, _ = _shared_key(tmp_path, [gpu_host])
        stacks = _stack(
            tmp_path,
            [
                {
                    "name": gpu_host.name,
                    "address": gpu_host.address,
                    "port": gpu_host.port,
                    "user": "root",
                    "hostKeys": [other.host_key_line],
                }
            ],
        )
        r = _verify("bed-h100", "--stacks-dir", str(stacks), "--identity", str(key))
    finally:
        other.stop()
    assert r.returncode == EXIT_UNREACHABLE, r.stderr
    assert f"unreachable: {gpu_host.name}: host key refused: offered ssh-ed25519" in r.stderr


def test_a_scratch_too_small_for_fios_file_is_reported_and_left_as_it_was(bed: Testbed, gpu_host: SshdHost) -> None:
    mnt = _scratch(bed, gpu_host)  # 96 MiB
    caps = Caps(fio_seconds=1, fio_size_mib=200, gpu_seconds=10)
    [r] = verify_fleet([(gpu_host.target(), gpu_host.user_key)], _promise(mnt), caps)
    [problem] = [p for p in r.problems if p.startswith(f"{mnt}: ")]
    assert problem.endswith("MiB free, fio needs 200 MiB and a quarter more: scratch throughput not measured")
    assert not [x for x in r.lines if x.dimension.startswith("scratch")]
    assert sorted(p.name for p in mnt.iterdir()) == ["lost+found"]


def test_a_login_without_sudo_is_unverified_not_unreachable(bed: Testbed, host: SshdHost, nosudo: str) -> None:
    """The host answered and the probe ran; only fio (as root) was refused: exit 4 naming the
    sudo rule to add, never "unreachable" (exit 5), which sends a person after the network."""
    [r] = verify_fleet([(host.target(nosudo), host.user_key)], _promise(bed.base / "not-mounted"), CAPS)
    assert r.status == "unverified" and r.error is None, r
    [problem] = r.problems
    assert problem.startswith(f"not verified: user '{nosudo}' may not run `verify scratch` through sudo -n")
    assert exit_code([r]) == EXIT_SHORT


def test_cli_cloud_stack_needs_its_nodes_host_keys_pinned(tmp_path: Path) -> None:
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    r = _verify("train-p5-cluster", "--identity", str(key))
    assert r.returncode == EXIT_INPUT, r.stderr
    assert r.stderr.strip().splitlines() == [
        "error: --known-hosts: stack 'train-p5-cluster' is a cloud stack: its nodes' host keys must be pinned "
        "(pass a known_hosts file holding them (from the console's serial output or a first login you checked))"
    ]


STAND_IN_PULUMI = """#!{python}
import json, sys
args = [a for a in sys.argv[1:] if a != "--non-interactive"]
if args[:1] == ["version"]:
    print("v3.272.0")
elif args[:3] == ["stack", "output", "--json"] and "--show-secrets" not in args:
    print(json.dumps({outputs}))
else:
    sys.exit("stand-in pulumi: unexpected " + " ".join(args))
"""


def test_cli_verifies_a_cloud_stacks_nodes_at_the_addresses_its_up_exported(bed: Testbed, tmp_path: Path) -> None:
    """A cloud stack: the nodes are where `pulumi stack output` says (publicIps, read through a
    stand-in Pulumi CLI, never with --show-secrets), logged into with --identity as --user, their
    host keys pinned from --known-hosts; the promise is the stack's plan (fine-tuning)."""
    node = bed.add_netns_host("verify-cloud")
    try:
        key, _ = _shared_key(tmp_path, [node])
        known = tmp_path / "known_hosts"
        known.write_text(f"{node.address} {node.host_key_line}\n")
        root = tmp_path / "pulumi"
        (root / "bin").mkdir(parents=True)
        outputs = {"platform": "aws-gpu", "publicIps": [node.address], "connect": f"ssh ubuntu@{node.address}"}
        cli = root / "bin" / "pulumi"
        cli.write_text(STAND_IN_PULUMI.format(python=sys.executable, outputs=json.dumps(outputs)))
        cli.chmod(0o755)
        reach = ["exp-aws-spot", "--identity", str(key), "--known-hosts", str(known), "--user", "root"]
        reach += ["--pulumi-root", str(root), "--backend", f"file://{tmp_path}", "--json"]
        r = _verify(*reach, "--scratch", "/mnt/none", "--fio-seconds", "1")
        assert r.returncode in (0, EXIT_SHORT), r.stderr
        [host] = json.loads(r.stdout)
        assert (host["name"], host["address"]) == ("exp-aws-spot-0", f"{node.address}:22")
        assert host["status"] != "error"  # logged in with the pinned key and measured
        assert {x["dimension"] for x in host["lines"]} >= {"cpu", "ram"}

        known.write_text(f"{node.address} {bed.add_host('verify-stranger').host_key_line}\n")
        refused = _verify(*reach)
        assert refused.returncode == EXIT_UNREACHABLE, refused.stderr  # a key not pinned is never trusted
    finally:
        node.stop()
