"""Fixtures: a test bed of real OpenSSH servers on loopback (see tests/baremetal/testbed.py).

A test that needs sshd FAILS (never skips) when OpenSSH's server is missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fullserver.baremetal.config import HostLayout
from fullserver.baremetal.operations import NETWORK_SYSCTLS
from tests.baremetal.testbed import SshdHost, Testbed


@pytest.fixture(scope="session")
def bed() -> Iterator[Testbed]:
    try:
        tb = Testbed()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield tb
    finally:
        tb.close()


@pytest.fixture(scope="session")
def ops(bed: Testbed) -> str:
    """A login user with NOPASSWD sudo (the usual automation user)."""
    return bed.add_user("ops", sudo=True)


@pytest.fixture(scope="session")
def nosudo(bed: Testbed) -> str:
    """A login user without any sudo rule."""
    return bed.add_user("nos", sudo=False)


_count = 0


@pytest.fixture
def host(bed: Testbed, ops: str, nosudo: str) -> Iterator[SshdHost]:
    """A fresh sshd host (own host key, own user key, own root); stopped after the test."""
    global _count
    _count += 1
    h = bed.add_host(f"host{_count:02d}")
    try:
        yield h
    finally:
        h.resume()
        h.stop()


def private_proc_sys(h: SshdHost) -> HostLayout:
    """The host's root, with a private copy of the kernel knobs the steps touch (the test
    machine's real /proc/sys is shared by every test host, so it is never written)."""
    for key in [*NETWORK_SYSCTLS, "vm.nr_hugepages"]:
        rel = key.replace(".", "/")
        p = h.root / "proc" / "sys" / rel
        if not p.exists():
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(Path("/proc/sys", rel).read_text())
    return HostLayout(root=str(h.root), sysctl_dir=str(h.root / "proc" / "sys"))
