"""A run killed outright leaves nothing to the next: its objects are swept by name, and only its.

Each test makes the objects a killed run leaves (tests/leftovers.py names them by owner pid),
sweeps, and checks that they are gone while this run's own objects, and anything not named by the
suite, are left alone. Each test owns its world: its directories are in its ``tmp_path`` (the
sweep looks there only), and the "killed" owner is a live child of this run that only the test's
own sweep is told is gone, so no other run's sweep (nor this run's at session start, in another
worker) takes what the test planted, however loaded the machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import leftovers

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0
    or any(shutil.which(t) is None for t in ("ip", "losetup", "mkfs.ext4", "useradd"))
    or not Path("/dev/loop-control").exists(),
    reason="needs root, iproute2, loop devices and shadow's useradd",
)


def dead_pid() -> int:
    """A pid whose process has exited (what a killed run's pid is by the next run)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


@pytest.fixture
def owner() -> Iterator[int]:
    """A live child of this run, standing for a killed run: its pid names what the test plants."""
    proc = subprocess.Popen(["sleep", "600"])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def sweep_as_if_killed(owner: int, base: Path) -> list[str]:
    """The sweep, told that ``owner`` is no longer running (every other run sees it running)."""
    return leftovers.sweep(base=base, running=lambda pid: pid != owner and leftovers.running_tests(pid))


def run(*cmd: str) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()


def namespaces() -> list[str]:
    return [line.split()[0] for line in run("ip", "netns", "list").splitlines()]


def links() -> list[str]:
    return [line.split(":")[1].strip().split("@")[0] for line in run("ip", "-o", "link", "show").splitlines()]


def loops_backed_in(directory: Path) -> list[str]:
    rows = run("losetup", "--list", "--noheadings", "--raw", "--output", "NAME,BACK-FILE").splitlines()
    return [row.split()[0] for row in rows if str(directory) in row]


def mounted_under(directory: Path) -> list[str]:
    return [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines() if str(directory) in line]


def users() -> list[str]:
    return [entry.split(":")[0] for entry in Path("/etc/passwd").read_text().splitlines()]


class Leftovers:
    """What a killed test run leaves, made for ``owner``."""

    def __init__(self, owner: int, base: Path) -> None:
        self.owner = owner
        self.dir = Path(tempfile.mkdtemp(prefix=f"fullserver-testbed-{owner}-", dir=base))
        self.ns = f"fst{owner}-host"
        self.bridge = f"fsb{owner}"
        self.veth = f"fst{owner}v0a"
        self.user = f"fst{owner}ops"
        self.loop = ""
        self.server: subprocess.Popen[bytes] | None = None

    def make(self) -> Leftovers:
        image = self.dir / "disks" / "scratch.img"
        image.parent.mkdir()
        with image.open("wb") as f:
            f.truncate(32 << 20)
        self.loop = run("losetup", "--find", "--show", str(image))
        run("mkfs.ext4", "-q", self.loop)
        (self.dir / "scratch").mkdir()
        run("mount", self.loop, str(self.dir / "scratch"))
        run("ip", "netns", "add", self.ns)
        run("ip", "link", "add", self.bridge, "type", "bridge")
        run("ip", "link", "add", self.veth, "type", "veth", "peer", "name", f"fst{self.owner}v0b")
        run("ip", "link", "set", f"fst{self.owner}v0b", "netns", self.ns)
        run("useradd", "-M", "-d", str(self.dir / "home"), "-s", "/bin/sh", self.user)
        Path(f"/etc/sudoers.d/{self.user}").write_text(f"{self.user} ALL=(ALL) NOPASSWD: ALL\n")
        # A server started with a path in the run's directory, as sshd -f and tmux -S are.
        self.server = subprocess.Popen(
            ["bash", "-c", "while :; do sleep 1; done", str(self.dir / "sshd_config")], start_new_session=True
        )
        return self

    def present(self) -> dict[str, bool]:
        return {
            "dir": self.dir.exists(),
            "mount": bool(mounted_under(self.dir)),
            "loop": bool(loops_backed_in(self.dir)),
            "netns": self.ns in namespaces(),
            "bridge": self.bridge in links(),
            "veth": self.veth in links(),
            "user": self.user in users(),
            "sudoers": Path(f"/etc/sudoers.d/{self.user}").exists(),
            "server": self.server is not None and self.server.poll() is None,
        }

    def remove(self) -> None:
        """Undo by hand what a failing sweep left (never needed when the tests pass)."""
        if self.server is not None and self.server.poll() is None:
            self.server.kill()
        if self.server is not None:
            self.server.wait()
        for point in mounted_under(self.dir):
            subprocess.run(["umount", "-l", point], capture_output=True)
        for dev in loops_backed_in(self.dir):
            subprocess.run(["losetup", "-d", dev], capture_output=True)
        subprocess.run(["ip", "netns", "delete", self.ns], capture_output=True)
        for link in filter(None, (self.bridge, self.veth)):
            subprocess.run(["ip", "link", "delete", link], capture_output=True)
        subprocess.run(["userdel", "-f", self.user], capture_output=True)
        Path(f"/etc/sudoers.d/{self.user}").unlink(missing_ok=True)
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def killed_run(owner: int, tmp_path: Path) -> Iterator[Leftovers]:
    made = Leftovers(owner, tmp_path)
    try:
        yield made.make()
    finally:
        made.remove()


@pytest.fixture
def this_run(tmp_path: Path) -> Iterator[Leftovers]:
    made = Leftovers(os.getpid(), tmp_path)
    made.ns, made.user = f"{leftovers.tag()}-keep", f"{leftovers.tag()}keep"
    made.bridge = made.veth = ""  # this run's real bridge may be in use by the test bed: never made here
    try:
        yield made
    finally:
        made.remove()


def test_a_killed_runs_objects_are_all_swept(killed_run: Leftovers, tmp_path: Path) -> None:
    assert all(killed_run.present().values()), killed_run.present()
    removed = sweep_as_if_killed(killed_run.owner, tmp_path)
    assert not any(killed_run.present().values()), killed_run.present()
    assert f"netns {killed_run.ns}" in removed and f"user {killed_run.user}" in removed


def test_a_running_test_process_keeps_its_objects(this_run: Leftovers, tmp_path: Path) -> None:
    """The sweep at a session's start never touches a live run's test bed (two runs on one
    machine, or this run's own objects)."""
    this_run.dir.mkdir(exist_ok=True)
    run("ip", "netns", "add", this_run.ns)
    removed = leftovers.sweep(base=tmp_path)
    assert this_run.dir.exists() and this_run.ns in namespaces()
    assert not any(str(os.getpid()) in item for item in removed)


def test_a_worker_of_a_running_test_process_keeps_its_objects(owner: int, tmp_path: Path) -> None:
    """A pytest-xdist worker's command line does not say pytest; its ancestry does."""
    made = Leftovers(owner, tmp_path)  # a child of this run, named like a worker's
    made.bridge = made.veth = ""
    try:
        made.dir.mkdir(exist_ok=True)
        run("ip", "netns", "add", made.ns)
        removed = leftovers.sweep(base=tmp_path)
        assert made.dir.exists() and made.ns in namespaces()
        assert not any(str(owner) in item for item in removed)
    finally:
        made.remove()


def test_names_outside_the_suites_patterns_are_never_touched(tmp_path: Path) -> None:
    ns = f"fullserver-other-{dead_pid()}"  # not fst<pid>: not the suite's
    outside = Path(tempfile.mkdtemp(prefix="fullserver-keep-", dir=tmp_path))  # no owner pid in its name
    run("ip", "netns", "add", ns)
    try:
        removed = leftovers.sweep(base=tmp_path)
        assert ns in namespaces() and outside.exists()
        assert not any(ns in item or str(outside) in item for item in removed)
    finally:
        subprocess.run(["ip", "netns", "delete", ns], capture_output=True)
        shutil.rmtree(outside, ignore_errors=True)
