"""The configuration steps as tables (pyinfra-style), no host needed.

``operations/<step>/<case>.json``: the step's arguments, the host's facts (and the journaled undo
record, the login user, the layout, when they matter) → the exact commands, or why nothing runs
(``noop``), or the refusal/failure; undo cases: an undo record → the exact undo commands.
``facts/<fact>/<case>.json``: a fact's arguments and captured output → the parsed facts.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from fullserver.baremetal.config import HostConfig, HostLayout
from fullserver.baremetal.errors import Failure, Refusal
from fullserver.baremetal.facts import (
    Fact,
    FactModel,
    GpuFact,
    GpuState,
    ScratchFact,
    ScratchState,
    SysctlFact,
    SysctlState,
    UserFact,
    UserState,
)
from fullserver.baremetal.operations import (
    Change,
    GpuPersistenceStep,
    HostContext,
    HugepagesStep,
    NoOp,
    ScratchStep,
    ServiceUserStep,
    Step,
    SysctlStep,
    build_steps,
)
from fullserver.baremetal.shell import fstab_escape
from fullserver.baremetal.transport import Result
from fullserver.errors import InputError
from fullserver.yamlio import parse

HERE = Path(__file__).parent
STEPS: dict[str, tuple[Any, type[FactModel]]] = {
    "sysctl": (SysctlStep, SysctlState),
    "hugepages": (HugepagesStep, SysctlState),
    "gpu-persistence": (GpuPersistenceStep, GpuState),
    "service-user": (ServiceUserStep, UserState),
    "scratch": (ScratchStep, ScratchState),
}
FACTS: dict[str, Any] = {"sysctl": SysctlFact, "gpu": GpuFact, "user": UserFact, "scratch": ScratchFact}
OUTCOMES = {"commands", "noop", "refused", "failed", "undo_commands"}


def _cases(folder: str) -> list[str]:
    return sorted(str(p.relative_to(HERE / folder)) for p in (HERE / folder).glob("*/*.json"))


@pytest.mark.parametrize("case", _cases("operations"))
def test_operation(case: str) -> None:
    data = json.loads((HERE / "operations" / case).read_text())
    assert len(OUTCOMES & set(data)) == 1, f"{case}: one expected outcome"
    make, model = STEPS[case.split("/")[0]]
    step: Step[Any] = make(**data.get("step", {}))
    layout = HostLayout(**data.get("layout", {}))
    if "undo_commands" in data:
        assert [c.text for c in step.undo(layout, data["undo_record"])] == data["undo_commands"]
        return
    facts = model.model_validate(data["facts"])
    ctx = HostContext(layout, data.get("login_user", "ops"))
    if "refused" in data or "failed" in data:
        with pytest.raises(Refusal if "refused" in data else Failure) as exc:
            step.decide(facts, ctx, data.get("journaled"))
        assert exc.value.what == data.get("refused", data.get("failed"))
        assert exc.value.hint and "\n" not in exc.value.what
        return
    decision = step.decide(facts, ctx, data.get("journaled"))
    if "noop" in data:
        assert isinstance(decision, NoOp), decision
        assert decision.reason == data["noop"]
        assert decision.record == data["record"]
        return
    assert isinstance(decision, Change), decision
    assert [c.text for c in decision.commands] == data["commands"]
    assert list(decision.then) == data.get("then", [])
    assert decision.keep == data["keep"]


@pytest.mark.parametrize("case", _cases("facts"))
def test_fact(case: str) -> None:
    data = json.loads((HERE / "facts" / case).read_text())
    args = {k: tuple(v) if isinstance(v, list) else v for k, v in data["args"].items()}
    fact: Fact[Any] = FACTS[case.split("/")[0]](**args)
    if "command" in data:
        assert fact.command() == data["command"]
    result = Result(data["exit"], "\n".join(data["output"]), "")
    if "refused" in data or "failed" in data:
        with pytest.raises(Refusal if "refused" in data else Failure) as exc:
            fact.parse(result)
        assert exc.value.what == data.get("refused", data.get("failed"))
        return
    assert fact.parse(result).model_dump(mode="json") == data["facts"]


def test_every_step_kind_has_tables() -> None:
    kinds = {c.split("/")[0] for c in _cases("operations")}
    assert kinds == set(STEPS)
    for kind in STEPS:
        outcomes = {
            o
            for c in _cases("operations")
            if c.startswith(f"{kind}/")
            for o in OUTCOMES & set(json.loads((HERE / "operations" / c).read_text()))
        }
        assert {"commands", "undo_commands"} <= outcomes, kind


def test_scratch_rounds_follow_the_host() -> None:
    """Blank RAID disks take three rounds, each decided from what the host shows after the last:
    the array, the filesystem, then mount + fstab with the UUID mkfs made (shown as a placeholder
    in the first round's plan)."""
    step = ScratchStep(["/dev/nvme1n1", "/dev/nvme2n1"], consent_to_format=True)
    ctx = HostContext(HostLayout(), "ops")
    blank = {"blkid": [2, ""], "wipe": [0, ""], "mnt": [0, ""], "kids": [0, "1"], "mdexam": [1, ""]}
    devs = {"/dev/nvme1n1": {**blank, "real": "/dev/nvme1n1"}, "/dev/nvme2n1": {**blank, "real": "/dev/nvme2n1"}}
    first = step.decide(ScratchState.model_validate({"md": True, "wipefs": True, "devs": devs}), ctx)
    assert isinstance(first, Change) and not first.final
    assert [c.label for c in first.commands] == [
        "mdadm --create"
    ] and "UUID=<UUID of the new filesystem>" in first.then[1]
    array = {"devs": devs, "md": True, "target": {}, "real": "/dev/md127", "members": ["/dev/nvme1n1", "/dev/nvme2n1"]}
    second = step.change(ScratchState.model_validate(array), ctx, first.intent)
    assert [c.text for c in second.commands] == [first.then[0]] and not second.final
    ours = {**array, "target": {"TYPE": "ext4", "LABEL": "fs-scratch", "UUID": "1234"}}
    third = step.change(ScratchState.model_validate(ours), ctx, second.intent)
    assert third.final and [c.text for c in third.commands] == [
        first.then[1].replace("<UUID of the new filesystem>", "1234")
    ]


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"scratch": {"devices": ["/dev/nvme1n1; touch /tmp/pwned"]}}, "scratch.devices"),
        ({"scratch": {"devices": ["$(touch /tmp/pwned)"]}}, "scratch.devices"),
        ({"scratch": {"devices": ["/dev/disk/by-id/nvme-A B"]}}, "scratch.devices"),
        ({"scratch": {"devices": ["/dev/../etc/passwd"]}}, "scratch.devices"),
        ({"scratch": {"devices": ["/dev/nvme1n1"], "mountpoint": "scratch"}}, "scratch.mountpoint"),
        ({"scratch": {"devices": ["/dev/nvme1n1"], "mountpoint": "/"}}, "scratch.mountpoint"),
        ({"scratch": {"devices": ["/dev/nvme1n1"], "mountpoint": "/mnt/a\nb"}}, "scratch.mountpoint"),
        ({"scratch": {"devices": ["/dev/nvme1n1"], "fstype": "ext4 -E x"}}, "scratch.fstype"),
        ({"networkTuning": {"net.core.rmem_max/../../x": "1"}}, "networkTuning"),
        ({"networkTuning": {"net.core.rmem_max": "1\nkernel.core_pattern = |/tmp/pwned"}}, "networkTuning"),
        ({"serviceUser": {"name": "svc; id", "authorizedKeys": ["ssh-ed25519 AAAA x"]}}, "serviceUser.name"),
        (
            {"serviceUser": {"name": "svc", "authorizedKeys": ["ssh-ed25519 AAAA x\nssh-rsa BBBB intruder"]}},
            "serviceUser.authorizedKeys",
        ),
        ({"root": "relative/dir"}, "root"),
    ],
)
def test_config_values_that_would_reach_a_shell_are_validated(config: dict[str, object], field: str) -> None:
    with pytest.raises(InputError) as exc:
        parse(HostConfig, config, "config")
    line = exc.value.line()
    assert "\n" not in line and f"field '{field}" in line, line


