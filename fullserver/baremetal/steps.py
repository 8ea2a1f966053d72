"""Configuration steps: check → apply → verify, each able to describe and undo itself.

Every step's ``check`` is read-only and looks at the host itself (not only at our journal), so
re-applying with nothing to change runs no write at all, and a run cut short converges when
re-run. Applied steps are journaled on the host (``/var/lib/fullserver/journal.json`` under
``HostLayout.root``) with what ``undo`` needs. The journal is written atomically (temp file +
rename) *before* a step applies (status ``applying``, with the pre-change values) and again after
it verifies (``applied``): a connection killed in between leaves the pre-change values on the
host, so a later ``undo`` still restores the original state, never our half state.

Steps: ``ScratchStep`` (local NVMe RAID0 scratch: mdadm array, filesystem, mount, fstab;
re-assembled/re-mounted if it exists; formats only with explicit consent and never over a disk
that holds a filesystem or is mounted), ``SysctlStep`` (network tuning for large transfers),
``HugepagesStep``, ``GpuPersistenceStep`` (``nvidia-smi -pm 1``), ``ServiceUserStep`` (a user
with authorized keys).
"""

from __future__ import annotations

import json
import posixpath
import shlex
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fullserver.baremetal.errors import StepFailed, StepRefused
from fullserver.baremetal.transport import Runner

JOURNAL = "/var/lib/fullserver/journal.json"
SCRATCH_MARK = "# fullserver:scratch"

NETWORK_SYSCTLS: dict[str, str] = {
    # Large-transfer TCP buffers (dataset and checkpoint streams over 25-400 Gbps links); the
    # values follow the ESnet host-tuning guide for 100G hosts (fasterdata.es.net/host-tuning).
    "net.core.rmem_max": "268435456",
    "net.core.wmem_max": "268435456",
    "net.ipv4.tcp_rmem": "4096 87380 268435456",
    "net.ipv4.tcp_wmem": "4096 65536 268435456",
    "net.core.netdev_max_backlog": "250000",
    "net.ipv4.tcp_mtu_probing": "1",
}


@dataclass(frozen=True)
class HostLayout:
    """Where configuration lands: ``root`` prefixes every file path (``/`` on a real host; a
    per-host directory in tests), ``sysctl_dir`` is the kernel's ``/proc/sys``."""

    root: str = "/"
    sysctl_dir: str = "/proc/sys"

    def path(self, p: str) -> str:
        return posixpath.normpath(posixpath.join(self.root, p.lstrip("/")))

    @property
    def journal(self) -> str:
        return self.path(JOURNAL)


@dataclass(frozen=True)
class Check:
    """What ``check`` found: ``done`` means nothing to do; ``before`` is what undo restores."""

    done: bool
    detail: str
    before: dict[str, Any] = field(default_factory=dict)


def q(s: str) -> str:
    return shlex.quote(s)


def write_file_script(path: str, content: str, mode: str = "0644") -> str:
    """Atomic write: a temp file next to the target, then rename (no half-written file, ever)."""
    d = posixpath.dirname(path)
    return (
        f"mkdir -p {q(d)} && t=$(mktemp {q(path)}.XXXXXX) && printf '%s' {q(content)} > \"$t\" "
        f'&& chmod {mode} "$t" && mv -f "$t" {q(path)}'
    )


class Step(ABC):
    id: str

    @abstractmethod
    def describe(self) -> str: ...

    @abstractmethod
    def desired(self) -> dict[str, Any]:
        """JSON-able description of the desired state (what diff compares with the journal)."""

    @abstractmethod
    def check(self, r: Runner, layout: HostLayout) -> Check: ...

    @abstractmethod
    def apply(self, r: Runner, layout: HostLayout, found: Check) -> dict[str, Any]:
        """Make it so; returns facts undo needs beyond ``found.before`` (e.g. what was created)."""

    def verify(self, r: Runner, layout: HostLayout) -> None:
        after = self.check(r, layout)
        if not after.done:
            raise StepFailed(
                r.host,
                f"{self.describe()}: still not in place after applying ({after.detail})",
                "see the host's logs; re-run to retry",
            )

    @abstractmethod
    def undo(self, r: Runner, layout: HostLayout, record: dict[str, Any]) -> None: ...


