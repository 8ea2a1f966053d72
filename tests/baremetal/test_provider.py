"""The dynamic provider's methods called directly against real sshd hosts (no engine)."""

from __future__ import annotations

import base64
import functools
import subprocess
from pathlib import Path
from typing import Any

import dill
import pulumi
import pytest
from pulumi.dynamic.dynamic import serialize_provider

from components.bare_metal.provider import FORGET_ENV, BareMetalProvider
from fullserver.baremetal import inventory
from fullserver.baremetal.errors import BareMetalError
from fullserver.baremetal.inventory import Timeouts, inventory_from_data
from tests.baremetal.conftest import private_proc_sys
from tests.baremetal.testbed import H100_SXM, SshdHost, Testbed

CONTRACT = {"accelerator": "H100-80GB", "acceleratorCount": 4, "vcpus": 1, "memoryGib": 1, "networkGbps": 1}


def _props(hosts: list[SshdHost], key: str, layout_host: SshdHost, user: str, **config: Any) -> dict[str, Any]:
    layout = private_proc_sys(layout_host)
    return {
        "expected": CONTRACT,
        "hosts": [
            {
                "name": h.name,
                "address": "127.0.0.1",
                "port": h.port,
                "user": user,
                "hostKeys": [h.host_key_line],
                "connectTimeout": 2,
            }
            for h in hosts
        ],
        "private_key": key,
        "profile": "dedicated-steady",
        "config": {
            "networkTuning": True,
            "gpuPersistence": True,
            "root": layout.root,
            "sysctlDir": layout.sysctl_dir,
            **config,
        },
    }


def test_provider_is_stateless_and_serializes() -> None:
    blob = serialize_provider(BareMetalProvider())
    restored = dill.loads(base64.b64decode(blob))
    assert isinstance(restored, BareMetalProvider) and vars(restored) == {}


def test_check_rejects_before_touching_hosts(host: SshdHost) -> None:
    p = BareMetalProvider()
    bad = {
        "hosts": [{"name": "a", "address": "127.0.0.1"}],
        "private_key": "not a key",
        "profile": "nope",
        "config": {"hugepages": -1},
        "expected": {"vcpus": 0},
    }
    result = p.check({}, bad)
    fields = sorted(f.property for f in result.failures)
    assert fields == ["config", "expected", "hosts", "private_key", "profile"]
    injected = p.check({}, {**bad, "config": {"scratch": {"devices": ["/dev/sdb; reboot"]}}}).failures
    reason = next(f.reason for f in injected if f.property == "config")
    assert "scratch.devices" in reason and "is not a device path" in reason and "\n" not in reason
    assert all("not a key" not in f.reason for f in result.failures)  # the secret is never echoed
    assert "Accepted" not in (host.dir / "sshd.log").read_text()
    good = _props([host], host.user_key, host, "root")
    assert p.check({}, good).failures == []


def test_create_diff_read_update_delete(
    bed: Testbed, host: SshdHost, ops: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    host.set_gpus([H100_SXM] * 2)
    dead = bed.add_host("dead-in-fleet")
    dead.stop()
    p = BareMetalProvider()
    props = _props([host, dead], host.user_key, host, ops)
    created = p.create(props)
    outs = created.outs
    assert outs is not None
    assert (
        list(outs["failed_hosts"]) == ["dead-in-fleet"]
        and "connection refused" in outs["failed_hosts"]["dead-in-fleet"]
    )
    status = outs["host_status"][host.name]
    assert status["changed"] == ["sysctl", "gpu-persistence"] and status["facts"]["gpus"] == {
        "NVIDIA H100 80GB HBM3": 2
    }
    assert status["status"] == "short"  # this VM is not a balanced 2-GPU server
    assert "2 GPUs visible, contract says 4" in status["audit"]  # the rented-hardware contract is checked
    # A failed host makes the next diff ask for an update (which retries it).
    assert p.diff(created.id, outs, props).changes is True
    # Without the dead host: no drift → no change.
    props = _props([host], host.user_key, host, ops)
    outs = p.update(created.id, outs, props).outs
    assert outs is not None and outs["failed_hosts"] == {}
    assert outs["host_status"][host.name]["writes"] == 0
    assert p.diff(created.id, outs, props).changes is False
    # Drift: a knob reset by hand; refresh (read) shows it, diff wants an update, update fixes it.
    (host.root / "proc/sys/net/core/rmem_max").write_text("4096\n")
    read = p.read(created.id, outs)
    assert read.outs is not None and read.outs["host_status"][host.name]["steps"]["sysctl"].startswith("drift")
    shown = read.outs["host_status"][host.name]["commands"]["sysctl"]  # the exact commands an update runs
    assert list(read.outs["host_status"][host.name]["commands"]) == ["sysctl"] and "> " in shown[0]
    infos: list[str] = []
    monkeypatch.setattr(pulumi.log, "info", lambda msg, *args, **kwargs: infos.append(msg))
    assert p.diff(created.id, outs, props).changes is True
    assert [m.splitlines()[:2] for m in infos] == [
        [f"bare metal: {host.name} would run:", "  sysctl: apply: differs: net.core.rmem_max=4096"]
    ]
    assert f"    $ {shown[0]}" in infos[0]
    # Update with a smaller config: applies only the difference and undoes what is no longer wanted.
    smaller = _props([host], host.user_key, host, ops, gpuPersistence=False)
    outs2 = p.update(created.id, outs, smaller).outs
    assert outs2 is not None and outs2["host_status"][host.name]["changed"] == ["sysctl"]
    assert (host.dir / "gpu-persistence").read_text().strip() == "Disabled"
    p.delete(created.id, outs2)
    assert not (host.root / "var/lib/fullserver/journal.json").exists()
    assert (host.root / "proc/sys/net/core/rmem_max").read_text().strip() == Path(
        "/proc/sys/net/core/rmem_max"
    ).read_text().strip()


def test_delete_with_a_host_gone_for_good(host: SshdHost, monkeypatch: pytest.MonkeyPatch) -> None:
    """Safe by default (the delete fails, naming the host and the way out); forgetting is explicit."""
    host.set_gpus([H100_SXM])
    p = BareMetalProvider()
    props = {**_props([host], host.user_key, host, "root"), "config": {"root": str(host.root)}}
    created = p.create(props)
    assert created.outs is not None and created.outs["failed_hosts"] == {}
    host.stop()  # the server was returned to the provider
    monkeypatch.setattr(inventory, "Timeouts", functools.partial(Timeouts, retry_base=0.05))  # quicker retries
    monkeypatch.delenv(FORGET_ENV, raising=False)
    with pytest.raises(BareMetalError) as exc:
        p.delete(created.id, created.outs)
    line = exc.value.line()
    assert f"{host.name}: connection refused" in line and f"{FORGET_ENV}={host.name} pulumi destroy" in line
    monkeypatch.setenv(FORGET_ENV, host.name)
    # pulumi.log goes to the engine, or to stderr without one, or to another test's mock runtime:
    # record it at the source so the assertion holds in every case.
    warnings: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda msg, *args, **kwargs: warnings.append(msg))
    p.delete(created.id, created.outs)
    assert any(f"{host.name} forgotten without reverting" in w for w in warnings), warnings


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return path.read_text()


