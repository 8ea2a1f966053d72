"""What the configuration steps read on a host: one read-only script and a pure parser per fact.

pyinfra's split: a fact is a ``command`` plus a ``parse`` of its output into a frozen model; the
operations (``fullserver.baremetal.operations``) decide from that model alone, so they are tested
with tables of facts, and parsers with tables of captured output (``tests/baremetal/facts``).
Every value is printed with ``printf '%s'`` from quoted arguments, never interpolated into a
format string, and every fact is one round trip. (The hardware audit's facts are ``probe``.)
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from fullserver.baremetal.errors import Failure, Refusal
from fullserver.baremetal.shell import q
from fullserver.baremetal.transport import Result

SCRATCH_MARK = "# fullserver:scratch"
"""Marks fullserver's fstab line (the only line it ever rewrites or removes)."""


class FactModel(BaseModel):
    """Facts are frozen: a decision can never change what it was decided from."""

    model_config = ConfigDict(extra="forbid", frozen=True)


F = TypeVar("F", bound=FactModel)


class Fact(ABC, Generic[F]):
    """A read-only probe: ``command`` runs on the host (``sudo`` or not), ``parse`` is pure.

    With ``judge_exit`` the parser sees every exit status (``nvidia-smi`` missing is a refusal,
    not a failed command); otherwise a non-zero exit fails the run before parsing."""

    label: str
    sudo: bool = True
    judge_exit: bool = False

    @abstractmethod
    def command(self) -> str: ...

    @abstractmethod
    def parse(self, result: Result) -> F: ...


# --- sysctl ---------------------------------------------------------------------------------


class SysctlState(FactModel):
    """Kernel parameters now and the persisted file, e.g.
    ``SysctlState(values={'vm.nr_hugepages': '0'}, conf=None)`` (``""``: no such parameter;
    ``conf``: the sysctl.d file's content, None when there is none)."""

    values: dict[str, str]
    conf: str | None = None


@dataclass(frozen=True)
class SysctlFact(Fact[SysctlState]):
    """``/proc/sys/<key>`` (whitespace folded to one space) for each key, and the sysctl.d file."""

    paths: dict[str, str]
    """Each parameter name and the file it is read from (under the layout's ``sysctl_dir``)."""
    conf: str
    label: str = "check sysctl"

    def command(self) -> str:
        conf = q(self.conf)
        script = "; ".join(
            f"printf '%s=%s\\n' {q(k)} \"$(cat {q(p)} 2>/dev/null | tr -s '[:space:]' ' ')\""
            for k, p in self.paths.items()
        )
        return script + f"; if [ -f {conf} ]; then echo '@@conf yes'; cat {conf}; else echo '@@conf no'; fi"

    def parse(self, result: Result) -> SysctlState:
        head, _, rest = result.stdout.partition("@@conf ")
        existed, _, conf_text = rest.partition("\n")
        current: dict[str, str] = {}
        for line in head.splitlines():
            k, _, v = line.partition("=")
            current[k] = " ".join(v.split())
        return SysctlState(values=current, conf=conf_text if existed.strip() == "yes" else None)


# --- GPU persistence ------------------------------------------------------------------------


class GpuState(FactModel):
    """Each GPU's persistence mode as ``nvidia-smi`` prints it, e.g. ``['Enabled', 'Disabled']``."""

    modes: list[str]


@dataclass(frozen=True)
class GpuFact(Fact[GpuState]):
    """``nvidia-smi --query-gpu=persistence_mode``, under its own deadline (a wedged driver hangs it)."""

    label: str = "check gpu-persistence"
    sudo: bool = False
    judge_exit: bool = True

    def command(self) -> str:
        return "timeout -k 2 20 nvidia-smi --query-gpu=persistence_mode --format=csv,noheader"

    def parse(self, result: Result) -> GpuState:
        if result.exit_status == 127:
            raise Refusal(
                "GPU persistence asked for but nvidia-smi is not on PATH",
                "install the NVIDIA driver, or drop gpuPersistence from the config",
            )
        if not result.ok:
            raise Failure(
                f"nvidia-smi failed (exit {result.exit_status}): {result.tail(120)}", "check the NVIDIA driver"
            )
        return GpuState(modes=[m.strip() for m in result.stdout.splitlines() if m.strip()])


# --- service user ---------------------------------------------------------------------------


class UserState(FactModel):
    """A local user as ``getent passwd`` and its home show it, e.g. ``UserState(exists=True,
    uid=1001, home='/home/trainer', home_existed=True, ssh_existed=True,
    authorized_keys='ssh-ed25519 AAAA... trainer\\n')`` (``authorized_keys``: None when absent)."""

    exists: bool
    uid: int | None = None
    home: str
    home_existed: bool = False
    ssh_existed: bool = False
    authorized_keys: str | None = None


