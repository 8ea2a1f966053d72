"""Probe, audit and configuration steps against real sshd hosts (loop-file disks for scratch)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from fullserver.baremetal.audit import audit_host
from fullserver.baremetal.errors import BareMetalError, ProbeError, StepFailed, StepRefused
from fullserver.baremetal.probe import probe
from fullserver.baremetal.ssh import session
from fullserver.baremetal.steps import (
    HostConfig,
    ScratchConfig,
    ScratchStep,
    ServiceUserConfig,
    build_steps,
    converge,
    plan,
    read_journal,
    revert,
)
from fullserver.baremetal.testbed import A100_SXM, H100_SXM, SshdHost, Testbed
from fullserver.catalog import load_catalog
from fullserver.profiles import load_profiles
from tests.baremetal.conftest import private_proc_sys


def test_probe_real_facts_of_this_machine(host: SshdHost) -> None:
    host.set_gpus([H100_SXM] * 4 + [A100_SXM] * 4)
    with session(host.target(), host.user_key) as s:
        f = probe(s)
        assert s.commands == 1  # one round trip
    assert f.cpu.threads == os.cpu_count()
    meminfo = Path("/proc/meminfo").read_text().split("\n")[0].split()
    assert f.memory_bytes == int(meminfo[1]) * 1024
    assert f.kernel == os.uname().release
    assert f.gpu_models == {"NVIDIA A100-SXM4-80GB": 4, "NVIDIA H100 80GB HBM3": 4} and f.mixed_gpus
    root = next(d for d in f.disks if "/" in d.mountpoints)
    assert root.os_disk and root.mounted


def test_malformed_nvidia_smi_is_a_per_host_error(host: SshdHost) -> None:
    host.set_gpus([H100_SXM])
    (host.dir / "gpu-broken").write_text("0, NVIDIA H100 80GB HBM3\n")
    with session(host.target(), host.user_key) as s, pytest.raises(ProbeError, match="malformed nvidia-smi") as exc:
        probe(s)
    assert exc.value.line().startswith(f"{host.name}: ")


def test_audit_cli_fleet_with_one_dead_host(bed: Testbed, host: SshdHost, tmp_path: Path) -> None:
    host.set_gpus([H100_SXM] * 8)
    dead = bed.add_host("dead")
    dead.stop()
    keyfile = tmp_path / "key"
    keyfile.write_text(host.user_key)
    inv = {
        "defaults": {"privateKeyFile": str(keyfile), "address": "127.0.0.1"},
        "hosts": [
            {"name": "gpu-01", "port": host.port, "hostKeys": [host.host_key_line]},
            {"name": "gpu-02", "port": dead.port, "hostKeys": [dead.host_key_line], "connectTimeout": 2},
        ],
    }
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(inv))
    fullserver = Path(sys.executable).parent / "fullserver"
    r = subprocess.run(
        [str(fullserver), "audit", str(path), "--profile", "dedicated-steady", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 4, r.stderr  # gpu-01 is short (this VM has 2 cores), gpu-02 unreachable
    rows = {a["name"]: a for a in json.loads(r.stdout)}
    assert rows["gpu-01"]["status"] == "short" and rows["gpu-01"]["accelerator"] == "H100-80GB"
    assert rows["gpu-02"]["status"] == "error" and "connection refused" in rows["gpu-02"]["error"]
    assert "short: gpu-01: cpu 2 cores < 64 cores" in r.stderr and "unreachable: gpu-02" in r.stderr


def test_audit_host_unknown_gpu_is_reported(host: SshdHost) -> None:
    host.set_gpus(["NVIDIA GeForce RTX 4090, GPU-{uuid}, 00000000:{bus:02X}:00.0, 24564, 550.54.15, {pm}"])
    a = audit_host(host.target(), host.user_key, load_profiles()["dedicated-steady"], load_catalog())
    assert a.status == "short" and any("not in the catalog" in p for p in a.problems)
    assert a.report is not None and a.report.lines[1].required == 128  # RAM ratio uses nvidia-smi's 24 GiB: floor wins


def _config(host: SshdHost, devices: list[str], fmt: bool = True) -> HostConfig:
    layout = private_proc_sys(host)
    return HostConfig(
        scratch=ScratchConfig(devices=devices, format=fmt),
        network_tuning=True,
        hugepages=64,
        gpu_persistence=True,
        service_user=ServiceUserConfig(name=f"svc{host.port % 10000}", authorized_keys=[host.user_pub]),
        root=layout.root,
        sysctl_dir=layout.sysctl_dir,
    )


def _files(root: Path) -> dict[str, tuple[float, int]]:
    return {
        str(p): (p.stat().st_mtime, p.stat().st_size) for p in root.rglob("*") if p.is_file() and "/mnt/" not in str(p)
    }


def test_configure_reapply_zero_writes_then_revert(bed: Testbed, host: SshdHost, ops: str) -> None:
    host.set_gpus([H100_SXM] * 2)
    dev = bed.loop_device(f"{host.name}-scratch")
    cfg = _config(host, [dev])
    steps = build_steps(cfg)
    with session(host.target(user=ops), host.user_key) as s:
        first = converge(s, cfg.layout, steps)
        assert first.changed == [st.id for st in steps] and first.writes > 0
        assert (host.root / "proc/sys/net/core/rmem_max").read_text().strip() == "268435456"
        assert "fs-scratch" in subprocess.run(["blkid", dev], capture_output=True, text=True).stdout
        assert subprocess.run(["findmnt", str(host.root / "mnt/scratch")], capture_output=True).returncode == 0
        before = _files(host.root)
        again = converge(s, cfg.layout, steps)
        assert again.writes == 0 and again.changed == [] and _files(host.root) == before
        assert set(plan(s, cfg.layout, steps).values()) == {"ok"}
        # drift: someone resets a knob; plan sees it, converge fixes only that step
        (host.root / "proc/sys/net/core/rmem_max").write_text("212992\n")
        assert plan(s, cfg.layout, steps)["sysctl"].startswith("apply")
        fixed = converge(s, cfg.layout, steps)
        assert fixed.changed == ["sysctl"]
        gone = revert(s, cfg.layout, steps)
        assert gone.undone == list(reversed([st.id for st in steps]))
        assert read_journal(s, cfg.layout)["steps"] == {}
    assert (host.root / "proc/sys/net/core/rmem_max").read_text().strip() == Path(
        "/proc/sys/net/core/rmem_max"
    ).read_text().strip()
    assert not (host.root / "etc/sysctl.d/90-fullserver.conf").exists()
    assert "fullserver" not in (host.root / "etc/fstab").read_text()
    assert subprocess.run(["findmnt", str(host.root / "mnt/scratch")], capture_output=True).returncode != 0
    assert subprocess.run(["id", f"svc{host.port % 10000}"], capture_output=True).returncode != 0


def test_disk_holding_a_filesystem_is_never_wiped(bed: Testbed, host: SshdHost) -> None:
    dev = bed.loop_device(f"{host.name}-data")
    subprocess.run(["mkfs.ext4", "-q", "-L", "precious", dev], check=True)
    cfg = HostConfig(scratch=ScratchConfig(devices=[dev], format=True), root=str(host.root))
    with session(host.target(), host.user_key) as s, pytest.raises(StepRefused, match="holds a ext4 signature") as exc:
        converge(s, cfg.layout, build_steps(cfg))
    assert "wipefs" in exc.value.line() and exc.value.line().startswith(host.name)
    assert 'LABEL="precious"' in subprocess.run(["blkid", dev], capture_output=True, text=True).stdout


def test_mounted_disk_and_no_consent_are_refused(bed: Testbed, host: SshdHost) -> None:
    blank = bed.loop_device(f"{host.name}-blank")
    cfg = HostConfig(scratch=ScratchConfig(devices=[blank], format=False), root=str(host.root))
    with session(host.target(), host.user_key) as s:
        with pytest.raises(StepRefused, match="would format"):
            converge(s, cfg.layout, build_steps(cfg))
        assert subprocess.run(["blkid", "-p", blank], capture_output=True).returncode == 2  # still blank


def test_raid0_over_two_disks(bed: Testbed, host: SshdHost) -> None:
    devs = [bed.loop_device(f"{host.name}-r{i}") for i in range(2)]
    cfg = HostConfig(scratch=ScratchConfig(devices=devs, format=True), root=str(host.root))
    step = ScratchStep(devs, consent_to_format=True, array=f"/dev/md/fst-{host.port}")
    with session(host.target(), host.user_key) as s:
        if not Path("/proc/mdstat").exists():
            # This kernel has no md driver: the step must say so clearly and leave the disks blank.
            with pytest.raises(StepFailed, match="no md"):
                converge(s, cfg.layout, [step])
            assert all(subprocess.run(["blkid", "-p", d], capture_output=True).returncode == 2 for d in devs)
            return
        try:
            assert converge(s, cfg.layout, [step]).changed == ["scratch"]
            subprocess.run(["umount", str(host.root / "mnt/scratch")], check=True)
            subprocess.run(["mdadm", "--stop", step.array], check=True)
            assert converge(s, cfg.layout, [step]).changed == ["scratch"]  # re-assembled, not re-created
            revert(s, cfg.layout, [step])
        finally:
            subprocess.run(["mdadm", "--stop", step.array], capture_output=True)
            subprocess.run(["mdadm", "--zero-superblock", *devs], capture_output=True)


def test_connection_killed_mid_configuration_converges(bed: Testbed, host: SshdHost, ops: str) -> None:
    host.set_gpus([H100_SXM] * 2)
    (host.dir / "gpu-pm-delay").write_text("3")  # nvidia-smi -pm 1 is slow on real hosts too
    dev = bed.loop_device(f"{host.name}-scratch")
    cfg = _config(host, [dev])
    steps = build_steps(cfg)
    started = host.dir / "gpu-pm-started"

    def cut() -> None:
        for _ in range(200):
            if started.exists():
                host.kill_sessions()
                return
            time.sleep(0.05)

    killer = threading.Thread(target=cut)
    killer.start()
    with pytest.raises(BareMetalError), session(host.target(user=ops), host.user_key) as s:
        converge(s, cfg.layout, steps)
    killer.join()
    journal = json.loads((host.root / "var/lib/fullserver/journal.json").read_text())
    assert journal["steps"]["gpu-persistence"]["status"] == "applying"  # intent recorded before the cut
    assert journal["steps"]["scratch"]["status"] == "applied"
    (host.dir / "gpu-pm-delay").unlink()
    with session(host.target(user=ops), host.user_key) as s:
        out = converge(s, cfg.layout, steps)
        assert "scratch" in out.unchanged and "sysctl" in out.unchanged
        assert all(e["status"] == "applied" for e in out.journal["steps"].values())
        assert list(out.journal["steps"]) == [st.id for st in steps]
        assert converge(s, cfg.layout, steps).writes == 0
        revert(s, cfg.layout, steps)
    assert (host.root / "proc/sys/net/core/rmem_max").read_text().strip() == Path(
        "/proc/sys/net/core/rmem_max"
    ).read_text().strip()
