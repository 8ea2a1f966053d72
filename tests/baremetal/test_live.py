"""Probe, audit and configuration steps against real sshd hosts (loop-file disks for scratch)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest
import yaml

from fullserver.baremetal.audit import audit_host
from fullserver.baremetal.config import HostConfig, ScratchConfig, ServiceUserConfig
from fullserver.baremetal.engine import converge, plan, revert
from fullserver.baremetal.errors import BareMetalError, ProbeError, StepFailed, StepRefused
from fullserver.baremetal.journal import read_journal
from fullserver.baremetal.operations import ScratchStep, ServiceUserStep, SysctlStep, build_steps
from fullserver.baremetal.probe import probe
from fullserver.baremetal.ssh import session
from fullserver.catalog import load_catalog
from fullserver.profiles import load_profiles
from tests.baremetal.conftest import private_proc_sys
from tests.baremetal.testbed import A100_SXM, H100_SXM, SshdHost, Testbed


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
        assert {p.action for p in plan(s, cfg.layout, steps).values()} == {"ok"}
        # drift: someone resets a knob; plan sees it, converge fixes only that step
        (host.root / "proc/sys/net/core/rmem_max").write_text("212992\n")
        assert str(plan(s, cfg.layout, steps)["sysctl"]).startswith("apply")
        fixed = converge(s, cfg.layout, steps)
        assert fixed.changed == ["sysctl"]
        gone = revert(s, cfg.layout, steps)
        assert gone.undone == list(reversed([st.id for st in steps]))
        assert read_journal(s, cfg.layout).steps == {}
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


def _md_driver() -> bool:
    """Whether the kernel has md, loading the modules first where modprobe is there to load them
    (a fresh machine may have neither kmod nor the md modules: both mean "no md")."""
    modprobe = shutil.which("modprobe")
    if not Path("/proc/mdstat").exists() and modprobe:
        for module in ("md_mod", "raid0"):
            subprocess.run([modprobe, module], capture_output=True)
    return Path("/proc/mdstat").exists()


def test_md_check_works_without_modprobe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fresh machine has no kmod: asking whether md is there must answer, not raise."""
    monkeypatch.setenv("PATH", str(tmp_path))
    assert _md_driver() is Path("/proc/mdstat").exists()


def _md_uuid(array: str) -> str:
    out = subprocess.run(["mdadm", "--detail", "--export", array], capture_output=True, text=True, check=True)
    return next(line.split("=", 1)[1] for line in out.stdout.splitlines() if line.startswith("MD_UUID="))


def test_raid0_over_two_disks(bed: Testbed, host: SshdHost) -> None:
    """Where the kernel has md: created, re-assembled (the same array UUID) after a stop, re-created
    over a changed device list (the old array is taken down first, never silently kept), reverted.
    Where it has none (this test machine's kernel ships no md_mod module): the step refuses with a
    clear message and the disks stay blank — a warning in the test report says which branch ran."""
    devs = [bed.loop_device(f"{host.name}-r{i}") for i in range(3)]
    cfg = HostConfig(scratch=ScratchConfig(devices=devs[:2], format=True), root=str(host.root))
    step = ScratchStep(devs[:2], consent_to_format=True, array=f"/dev/md/fst-{host.port}")
    with session(host.target(), host.user_key) as s:
        if not _md_driver():
            warnings.warn(
                "no md driver in this kernel (modprobe md_mod/raid0 failed): RAID0 tested for its refusal only",
                stacklevel=1,
            )
            with pytest.raises(StepFailed) as exc:
                converge(s, cfg.layout, [step])
            assert exc.value.line() == (
                f"{host.name}: the kernel has no md (software RAID) driver: /proc/mdstat is missing "
                "(load it (modprobe raid0), or use a single scratch device)"
            )
            assert all(subprocess.run(["blkid", "-p", d], capture_output=True).returncode == 2 for d in devs)
            assert s.writes == 0 and read_journal(s, cfg.layout).steps == {}  # refused before any write
            return
        try:
            assert converge(s, cfg.layout, [step]).changed == ["scratch"]
            created = _md_uuid(step.array)
            subprocess.run(["umount", str(host.root / "mnt/scratch")], check=True)
            subprocess.run(["mdadm", "--stop", step.array], check=True)
            assert converge(s, cfg.layout, [step]).changed == ["scratch"]
            assert _md_uuid(step.array) == created  # re-assembled, not re-created
            wider = ScratchStep(devs, consent_to_format=True, array=step.array)
            moved = converge(s, cfg.layout, [wider])
            assert moved.undone == ["scratch"] and moved.changed == ["scratch"]
            real = Path(step.array).resolve().name
            assert len(list(Path(f"/sys/block/{real}/slaves").iterdir())) == 3 and _md_uuid(step.array) != created
            revert(s, cfg.layout, [wider])
            assert not Path(step.array).exists()
        finally:
            subprocess.run(["umount", str(host.root / "mnt/scratch")], capture_output=True)
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
        assert all(e.status == "applied" for e in out.journal.steps.values())
        assert list(out.journal.steps) == [st.id for st in steps]
        assert converge(s, cfg.layout, steps).writes == 0
        revert(s, cfg.layout, steps)
    assert (host.root / "proc/sys/net/core/rmem_max").read_text().strip() == Path(
        "/proc/sys/net/core/rmem_max"
    ).read_text().strip()


