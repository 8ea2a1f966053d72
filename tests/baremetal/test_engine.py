"""The engine against a scripted host (no sshd): the plan shows the exact commands, converge runs
them in rounds decided from fresh facts, journals intent before and the record after, verifies.
The live tests (test_live.py, test_lock.py) prove the same on real sshd hosts."""

from __future__ import annotations

import pytest

from fullserver.baremetal.engine import MAX_ROUNDS, converge, plan
from fullserver.baremetal.errors import StepFailed
from fullserver.baremetal.facts import SysctlState
from fullserver.baremetal.journal import Journal
from fullserver.baremetal.operations import (
    Change,
    GpuPersistenceStep,
    HostContext,
    HugepagesStep,
    ScratchStep,
    ServiceUserStep,
    SysctlStep,
)
from fullserver.baremetal.transport import Result
from tests.baremetal.fakehost import FakeHost

KNOB = {"net.core.rmem_max": "268435456"}


def _sysctl(values: dict[str, str], conf: str | None = None) -> Result:
    head = "".join(f"{k}={v}\n" for k, v in values.items())
    return Result(0, head + ("@@conf no\n" if conf is None else f"@@conf yes\n{conf}"), "")


def _scratch(
    devs: list[str], *, target: str | None, blkid: str = "", real: str = "", mounted: str = "", fstab: str = ""
) -> Result:
    """What the scratch fact script prints for blank member disks and the given target."""
    lines = ["md\tyes", "wipefs\tyes"]
    for d in devs:
        lines += [
            f"blkid\t{d}\t2\t",
            f"wipe\t{d}\t0\t",
            f"mnt\t{d}\t0\t",
            f"kids\t{d}\t0\t1",
            f"real\t{d}\t0\t{d}",
            f"mdexam\t{d}\t1\t",
        ]
    if target is not None:
        lines += [f"target\t{target}\t{0 if blkid else 2}\t{blkid}", f"treal\t{target}\t0\t{real}"]
        lines += [f"member\t{target}\t0\t{d}" for d in devs if len(devs) > 1 and real]
    lines += [f"mounted\t{mounted}", f"fstab\t{fstab}", f"mdconf\t{1 if fstab and len(devs) > 1 else 0}"]
    return Result(0, "\n".join(lines) + "\n", "")


def test_plan_shows_the_exact_commands_and_runs_none() -> None:
    sysctl, gpu = SysctlStep(KNOB), GpuPersistenceStep()
    host = FakeHost(
        {
            "check sysctl": [_sysctl({"net.core.rmem_max": "212992"})],
            "check gpu-persistence": [Result(0, "Enabled\n", "")],
        }
    )
    pending = plan(host, host.layout, [sysctl, gpu])
    facts = SysctlState(values={"net.core.rmem_max": "212992"})
    expected = sysctl.decide(facts, HostContext(host.layout, "ops"))
    assert isinstance(expected, Change)
    assert pending["sysctl"].action == "apply" and str(pending["sysctl"]) == "apply: differs: net.core.rmem_max=212992"
    assert pending["sysctl"].commands == tuple(c.text for c in expected.commands)
    assert "printf '%s\\n' 268435456 > /proc/sys/net/core/rmem_max" in pending["sysctl"].commands[0]
    assert pending["gpu-persistence"].action == "journal" and not pending["gpu-persistence"].commands  # in place
    assert host.writes == 0 and host.labels() == ["read journal", "check sysctl", "check gpu-persistence"]


def test_plan_reports_a_refusal_instead_of_failing() -> None:
    user = ServiceUserStep("trainer", ["ssh-ed25519 AAAA x"])
    taken = "uid\t1005\nhome\t/home/trainer\nhomedir\tyes\nsshdir\tyes\n@@keys no\n"
    host = FakeHost({"check user:trainer": [Result(0, taken, "")]})
    p = plan(host, host.layout, [user])["user:trainer"]
    assert str(p) == "apply: authorized keys differ" and p.commands == ()
    assert p.refused is not None and p.refused.startswith("user trainer already exists (uid 1005)")
    assert p.shown() == [f"# refused: {p.refused}"]