def test_steps_built_directly_validate_too() -> None:
    with pytest.raises(ValueError, match=r"scratch.devices\[0\]: .* is not a device path"):
        ScratchStep(["/dev/sdb $(reboot)"])
    with pytest.raises(ValueError, match="is not a kernel parameter name"):
        SysctlStep({"../x": "1"})
    with pytest.raises(ValueError, match="not a user name"):
        ServiceUserStep("a b", ["ssh-ed25519 AAAA"])


def test_build_steps_in_apply_order() -> None:
    cfg = parse(
        HostConfig,
        {
            "scratch": {"devices": ["/dev/nvme1n1"]},
            "networkTuning": True,
            "hugepages": 8,
            "gpuPersistence": True,
            "serviceUser": {"name": "svc", "authorizedKeys": ["ssh-ed25519 AAAA x"]},
        },
        "config",
    )
    assert [s.id for s in build_steps(cfg)] == ["scratch", "sysctl", "hugepages", "gpu-persistence", "user:svc"]


def test_every_device_and_mountpoint_is_shell_quoted() -> None:
    calls: list[str] = []
    ours = {"TYPE": "ext4", "LABEL": "fs-scratch", "UUID": "1234"}
    for step in (
        ScratchStep(["/dev/disk/by-id/nvme-X:1+a"], mountpoint="/mnt/scratch $(touch /tmp/pwned) `id`"),
        ScratchStep(["/dev/nvme1n1", "/dev/nvme2n1"], mountpoint="/mnt/s $(touch /tmp/pwned) `id`"),
    ):
        calls.append(step.fact(HostLayout()).command())
        calls += [c.text for c in step.undo(HostLayout(), {"mountpoint": step.mountpoint, "array": step.array})]
        facts = ScratchState(devs={d: None for d in step.devices}, target=ours)
        calls += [c.text for c in step.change(facts, HostContext(HostLayout()), step.desired()).commands]
    for script in calls:
        for word in ("$(touch /tmp/pwned)", "`id`"):
            # every occurrence sits inside single quotes (the shell never expands it)
            for i in [m.start() for m in re.finditer(re.escape(word), script)]:
                assert script[:i].count("'") % 2 == 1, script
        assert "dev /dev/" not in script  # no raw `echo "dev {d}"` interpolation left


