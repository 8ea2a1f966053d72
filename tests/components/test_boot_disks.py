"""The boot script's disk part, RUN against loop devices: scratch, data disk, late data disk, refusals.

Every path the script touches is injected through its ``FULLSERVER_*`` variables: device globs
point at symlinks in a temporary directory (standing in for ``/dev/disk/by-id``) to loop devices
over image files, mount points and fstab live in the temporary directory, and the script is
generated with globs that match nothing, so a broken override finds no device instead of a real
disk. Loop devices and mounts are released even when a test fails (the fixture's finalizer).

RAID0 over several devices needs the kernel's md driver, which this machine may lack
(``/proc/mdstat``); the single-device scratch and the data disk paths run everywhere losetup does.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from components.startup import DiskPlan, disks_script
from tests import leftovers

TOOLS = ("losetup", "mkfs.ext4", "blkid", "lsblk", "mountpoint", "findmnt", "mount", "umount", "bash")
NOWHERE = "/nonexistent-fullserver-test/*"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or any(shutil.which(t) is None for t in TOOLS) or not Path("/dev/loop-control").exists(),
    reason="needs root, loop devices and util-linux",
)


def _run(*cmd: str) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()


def _blkid(dev: str, tag: str) -> str:
    out = subprocess.run(["blkid", "-p", "-o", "value", "-s", tag, dev], capture_output=True, text=True)
    return out.stdout.strip()


def _mounted_at(path: Path) -> str:
    """The device mounted at ``path`` ('' when none)."""
    out = subprocess.run(["findmnt", "-no", "SOURCE", "--mountpoint", str(path)], capture_output=True, text=True)
    return out.stdout.strip()


@dataclass
class Rig:
    root: Path
    loops: list[str] = field(default_factory=list)

    @property
    def by_id(self) -> Path:
        return self.root / "by-id"

    @property
    def scratch_dir(self) -> Path:
        return self.root / "scratch"

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def fstab(self) -> Path:
        return self.root / "fstab"

    def image(self, name: str, mib: int = 48) -> Path:
        path = self.root / f"{name}.img"
        with path.open("wb") as f:
            f.truncate(mib * 1024 * 1024)
        return path

    def attach(self, image: Path, link: str | None = None) -> str:
        """A loop device over ``image``, optionally linked as ``by-id/<link>`` like udev would."""
        dev = _run("losetup", "--find", "--show", str(image))
        self.loops.append(dev)
        if link:
            self.by_id.mkdir(exist_ok=True)
            (self.by_id / link).symlink_to(dev)
        return dev

    def env(self, **extra: str) -> dict[str, str]:
        return {
            **os.environ,
            "FULLSERVER_SCRATCH_GLOB": str(self.by_id / "local-nvme-*"),
            "FULLSERVER_DATA_GLOB": str(self.by_id / "data-*"),
            "FULLSERVER_SCRATCH_DIR": str(self.scratch_dir),
            "FULLSERVER_DATA_DIR": str(self.data_dir),
            "FULLSERVER_FSTAB": str(self.fstab),
            "FULLSERVER_DLAMI_NVME": str(self.root / "no-dlami"),
            "FULLSERVER_SCRATCH_WAIT": "4",
            "FULLSERVER_DATA_WAIT": "30",
            **extra,
        }

    def script(self, scratch: int, data: bool) -> Path:
        path = self.root / "fullserver-disks"
        plan = DiskPlan(scratch_glob=NOWHERE, scratch_devices=scratch, data_glob=NOWHERE, data_disk=data)
        path.write_text(disks_script(plan))
        return path

    def run(self, scratch: int, data: bool, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", str(self.script(scratch, data))], env=self.env(**env), capture_output=True, text=True, timeout=120
        )

    def mounts(self) -> list[str]:
        """Mount points under this rig's directory, deepest first."""
        points = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
        return sorted((p for p in points if p.startswith(str(self.root))), key=len, reverse=True)

    def cleanup(self) -> None:
        for point in self.mounts():
            subprocess.run(["umount", "-l", point], check=False)
        for dev in self.loops:
            subprocess.run(["losetup", "-d", dev], check=False)


@pytest.fixture
def rig() -> Iterator[Rig]:
    # Named for this process (tests/leftovers.py), so a run killed mid-test is swept by the next.
    r = Rig(leftovers.temp_dir("disks"))
    try:
        yield r
    finally:
        r.cleanup()
        shutil.rmtree(r.root, ignore_errors=True)


def _marker(directory: Path) -> None:
    (directory / "marker").write_text("keep me")