# --- sysctl / hugepages ---------------------------------------------------------------------


class SysctlStep(Step):
    """Kernel parameters, set now (``/proc/sys``) and persisted (``/etc/sysctl.d/<conf>``)."""

    def __init__(
        self, values: dict[str, str], *, id: str = "sysctl", conf: str = "/etc/sysctl.d/90-fullserver.conf"
    ) -> None:
        self.values = dict(sorted(values.items()))
        self.id = id
        self.conf = conf

    def describe(self) -> str:
        return f"sysctl {', '.join(f'{k}={v}' for k, v in self.values.items())} (persisted in {self.conf})"

    def desired(self) -> dict[str, Any]:
        return {"values": self.values, "conf": self.conf}

    def _proc(self, layout: HostLayout, key: str) -> str:
        return posixpath.join(layout.sysctl_dir, key.replace(".", "/"))

    def _render(self) -> str:
        return "# managed by fullserver; removed when the environment is deleted\n" + "".join(
            f"{k} = {v}\n" for k, v in self.values.items()
        )

    def check(self, r: Runner, layout: HostLayout) -> Check:
        script = "; ".join(
            f"printf '%s=%s\\n' {q(k)} \"$(cat {q(self._proc(layout, k))} 2>/dev/null | tr -s '[:space:]' ' ')\""
            for k in self.values
        )
        script += f"; echo '@@conf'; cat {q(layout.path(self.conf))} 2>/dev/null; true"
        out = r.run(script, sudo=True, label=f"check {self.id}").stdout
        head, _, conf = out.partition("@@conf\n")
        current = {}
        for line in head.splitlines():
            k, _, v = line.partition("=")
            current[k] = " ".join(v.split())
        missing = [k for k in self.values if not current.get(k)]
        if missing:
            raise StepRefused(
                r.host,
                f"kernel parameter(s) not found: {', '.join(missing)}",
                "drop them from the config or load the module that provides them",
            )
        wrong = [k for k, v in self.values.items() if current.get(k) != " ".join(v.split())]
        conf_ok = conf == self._render()
        detail = (
            ("differs: " + ", ".join(f"{k}={current.get(k)}" for k in wrong))
            if wrong
            else ("" if conf_ok else f"{self.conf} not persisted")
        )
        return Check(
            not wrong and conf_ok,
            detail or "in place",
            {"previous": {k: current[k] for k in self.values}, "conf_existed": bool(conf)},
        )

    def apply(self, r: Runner, layout: HostLayout, found: Check) -> dict[str, Any]:
        parts = [write_file_script(layout.path(self.conf), self._render())]
        parts += [f"printf '%s\\n' {q(v)} > {q(self._proc(layout, k))}" for k, v in self.values.items()]
        r.run(" && ".join(parts), sudo=True, write=True, label=f"apply {self.id}")
        return {}

    def undo(self, r: Runner, layout: HostLayout, record: dict[str, Any]) -> None:
        previous: dict[str, str] = record.get("previous", {})
        parts = [f"printf '%s\\n' {q(v)} > {q(self._proc(layout, k))}" for k, v in previous.items()]
        parts.append(f"rm -f {q(layout.path(self.conf))}")
        r.run(" && ".join(parts), sudo=True, write=True, label=f"undo {self.id}")


class HugepagesStep(SysctlStep):
    """Reserve N default-size (2 MiB) huge pages; the verify fails if the kernel gave fewer."""

    def __init__(self, count: int) -> None:
        super().__init__(
            {"vm.nr_hugepages": str(count)}, id="hugepages", conf="/etc/sysctl.d/91-fullserver-hugepages.conf"
        )
        self.count = count

    def describe(self) -> str:
        return f"reserve {self.count} huge pages (vm.nr_hugepages, persisted in {self.conf})"

    def verify(self, r: Runner, layout: HostLayout) -> None:
        after = self.check(r, layout)
        if not after.done:
            got = after.before.get("previous", {}).get("vm.nr_hugepages", "?")
            raise StepFailed(
                r.host,
                f"the kernel reserved {got} of {self.count} huge pages",
                "memory is fragmented: ask for fewer, or reserve them at boot (hugepages= on the kernel command line)",
            )