def test_fstab_escapes_whitespace_in_the_mountpoint() -> None:
    assert fstab_escape("/mnt/my scratch\tx\\y") == "/mnt/my\\040scratch\\011x\\134y"


def test_scratch_refuses_to_remake_its_own_disks_before_anything_is_undone() -> None:
    """A new filesystem type or label on the disks it already formatted would leave the old scratch
    unmounted and the new one refused (the disks hold a filesystem that is no longer "ours"), so
    the change is refused up front; other disks or another mountpoint are a move, undone first."""
    old = ScratchStep(["/dev/nvme1n1"], consent_to_format=True).desired()
    refusal = ScratchStep(["/dev/nvme1n1"], label="fs-fast", consent_to_format=True).change_refusal(old)
    assert refusal is not None
    assert refusal.what == (
        "scratch on /dev/nvme1n1 is ext4 'fs-scratch'; ext4 'fs-fast' on the same disks means formatting them again"
    )
    assert "wipe the disks" in refusal.hint
    assert ScratchStep(["/dev/nvme1n1"], fstype="xfs").change_refusal(old) is not None
    assert ScratchStep(["/dev/nvme1n1"], mountpoint="/mnt/fast").change_refusal(old) is None
    assert ScratchStep(["/dev/nvme2n1"], label="fs-fast").change_refusal(old) is None
