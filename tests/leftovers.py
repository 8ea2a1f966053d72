"""What the suite makes outside pytest's own temporary files, named so that any later run finds it.

The bare-metal test bed and the boot-disk tests make system objects that outlive a killed
process: loop devices, ext4 mounts, network namespaces, veth pairs and a bridge, local users with
sudoers rules, sshd and tmux servers. A run killed by a time limit (SIGKILL gives no chance to
clean up) used to hand all of them to the next run on that machine. So every such object carries
its owner's pid in its name:

* temporary directories: ``<tmp>/fullserver-<kind>-<pid>-<random>`` (``temp_dir``); loop devices
  are backed by files inside them, mounts sit inside them, servers are started with paths inside
  them;
* network names and users: ``fst<pid>...`` (namespaces, veth ends, users) and ``fsb<pid>``
  (the bridge), from ``tag``.

``sweep`` removes the objects of owners that are no longer running (every session start), or of
this process too (session end and SIGTERM). It never touches a name outside these patterns, and
never one whose owner is a running test process, so two runs on one machine leave each other be.
Its own tests pass a temp root and a liveness rule of their own (``base``, ``running``), so that
what they plant belongs to a live owner in every other run's eyes.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

_DIR = re.compile(r"^fullserver-[a-z]+-(\d+)-")
_NAME = re.compile(r"^fs[tb](\d+)")


def tag(pid: int | None = None) -> str:
    """The prefix of this run's namespaces, veth ends and users (the bridge uses ``fsb``)."""
    return f"fst{os.getpid() if pid is None else pid}"


def temp_dir(kind: str) -> Path:
    """A new temporary directory that ``sweep`` can tell belongs to this process."""
    return Path(tempfile.mkdtemp(prefix=f"fullserver-{kind}-{os.getpid()}-"))


def running_tests(pid: int) -> bool:
    """Whether ``pid`` is a live test process (a reused pid of another program does not count).

    A pytest-xdist worker's command line is execnet's bootstrap, not pytest's: a process with a
    live pytest among its ancestors counts too, so two workers of one run leave each other be.
    """
    while pid > 1:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        if b"pytest" in cmdline or b"bench/" in cmdline:
            return True
        pid = int(stat.rpartition(")")[2].split()[1])  # the parent: the field after the state
    return False


Running = Callable[[int], bool]


def _owned(owner: str | None, mine: bool, running: Running) -> bool:
    """Whether an object whose name carries ``owner`` is to be removed now."""
    if owner is None:
        return False
    pid = int(owner)
    if pid == os.getpid():
        return mine
    return not running(pid)


def _dirs(base: Path, mine: bool, running: Running) -> list[Path]:
    found = []
    for entry in base.iterdir() if base.is_dir() else ():
        match = _DIR.match(entry.name)
        if match and _owned(match.group(1), mine, running):
            found.append(entry)
    return found


def _lines(*cmd: str) -> list[str]:
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return done.stdout.splitlines() if done.returncode == 0 else []


def _quiet(*cmd: str) -> None:
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        subprocess.run(cmd, capture_output=True, timeout=30)


def _processes_using(dirs: list[Path], namespaces: list[str]) -> Iterator[int]:
    """Processes started with a path in ``dirs`` (sshd -f, tmux -S) or living in ``namespaces``."""
    marks = [str(d).encode() for d in dirs]
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if any(mark in cmdline for mark in marks):
            yield int(proc.name)
    for ns in namespaces:
        yield from (int(p) for p in _lines("ip", "netns", "pids", ns) if p.isdigit())


def _mounts_under(dirs: list[Path]) -> list[str]:
    """Mount points in or under ``dirs``, deepest first (mountinfo escapes spaces as \\040)."""
    points = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
            if any(point == str(d) or point.startswith(f"{d}/") for d in dirs):
                points.append(point)
    return sorted(points, key=len, reverse=True)


def _loops_under(dirs: list[Path]) -> list[str]:
    """Loop devices backed by a file in ``dirs`` (also once that file is deleted)."""
    devices = []
    for line in _lines("losetup", "--list", "--noheadings", "--raw", "--output", "NAME,BACK-FILE"):
        name, _, back = line.partition(" ")
        back = re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)), back)
        if any(back.startswith(f"{d}/") for d in dirs):
            devices.append(name)
    return devices


def sweep(*, mine: bool = False, base: Path | None = None, running: Running = running_tests) -> list[str]:
    """Remove what test runs that are no longer running left behind (and this run's, when
    ``mine``); returns what was removed, one ``kind name`` each. Directories are looked for in
    ``base`` (the system temp dir, where ``temp_dir`` makes them); an owner is gone when not
    ``running``. Needs root; a no-op without."""
    if os.geteuid() != 0:
        return []
    removed: list[str] = []
    dirs = _dirs(base or Path(tempfile.gettempdir()), mine, running)
    namespaces = [ns.split()[0] for ns in _lines("ip", "netns", "list") if _owned(_match(_NAME, ns), mine, running)]
    for pid in sorted(set(_processes_using(dirs, namespaces))):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
            removed.append(f"process {pid}")
    for point in _mounts_under(dirs):
        _quiet("umount", "-l", point)
        removed.append(f"mount {point}")
    for device in _loops_under(dirs):
        _quiet("losetup", "-d", device)
        removed.append(f"loop {device}")
    for ns in namespaces:  # deleting a namespace deletes the veth ends inside it
        _quiet("ip", "netns", "delete", ns)
        removed.append(f"netns {ns}")
    for line in _lines("ip", "-o", "link", "show"):
        link = line.split(":")[1].strip().split("@")[0] if line.count(":") >= 2 else ""
        if _owned(_match(_NAME, link), mine, running):
            _quiet("ip", "link", "delete", link)
            removed.append(f"link {link}")
    with contextlib.suppress(OSError):
        for entry in Path("/etc/passwd").read_text().splitlines():
            user = entry.split(":")[0]
            if _owned(_match(_NAME, user), mine, running):
                _quiet("userdel", "-f", user)
                Path(f"/etc/sudoers.d/{user}").unlink(missing_ok=True)
                removed.append(f"user {user}")
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
        removed.append(f"dir {d}")
    return removed


def _match(pattern: re.Pattern[str], name: str) -> str | None:
    found = pattern.match(name)
    return found.group(1) if found else None