# --- GPU persistence ------------------------------------------------------------------------


class GpuPersistenceStep(Step):
    """``nvidia-smi -pm 1``: keep the driver loaded (without it every CUDA start re-initialises)."""

    id = "gpu-persistence"

    def describe(self) -> str:
        return "GPU persistence mode on (nvidia-smi -pm 1)"

    def desired(self) -> dict[str, Any]:
        return {"persistence_mode": True}

    def check(self, r: Runner, layout: HostLayout) -> Check:
        res = r.run(
            "timeout -k 2 20 nvidia-smi --query-gpu=persistence_mode --format=csv,noheader",
            check=False,
            label="check gpu-persistence",
        )
        if res.exit_status == 127:
            raise StepRefused(
                r.host,
                "GPU persistence asked for but nvidia-smi is not on PATH",
                "install the NVIDIA driver, or drop gpuPersistence from the config",
            )
        if not res.ok:
            raise StepFailed(
                r.host, f"nvidia-smi failed (exit {res.exit_status}): {res.tail(120)}", "check the NVIDIA driver"
            )
        modes = [m.strip() for m in res.stdout.splitlines() if m.strip()]
        off = sum(1 for m in modes if m != "Enabled")
        return Check(
            off == 0 and bool(modes), f"{off} of {len(modes)} GPUs without persistence", {"was_enabled": off == 0}
        )

    def apply(self, r: Runner, layout: HostLayout, found: Check) -> dict[str, Any]:
        # -pm 1 can take well over 25 s on big hosts (Azure/AgentBaker#2829): a generous deadline.
        r.run(["nvidia-smi", "-pm", "1"], sudo=True, write=True, timeout=180, label="nvidia-smi -pm 1")
        return {}

    def undo(self, r: Runner, layout: HostLayout, record: dict[str, Any]) -> None:
        if not record.get("was_enabled"):
            r.run(["nvidia-smi", "-pm", "0"], sudo=True, write=True, timeout=180, label="nvidia-smi -pm 0")


# --- service user ---------------------------------------------------------------------------


class ServiceUserStep(Step):
    """A local user (no password; key login only) with exactly the given authorized keys."""

    def __init__(self, name: str, authorized_keys: Sequence[str]) -> None:
        self.id = f"user:{name}"
        self.name = name
        self.keys = [k.strip() for k in authorized_keys]

    def describe(self) -> str:
        return f"service user {self.name} with {len(self.keys)} authorized key(s)"

    def desired(self) -> dict[str, Any]:
        return {"name": self.name, "authorized_keys": self.keys}

    def _home(self, layout: HostLayout) -> str:
        return layout.path(f"/home/{self.name}")

    def _render(self) -> str:
        return "".join(f"{k}\n" for k in self.keys)

    def check(self, r: Runner, layout: HostLayout) -> Check:
        ak = f"{self._home(layout)}/.ssh/authorized_keys"
        out = r.run(
            f"id -u {q(self.name)} 2>/dev/null || echo none; echo '@@keys'; cat {q(ak)} 2>/dev/null; true",
            sudo=True,
            label=f"check {self.id}",
        ).stdout
        uid, _, keys = out.partition("@@keys\n")
        exists = uid.strip() != "none"
        done = exists and keys == self._render()
        return Check(
            done,
            "in place" if done else ("user missing" if not exists else "authorized keys differ"),
            {"existed": exists, "authorized_keys": keys if exists else None},
        )

    def apply(self, r: Runner, layout: HostLayout, found: Check) -> dict[str, Any]:
        home, n = self._home(layout), q(self.name)
        parts = []
        if not found.before.get("existed"):
            parts.append(
                f"mkdir -p {q(posixpath.dirname(home))} && useradd -m -d {q(home)} -s /bin/bash {n} && usermod -p '*' {n}"
            )
        parts.append(write_file_script(f"{home}/.ssh/authorized_keys", self._render(), "0600"))
        parts.append(f"chmod 0700 {q(home + '/.ssh')} && chown -R {n}: {q(home + '/.ssh')}")
        r.run(" && ".join(parts), sudo=True, write=True, label=f"apply {self.id}")
        return {}

    def undo(self, r: Runner, layout: HostLayout, record: dict[str, Any]) -> None:
        home, n = self._home(layout), q(self.name)
        if not record.get("existed"):
            r.run(
                f"if id -u {n} >/dev/null 2>&1; then userdel {n}; fi; rm -rf {q(home)}",
                sudo=True,
                write=True,
                label=f"undo {self.id}",
            )
        elif record.get("authorized_keys") is not None:
            r.run(
                write_file_script(f"{home}/.ssh/authorized_keys", record["authorized_keys"], "0600"),
                sudo=True,
                write=True,
                label=f"undo {self.id}",
            )