def _mounted(path: Path) -> bool:
    return subprocess.run(["findmnt", "--mountpoint", str(path)], capture_output=True).returncode == 0


def _blank(dev: str) -> bool:
    return subprocess.run(["blkid", "-p", dev], capture_output=True).returncode == 2


def test_mountpoint_with_spaces_and_command_substitution_stays_literal(
    bed: Testbed, host: SshdHost, tmp_path: Path
) -> None:
    pwned = tmp_path / "pwned"
    mountpoint = f"/mnt/scratch $(touch {pwned}) `touch {pwned}`"
    dev = bed.loop_device(f"{host.name}-sp")
    step = ScratchStep([dev], mountpoint=mountpoint, consent_to_format=True)
    layout = HostConfig(root=str(host.root)).layout
    with session(host.target(), host.user_key) as s:
        assert converge(s, layout, [step]).changed == ["scratch"]
        assert _mounted(host.root / mountpoint.lstrip("/"))  # that exact directory name
        fstab = (host.root / "etc/fstab").read_text().split()
        assert fstab[1] == f"/mnt/scratch\\040$(touch\\040{pwned})\\040`touch\\040{pwned}`"  # one field
        assert converge(s, layout, [step]).writes == 0  # and it reads back as in place
        revert(s, layout, [step])
    assert not pwned.exists()
    assert (
        not _mounted(host.root / mountpoint.lstrip("/")) and "fullserver" not in (host.root / "etc/fstab").read_text()
    )


_WIPEFS_FAILS = "#!/bin/sh\ncase \"$1\" in --help) echo '  -J, --json  use JSON output format'; exit 0;; esac\nexit 1\n"


@pytest.mark.parametrize(
    ("tool", "script", "refusal"),
    [
        ("blkid", "#!/bin/sh\nexit 8\n", "blkid -p exited 8 on .*: cannot prove it is blank"),  # ambivalent
        ("blkid", "#!/bin/sh\nexit 4\n", "blkid -p exited 4 on .*: cannot prove it is blank"),  # error
        ("lsblk", "#!/bin/sh\nexit 1\n", "lsblk failed on .*: cannot tell whether it is mounted"),
        ("wipefs", _WIPEFS_FAILS, "wipefs --no-act failed on .*: cannot prove it is blank"),
    ],
)
def test_blank_disk_check_fails_closed(bed: Testbed, host: SshdHost, tool: str, script: str, refusal: str) -> None:
    """A disk is formatted only when every tool proves it blank; a tool that cannot tell refuses it."""
    dev = bed.loop_device(f"{host.name}-{tool}")
    host.stand_in(tool, script)
    cfg = HostConfig(scratch=ScratchConfig(devices=[dev], format=True), root=str(host.root))
    with session(host.target(), host.user_key) as s:
        with pytest.raises(StepRefused, match=refusal) as exc:
            converge(s, cfg.layout, build_steps(cfg))
        assert exc.value.line().startswith(host.name) and s.writes == 0
    assert _blank(dev)  # untouched


def test_signature_at_the_end_of_the_disk_is_refused(bed: Testbed, host: SshdHost) -> None:
    """RAID metadata in the last sector (JMicron here; md 1.0, DDF and others live there too)."""
    dev = bed.loop_device(f"{host.name}-end")
    fd = os.open(dev, os.O_RDWR)
    try:
        end = os.lseek(fd, 0, os.SEEK_END)
        sector = bytearray(512)
        sector[0:2] = b"JM"
        sector[4:6] = (0x10000 - int.from_bytes(b"JM", "little")).to_bytes(2, "little")  # 16-bit words sum to 0
        os.pwrite(fd, bytes(sector), end - 512)
        os.fsync(fd)
    finally:
        os.close(fd)
    cfg = HostConfig(scratch=ScratchConfig(devices=[dev], format=True), root=str(host.root))
    with (
        session(host.target(), host.user_key) as s,
        pytest.raises(StepRefused, match="jmicron_raid_member") as exc,
    ):
        converge(s, cfg.layout, build_steps(cfg))
    assert "wipefs" in exc.value.line()
    probe_out = subprocess.run(["blkid", "-p", "-o", "export", dev], capture_output=True, text=True).stdout
    assert "TYPE=jmicron_raid_member" in probe_out  # still there, nothing formatted over it


