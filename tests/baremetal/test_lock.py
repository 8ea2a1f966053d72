"""The host-side journal lock (issue 11): two runs on one host never drop each other's undo records."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from fullserver.baremetal.config import HostLayout
from fullserver.baremetal.engine import Outcome, converge, revert
from fullserver.baremetal.errors import JournalLocked, StepFailed
from fullserver.baremetal.journal import Journal, read_journal, write_journal
from fullserver.baremetal.lock import LOCK_STALE_AFTER, JournalLock, lock_journal, unlock_journal
from fullserver.baremetal.operations import GpuPersistenceStep, SysctlStep
from fullserver.baremetal.ssh import connect, load_private_key, session
from tests.baremetal.conftest import private_proc_sys
from tests.baremetal.testbed import H100_SXM, SshdHost

KNOB = {"net.core.rmem_max": "268435456"}


def _journal(host: SshdHost) -> dict[str, object]:
    data = json.loads((host.root / "var/lib/fullserver/journal.json").read_text())
    assert isinstance(data, dict)
    return data


def _lock_file(layout: HostLayout) -> Path:
    return Path(layout.journal_lock)


def test_two_converges_at_once_keep_both_undo_records(host: SshdHost, ops: str) -> None:
    """Two stacks configure one host at the same time, each its own step (real sshd, two connections).

    The first is inside a slow step (``nvidia-smi -pm 1`` takes 3 s) when the second starts.
    Without a lock the second reads the journal holding the first's intent record, journals its
    own step, and the first's final write (from its older copy) drops it: the host could no
    longer be restored. With the lock, the second waits and reads the first's finished journal."""
    host.set_gpus([H100_SXM])
    layout = private_proc_sys(host)
    (host.dir / "gpu-pm-delay").write_text("3")
    started = host.dir / "gpu-pm-started"
    outcomes: dict[str, Outcome | BaseException] = {}

    def run(name: str, step: GpuPersistenceStep | SysctlStep) -> None:
        try:
            with session(host.target(user=ops), host.user_key) as s:
                outcomes[name] = converge(s, layout, [step])
        except BaseException as exc:
            outcomes[name] = exc

    first = threading.Thread(target=run, args=("gpu", GpuPersistenceStep()))
    first.start()
    for _ in range(200):  # the first run is inside its step's apply
        if started.exists():
            break
        time.sleep(0.05)
    assert started.exists()
    second = threading.Thread(target=run, args=("sysctl", SysctlStep(KNOB)))
    second.start()
    first.join(60)
    second.join(60)
    assert isinstance(outcomes["gpu"], Outcome) and isinstance(outcomes["sysctl"], Outcome), outcomes
    assert outcomes["gpu"].changed == ["gpu-persistence"] and outcomes["sysctl"].changed == ["sysctl"]
    steps = _journal(host)["steps"]
    assert isinstance(steps, dict) and sorted(steps) == ["gpu-persistence", "sysctl"], steps
    assert all(e["status"] == "applied" for e in steps.values())
    original = Path("/proc/sys/net/core/rmem_max").read_text().strip()
    assert steps["sysctl"]["undo"]["previous"] == {"net.core.rmem_max": original}
    assert steps["gpu-persistence"]["undo"] == {"was_enabled": False}
    assert not _lock_file(layout).exists()  # both released
    # ...so one revert restores everything, whichever run made it
    (host.dir / "gpu-pm-delay").unlink()
    with session(host.target(user=ops), host.user_key) as s:
        assert sorted(revert(s, layout, [GpuPersistenceStep(), SysctlStep(KNOB)]).undone) == [
            "gpu-persistence",
            "sysctl",
        ]
    assert (host.root / "proc/sys/net/core/rmem_max").read_text().strip() == original
    assert (host.dir / "gpu-persistence").read_text().strip() == "Disabled"