@dataclass(frozen=True)
class UserFact(Fact[UserState]):
    """The user's uid and home (``getent``; ``default_home`` for a user that does not exist yet),
    whether the home and its ``.ssh`` exist, and ``authorized_keys``."""

    name: str
    default_home: str
    label: str = "check user"

    def command(self) -> str:
        return (
            f"if ent=$(getent passwd {q(self.name)}); then "
            "printf 'uid\\t%s\\n' \"$(printf '%s' \"$ent\" | cut -d: -f3)\"; h=$(printf '%s' \"$ent\" | cut -d: -f6); "
            f"else printf 'uid\\t\\n'; h={q(self.default_home)}; fi; "
            "printf 'home\\t%s\\n' \"$h\"; "
            "[ -d \"$h\" ] && printf 'homedir\\tyes\\n' || printf 'homedir\\tno\\n'; "
            "[ -d \"$h/.ssh\" ] && printf 'sshdir\\tyes\\n' || printf 'sshdir\\tno\\n'; "
            'if [ -f "$h/.ssh/authorized_keys" ]; then echo \'@@keys yes\'; cat "$h/.ssh/authorized_keys"; '
            "else echo '@@keys no'; fi"
        )

    def parse(self, result: Result) -> UserState:
        head, _, rest = result.stdout.partition("@@keys ")
        has_keys, _, keys = rest.partition("\n")
        found = dict(line.split("\t", 1) for line in head.splitlines() if "\t" in line)
        uid = found.get("uid", "").strip()
        return UserState(
            exists=bool(uid),
            uid=int(uid) if uid.isdigit() else None,
            home=found.get("home", "") or self.default_home,
            home_existed=found.get("homedir") == "yes",
            ssh_existed=found.get("sshdir") == "yes",
            authorized_keys=keys if has_keys.strip() == "yes" else None,
        )


# --- local NVMe scratch ---------------------------------------------------------------------

Probe = tuple[int, str]
"""One tool's exit status and its output folded onto one line."""


class DeviceState(FactModel):
    """One configured scratch disk (present: ``[ -b dev ]``), each tool's (exit, output), e.g.
    ``DeviceState(blkid=(2, ''), wipe=(0, ''), mnt=(0, ''), kids=(0, '1'), real='/dev/nvme1n1')``."""

    blkid: Probe | None = None
    """``blkid -p -o export`` (exit 2: nothing found)."""
    wipe: Probe | None = None
    """``wipefs --no-act --json`` (lists every signature, the ones at the end of the disk too)."""
    mnt: Probe | None = None
    """``lsblk -n -r -o MOUNTPOINT`` (the disk's and its children's mounts)."""
    kids: Probe | None = None
    """``lsblk -n -r -o NAME | grep -c .`` (1: the disk alone; more: partitions or holders)."""
    real: str = ""
    """``readlink -f`` (a /dev/disk/by-id link resolved)."""
    mdexam: Probe | None = None
    """``mdadm --examine --export`` (RAID only)."""


class ScratchState(FactModel):
    """The scratch disks, the target (the array, or the one disk) and where it is mounted, e.g.
    ``ScratchState(md=True, wipefs=True, devs={'/dev/nvme1n1': DeviceState(...), '/dev/nvme2n1':
    None}, target={'TYPE': 'ext4', 'LABEL': 'fs-scratch', 'UUID': '…'}, real='/dev/md127',
    members=['/dev/nvme1n1', ...], mounted='/dev/md127', fstab='UUID=… /mnt/scratch ext4 …',
    mdconf=1)``. A device mapped to None is missing; ``target`` None: no such block device,
    ``{}``: a block device with nothing on it."""

    md: bool = False
    wipefs: bool = False
    devs: dict[str, DeviceState | None]
    target: dict[str, str] | None = None
    real: str = ""
    members: list[str] = []
    mounted: str = ""
    fstab: str = ""
    mdconf: int = 0


