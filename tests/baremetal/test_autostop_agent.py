"""The idle agent (``components/autostop_agent.py``) on the test bed's real sshd hosts, with a
stand-in ``nvidia-smi`` and a stand-in stop command that records each call, on a short clock
(seconds for minutes). It is started as its systemd unit starts it (a process of its own, the
host's ``bin/`` first on its PATH), and counts the SSH sessions of its own host's sshd
(``session_scope_pid``; on a node, the whole machine): real connections, opened by the tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from components import autostop_agent
from components.autostop import agent_config
from tests.baremetal.testbed import SshdHost

AGENT = Path(__file__).resolve().parents[2] / "components" / "autostop_agent.py"
IDLE_SECONDS = 3
SAMPLE = 0.3

NVIDIA_SMI = """#!/bin/sh
# stand-in: `--query-gpu=utilization.gpu,memory.used --format=csv,noheader,nounits`, one row per GPU
[ "$1" = --query-gpu=utilization.gpu,memory.used ] || exit 2
cat "$(dirname "$0")/../gpu-util"
"""
STOP = """#!/bin/sh
# stand-in stop command: records the call (the time it was made)
date +%s.%N >> "$(dirname "$0")/../stops.log"
"""


class Agent:
    """One host running the agent, as its unit would."""

    def __init__(self, host: SshdHost, idle_seconds: int = IDLE_SECONDS) -> None:
        self.host = host
        self.dir = host.dir
        self.procs: list[subprocess.Popen[bytes]] = []
        host.stand_in("nvidia-smi", NVIDIA_SMI)
        host.stand_in("fullserver-stop", STOP)
        self.gpus("0, 0\n0, 0\n")
        cfg = agent_config(
            1,
            sample_seconds=SAMPLE,
            idle_seconds=idle_seconds,
            stop=[str(host.bin / "fullserver-stop")],
            keep_marker=str(self.dir / "keep"),
            state=str(self.dir / "state" / "autostop.json"),
            session_scope_pid=host.proc.pid if host.proc else 1,
        )
        (self.dir / "autostop.json").write_text(json.dumps(cfg))

    def gpus(self, rows: str) -> None:
        (self.dir / "gpu-util").write_text(rows)

    def start(self) -> None:
        """A process of its own, as ``ExecStart=/usr/bin/python3 AGENT CONFIG`` runs it."""
        env = {**os.environ, "PATH": f"{self.host.bin}:{os.environ['PATH']}"}
        with open(self.dir / "agent.log", "ab") as log:
            proc = subprocess.Popen(
                ["/usr/bin/python3", str(AGENT), str(self.dir / "autostop.json")],
                stdout=log,
                stderr=log,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd="/",
                start_new_session=True,
            )
        self.procs.append(proc)

    def kill(self) -> None:
        """As a crash would: SIGKILL, no chance to write anything."""
        self.procs[-1].kill()
        self.procs[-1].wait(timeout=10)

    def stops(self) -> list[float]:
        path = self.dir / "stops.log"
        return [float(t) for t in path.read_text().split()] if path.exists() else []

    def log(self) -> str:
        path = self.dir / "agent.log"
        return path.read_text() if path.exists() else ""

    def wait_for_stop(self, within: float) -> float:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if self.stops():
                return self.stops()[0]
            time.sleep(0.1)
        raise AssertionError(f"no stop within {within} s; agent log:\n{self.log()}")

    def close(self) -> None:
        for proc in self.procs:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture
def agent(host: SshdHost) -> Iterator[Agent]:
    a = Agent(host)
    try:
        yield a
    finally:
        a.close()


def test_an_idle_node_is_stopped_once_after_the_idle_period_and_the_journal_says_why(agent: Agent) -> None:
    started = time.time()
    agent.start()
    stopped = agent.wait_for_stop(within=IDLE_SECONDS + 10)
    assert stopped - started >= IDLE_SECONDS
    time.sleep(1.0)
    assert len(agent.stops()) == 1  # the next stop would need another whole idle period
    log = agent.log()
    assert "fullserver-autostop: idle (no accelerator use, no session, no keep marker)" in log
    assert f"stopping the environment with {agent.dir / 'bin' / 'fullserver-stop'}" in log


def test_a_busy_gpu_holds_the_node_up_and_the_count_starts_when_it_goes_quiet(agent: Agent) -> None:
    agent.gpus("0, 1200\n87, 30000\n")
    agent.start()
    time.sleep(IDLE_SECONDS + 3)
    assert agent.stops() == []
    quiet = time.time()
    agent.gpus("0, 1200\n2, 30000\n")
    stopped = agent.wait_for_stop(within=IDLE_SECONDS + 10)
    assert stopped - quiet >= IDLE_SECONDS


def test_an_unreadable_gpu_counts_as_busy(agent: Agent) -> None:
    agent.gpus("[N/A], [N/A]\n")
    agent.start()
    time.sleep(IDLE_SECONDS + 3)
    assert agent.stops() == []
    assert "idle (" not in agent.log()


def test_an_open_ssh_session_holds_the_node_up(agent: Agent, host: SshdHost) -> None:
    holding = host.hold_session(7)
    try:
        time.sleep(0.5)
        agent.start()
        time.sleep(IDLE_SECONDS + 2.5)
        assert agent.stops() == []
        holding.join()
        ended = time.time()
        stopped = agent.wait_for_stop(within=IDLE_SECONDS + 10)
        assert stopped - ended >= IDLE_SECONDS - 0.5
    finally:
        holding.join()


def test_the_keep_marker_holds_the_node_up_until_it_is_removed(agent: Agent) -> None:
    marker = agent.dir / "keep"
    marker.touch()
    agent.start()
    time.sleep(IDLE_SECONDS + 3)
    assert agent.stops() == []
    removed = time.time()
    marker.unlink()
    stopped = agent.wait_for_stop(within=IDLE_SECONDS + 10)
    assert stopped - removed >= IDLE_SECONDS


def test_a_restarted_agent_keeps_counting_from_where_it_was(host: SshdHost) -> None:
    agent = Agent(host, idle_seconds=6)
    try:
        agent.start()
        deadline = time.monotonic() + 10
        state = agent.dir / "state" / "autostop.json"
        while time.monotonic() < deadline and not (state.exists() and json.loads(state.read_text())["idle_since"]):
            time.sleep(0.1)
        idle_since = json.loads(state.read_text())["idle_since"]
        time.sleep(2.5)
        agent.kill()
        restarted = time.time()
        agent.start()
        stopped = agent.wait_for_stop(within=15)
        # counted from the first idle sample, not from the restart
        assert stopped - idle_since >= 6
        assert stopped < restarted + 6
        assert "kept across a restart of the agent" in agent.log()
    finally:
        agent.close()


HOLD = """import sys, time
f = open(sys.argv[1], "rb")
print("open", flush=True)
time.sleep(60)
"""


class Holder:
    """A child process holding ``path`` open, as a TPU workload holds its chips' device files."""

    def __init__(self, path: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline() == b"open\n"

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)