def test_a_held_lock_names_its_owner_after_a_bounded_wait(host: SshdHost) -> None:
    layout = private_proc_sys(host)
    with session(host.target(), host.user_key) as holder:
        lock = lock_journal(holder, layout, purpose="pulumi up of stack a")
        assert "(pulumi up of stack a, since " in lock.owner and f"pid {os.getpid()}" in lock.owner
        with session(host.target(), host.user_key) as other:
            start = time.monotonic()
            with pytest.raises(JournalLocked) as exc:
                converge(other, layout, [SysctlStep(KNOB)], lock_wait=1)
            elapsed = time.monotonic() - start
            line = exc.value.line()
            assert line.startswith(f"{host.name}: the journal is locked by {lock.owner}, for ")
            # the 1 s wait, plus round trips on a loaded machine
            assert "\n" not in line and elapsed < 1 + 15, (line, elapsed)
            assert other.writes == 0 and read_journal(other, layout).steps == {}  # nothing was done
            unlock_journal(holder, layout, lock)
            assert converge(other, layout, [SysctlStep(KNOB)]).changed == ["sysctl"]  # free again
            revert(other, layout, [SysctlStep(KNOB)])


def test_the_lock_of_a_run_whose_connection_ended_is_broken(host: SshdHost) -> None:
    """A run that died (its process killed, its connection cut) leaves a lock naming an sshd
    session that no longer exists: the next run breaks it at once and says so."""
    layout = private_proc_sys(host)
    holder = connect(host.target(), load_private_key(host.user_key, host.name))
    dead = lock_journal(holder, layout, purpose="a run that crashes")
    holder.close()  # no unlock: as if the process had been killed
    with session(host.target(), host.user_key) as s:
        start = time.monotonic()
        out = converge(s, layout, [SysctlStep(KNOB)], lock_wait=30)
        assert time.monotonic() - start < 25  # not the whole wait: broken as soon as the session is gone
        assert out.changed == ["sysctl"] and out.notes == [f"broke a stale journal lock held by {dead.owner}"]
        assert not _lock_file(layout).exists()
        revert(s, layout, [SysctlStep(KNOB)])


def _stat_start(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


def test_a_live_owner_without_heartbeat_is_broken_only_after_the_bound(host: SshdHost) -> None:
    """The owner's session lives (here: this test's own process stands in for it), so the lock
    holds; once it has had no heartbeat for LOCK_STALE_AFTER, it is broken."""
    layout = private_proc_sys(host)
    lock = _lock_file(layout)
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text(f"sometoken\n{os.getpid()} {_stat_start(os.getpid())}\nops@elsewhere pid 4242 (converge)\n")
    with session(host.target(), host.user_key) as s:
        with pytest.raises(JournalLocked, match="locked by ops@elsewhere pid 4242 \\(converge\\)"):
            converge(s, layout, [SysctlStep(KNOB)], lock_wait=0)
        old = time.time() - LOCK_STALE_AFTER - 60
        os.utime(lock, (old, old))
        out = converge(s, layout, [SysctlStep(KNOB)], lock_wait=0)
        assert out.notes == ["broke a stale journal lock held by ops@elsewhere pid 4242 (converge)"]
        revert(s, layout, [SysctlStep(KNOB)])
    # a recycled pid is not the owner: the start time must match too
    lock.write_text(f"sometoken\n{os.getpid()} 1\nops@elsewhere pid 4242 (converge)\n")
    with session(host.target(), host.user_key) as s:
        assert converge(s, layout, [SysctlStep(KNOB)], lock_wait=0).notes[0].startswith("broke a stale")
        revert(s, layout, [SysctlStep(KNOB)])


def test_a_run_whose_lock_was_broken_stops_before_writing(host: SshdHost) -> None:
    layout = private_proc_sys(host)
    with session(host.target(), host.user_key) as s:
        mine = lock_journal(s, layout)
        stolen = JournalLock("not-the-token", mine.owner)
        with pytest.raises(StepFailed, match="journal lock was broken by another run"):
            one = {"version": 1, "steps": {"x": {"desired": {}, "undo": {}, "status": "applied", "at": 0}}}
            write_journal(s, layout, Journal.model_validate(one), stolen)
        assert not Path(layout.journal).exists()
        unlock_journal(s, layout, stolen)  # not ours: left alone
        assert _lock_file(layout).exists()
        unlock_journal(s, layout, mine)
        assert not _lock_file(layout).exists()