def test_the_script_reads_every_path_from_the_environment() -> None:
    text = disks_script(DiskPlan(scratch_glob=NOWHERE, scratch_devices=1, data_glob=NOWHERE, data_disk=True))
    for var in ("SCRATCH_GLOB", "DATA_GLOB", "SCRATCH_DIR", "DATA_DIR", "FSTAB", "DLAMI_NVME", "DATA_WAIT"):
        assert f"FULLSERVER_{var}" in text
    assert 'DATA_WAIT="${FULLSERVER_DATA_WAIT:-600}"' in text  # the bounded default wait


def test_single_scratch_device_and_a_blank_data_disk_are_formatted_and_mounted(rig: Rig) -> None:
    scratch = rig.attach(rig.image("nvme0"), "local-nvme-0")
    data = rig.attach(rig.image("data"), "data-vol1")
    done = rig.run(scratch=1, data=True)
    assert done.returncode == 0, done.stderr
    assert _mounted_at(rig.scratch_dir) == scratch and _blkid(scratch, "TYPE") == "ext4"
    assert _mounted_at(rig.data_dir) == data and _blkid(data, "TYPE") == "ext4"
    assert oct(rig.scratch_dir.stat().st_mode & 0o7777) == "0o1777"
    uuid = _blkid(data, "UUID")
    assert rig.fstab.read_text() == f"UUID={uuid} {rig.data_dir} ext4 defaults,noatime,nofail 0 2\n"

    # Every boot: a re-run with both mounted changes nothing; after a reboot (unmounted) the same
    # filesystems come back with their files, nothing reformatted, fstab not duplicated.
    _marker(rig.scratch_dir)
    _marker(rig.data_dir)
    assert rig.run(scratch=1, data=True).returncode == 0
    subprocess.run(["umount", str(rig.scratch_dir)], check=True)
    subprocess.run(["umount", str(rig.data_dir)], check=True)
    again = rig.run(scratch=1, data=True)
    assert again.returncode == 0, again.stderr
    assert (rig.scratch_dir / "marker").read_text() == "keep me"
    assert (rig.data_dir / "marker").read_text() == "keep me"
    assert _blkid(data, "UUID") == uuid and rig.fstab.read_text().count("UUID=") == 1


def test_a_data_disk_with_a_filesystem_is_never_reformatted(rig: Rig) -> None:
    data = rig.attach(rig.image("dataset"), "data-vol1")
    _run("mkfs.ext4", "-q", "-F", "-L", "dataset", data)
    uuid = _blkid(data, "UUID")
    seed = rig.root / "seed"
    seed.mkdir()
    subprocess.run(["mount", data, str(seed)], check=True)
    _marker(seed)
    subprocess.run(["umount", str(seed)], check=True)

    done = rig.run(scratch=0, data=True)
    assert done.returncode == 0, done.stderr
    assert _mounted_at(rig.data_dir) == data
    assert _blkid(data, "UUID") == uuid and _blkid(data, "LABEL") == "dataset"
    assert (rig.data_dir / "marker").read_text() == "keep me"


def _counted_sleeps(rig: Rig) -> tuple[dict[str, str], Path]:
    """PATH with a ``sleep`` that logs each call first: the script's polls as events a test can
    wait on and count, instead of timing them."""
    bin_dir, polls = rig.root / "bin", rig.root / "polls"
    bin_dir.mkdir(exist_ok=True)
    stand_in = bin_dir / "sleep"
    stand_in.write_text(f'#!/bin/sh\necho "$1" >> {polls}\nexec {shutil.which("sleep")} "$@"\n')
    stand_in.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}, polls