# --- local NVMe scratch -----------------------------------------------------------------------


class ScratchStep(Step):
    """Local NVMe as one scratch filesystem: RAID0 over several disks (mdadm), or the one disk.

    Refuses — even with consent — any disk that holds a filesystem, a partition or any signature
    other than our own array's, or that is mounted. With ``consent_to_format`` it creates the
    array and the filesystem on blank disks; without it, it only re-assembles and mounts what
    it made before.
    """

    id = "scratch"
    ARRAY_NAME = "fullserver-scratch"

    def __init__(
        self,
        devices: Sequence[str],
        *,
        mountpoint: str = "/mnt/scratch",
        fstype: str = "ext4",
        label: str = "fs-scratch",
        consent_to_format: bool = False,
        array: str | None = None,
    ) -> None:
        if not devices:
            raise ValueError("scratch needs at least one device")
        self.devices = list(devices)
        self.mountpoint = mountpoint
        self.fstype = fstype
        self.label = label
        self.consent = consent_to_format
        self.array = array or f"/dev/md/{self.ARRAY_NAME}"

    @property
    def raid(self) -> bool:
        return len(self.devices) > 1

    def describe(self) -> str:
        layout = f"RAID0 {self.array} over {', '.join(self.devices)}" if self.raid else self.devices[0]
        return f"scratch {self.fstype} '{self.label}' on {layout}, mounted at {self.mountpoint} and in fstab"

    def desired(self) -> dict[str, Any]:
        return {
            "devices": self.devices,
            "mountpoint": self.mountpoint,
            "fstype": self.fstype,
            "label": self.label,
            "array": self.array if self.raid else None,
        }

    @property
    def target(self) -> str:
        return self.array if self.raid else self.devices[0]

    def _inspect(self, r: Runner, layout: HostLayout) -> dict[str, Any]:
        mp, fstab = layout.path(self.mountpoint), layout.path("/etc/fstab")
        lines = ["[ -e /proc/mdstat ] && echo 'md yes' || echo 'md no'"]
        for d in self.devices:
            lines.append(
                f"if [ -b {q(d)} ]; then echo \"dev {d} ok $(blkid -p -o export {q(d)} 2>/dev/null | tr '\\n' ' ')\"; "
                f"echo \"mnt {d} $(lsblk -n -r -o MOUNTPOINT {q(d)} 2>/dev/null | tr '\\n' ' ')\"; "
                f'echo "kids {d} $(lsblk -n -r -o NAME {q(d)} 2>/dev/null | wc -l)"; else echo "dev {d} missing"; fi'
            )
        t = q(self.target)
        lines.append(
            f"if [ -b {t} ]; then echo \"target ok $(blkid -p -o export {t} 2>/dev/null | tr '\\n' ' ')\"; echo \"real $(readlink -f {t})\"; else echo 'target missing'; fi"
        )
        lines.append(f'echo "mounted $(findmnt -n -r -o SOURCE --mountpoint {q(mp)} 2>/dev/null | head -n1)"')
        lines.append(f'echo "fstab $(grep -F {q(SCRATCH_MARK)} {q(fstab)} 2>/dev/null | head -n1)"')
        lines.append(
            f'echo "mdconf $(grep -cF {q(self.ARRAY_NAME)} {q(layout.path("/etc/mdadm/mdadm.conf"))} 2>/dev/null || echo 0)"'
        )
        out = r.run("\n".join(lines), sudo=True, label="check scratch").stdout
        state: dict[str, Any] = {
            "devs": {},
            "mounts": {},
            "kids": {},
            "target": None,
            "real": "",
            "mounted": "",
            "fstab": "",
            "md": False,
            "mdconf": 0,
        }
        for line in out.splitlines():
            word, _, rest = line.partition(" ")
            if word == "md":
                state["md"] = rest.strip() == "yes"
            elif word == "dev":
                d, _, info = rest.partition(" ")
                state["devs"][d] = None if info.startswith("missing") else _export(info.removeprefix("ok"))
            elif word == "mnt":
                d, _, info = rest.partition(" ")
                state["mounts"][d] = info.split()
            elif word == "kids":
                d, _, n = rest.partition(" ")
                state["kids"][d] = int(n.strip() or "1")
            elif word == "target":
                state["target"] = None if rest.startswith("missing") else _export(rest.removeprefix("ok"))
            elif word in ("real", "mounted", "fstab"):
                state[word] = rest.strip()
            elif word == "mdconf":
                state["mdconf"] = int((rest.strip() or "0").split()[0])
        return state

    def _ours_fs(self, info: dict[str, str] | None) -> bool:
        return bool(info) and info is not None and info.get("TYPE") == self.fstype and info.get("LABEL") == self.label

    def check(self, r: Runner, layout: HostLayout) -> Check:
        s = self._inspect(r, layout)
        missing = [d for d, info in s["devs"].items() if info is None]
        if missing:
            raise StepRefused(
                r.host,
                f"scratch device(s) not found: {', '.join(missing)}",
                "check the device paths (prefer /dev/disk/by-id/...)",
            )
        mounted_here = bool(s["mounted"]) and s["mounted"] in (s["real"], self.target)
        done = self._ours_fs(s["target"]) and mounted_here and bool(s["fstab"]) and (not self.raid or s["mdconf"] > 0)
        detail = (
            "in place"
            if done
            else f"fs={'ours' if self._ours_fs(s['target']) else 'none'} mounted={'yes' if mounted_here else 'no'} fstab={'yes' if s['fstab'] else 'no'}"
        )
        return Check(done, detail, {"state": s})

    def _refuse_unsafe(self, host: str, s: dict[str, Any]) -> None:
        """Never touch a disk that holds someone else's data, whatever the consent says."""
        for d in self.devices:
            info: dict[str, str] = s["devs"].get(d) or {}
            kind = info.get("TYPE") or info.get("PTTYPE")
            ours = (self.raid and kind == "linux_raid_member" and self.ARRAY_NAME in info.get("LABEL", "")) or (
                not self.raid and self._ours_fs(info)
            )
            if s["mounts"].get(d):
                raise StepRefused(
                    host,
                    f"{d} is mounted at {', '.join(s['mounts'][d])}: refusing to use it for scratch",
                    "unmount it and remove it from fstab first, or pick other devices",
                )
            if kind and not ours:
                raise StepRefused(
                    host,
                    f"{d} holds a {kind} signature: refusing to format it",
                    f"if its data is truly unwanted, wipe it yourself (wipefs -a {d}) and re-run",
                )
            if s["kids"].get(d, 1) > 1 and not ours:
                raise StepRefused(
                    host, f"{d} has partitions or holders: refusing to format it", "pick whole, unused disks"
                )

    def apply(self, r: Runner, layout: HostLayout, found: Check) -> dict[str, Any]:
        s: dict[str, Any] = found.before["state"]
        created_array = created_fs = False
        mp, fstab = layout.path(self.mountpoint), layout.path("/etc/fstab")
        if not self._ours_fs(s["target"]):
            self._refuse_unsafe(r.host, s)
            if self.raid:
                if not s["md"]:
                    raise StepFailed(
                        r.host,
                        "the kernel has no md (software RAID) driver: /proc/mdstat is missing",
                        "load md_mod (modprobe raid0), or use a single scratch device",
                    )
                members = all((s["devs"][d] or {}).get("TYPE") == "linux_raid_member" for d in self.devices)
                if s["target"] is None and members:
                    r.run(
                        ["mdadm", "--assemble", self.array, *self.devices],
                        sudo=True,
                        write=True,
                        label="mdadm --assemble",
                    )
                elif s["target"] is None:
                    self._need_consent(r.host)
                    r.run(
                        [
                            "mdadm",
                            "--create",
                            self.array,
                            "--run",
                            "--level=0",
                            f"--raid-devices={len(self.devices)}",
                            f"--name={self.ARRAY_NAME}",
                            *self.devices,
                        ],
                        sudo=True,
                        write=True,
                        timeout=300,
                        label="mdadm --create",
                    )
                    created_array = True
                tinfo = _export(
                    r.run(f"blkid -p -o export {q(self.array)} || true", sudo=True, label="blkid array").stdout
                )
                if self._ours_fs(tinfo):
                    s["target"] = tinfo
            if not self._ours_fs(s["target"]):
                if s["target"] and s["target"].get("TYPE"):
                    raise StepRefused(
                        r.host,
                        f"{self.target} holds a {s['target']['TYPE']} filesystem that is not ours",
                        "pick other devices",
                    )
                self._need_consent(r.host)
                r.run(
                    [f"mkfs.{self.fstype}", "-q", "-L", self.label, self.target],
                    sudo=True,
                    write=True,
                    timeout=1800,
                    label=f"mkfs.{self.fstype}",
                )
                created_fs = True
        elif self.raid and not s["md"]:
            raise StepFailed(
                r.host, "the kernel has no md (software RAID) driver: /proc/mdstat is missing", "load md_mod"
            )
        uuid = _export(r.run(f"blkid -p -o export {q(self.target)}", sudo=True, label="blkid").stdout).get("UUID", "")
        if not uuid:
            raise StepFailed(r.host, f"{self.target} has no filesystem UUID after mkfs", "check dmesg")
        real = r.run(f"readlink -f {q(self.target)}", sudo=True, label="readlink").stdout.strip()
        mounted = s["mounted"] and s["mounted"] in (real, self.target)
        parts = [f"mkdir -p {q(mp)}"]
        if not mounted:
            parts.append(f"mount -t {q(self.fstype)} -o noatime {q(self.target)} {q(mp)}")
        line = f"UUID={uuid} {self.mountpoint} {self.fstype} defaults,noatime,nofail,x-systemd.device-timeout=10s 0 2 {SCRATCH_MARK}"
        parts.append(
            f'mkdir -p {q(posixpath.dirname(fstab))} && t=$(mktemp {q(fstab)}.XXXXXX) && {{ grep -vF {q(SCRATCH_MARK)} {q(fstab)} 2>/dev/null; printf \'%s\\n\' {q(line)}; }} > "$t" && chmod 0644 "$t" && mv -f "$t" {q(fstab)}'
        )
        if self.raid:
            conf = layout.path("/etc/mdadm/mdadm.conf")
            parts.append(
                f"mkdir -p {q(posixpath.dirname(conf))} && {{ grep -qF {q(self.ARRAY_NAME)} {q(conf)} 2>/dev/null || mdadm --detail --brief {q(self.array)} >> {q(conf)}; }}"
            )
        r.run(" && ".join(parts), sudo=True, write=True, label="mount scratch")
        return {"created_array": created_array, "created_fs": created_fs}

    def _need_consent(self, host: str) -> None:
        if not self.consent:
            raise StepRefused(
                host,
                f"creating scratch on {', '.join(self.devices)} would format them",
                "set scratch.format: true in the config to consent (blank disks only)",
            )

    def undo(self, r: Runner, layout: HostLayout, record: dict[str, Any]) -> None:
        """Unmount and forget (fstab, mdadm.conf, stop the array); the data stays on the disks."""
        mp, fstab = layout.path(self.mountpoint), layout.path("/etc/fstab")
        parts = [
            f"if findmnt -n --mountpoint {q(mp)} >/dev/null 2>&1; then umount {q(mp)}; fi",
            f'if [ -f {q(fstab)} ]; then t=$(mktemp {q(fstab)}.XXXXXX) && {{ grep -vF {q(SCRATCH_MARK)} {q(fstab)} || true; }} > "$t" && chmod 0644 "$t" && mv -f "$t" {q(fstab)}; fi',
        ]
        if self.raid:
            conf = layout.path("/etc/mdadm/mdadm.conf")
            parts.append(f"if [ -f {q(conf)} ]; then sed -i '/{self.ARRAY_NAME}/d' {q(conf)}; fi")
            parts.append(f"if [ -b {q(self.array)} ]; then mdadm --stop {q(self.array)}; fi")
        r.run(" && ".join(parts), sudo=True, write=True, label="undo scratch")