@dataclass(frozen=True)
class ScratchFact(Fact[ScratchState]):
    """Everything the scratch step decides from, in one read-only round trip."""

    devices: tuple[str, ...]
    target: str
    raid: bool
    mountpoint: str
    fstab: str
    mdadm_conf: str
    array_name: str
    label: str = "check scratch"

    def command(self) -> str:
        lines = [
            "[ -e /proc/mdstat ] && echo 'md\tyes' || echo 'md\tno'",
            "wipefs --help 2>/dev/null | grep -q -e --json && echo 'wipefs\tyes' || echo 'wipefs\tno'",
        ]

        def emit(tag: str, dev: str, cmd: str, fold: str = "tr '\\n\\t' '  '") -> str:
            return (
                f"o=$({cmd} 2>/dev/null); rc=$?; "
                f'printf \'{tag}\\t%s\\t%s\\t%s\\n\' {dev} "$rc" "$(printf \'%s\\n\' "$o" | {fold})"'
            )

        for d in self.devices:
            qd = q(d)
            checks = [
                emit("blkid", qd, f"blkid -p -o export {qd}"),
                emit("wipe", qd, f"wipefs --no-act --json {qd}", "tr -d '\\n\\t'"),
                emit("mnt", qd, f"lsblk -n -r -o MOUNTPOINT {qd}"),
                emit("kids", qd, f"lsblk -n -r -o NAME {qd}", "grep -c ."),
                f"printf 'real\\t%s\\t0\\t%s\\n' {qd} \"$(readlink -f {qd})\"",
            ]
            if self.raid:
                checks.append(emit("mdexam", qd, f"mdadm --examine --export {qd}"))
            lines.append(f"if [ -b {qd} ]; then {'; '.join(checks)}; else printf 'dev\\t%s\\tmissing\\n' {qd}; fi")
        t = q(self.target)
        lines.append(
            f"if [ -b {t} ]; then {emit('target', t, f'blkid -p -o export {t}')}; "
            f"m=$(readlink -f {t}); printf 'treal\\t%s\\t0\\t%s\\n' {t} \"$m\"; "
            'for s in /sys/block/"${m##*/}"/slaves/*; do [ -e "$s" ] && printf \'member\\t%s\\t0\\t/dev/%s\\n\' '
            f'{t} "${{s##*/}}"; done; fi'
        )
        lines.append(
            f"printf 'mounted\\t%s\\n' \"$(findmnt -n -r -o SOURCE --mountpoint {q(self.mountpoint)} 2>/dev/null | head -n1)\""
        )
        lines.append(f"printf 'fstab\\t%s\\n' \"$(grep -F {q(SCRATCH_MARK)} {q(self.fstab)} 2>/dev/null | head -n1)\"")
        lines.append(f"printf 'mdconf\\t%s\\n' \"$(grep -cF {q(self.array_name)} {q(self.mdadm_conf)} 2>/dev/null)\"")
        return "\n".join(lines)

    def parse(self, result: Result) -> ScratchState:
        state: dict[str, Any] = {"devs": {d: None for d in self.devices}, "members": []}
        devs: dict[str, dict[str, Any]] = {}
        for line in result.stdout.splitlines():
            tag, _, rest = line.partition("\t")
            if tag in ("md", "wipefs"):
                state[tag] = rest.strip() == "yes"
            elif tag in ("mounted", "fstab"):
                state[tag] = rest.strip()
            elif tag == "mdconf":
                state["mdconf"] = int(rest.strip()) if rest.strip().isdigit() else 0
            elif tag in ("blkid", "wipe", "mnt", "kids", "real", "mdexam", "target", "treal", "member"):
                dev, _, rest = rest.partition("\t")
                rc_text, _, payload = rest.partition("\t")
                rc = int(rc_text) if rc_text.lstrip("-").isdigit() else -1
                if tag == "target":
                    # 2: a device with nothing on it; any other failure: something we cannot read
                    state["target"] = (
                        parse_export(payload)
                        if rc == 0
                        else {}
                        if rc == 2
                        else {"TYPE": f"unreadable (blkid exit {rc})"}
                    )
                elif tag == "treal":
                    state["real"] = payload.strip()
                elif tag == "member":
                    state["members"].append(payload.strip())
                elif tag == "real":
                    devs.setdefault(dev, {})["real"] = payload.strip()
                else:
                    devs.setdefault(dev, {})[tag] = (rc, payload)
        state["devs"].update({d: DeviceState(**info) for d, info in devs.items()})
        return ScratchState(**state)


def parse_export(text: str) -> dict[str, str]:
    """``blkid -o export`` / ``mdadm --export`` (KEY=value, whitespace separated) → dict, e.g.
    ``TYPE="ext4" LABEL="fs-scratch"`` → ``{'TYPE': 'ext4', 'LABEL': 'fs-scratch'}``."""
    out = {}
    for token in text.split():
        k, sep, v = token.partition("=")
        if sep:
            out[k] = v.strip('"')
    return out


def parse_wipefs(text: str) -> list[dict[str, Any]] | None:
    """``wipefs --no-act --json`` → its signatures (empty output: none); None if unreadable."""
    if not text.strip():
        return []
    try:
        sigs = json.loads(text).get("signatures")
    except (ValueError, AttributeError):
        return None
    return [x for x in sigs if isinstance(x, dict)] if isinstance(sigs, list) else None