def test_sysctl_update_then_revert_restores_every_original(host: SshdHost) -> None:
    layout = private_proc_sys(host)
    proc = Path(layout.sysctl_dir)
    original = {k: (proc / k.replace(".", "/")).read_text() for k in ("net.core.rmem_max", "net.core.wmem_max")}
    conf = host.root / "etc/sysctl.d/90-fullserver.conf"
    conf.parent.mkdir(parents=True, exist_ok=True)
    conf.write_text("# the admin's own file, there before fullserver\n")
    a = SysctlStep({"net.core.rmem_max": "1234567"})
    ab = SysctlStep({"net.core.rmem_max": "2345678", "net.core.wmem_max": "7654321"})
    with session(host.target(), host.user_key) as s:
        assert converge(s, layout, [a]).changed == ["sysctl"]
        assert converge(s, layout, [ab]).changed == ["sysctl"]  # update: adds a key (its original recorded)
        assert (proc / "net/core/wmem_max").read_text().strip() == "7654321"
        assert converge(s, layout, [a]).changed == ["sysctl"]  # update: drops it again...
        assert (proc / "net/core/wmem_max").read_text() == original["net.core.wmem_max"]  # ...restored at once
        revert(s, layout, [a])
    for key, value in original.items():
        assert (proc / key.replace(".", "/")).read_text() == value, key
    assert conf.read_text() == "# the admin's own file, there before fullserver\n"


def test_scratch_moves_undo_the_old_one_first(bed: Testbed, host: SshdHost) -> None:
    first, second = bed.loop_device(f"{host.name}-m1"), bed.loop_device(f"{host.name}-m2")
    layout = HostConfig(root=str(host.root)).layout
    old_mp, new_mp = host.root / "mnt/scratch", host.root / "mnt/fast"
    with session(host.target(), host.user_key) as s:
        converge(s, layout, [ScratchStep([first], consent_to_format=True)])
        assert _mounted(old_mp)
        moved = converge(s, layout, [ScratchStep([first], mountpoint="/mnt/fast", consent_to_format=True)])
        assert moved.undone == ["scratch"] and moved.changed == ["scratch"]
        assert not _mounted(old_mp) and _mounted(new_mp)
        lines = [x for x in (host.root / "etc/fstab").read_text().splitlines() if "fullserver" in x]
        assert len(lines) == 1 and lines[0].split()[1] == "/mnt/fast"
        other = ScratchStep([second], mountpoint="/mnt/fast", consent_to_format=True)
        assert converge(s, layout, [other]).changed == ["scratch"]  # other device: the first comes down
        sources = subprocess.run(["findmnt", "-n", "-o", "SOURCE", str(new_mp)], capture_output=True, text=True)
        assert sources.stdout.split() == [second]  # mounted once, not stacked over the first
        revert(s, layout, [other])
    assert not _mounted(new_mp) and not _mounted(old_mp)
    assert "fullserver" not in (host.root / "etc/fstab").read_text()


def test_scratch_remade_on_its_own_disks_is_refused_with_the_old_one_in_place(bed: Testbed, host: SshdHost) -> None:
    disk = bed.loop_device(f"{host.name}-r1")
    layout = HostConfig(root=str(host.root)).layout
    mountpoint, fstab = host.root / "mnt/scratch", host.root / "etc/fstab"
    relabelled = ScratchStep([disk], label="fs-fast", consent_to_format=True)
    with session(host.target(), host.user_key) as s:
        converge(s, layout, [ScratchStep([disk], consent_to_format=True)])
        before = fstab.read_text(), read_journal(s, layout).steps["scratch"].desired
        previewed = plan(s, layout, [relabelled])["scratch"]
        assert previewed.action == "replace" and previewed.refused and "formatting them again" in previewed.refused
        writes = s.writes
        with pytest.raises(StepRefused, match="on the same disks means formatting them again"):
            converge(s, layout, [relabelled])
        assert s.writes == writes  # nothing undone, nothing journaled
        assert _mounted(mountpoint) and (fstab.read_text(), read_journal(s, layout).steps["scratch"].desired) == before
        revert(s, layout, [ScratchStep([disk], consent_to_format=True)])
    assert not _mounted(mountpoint)