def _export(text: str) -> dict[str, str]:
    """``blkid -o export`` (KEY=value, whitespace separated) → dict."""
    out = {}
    for token in text.split():
        k, sep, v = token.partition("=")
        if sep:
            out[k] = v.strip('"')
    return out


# --- journal and engine ---------------------------------------------------------------------


def read_journal(r: Runner, layout: HostLayout) -> dict[str, Any]:
    res = r.run(f"cat {q(layout.journal)} 2>/dev/null || true", sudo=True, label="read journal")
    if not res.stdout.strip():
        return {"version": 1, "steps": {}}
    try:
        data = json.loads(res.stdout)
        if not isinstance(data.get("steps"), dict):
            raise ValueError("no steps")
        return dict(data)
    except ValueError:
        raise StepFailed(
            r.host,
            f"the journal {layout.journal} is not valid JSON",
            "inspect it; move it aside only if you know what fullserver changed",
        ) from None


def write_journal(r: Runner, layout: HostLayout, journal: dict[str, Any]) -> None:
    if not journal["steps"]:
        r.run(f"rm -f {q(layout.journal)}", sudo=True, write=True, label="remove journal")
        return
    r.run(
        write_file_script(layout.journal, json.dumps(journal, indent=1) + "\n", "0600"),
        sudo=True,
        write=True,
        label="write journal",
    )