def test_plan_shows_undo_commands_of_steps_no_longer_wanted() -> None:
    old = SysctlStep(KNOB)
    journal = Journal()
    journal.record("sysctl", old.desired(), {"previous": {"net.core.rmem_max": "212992"}, "conf": None}, "applied")
    host = FakeHost({"read journal": [Result(0, journal.to_json(), "")]})
    p = plan(host, host.layout, [], undo_unlisted={"sysctl": old})["sysctl"]
    assert str(p) == "undo" and p.commands == (
        "printf '%s\\n' 212992 > /proc/sys/net/core/rmem_max && rm -f /etc/sysctl.d/90-fullserver.conf",
    )
    assert str(plan(host, host.layout, [])["sysctl"]) == "undo"  # without a step to undo it: named only


def test_raid_scratch_converges_in_rounds_from_fresh_facts() -> None:
    """mdadm --create, then mkfs on the new (blank) array, then mount by the UUID mkfs made: the
    RAID path this test machine's kernel (no md) cannot run live."""
    devs = ["/dev/nvme1n1", "/dev/nvme2n1"]
    step = ScratchStep(devs, consent_to_format=True)
    ours = 'UUID="2f6e" TYPE="ext4" LABEL="fs-scratch"'
    line = "UUID=2f6e /mnt/scratch ext4 defaults,noatime,nofail,x-systemd.device-timeout=10s 0 2 # fullserver:scratch"
    rounds = [
        _scratch(devs, target=None),
        _scratch(devs, target=step.array, real="/dev/md127"),
        _scratch(devs, target=step.array, blkid=ours, real="/dev/md127"),
        _scratch(devs, target=step.array, blkid=ours, real="/dev/md127", mounted="/dev/md127", fstab=line),
    ]
    host = FakeHost({"check scratch": rounds})
    out = converge(host, host.layout, [step])
    assert out.changed == ["scratch"] and out.writes == 5
    assert host.labels(writes_only=True) == [
        "write journal",
        "mdadm --create",
        "mkfs.ext4",
        "mount scratch",
        "write journal",
    ]
    mount = next(c for c in host.calls if c.label == "mount scratch")
    assert "'UUID=2f6e /mnt/scratch ext4" in mount.text and "mdadm --detail --brief" in mount.text
    assert [c.timeout for c in host.calls if c.label in ("mdadm --create", "mkfs.ext4")] == [300, 1800]
    entry = out.journal.steps["scratch"]
    assert entry.status == "applied" and entry.undo == {
        "mountpoint": "/mnt/scratch",
        "devices": devs,
        "array": step.array,
    }


def test_a_step_that_never_gets_in_place_stops_after_the_last_round() -> None:
    step = ScratchStep(["/dev/nvme1n1"], consent_to_format=True)
    host = FakeHost({"check scratch": [_scratch(["/dev/nvme1n1"], target="/dev/nvme1n1", real="/dev/nvme1n1")]})
    with pytest.raises(StepFailed, match="still not in place after applying"):
        converge(host, host.layout, [step])
    assert host.labels(writes_only=True) == ["write journal"] + ["mkfs.ext4"] * MAX_ROUNDS


def test_hugepages_short_of_the_count_fail_naming_it() -> None:
    host = FakeHost({"check hugepages": [_sysctl({"vm.nr_hugepages": "0"}), _sysctl({"vm.nr_hugepages": "32"})]})
    with pytest.raises(StepFailed) as exc:
        converge(host, host.layout, [HugepagesStep(64)])
    assert exc.value.line().startswith("h: the kernel reserved 32 of 64 huge pages (memory is fragmented")


def test_nothing_to_change_writes_nothing() -> None:
    step = SysctlStep(KNOB)
    conf = "# managed by fullserver; removed when the environment is deleted\nnet.core.rmem_max = 268435456\n"
    journal = Journal()
    journal.record("sysctl", step.desired(), {"previous": {"net.core.rmem_max": "212992"}, "conf": None}, "applied")
    host = FakeHost({"read journal": [Result(0, journal.to_json(), "")], "check sysctl": [_sysctl(KNOB, conf)]})
    out = converge(host, host.layout, [step])
    assert out.unchanged == ["sysctl"] and out.writes == 0 and host.writes == 0
    assert {p.action for p in plan(host, host.layout, [step]).values()} == {"ok"}
