"""The whole suite: it starts by sweeping what killed runs left, and never leaves anything itself.

A run killed outright (SIGKILL, a CI time limit) leaves its loop devices, mounts, namespaces and
servers behind; the next run removes them before its first test (tests/leftovers.py). SIGTERM
is turned into the interrupt pytest already handles (Ctrl-C), so fixtures tear down as usual;
whatever a torn-down fixture still missed is swept at the session's end.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType

import pytest

from tests import leftovers


def _interrupt(signum: int, frame: FrameType | None) -> None:
    # Once: a second signal while fixtures tear down must not cut the teardown short.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests that start real sshd hosts, namespaces and loop devices run on one worker, one
    after another (pytest-xdist's ``loadgroup``): their time limits are set for a machine that
    is not also measuring another test bed's fio and iperf3 at the same moment. Everything else
    shares the other workers."""
    for item in items:
        if item.nodeid.startswith("tests/baremetal/") or item.get_closest_marker("sshd"):
            item.add_marker(pytest.mark.xdist_group("sshd"))


def pytest_sessionstart(session: pytest.Session) -> None:
    removed = leftovers.sweep()
    if removed:
        print(f"removed {len(removed)} leftovers of earlier test runs: {', '.join(removed[:6])}", file=sys.stderr)
    signal.signal(signal.SIGTERM, _interrupt)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    leftovers.sweep(mine=True)