@dataclass
class Outcome:
    """What a converge did on one host."""

    host: str
    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    undone: list[str] = field(default_factory=list)
    writes: int = 0
    journal: dict[str, Any] = field(default_factory=dict)


def plan(r: Runner, layout: HostLayout, steps: Sequence[Step]) -> dict[str, str]:
    """Read-only: what converge would do, per step id → ``"ok"`` / ``"apply: <why>"`` / ``"undo"``."""
    journal = read_journal(r, layout)
    out: dict[str, str] = {}
    for step in steps:
        found = step.check(r, layout)
        entry = journal["steps"].get(step.id)
        if (
            found.done
            and entry is not None
            and entry.get("status") == "applied"
            and entry.get("desired") == step.desired()
        ):
            out[step.id] = "ok"
        elif found.done:
            out[step.id] = "journal"
        else:
            out[step.id] = f"apply: {found.detail}"
    for sid in journal["steps"]:
        if sid not in {s.id for s in steps}:
            out[sid] = "undo"
    return out


def converge(
    r: Runner, layout: HostLayout, steps: Sequence[Step], *, undo_unlisted: dict[str, Step] | None = None
) -> Outcome:
    """Bring the host to the desired steps; undo journaled steps no longer desired.

    ``undo_unlisted`` maps journaled step ids that are no longer wanted to a Step able to undo
    them (the provider rebuilds them from its old inputs).
    """
    before = r.writes
    journal = read_journal(r, layout)
    outcome = Outcome(r.host)
    for step in steps:
        found = step.check(r, layout)
        entry = journal["steps"].get(step.id)
        if found.done:
            if entry is None or entry.get("status") != "applied" or entry.get("desired") != step.desired():
                # In place but not (fully) journaled: a run cut short after apply. Record it.
                journal["steps"][step.id] = {
                    **(entry or {"undo": found.before}),
                    "desired": step.desired(),
                    "status": "applied",
                    "at": time.time(),
                }
                write_journal(r, layout, journal)
            outcome.unchanged.append(step.id)
            continue
        # Intent first: keep the *original* pre-change values if a previous run started this step.
        undo = entry["undo"] if entry is not None else found.before
        journal["steps"][step.id] = {"desired": step.desired(), "undo": undo, "status": "applying", "at": time.time()}
        write_journal(r, layout, journal)
        extra = step.apply(r, layout, found)
        step.verify(r, layout)
        merged = {**undo, **{k: v or bool(undo.get(k)) for k, v in extra.items()}}
        journal["steps"][step.id] = {"desired": step.desired(), "undo": merged, "status": "applied", "at": time.time()}
        write_journal(r, layout, journal)
        outcome.changed.append(step.id)
    wanted = {s.id for s in steps}
    for sid in [s for s in reversed(list(journal["steps"])) if s not in wanted]:
        undoer = (undo_unlisted or {}).get(sid)
        if undoer is None:
            continue
        undoer.undo(r, layout, journal["steps"][sid]["undo"])
        del journal["steps"][sid]
        write_journal(r, layout, journal)
        outcome.undone.append(sid)
    outcome.writes = r.writes - before
    outcome.journal = journal
    return outcome