def test_per_host_key_sources_and_jump_keys_are_honoured(
    bed: Testbed, host: SshdHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 11: as in an inventory file and ``fullserver audit``, a host's and a jump host's own key
    source wins over ``private_key`` (here a key no host accepts)."""
    host.set_gpus([H100_SXM])
    bastion = bed.add_host(f"bastion-p{host.port % 10000}")
    try:
        keyfile = tmp_path / "gpu.key"
        keyfile.write_text(host.user_key)
        monkeypatch.setenv("FS_BASTION_KEY", bastion.user_key)
        props = _props([host], _keygen(tmp_path / "nobody"), host, "root")
        props["hosts"][0].update(jump="bastion", privateKeyFile=str(keyfile))
        props["hosts"].append(
            {
                "name": "bastion",
                "address": "127.0.0.1",
                "port": bastion.port,
                "hostKeys": [bastion.host_key_line],
                "privateKeyEnv": "FS_BASTION_KEY",
            }
        )
        # What BareMetalEnvironment passes (as a secret): every own key source, read when the program runs.
        props["private_keys"] = inventory_from_data(props["hosts"], Path.cwd(), "hosts").own_keys()
        assert props["private_keys"] == {host.name: host.user_key, "bastion": bastion.user_key}
        p = BareMetalProvider()
        assert p.check({}, props).failures == []
        created = p.create(props)
        assert created.outs is not None and created.outs["failed_hosts"] == {}, created.outs
        assert created.outs["host_status"][host.name]["changed"] == ["sysctl", "gpu-persistence"]
        log = (bastion.dir / "sshd.log").read_text()
        assert "Accepted publickey for root" in log and "Starting session" not in log  # passed through only
        # pulumi destroy does not run the program: the key texts in the (secret) state suffice.
        monkeypatch.delenv("FS_BASTION_KEY")
        keyfile.unlink()
        p.delete(created.id, created.outs)
        assert not (host.root / "var/lib/fullserver/journal.json").exists()
    finally:
        bastion.stop()


def test_check_names_a_bad_per_host_key_and_its_source_never_the_key(host: SshdHost, tmp_path: Path) -> None:
    p = BareMetalProvider()
    bad = tmp_path / "bad.key"
    bad.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nU0VDUkVUU0VDUkVU\n-----END OPENSSH PRIVATE KEY-----\n")
    props = _props([host], host.user_key, host, "root")
    del props["private_key"]  # every host has its own key: no default needed
    props["hosts"][0]["privateKeyFile"] = str(bad)
    props["private_keys"] = {host.name: bad.read_text()}
    failures = p.check({}, props).failures
    assert [f.property for f in failures] == ["private_keys"]
    reason = failures[0].reason
    assert reason.startswith(f"hosts: host '{host.name}' privateKeyFile {bad}: the private key is not an OpenSSH/PEM")
    assert "U0VDUkVU" not in reason and "\n" not in reason
    props["private_keys"] = {host.name: host.user_key}
    assert p.check({}, props).failures == []
    # a host without a key source of its own needs private_key, and the failure says which
    del props["hosts"][0]["privateKeyFile"]
    failures = p.check({}, props).failures
    assert [f.property for f in failures] == ["private_key"] and failures[0].reason.endswith(
        f"used by the hosts without privateKeyFile/privateKeyEnv: {host.name}"
    )


def test_check_refuses_a_malformed_host_key_naming_the_field(host: SshdHost) -> None:
    props = _props([host], host.user_key, host, "root")
    props["hosts"][0]["hostKeys"] = ["not a key"]
    failures = BareMetalProvider().check({}, props).failures
    assert [f.property for f in failures] == ["hosts"]
    assert failures[0].reason.startswith("hosts: hosts[0]: field 'hostKeys[0]': not a public host key: 'not a key'")