def test_a_late_data_disk_is_waited_for_then_mounted(rig: Rig) -> None:
    """AWS on-demand nodes: the EBS volume is attached after the instance runs."""
    image = rig.image("late")
    rig.by_id.mkdir()
    path, polls = _counted_sleeps(rig)
    proc = subprocess.Popen(
        ["bash", str(rig.script(scratch=0, data=True))],
        env=rig.env(FULLSERVER_DATA_WAIT="60", **path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    attached: list[str] = []

    def attach_once_it_waits() -> None:
        deadline = time.monotonic() + 60  # a hang guard; the event is the script's first poll
        while not polls.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        attached.append(rig.attach(image, "data-late"))

    late = threading.Thread(target=attach_once_it_waits)
    late.start()
    try:
        _, err = proc.communicate(timeout=90)
    finally:
        late.join()
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert polls.exists()  # it looked, found no disk, and waited instead of giving up
    assert attached and _mounted_at(rig.data_dir) == attached[0]
    assert _blkid(attached[0], "TYPE") == "ext4"


def test_a_missing_data_disk_ends_the_wait_without_failing_the_boot(rig: Rig) -> None:
    path, polls = _counted_sleeps(rig)
    done = rig.run(scratch=0, data=True, FULLSERVER_DATA_WAIT="4", **path)
    assert done.returncode == 0, done.stderr
    assert polls.read_text().split() == ["2", "2"]  # polled every 2 s until its 4 s were spent, no longer
    assert "data disk not attached after 4s" in done.stderr
    assert not _mounted_at(rig.data_dir)


def test_a_partitioned_disk_without_a_filesystem_is_left_alone(rig: Rig) -> None:
    image = rig.image("partitioned")
    with image.open("r+b") as f:  # an MBR with one Linux partition, no filesystem anywhere
        f.seek(446)
        f.write(struct.pack("<B3sB3sII", 0, b"\0\0\0", 0x83, b"\0\0\0", 2048, 16384))
        f.seek(510)
        f.write(b"\x55\xaa")
    data = rig.attach(image, "data-vol1")
    before = image.read_bytes()[: 1024 * 1024]
    done = rig.run(scratch=0, data=True)
    assert done.returncode == 0, done.stderr
    assert "has a partition table and no filesystem; leaving it alone" in done.stderr
    assert _blkid(data, "PTTYPE") == "dos" and _blkid(data, "TYPE") == ""
    assert image.read_bytes()[: 1024 * 1024] == before
    assert not _mounted_at(rig.data_dir)


def test_a_device_in_use_is_skipped_for_the_next_one(rig: Rig) -> None:
    """A disk mounted elsewhere (the root volume matches AWS's EBS glob too) is never taken."""
    busy = rig.attach(rig.image("root"), "data-a-root")
    _run("mkfs.ext4", "-q", "-F", busy)
    elsewhere = rig.root / "elsewhere"
    elsewhere.mkdir()
    subprocess.run(["mount", busy, str(elsewhere)], check=True)
    free = rig.attach(rig.image("data"), "data-b-vol")
    done = rig.run(scratch=0, data=True)
    assert done.returncode == 0, done.stderr
    assert _mounted_at(rig.data_dir) == free
    assert _mounted_at(elsewhere) == busy


def _stand_in_mdadm(rig: Rig, exit_code: int) -> tuple[dict[str, str], Path]:
    """A PATH whose mdadm records its arguments and exits ``exit_code``."""
    bin_dir, calls = rig.root / "bin", rig.root / "mdadm-calls"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "mdadm").write_text(f'#!/bin/bash\necho "$@" >> {calls}\nexit {exit_code}\n')
    (bin_dir / "mdadm").chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}"}, calls


def test_a_scratch_array_that_cannot_be_built_still_leaves_data_mounted(rig: Rig) -> None:
    """/data never waits on /scratch: mdadm failing (no md driver, devices busy) is logged."""
    for name in ("a", "b"):
        rig.attach(rig.image(f"nvme-{name}"), f"local-nvme-{name}")
    data = rig.attach(rig.image("data"), "data-vol")
    path, calls = _stand_in_mdadm(rig, 1)
    done = rig.run(scratch=2, data=True, **path)
    assert done.returncode == 0, done.stderr
    assert "--create" in calls.read_text()
    assert "local NVMe scratch not set up" in done.stderr
    assert _mounted_at(rig.data_dir) == data


def test_an_array_assembled_at_boot_under_another_name_is_used_not_rebuilt(rig: Rig) -> None:
    """Ubuntu assembles an array missing from mdadm.conf as /dev/md127 at boot: its devices are
    then busy, and assembling or creating over them would fail. The array found through the
    devices' holders is the one to mount."""
    devs = [rig.attach(rig.image(f"nvme-{name}"), f"local-nvme-{name}") for name in ("a", "b")]
    sys_block = rig.root / "sys-block"
    for dev in devs:
        (sys_block / Path(dev).name / "holders" / "md127").mkdir(parents=True)
    path, calls = _stand_in_mdadm(rig, 0)
    done = rig.run(scratch=2, data=False, FULLSERVER_SYS_BLOCK=str(sys_block), **path)
    assert done.returncode == 0, done.stderr
    assert not calls.exists()  # neither --assemble nor --create
    assert "/dev/md127" in done.stderr  # mkfs/mount were pointed at the boot-assembled array