def revert(r: Runner, layout: HostLayout, steps: Sequence[Step]) -> Outcome:
    """Undo every journaled step we know, newest first, and drop it from the journal."""
    before = r.writes
    journal = read_journal(r, layout)
    by_id = {s.id: s for s in steps}
    outcome = Outcome(r.host)
    for sid in reversed(list(journal["steps"])):
        step = by_id.get(sid)
        if step is None:
            continue
        step.undo(r, layout, journal["steps"][sid]["undo"])
        del journal["steps"][sid]
        write_journal(r, layout, journal)
        outcome.undone.append(sid)
    outcome.writes = r.writes - before
    outcome.journal = journal
    return outcome


# --- configuration → steps ------------------------------------------------------------------

from pydantic import BaseModel, ConfigDict, Field  # noqa: E402
from pydantic.alias_generators import to_camel  # noqa: E402


class _Camel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)


class ScratchConfig(_Camel):
    devices: list[str] = Field(min_length=1)
    mountpoint: str = "/mnt/scratch"
    fstype: str = "ext4"
    format: bool = Field(default=False, description="consent to create the array and filesystem on blank disks")


class ServiceUserConfig(_Camel):
    name: str = Field(pattern=r"^[a-z_][a-z0-9_-]{0,31}$")
    authorized_keys: list[str] = Field(min_length=1)


