"""``fullserver audit`` as a person meets it: what reaches stderr, and which exit code.

The command function (``fullserver_cli.audit.audit``) runs in a child interpreter through
``typer.run``, so stderr is the real one: Python's last-resort logging handler, which prints a
library's log records when nothing else is configured, behaves there as it does for a user (under
pytest, the logging plugin's root handlers would swallow the records and hide the problem).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from fullserver.errors import EXIT_INPUT, EXIT_UNREACHABLE
from tests.baremetal.testbed import SshdHost

AUDIT = "import typer; from fullserver_cli.audit import audit; typer.run(audit)"


def _audit(inventory: Path, *extra: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", AUDIT, str(inventory), "--profile", "dedicated-steady", *extra],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=Path(__file__).parents[2],
    )


def _inventory(tmp_path: Path, hosts: list[dict[str, Any]], defaults: dict[str, Any]) -> Path:
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump({"defaults": defaults, "hosts": hosts}))
    return path


def test_stalled_sshd_is_one_line_and_no_library_traceback(host: SshdHost, tmp_path: Path) -> None:
    """Issue 11: a SIGSTOPped sshd (TCP accepted, no banner ever) is one line naming the phase."""
    key = tmp_path / "key"
    key.write_text(host.user_key)
    path = _inventory(
        tmp_path,
        [{"name": "stalled", "port": host.port, "hostKeys": [host.host_key_line], "connectTimeout": 1}],
        {"address": "127.0.0.1", "privateKeyFile": str(key)},
    )
    host.pause()
    start = time.monotonic()
    r = _audit(path)
    elapsed = time.monotonic() - start
    host.resume()
    assert r.returncode == EXIT_UNREACHABLE, r.stderr
    assert "Traceback" not in r.stderr and "Exception (client)" not in r.stderr, r.stderr
    assert "No existing session" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert lines == [
        f"unreachable: stalled: no SSH banner within 1 s (127.0.0.1:{host.port}) "
        "(sshd stalled or overloaded; check the host's console and load)"
    ], r.stderr
    # 3 attempts x 1 s banner wait + backoff (0.5 s, 1 s, jitter) + the interpreter's start, with room
    # for a loaded machine (test_ssh bounds the connect itself closely)
    assert elapsed < 30, elapsed


def test_malformed_private_key_is_bad_input_naming_host_and_source(host: SshdHost, tmp_path: Path) -> None:
    """Issue 14: a key that cannot be parsed is exit 2 before any host is contacted, never exit 5."""
    key = tmp_path / "broken_key"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nU0VDUkVUU0VDUkVU\n-----END OPENSSH PRIVATE KEY-----\n")
    path = _inventory(
        tmp_path,
        [{"name": "gpu-01", "port": host.port, "hostKeys": [host.host_key_line], "privateKeyFile": str(key)}],
        {"address": "127.0.0.1"},
    )
    dials = (host.dir / "sshd.log").read_text().count("Connection from")  # the test bed's own start-up check
    r = _audit(path)
    assert r.returncode == EXIT_INPUT, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"error: {path}: host 'gpu-01' privateKeyFile {key}: the private key is not")
    assert "U0VDUkVU" not in r.stderr + r.stdout  # never the key
    assert (host.dir / "sshd.log").read_text().count("Connection from") == dials  # no host was contacted


def test_malformed_jump_host_key_is_bad_input_too(host: SshdHost, tmp_path: Path, monkeypatch: Any) -> None:
    good = tmp_path / "key"
    good.write_text(host.user_key)
    path = _inventory(
        tmp_path,
        [
            {"name": "gpu-01", "port": host.port, "hostKeys": [host.host_key_line], "jump": "bastion"},
            {"name": "bastion", "port": host.port, "hostKeys": [host.host_key_line], "privateKeyEnv": "FS_BASTION"},
        ],
        {"address": "127.0.0.1", "privateKeyFile": str(good)},
    )
    monkeypatch.setenv("FS_BASTION", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPUBLICNOTPRIVATE")  # a public key
    r = _audit(path)
    assert r.returncode == EXIT_INPUT, r.stderr
    assert r.stderr.startswith(f"error: {path}: host 'bastion' privateKeyEnv FS_BASTION: the private key is not")
    assert "PUBLICNOTPRIVATE" not in r.stderr


def test_inventory_with_a_duplicate_key_is_refused_with_its_line(host: SshdHost, tmp_path: Path) -> None:
    """The inventory is read by fullserver.yamlio.read_yaml: a key given twice names both lines."""
    path = tmp_path / "inventory.yaml"
    path.write_text(
        "hosts:\n"
        "  - name: gpu-01\n"
        "    address: 127.0.0.1\n"
        f"    port: {host.port}\n"
        f"    address: 127.0.0.2\n"  # line 5
        f"    hostKeys: ['{host.host_key_line}']\n"
    )
    r = _audit(path)
    assert r.returncode == EXIT_INPUT, r.stderr
    assert r.stderr.strip() == f"error: {path}:5: duplicate key 'address' (first at line 3) (remove one)"