def test_service_user_never_takes_over_an_existing_user(host: SshdHost, ops: str, nosudo: str) -> None:
    layout = HostConfig(root=str(host.root)).layout
    with session(host.target(user=ops), host.user_key) as s:
        for name, why in (
            (ops, f"service user {ops} is the user fullserver logs in as"),
            ("daemon", "user daemon already exists (uid 1) and was not created by fullserver"),
            (nosudo, f"user {nosudo} already exists"),
        ):
            with pytest.raises(StepRefused, match=re.escape(why)):
                converge(s, layout, [ServiceUserStep(name, [host.user_pub])])
        assert s.writes == 0  # refused before anything was written


def test_service_user_keeps_a_home_that_was_already_there(host: SshdHost) -> None:
    name = f"svh{host.port % 10000}"
    layout = HostConfig(root=str(host.root)).layout
    home = host.root / "home" / name
    home.mkdir(parents=True)
    (home / "keep.txt").write_text("someone's data\n")
    step = ServiceUserStep(name, [host.user_pub])
    with session(host.target(), host.user_key) as s:
        assert converge(s, layout, [step]).changed == [step.id]
        assert (home / ".ssh/authorized_keys").read_text() == host.user_pub + "\n"
        assert converge(s, layout, [step]).writes == 0  # ours now: re-applying takes nothing over
        revert(s, layout, [step])
    assert subprocess.run(["id", name], capture_output=True).returncode != 0
    assert (home / "keep.txt").read_text() == "someone's data\n" and not (home / ".ssh").exists()


T4 = "Tesla T4, GPU-{uuid}, 00000000:{bus:02X}:00.0, 15360, 535.129.03, {pm}"


def test_audit_through_a_bastion_audits_only_the_gpu_hosts(bed: Testbed, host: SshdHost, tmp_path: Path) -> None:
    """The bastion is only passed through (with its own key), never probed; both GPU hosts pass."""
    bastion = bed.add_host(f"bastion{host.port % 10000}")
    inner = bed.add_host(f"inner{host.port % 10000}", gpus=[T4])
    try:
        host.set_gpus([T4])
        keys = {}
        for h in (host, bastion, inner):
            keys[h.name] = tmp_path / f"{h.name}.key"
            keys[h.name].write_text(h.user_key)
        profile = yaml.safe_load((Path(__file__).parents[2] / "profiles/dedicated-steady.yaml").read_text())
        profile["balance"] = {
            "cpu_per_accelerator": {"value": 1, "unit": "core", "reason": "a test profile this small VM meets"},
            "ram_per_accelerator_memory": {"value": 0.1, "reason": "a test profile this small VM meets"},
            "ram_floor_gib": {"value": 1, "reason": "a test profile this small VM meets"},
        }
        profiles = tmp_path / "profiles"
        profiles.mkdir()
        (profiles / "tiny.yaml").write_text(yaml.safe_dump(profile))
        mem_gib = int(Path("/proc/meminfo").read_text().split()[1]) / 2**20
        contract = {"accelerator": "T4", "acceleratorCount": 1, "vcpus": os.cpu_count(), "memoryGib": mem_gib}
        inv = {
            "defaults": {"address": "127.0.0.1", "expect": {**contract, "networkGbps": 1}},
            "hosts": [
                {
                    "name": "gpu-01",
                    "port": host.port,
                    "hostKeys": [host.host_key_line],
                    "privateKeyFile": str(keys[host.name]),
                },
                {
                    "name": "gpu-02",
                    "port": inner.port,
                    "hostKeys": [inner.host_key_line],
                    "privateKeyFile": str(keys[inner.name]),
                    "jump": "bastion",
                },
                {
                    "name": "bastion",
                    "port": bastion.port,
                    "hostKeys": [bastion.host_key_line],
                    "privateKeyFile": str(keys[bastion.name]),
                },
            ],
        }
        path = tmp_path / "inventory.yaml"
        path.write_text(yaml.safe_dump(inv))
        fullserver = Path(sys.executable).parent / "fullserver"
        r = subprocess.run(
            [str(fullserver), "audit", str(path), "--profile", "tiny", "--profiles-dir", str(profiles), "--json"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 0, r.stderr + r.stdout
        rows = {a["name"]: a for a in json.loads(r.stdout)}
        assert sorted(rows) == ["gpu-01", "gpu-02"] and all(a["status"] == "balanced" for a in rows.values())
        log = (bastion.dir / "sshd.log").read_text()
        assert "Accepted publickey for root" in log  # the bastion was used, with its own key...
        assert "Starting session" not in log  # ...but no command ever ran there
        assert "Starting session: command" in (inner.dir / "sshd.log").read_text()
    finally:
        bastion.stop()
        inner.stop()