class HostConfig(_Camel):
    """What to configure on every host (stack config ``fullserver:dedicated.configure``)."""

    scratch: ScratchConfig | None = None
    network_tuning: bool | dict[str, str] = False
    hugepages: int | None = Field(default=None, ge=0)
    gpu_persistence: bool = False
    service_user: ServiceUserConfig | None = None
    root: str = "/"
    sysctl_dir: str = "/proc/sys"

    @property
    def layout(self) -> HostLayout:
        return HostLayout(self.root, self.sysctl_dir)


def build_steps(cfg: HostConfig) -> list[Step]:
    """The steps a config asks for, in apply order (undo runs in reverse)."""
    steps: list[Step] = []
    if cfg.scratch is not None:
        s = cfg.scratch
        steps.append(ScratchStep(s.devices, mountpoint=s.mountpoint, fstype=s.fstype, consent_to_format=s.format))
    if cfg.network_tuning:
        steps.append(SysctlStep(NETWORK_SYSCTLS if cfg.network_tuning is True else dict(cfg.network_tuning)))
    if cfg.hugepages is not None:
        steps.append(HugepagesStep(cfg.hugepages))
    if cfg.gpu_persistence:
        steps.append(GpuPersistenceStep())
    if cfg.service_user is not None:
        steps.append(ServiceUserStep(cfg.service_user.name, cfg.service_user.authorized_keys))
    return steps