@pytest.mark.parametrize("device", ["dev/accel0", "dev/vfio/0"], ids=["v4-and-earlier", "v5e-and-later"])
def test_a_tpu_device_file_held_open_is_busy_and_closed_is_idle(tmp_path: Path, device: str) -> None:
    """Up to v4 a TPU chip is ``/dev/accel<n>``, from v5e ``/dev/vfio/<n>``: the agent finds them
    under its device root ("/" on a node) and the process holding one in ``/proc/<pid>/fd``."""
    chip = tmp_path / device
    chip.parent.mkdir(parents=True)
    chip.touch()
    cfg = agent_config(30, device_root=str(tmp_path))
    assert autostop_agent.tpu_busy(cfg) is None
    holder = Holder(chip)
    try:
        assert autostop_agent.tpu_busy(cfg) == f"TPU device held by pid {holder.proc.pid}"
    finally:
        holder.close()
    assert autostop_agent.tpu_busy(cfg) is None


def test_a_tpu_device_is_found_through_its_symlink_and_vfios_control_file_is_not_a_chip(tmp_path: Path) -> None:
    """``/dev/vfio/vfio`` is VFIO's container, opened by anything using VFIO: only numbered groups
    are chips. A device reached through a symlink is the file it points to."""
    (tmp_path / "dev" / "vfio").mkdir(parents=True)
    control = tmp_path / "dev" / "vfio" / "vfio"
    control.touch()
    real = tmp_path / "devices" / "accel-real"
    real.parent.mkdir()
    real.touch()
    (tmp_path / "dev" / "accel1").symlink_to(real)
    cfg = agent_config(30, device_root=str(tmp_path))
    holder = Holder(control)
    try:
        assert autostop_agent.tpu_busy(cfg) is None
    finally:
        holder.close()
    holder = Holder(real)
    try:
        assert autostop_agent.tpu_busy(cfg) == f"TPU device held by pid {holder.proc.pid}"
    finally:
        holder.close()


def test_without_a_device_root_the_agent_looks_under_the_real_root(tmp_path: Path) -> None:
    """The node's configuration names no root: a device-like file elsewhere is nobody's chip."""
    chip = tmp_path / "dev" / "accel0"
    chip.parent.mkdir()
    chip.touch()
    holder = Holder(chip)
    try:
        assert autostop_agent.tpu_busy(agent_config(30)) is None
        assert autostop_agent.tpu_busy(agent_config(30, device_root=str(tmp_path))) is not None
    finally:
        holder.close()
