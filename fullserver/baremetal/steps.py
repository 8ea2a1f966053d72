"""Configuration steps: check → apply → verify, each able to describe and undo itself.

Every step's ``check`` is read-only and looks at the host itself (not only at our journal), so
re-applying with nothing to change runs no write at all, and a run cut short converges when
re-run. Applied steps are journaled on the host (``/var/lib/fullserver/journal.json`` under
``HostLayout.root``) with what ``undo`` needs. The journal is written atomically (temp file +
rename) *before* a step applies (status ``applying``, with the pre-change values) and again after
it verifies (``applied``): a connection killed in between leaves the pre-change values on the
host, so a later ``undo`` still restores the original state, never our half state.

A converge or revert holds the host's **journal lock** (``journal.lock`` beside the journal) from
its first read of the journal to its last write, so two runs on one host (two stacks, or ``pulumi
refresh`` during ``up``) never read-modify-write the journal over each other and drop each
other's undo records. The lock file names its owner (who, where, pid, what, since when) and the
host-side process of the owner's SSH connection (its sshd session, pid + start time). Taking,
checking and releasing it are short critical sections under ``flock`` on the journal's directory
(the kernel releases that by itself). A second run waits a bounded time, then fails with one line
naming the owner (``JournalLocked``). A lock is stale — and broken, under the same ``flock``, so
two runs can never both break it — when its owner's SSH session has ended (its process is gone:
the owner crashed, or its connection was cut), or when it has had no heartbeat (every journal write
is one) for ``LOCK_STALE_AFTER``. Every journal write first checks, under the ``flock``, that the
lock is still ours, so a run whose lock was broken stops instead of writing.

An update keeps the *oldest* original values: a step's ``merge_undo`` folds the journaled record
and what ``check`` sees now (sysctl: the journaled original of every key, plus originals for keys
the update adds; keys the update drops are restored at once). A step whose change cannot be done
in place (scratch on other devices or at another mountpoint) is undone first, then applied anew.

Every value that reaches a remote shell is validated when the config is read (device paths,
mountpoints, user names, sysctl keys and values, authorized keys) *and* shell-quoted
(``shlex.quote``; ``printf '%s'`` for data), so a config value can never become a command.

Steps: ``ScratchStep`` (local NVMe RAID0 scratch: mdadm array, filesystem, mount, fstab;
re-assembled/re-mounted if it exists; formats only with explicit consent and only disks proven
blank), ``SysctlStep`` (network tuning for large transfers), ``HugepagesStep``,
``GpuPersistenceStep`` (``nvidia-smi -pm 1``), ``ServiceUserStep`` (a user with authorized keys).
"""

from __future__ import annotations

import getpass
import json
import os
import posixpath
import re
import secrets
import shlex
import socket
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from fullserver.baremetal.errors import BareMetalError, CommandFailed, JournalLocked, StepFailed, StepRefused
from fullserver.baremetal.transport import Runner

JOURNAL = "/var/lib/fullserver/journal.json"
LOCK_WAIT = 60.0
"""Seconds a run waits for another run's journal lock on the same host before giving up."""
LOCK_STALE_AFTER = 3 * 3600
"""Seconds without a heartbeat (a journal write) after which a lock is broken even though its
owner's SSH session still lives (a controller cut off without a FIN). Longer than any one step's
deadline (mkfs: 1800 s), so a working run is never broken."""
SCRATCH_MARK = "# fullserver:scratch"
MDADM_CONF = "/etc/mdadm/mdadm.conf"

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

# --- validation: every value that reaches a remote shell -------------------------------------

DEVICE_PATH = re.compile(r"^/dev/[A-Za-z0-9._/:+-]+$")
USER_NAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
SYSCTL_KEY = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+$")
SYSCTL_VALUE = re.compile(r"^[\t\x20-\x7e]*[\x21-\x7e][\t\x20-\x7e]*$")
FS_LABEL = re.compile(r"^[A-Za-z0-9_.-]{1,16}$")
FS_TYPE = re.compile(r"^[a-z0-9]{1,16}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_KEY_TYPE = re.compile(
    r"(^|\s)(ssh-(ed25519|rsa|dss)|ecdsa-sha2-nistp\d+|sk-[a-z0-9-]+@openssh\.com)(-cert-v01@openssh\.com)?\s"
)
SYSTEM_DIRS = frozenset(
    [
        "/",
        "/bin",
        "/boot",
        "/dev",
        "/etc",
        "/home",
        "/lib",
        "/lib64",
        "/mnt",
        "/opt",
        "/proc",
        "/root",
        "/run",
        "/sbin",
        "/srv",
        "/sys",
        "/tmp",
        "/usr",
        "/var",
    ]
)
FIRST_USER_UID = 1000
"""UIDs below this are system accounts (login.defs UID_MIN): never taken over as a service user."""


def check_device(value: str, field_name: str) -> str:
    if not DEVICE_PATH.match(value) or "/../" in f"{value}/" or "/./" in f"{value}/":
        raise ValueError(
            f"{field_name}: {value!r} is not a device path (expected /dev/... with letters, digits and ._/:+- only)"
        )
    return value


def check_path(value: str, field_name: str, *, mountpoint: bool = False) -> str:
    if not value.startswith("/") or _CONTROL.search(value) or posixpath.normpath(value) != value:
        raise ValueError(f"{field_name}: {value!r} must be an absolute, normalized path without control characters")
    if mountpoint and value in SYSTEM_DIRS:
        raise ValueError(f"{field_name}: {value!r} is a system directory; pick a dedicated one such as /mnt/scratch")
    return value


def check_user_name(value: str, field_name: str) -> str:
    if not USER_NAME.match(value):
        raise ValueError(f"{field_name}: {value!r} is not a user name (lowercase letters, digits, _ and -; 32 at most)")
    return value


def check_sysctl(key: str, value: str, field_name: str) -> None:
    if not SYSCTL_KEY.match(key):
        raise ValueError(f"{field_name}: {key!r} is not a kernel parameter name (dotted, like net.core.rmem_max)")
    if not SYSCTL_VALUE.match(value):
        raise ValueError(f"{field_name}.{key}: {value!r} must be one line of printable characters")


def check_authorized_key(value: str, field_name: str) -> str:
    line = value.strip()
    if _CONTROL.sub("", line.replace("\t", " ")) != line.replace("\t", " ") or not _KEY_TYPE.search(line + " "):
        raise ValueError(f"{field_name}: not one public key line ('[options] <type> <base64> [comment]')")
    return line


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

    @property
    def journal_lock(self) -> str:
        return posixpath.join(posixpath.dirname(self.journal), "journal.lock")


@dataclass(frozen=True)
class Check:
    """What ``check`` found: ``done`` means nothing to do; ``before`` is the undo record (what
    undo restores, journaled); ``state`` is what ``apply`` needs of the host now (not journaled)."""

    done: bool
    detail: str
    before: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)


def q(s: str) -> str:
    return shlex.quote(s)


def write_file_script(path: str, content: str, mode: str = "0644") -> str:
    """Atomic write: a temp file next to the target, then rename (no half-written file, ever)."""
    assert re.fullmatch(r"0[0-7]{3}", mode)
    d = posixpath.dirname(path)
    return (
        f"mkdir -p {q(d)} && t=$(mktemp {q(path)}.XXXXXX) && printf '%s' {q(content)} > \"$t\" "
        f'&& chmod {mode} "$t" && mv -f "$t" {q(path)}'
    )


def rewrite_file_script(path: str, drop_marker: str, append: str | None = None, mode: str = "0644") -> str:
    """Atomic rewrite of a line file: lines containing ``drop_marker`` removed, ``append`` (one line)
    added. A missing file counts as empty; a file grep cannot read aborts (never truncates it).
    One brace group, so it composes with ``&&``."""
    assert re.fullmatch(r"0[0-7]{3}", mode)
    add = f" && printf '%s\\n' {q(append)}" if append is not None else ""
    p = q(path)
    return (
        f"{{ mkdir -p {q(posixpath.dirname(path))} && t=$(mktemp {p}.XXXXXX) && "
        f'{{ {{ if [ -e {p} ]; then grep -vF -- {q(drop_marker)} {p} || [ $? -eq 1 ]; fi{add}; }} > "$t" '
        f'&& chmod {mode} "$t" && mv -f "$t" {p}; }} || {{ rm -f "$t"; false; }}; }}'
    )


def fstab_escape(path: str) -> str:
    """fstab fields are whitespace separated: spaces, tabs and backslashes are written octal."""
    return path.replace("\\", "\\134").replace(" ", "\\040").replace("\t", "\\011")


class Step(ABC):
    id: str
    undo_before_change = False
    """When the desired state changes, undo the journaled old one before applying the new one
    (a change that cannot be made in place, such as scratch moving to other devices)."""

    @abstractmethod
    def describe(self) -> str: ...

    @abstractmethod
    def desired(self) -> dict[str, Any]:
        """JSON-able description of the desired state (what diff compares with the journal)."""

    @abstractmethod
    def check(self, r: Runner, layout: HostLayout) -> Check: ...

    def admit(self, r: Runner, found: Check, journaled: dict[str, Any] | None) -> None:
        """Refuse (``StepRefused``) what this step must never take over; ``journaled`` is the undo
        record of an earlier run, if any."""
        return None

    def merge_undo(self, journaled: dict[str, Any] | None, now: dict[str, Any]) -> dict[str, Any]:
        """The undo record to journal: the journaled one (the *original* values) wins over what
        ``check`` sees now, which is often our own earlier change."""
        return journaled if journaled is not None else now

    @abstractmethod
    def apply(self, r: Runner, layout: HostLayout, found: Check) -> dict[str, Any]:
        """Make it so (``found.before`` is the merged undo record); returns the undo record to keep."""

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
    """Kernel parameters, set now (``/proc/sys``) and persisted (``/etc/sysctl.d/<conf>``).

    The undo record holds the original value of every key fullserver ever set (``previous``) and
    the conf file's original content (``conf``: None when it did not exist), both restored on undo.
    """

    def __init__(
        self, values: dict[str, str], *, id: str = "sysctl", conf: str = "/etc/sysctl.d/90-fullserver.conf"
    ) -> None:
        for k, v in values.items():
            check_sysctl(k, v, "networkTuning")
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

    def _set(self, layout: HostLayout, values: dict[str, str]) -> list[str]:
        return [f"printf '%s\\n' {q(v)} > {q(self._proc(layout, k))}" for k, v in values.items()]

    def check(self, r: Runner, layout: HostLayout) -> Check:
        conf = q(layout.path(self.conf))
        script = "; ".join(
            f"printf '%s=%s\\n' {q(k)} \"$(cat {q(self._proc(layout, k))} 2>/dev/null | tr -s '[:space:]' ' ')\""
            for k in self.values
        )
        script += f"; if [ -f {conf} ]; then echo '@@conf yes'; cat {conf}; else echo '@@conf no'; fi"
        out = r.run(script, sudo=True, label=f"check {self.id}").stdout
        head, _, rest = out.partition("@@conf ")
        existed, _, conf_text = rest.partition("\n")
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
        conf_ok = existed.strip() == "yes" and conf_text == self._render()
        detail = (
            ("differs: " + ", ".join(f"{k}={current.get(k)}" for k in wrong))
            if wrong
            else ("" if conf_ok else f"{self.conf} not persisted")
        )
        return Check(
            not wrong and conf_ok,
            detail or "in place",
            {"previous": {k: current[k] for k in self.values}, "conf": conf_text if existed.strip() == "yes" else None},
        )

    def merge_undo(self, journaled: dict[str, Any] | None, now: dict[str, Any]) -> dict[str, Any]:
        if journaled is None:
            return now
        return {
            "previous": {**now.get("previous", {}), **journaled.get("previous", {})},
            "conf": journaled.get("conf"),  # records without it (older journals) mean: remove the file
        }

    def apply(self, r: Runner, layout: HostLayout, found: Check) -> dict[str, Any]:
        previous: dict[str, str] = found.before.get("previous", {})
        dropped = {k: v for k, v in previous.items() if k not in self.values}  # an update no longer sets them
        parts = [write_file_script(layout.path(self.conf), self._render())]
        parts += self._set(layout, self.values) + self._set(layout, dropped)
        r.run(" && ".join(parts), sudo=True, write=True, label=f"apply {self.id}")
        return {"previous": {k: v for k, v in previous.items() if k in self.values}, "conf": found.before.get("conf")}

    def undo(self, r: Runner, layout: HostLayout, record: dict[str, Any]) -> None:
        parts = self._set(layout, record.get("previous", {}))
        conf, original = layout.path(self.conf), record.get("conf")
        parts.append(write_file_script(conf, original) if isinstance(original, str) else f"rm -f {q(conf)}")
        r.run(" && ".join(parts), sudo=True, write=True, label=f"undo {self.id}")


class HugepagesStep(SysctlStep):
    """Reserve N default-size (2 MiB) huge pages; the verify fails if the kernel gave fewer."""

    def __init__(self, count: int) -> None:
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"hugepages: {count!r} is not a page count (a whole number >= 0)")
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
        return found.before

    def undo(self, r: Runner, layout: HostLayout, record: dict[str, Any]) -> None:
        if not record.get("was_enabled"):
            r.run(["nvidia-smi", "-pm", "0"], sudo=True, write=True, timeout=180, label="nvidia-smi -pm 0")


# --- service user ---------------------------------------------------------------------------


class ServiceUserStep(Step):
    """A local user (no password; key login only) with exactly the given authorized keys.

    Only a user fullserver creates is ever managed: the login user, a system account (UID below
    1000) or any existing user the journal does not record as created by fullserver is refused.
    The home comes from ``getent passwd`` (a new user's is ``/home/<name>`` under the layout root);
    the undo record says whether the home and its ``.ssh`` existed before, and undo removes only
    what fullserver created — a home that was already there is never deleted.
    """

    def __init__(self, name: str, authorized_keys: Sequence[str]) -> None:
        check_user_name(name, "serviceUser.name")
        self.id = f"user:{name}"
        self.name = name
        self.keys = [check_authorized_key(k, f"serviceUser.authorizedKeys[{i}]") for i, k in enumerate(authorized_keys)]

    def describe(self) -> str:
        return f"service user {self.name} with {len(self.keys)} authorized key(s)"

    def desired(self) -> dict[str, Any]:
        return {"name": self.name, "authorized_keys": self.keys}

    def _home(self, layout: HostLayout) -> str:
        return layout.path(f"/home/{self.name}")

    def _render(self) -> str:
        return "".join(f"{k}\n" for k in self.keys)

    def check(self, r: Runner, layout: HostLayout) -> Check:
        n = q(self.name)
        script = (
            f"if ent=$(getent passwd {n}); then "
            "printf 'uid\\t%s\\n' \"$(printf '%s' \"$ent\" | cut -d: -f3)\"; h=$(printf '%s' \"$ent\" | cut -d: -f6); "
            f"else printf 'uid\\t\\n'; h={q(self._home(layout))}; fi; "
            "printf 'home\\t%s\\n' \"$h\"; "
            "[ -d \"$h\" ] && printf 'homedir\\tyes\\n' || printf 'homedir\\tno\\n'; "
            "[ -d \"$h/.ssh\" ] && printf 'sshdir\\tyes\\n' || printf 'sshdir\\tno\\n'; "
            'if [ -f "$h/.ssh/authorized_keys" ]; then echo \'@@keys yes\'; cat "$h/.ssh/authorized_keys"; '
            "else echo '@@keys no'; fi"
        )
        out = r.run(script, sudo=True, label=f"check {self.id}").stdout
        head, _, rest = out.partition("@@keys ")
        has_keys, _, keys = rest.partition("\n")
        facts = dict(line.split("\t", 1) for line in head.splitlines() if "\t" in line)
        uid = facts.get("uid", "").strip()
        exists = bool(uid)
        state = {
            "exists": exists,
            "uid": int(uid) if uid.isdigit() else None,
            "home": facts.get("home", "") or self._home(layout),
            "home_existed": facts.get("homedir") == "yes",
            "ssh_existed": facts.get("sshdir") == "yes",
            "authorized_keys": keys if has_keys.strip() == "yes" else None,
        }
        done = exists and keys == self._render()
        return Check(
            done,
            "in place" if done else ("user missing" if not exists else "authorized keys differ"),
            {"existed": exists, **{k: state[k] for k in ("home", "home_existed", "ssh_existed", "authorized_keys")}},
            state,
        )

    def admit(self, r: Runner, found: Check, journaled: dict[str, Any] | None) -> None:
        if self.name == r.user:
            raise StepRefused(
                r.host,
                f"service user {self.name} is the user fullserver logs in as: refusing to manage its keys",
                "pick another serviceUser.name",
            )
        uid = found.state.get("uid")
        ours = journaled is not None and journaled.get("existed") is False
        if found.state.get("exists") and (not ours or (uid is not None and uid < FIRST_USER_UID)):
            raise StepRefused(
                r.host,
                f"user {self.name} already exists (uid {uid}) and was not created by fullserver: refusing to take it over",
                "pick another serviceUser.name",
            )

    def apply(self, r: Runner, layout: HostLayout, found: Check) -> dict[str, Any]:
        n, home = q(self.name), str(found.state["home"])
        ssh = home + "/.ssh"
        parts = []
        if not found.state["exists"]:
            parts.append(
                f"mkdir -p {q(posixpath.dirname(home))} && useradd -m -d {q(home)} -s /bin/bash {n} && usermod -p '*' {n}"
            )
        parts.append(f"mkdir -p {q(ssh)}")
        parts.append(write_file_script(f"{ssh}/authorized_keys", self._render(), "0600"))
        parts.append(f"chmod 0700 {q(ssh)} && chown -R {n}: {q(ssh)}")
        r.run(" && ".join(parts), sudo=True, write=True, label=f"apply {self.id}")
        return found.before

    def undo(self, r: Runner, layout: HostLayout, record: dict[str, Any]) -> None:
        n = q(self.name)
        home = str(record.get("home") or self._home(layout))
        ssh, ak = home + "/.ssh", home + "/.ssh/authorized_keys"
        if record.get("authorized_keys") is not None:
            restore = write_file_script(ak, record["authorized_keys"], "0600")
        else:
            restore = f"rm -f {q(ak)}"
        if record.get("existed") is False:
            parts = [f"if id -u {n} >/dev/null 2>&1; then userdel {n}; fi"]
            # Older records lack home_existed: then the home is treated as pre-existing (kept).
            if record.get("home_existed") is False:
                parts.append(f"rm -rf {q(home)}")
            elif record.get("ssh_existed") is False:
                parts.append(f"rm -rf {q(ssh)}")
            else:
                parts.append(restore)
            r.run(" && ".join(parts), sudo=True, write=True, label=f"undo {self.id}")
        else:  # a record from before existing users were refused: put their keys back
            r.run(restore, sudo=True, write=True, label=f"undo {self.id}")


# --- local NVMe scratch -----------------------------------------------------------------------


def _no_md(host: str) -> StepFailed:
    return StepFailed(
        host,
        "the kernel has no md (software RAID) driver: /proc/mdstat is missing",
        "load it (modprobe raid0), or use a single scratch device",
    )


class ScratchStep(Step):
    """Local NVMe as one scratch filesystem: RAID0 over several disks (mdadm), or the one disk.

    A disk is formatted only when it is *proven* blank, whatever the consent says: ``blkid -p``
    must exit 2 (nothing found) — any exit other than 0 (found: refused unless it is our own
    array member or filesystem) and 2 means it could not tell (8: ambivalent or colliding
    signatures, 4: error) and is refused; ``wipefs --no-act --json`` (which lists *every*
    signature, end-of-disk ones included) must list none but ours where wipefs is installed;
    ``lsblk`` must succeed and show no partition, holder or mount. With ``consent_to_format`` it
    creates the array and the filesystem on such disks; without it, it only re-assembles and
    mounts what it made before. A change of devices or mountpoint undoes the old scratch first
    (unmount, fstab, mdadm.conf, stop the array), then applies the new one.
    """

    id = "scratch"
    ARRAY_NAME = "fullserver-scratch"
    undo_before_change = True

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
            raise ValueError("scratch.devices: at least one device is needed")
        if len(set(devices)) != len(devices):
            raise ValueError("scratch.devices: a device is listed twice")
        self.devices = [check_device(d, f"scratch.devices[{i}]") for i, d in enumerate(devices)]
        self.mountpoint = check_path(mountpoint, "scratch.mountpoint", mountpoint=True)
        if not FS_TYPE.match(fstype) or not FS_LABEL.match(label):
            raise ValueError(f"scratch.fstype {fstype!r} / label {label!r}: letters and digits only")
        self.fstype = fstype
        self.label = label
        self.consent = consent_to_format
        self.array = check_device(array or f"/dev/md/{self.ARRAY_NAME}", "scratch.array")

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
        """One read-only round trip; every value is printed with ``printf '%s'`` from quoted args."""
        mp, fstab, conf = q(layout.path(self.mountpoint)), q(layout.path("/etc/fstab")), q(layout.path(MDADM_CONF))
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
            f"printf 'mounted\\t%s\\n' \"$(findmnt -n -r -o SOURCE --mountpoint {mp} 2>/dev/null | head -n1)\""
        )
        lines.append(f"printf 'fstab\\t%s\\n' \"$(grep -F {q(SCRATCH_MARK)} {fstab} 2>/dev/null | head -n1)\"")
        lines.append(f"printf 'mdconf\\t%s\\n' \"$(grep -cF {q(self.ARRAY_NAME)} {conf} 2>/dev/null)\"")
        out = r.run("\n".join(lines), sudo=True, label="check scratch").stdout
        state: dict[str, Any] = {
            "devs": {d: None for d in self.devices},
            "target": None,
            "real": "",
            "members": [],
            "mounted": "",
            "fstab": "",
            "md": False,
            "wipefs": False,
            "mdconf": 0,
        }
        for line in out.splitlines():
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
                        _export(payload) if rc == 0 else {} if rc == 2 else {"TYPE": f"unreadable (blkid exit {rc})"}
                    )
                elif tag == "treal":
                    state["real"] = payload.strip()
                elif tag == "member":
                    state["members"].append(payload.strip())
                else:
                    info = state["devs"].get(dev) or {}
                    info[f"{tag}_rc"] = rc
                    info[tag] = payload
                    state["devs"][dev] = info
        return state

    def _ours_fs(self, info: dict[str, str] | None) -> bool:
        return bool(info) and info is not None and info.get("TYPE") == self.fstype and info.get("LABEL") == self.label

    def _ours_member(self, blkid: dict[str, str]) -> bool:
        label = blkid.get("LABEL", "")
        return blkid.get("TYPE") == "linux_raid_member" and (
            label == self.ARRAY_NAME or label.endswith(f":{self.ARRAY_NAME}")
        )

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
        fields = s["fstab"].split()
        fstab_ok = len(fields) > 1 and fields[1] == fstab_escape(self.mountpoint)
        reals = sorted(str(info.get("real", "")).strip() for info in s["devs"].values())
        members_ok = not self.raid or (sorted(s["members"]) == reals and s["mdconf"] > 0)
        ours = self._ours_fs(s["target"])
        done = ours and mounted_here and fstab_ok and members_ok
        detail = (
            "in place"
            if done
            else f"fs={'ours' if ours else 'none'} mounted={'yes' if mounted_here else 'no'} "
            f"fstab={'yes' if fstab_ok else 'no'}" + ("" if members_ok else " array-members=differ")
        )
        record = {"mountpoint": self.mountpoint, "devices": self.devices, "array": self.array if self.raid else None}
        return Check(done, detail, record, s)

    def _refuse_unsafe(self, host: str, s: dict[str, Any]) -> None:
        """Never touch a disk that is not *proven* blank (or ours), whatever the consent says."""
        for d in self.devices:
            dev: dict[str, Any] = s["devs"][d]
            blkid = _export(dev.get("blkid", "")) if dev.get("blkid_rc") == 0 else {}
            kind = blkid.get("TYPE") or blkid.get("PTTYPE")
            ours = self._ours_member(blkid) if self.raid else self._ours_fs(blkid)
            wipe = f"if its data is truly unwanted, wipe it yourself (wipefs -a {d}) and re-run"
            if dev.get("mnt_rc") != 0 or dev.get("kids_rc") != 0:
                raise StepRefused(
                    host,
                    f"lsblk failed on {d} (exit {dev.get('mnt_rc')}/{dev.get('kids_rc')}): cannot tell whether it is "
                    "mounted or partitioned, refusing to format it",
                    f"run lsblk {d} on the host to see why",
                )
            mounts = dev.get("mnt", "").split()
            if mounts:
                raise StepRefused(
                    host,
                    f"{d} is mounted at {', '.join(mounts)}: refusing to use it for scratch",
                    "unmount it and remove it from fstab first, or pick other devices",
                )
            rc = dev.get("blkid_rc")
            if rc not in (0, 2):
                raise StepRefused(
                    host,
                    f"blkid -p exited {rc} on {d}: cannot prove it is blank (ambivalent or colliding signatures, "
                    "or a probing error), refusing to format it",
                    f"inspect it with wipefs --no-act {d}; {wipe}",
                )
            if rc == 0 and not ours:
                raise StepRefused(host, f"{d} holds a {kind or 'unknown'} signature: refusing to format it", wipe)
            if s["wipefs"]:
                sigs = _wipefs(dev.get("wipe", "")) if dev.get("wipe_rc") == 0 else None
                if sigs is None:
                    raise StepRefused(
                        host,
                        f"wipefs --no-act failed on {d} (exit {dev.get('wipe_rc')}): cannot prove it is blank",
                        f"run wipefs --no-act {d} on the host to see why",
                    )
                foreign = [x for x in sigs if not (ours and x.get("type") == kind)]
                if foreign:
                    found = ", ".join(f"{x.get('type')} at {x.get('offset')}" for x in foreign)
                    raise StepRefused(host, f"{d} holds signature(s) {found}: refusing to format it", wipe)
            if int(str(dev.get("kids", "1")).strip() or "1") > 1 and not ours:
                raise StepRefused(
                    host, f"{d} has partitions or holders: refusing to format it", "pick whole, unused disks"
                )

    def _assemblable(self, s: dict[str, Any]) -> bool:
        """Every device is a member of one array of ours, of exactly these many devices."""
        seen: set[tuple[str, str]] = set()
        for d in self.devices:
            dev = s["devs"][d]
            md = _export(dev.get("mdexam", "")) if dev.get("mdexam_rc") == 0 else {}
            if not self._ours_member(_export(dev.get("blkid", ""))) or not md.get("MD_UUID"):
                return False
            seen.add((md["MD_UUID"], md.get("MD_DEVICES", "")))
        return len(seen) == 1 and next(iter(seen))[1] == str(len(self.devices))

    def admit(self, r: Runner, found: Check, journaled: dict[str, Any] | None) -> None:
        """Refusals come before anything is written (journal included)."""
        s: dict[str, Any] = found.state
        if found.done:
            return
        if self.raid and not s["md"]:
            raise _no_md(r.host)
        if self.raid and s["target"] is not None and s["members"]:
            reals = sorted(str(info.get("real", "")).strip() for info in s["devs"].values())
            if sorted(s["members"]) != reals:
                raise StepRefused(
                    r.host,
                    f"{self.array} is assembled from {', '.join(sorted(s['members']))}, not from the configured "
                    f"{', '.join(self.devices)}",
                    f"if that array is unwanted, unmount it and stop it (mdadm --stop {self.array}), then re-run",
                )
        if not self._ours_fs(s["target"]):
            self._refuse_unsafe(r.host, s)

    def apply(self, r: Runner, layout: HostLayout, found: Check) -> dict[str, Any]:
        self.admit(r, found, None)  # no I/O: the same refusals, should apply ever be called alone
        s: dict[str, Any] = found.state
        mp, fstab = layout.path(self.mountpoint), layout.path("/etc/fstab")
        if not self._ours_fs(s["target"]):
            if self.raid:
                if s["target"] is None and self._assemblable(s):
                    r.run(
                        ["mdadm", "--assemble", self.array, *self.devices],
                        sudo=True,
                        write=True,
                        label="mdadm --assemble",
                    )
                elif s["target"] is None:
                    self._need_consent(r.host)
                    # --run only skips mdadm's "appears to contain ... continue?" question, which
                    # would otherwise fail on our closed stdin: the disks were just proven blank
                    # (or members of our own earlier array) by _refuse_unsafe.
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
                tinfo = r.run(
                    f"blkid -p -o export {q(self.array)}; rc=$?; [ $rc -eq 0 ] || [ $rc -eq 2 ]",
                    sudo=True,
                    label="blkid array",
                ).stdout
                s["target"] = _export(tinfo)
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
        uuid = _export(r.run(f"blkid -p -o export {q(self.target)}", sudo=True, label="blkid").stdout).get("UUID", "")
        if not uuid:
            raise StepFailed(r.host, f"{self.target} has no filesystem UUID after mkfs", "check dmesg")
        real = r.run(f"readlink -f {q(self.target)}", sudo=True, label="readlink").stdout.strip()
        mounted = s["mounted"] and s["mounted"] in (real, self.target)
        parts = [f"mkdir -p {q(mp)}"]
        if not mounted:
            parts.append(f"mount -t {q(self.fstype)} -o noatime {q(self.target)} {q(mp)}")
        line = (
            f"UUID={uuid} {fstab_escape(self.mountpoint)} {self.fstype} "
            f"defaults,noatime,nofail,x-systemd.device-timeout=10s 0 2 {SCRATCH_MARK}"
        )
        parts.append(rewrite_file_script(fstab, SCRATCH_MARK, line))
        if self.raid:
            conf = layout.path(MDADM_CONF)
            parts.append(
                f"mkdir -p {q(posixpath.dirname(conf))} && {{ grep -qF {q(self.ARRAY_NAME)} {q(conf)} 2>/dev/null || "
                f"mdadm --detail --brief {q(self.array)} >> {q(conf)}; }}"
            )
        r.run(" && ".join(parts), sudo=True, write=True, label="mount scratch")
        return found.before

    def _need_consent(self, host: str) -> None:
        if not self.consent:
            raise StepRefused(
                host,
                f"creating scratch on {', '.join(self.devices)} would format them",
                "set scratch.format: true in the config to consent (blank disks only)",
            )

    def undo(self, r: Runner, layout: HostLayout, record: dict[str, Any]) -> None:
        """Unmount and forget (fstab, mdadm.conf, stop the array); the data stays on the disks.

        Uses the record's mountpoint and array (the scratch being undone may be an older one
        than this step's), falling back to this step's for records that lack them."""
        mp = layout.path(str(record.get("mountpoint") or self.mountpoint))
        array = record.get("array", self.array if self.raid else None)
        fstab, conf = layout.path("/etc/fstab"), layout.path(MDADM_CONF)
        parts = [
            f"if findmnt -n --mountpoint {q(mp)} >/dev/null 2>&1; then umount {q(mp)}; fi",
            f"if [ -f {q(fstab)} ]; then {rewrite_file_script(fstab, SCRATCH_MARK)}; fi",
        ]
        if array:
            parts.append(f"if [ -f {q(conf)} ]; then {rewrite_file_script(conf, self.ARRAY_NAME)}; fi")
            parts.append(f"if [ -b {q(array)} ]; then mdadm --stop {q(array)}; fi")
        r.run(" && ".join(parts), sudo=True, write=True, label="undo scratch")


def _export(text: str) -> dict[str, str]:
    """``blkid -o export`` / ``mdadm --export`` (KEY=value, whitespace separated) → dict."""
    out = {}
    for token in text.split():
        k, sep, v = token.partition("=")
        if sep:
            out[k] = v.strip('"')
    return out


def _wipefs(text: str) -> list[dict[str, Any]] | None:
    """``wipefs --no-act --json`` → its signatures (empty output: none); None if unreadable."""
    if not text.strip():
        return []
    try:
        sigs = json.loads(text).get("signatures")
    except (ValueError, AttributeError):
        return None
    return [x for x in sigs if isinstance(x, dict)] if isinstance(sigs, list) else None


# --- journal and engine ---------------------------------------------------------------------


@dataclass(frozen=True)
class JournalLock:
    """A held journal lock: the token that proves it is ours, and how the owner is named."""

    token: str
    owner: str
    broke: str | None = None
    """The owner of a stale lock this one replaced, if any (reported, never silent)."""


_SAFE_OWNER = re.compile(r"[^\x20-\x7e]")

# The host-side process of this SSH connection: the nearest sshd ancestor ("sshd: user@notty",
# or sshd-session on OpenSSH >= 9.8). It lives exactly as long as the connection, whatever runs
# below it (sudo, timeout, sh). Written as "pid starttime" (/proc/PID/stat field 22), so a
# recycled pid never passes for the owner. 0 0 when there is none (not over sshd).
_MY_SESSION = """me=0; born=0; p=$$
while [ "$p" -gt 1 ] 2>/dev/null; do
  st=$(cat "/proc/$p/stat" 2>/dev/null) || break
  c=${st#*(}; c=${c%)*}
  set -- ${st##*) }
  case "$c" in sshd*) me=$p; born=${20}; break ;; esac
  p=$2
done
born_of() { x=$(cat "/proc/$1/stat" 2>/dev/null) || return 0; set -- ${x##*) }; echo "${20}"; }
"""


def _lock_script(layout: HostLayout, body: str) -> str:
    """``body`` run with the journal directory ``flock``ed (fd 9), after ``_MY_SESSION``."""
    d, lock = posixpath.dirname(layout.journal), layout.journal_lock
    return (
        f"D={q(d)}; L={q(lock)}\n"
        "command -v flock >/dev/null 2>&1 || { echo '@@noflock'; exit 3; }\n"
        'mkdir -p "$D" && exec 9<"$D" || { echo \'@@nodir\'; exit 3; }\n'
        f"{_MY_SESSION}{body}"
    )


_GUARD = "flock -x -w 30 9 || { echo '@@guard'; exit 3; }\n"


def _owner(purpose: str) -> str:
    try:
        who = getpass.getuser()
    except (KeyError, OSError):
        who = f"uid {os.getuid()}"
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    text = f"{who}@{socket.gethostname()} pid {os.getpid()} ({purpose}, since {since})"
    return _SAFE_OWNER.sub("?", text)[:200]


def _lock_trouble(r: Runner, res: Any, what: str) -> BareMetalError:
    if "@@noflock" in res.stdout:
        return StepFailed(r.host, "flock is not installed, so the journal cannot be locked", "install util-linux")
    if "@@nodir" in res.stdout:
        return StepFailed(
            r.host,
            f"could not {what}: its directory cannot be created or opened",
            "check the layout root's permissions",
        )
    if "@@guard" in res.stdout:
        return StepFailed(
            r.host,
            f"could not {what}: the journal directory stayed flocked for 30 s",
            "a stuck fullserver command on the host? check `fuser -v /var/lib/fullserver`",
        )
    return CommandFailed(
        r.host,
        f"could not {what}: exited {res.exit_status}: {res.tail()}",
        "see the command's message",
        exit_status=res.exit_status,
        stderr=res.stderr,
    )


def lock_journal(
    r: Runner,
    layout: HostLayout,
    *,
    purpose: str = "converge",
    wait: float = LOCK_WAIT,
    stale_after: float = LOCK_STALE_AFTER,
) -> JournalLock:
    """Take the host's journal lock, waiting up to ``wait`` seconds for another run's; a stale lock
    (see the module docstring) is broken. Raises ``JournalLocked`` naming the owner on timeout.

    One remote command however long it waits (the loop runs on the host), and not a write: the
    lock is bookkeeping, so a converge with nothing to change still runs zero writes."""
    token = secrets.token_hex(16)
    owner = _owner(purpose)
    body = (
        f"T={q(token)}; O={q(owner)}; S={int(stale_after)}; end=$(( $(date +%s) + {max(0, int(wait))} ))\n"
        "while :; do\n"
        f"  {_GUARD}"
        "  state=free; tok=; sp=0; sb=0; old=; age=0\n"
        '  if [ -e "$L" ]; then\n'
        '    { read -r tok; read -r sp sb; read -r old; } < "$L"\n'
        '    age=$(( $(date +%s) - $(stat -c %Y "$L" 2>/dev/null || date +%s) ))\n'
        "    live=unknown\n"
        '    if [ "${sp:-0}" -gt 0 ] 2>/dev/null; then\n'
        '      if [ -n "$sb" ] && [ "$(born_of "$sp")" = "$sb" ]; then live=yes; else live=no; fi\n'
        "    fi\n"
        '    if [ "$tok" = "$T" ]; then state=ours\n'
        '    elif [ "$live" = no ] || [ "$age" -gt "$S" ]; then state=stale\n'
        "    else state=held; fi\n"
        "  fi\n"
        '  if [ "$state" != held ]; then\n'
        '    t=$(mktemp "$L.XXXXXX") && printf \'%s\\n%s %s\\n%s\\n\' "$T" "$me" "$born" "$O" > "$t" \\\n'
        '      && chmod 0600 "$t" && mv -f "$t" "$L" || { rm -f "$t"; echo \'@@write\'; exit 3; }\n'
        '    [ "$state" = stale ] && printf \'@@broke %s\\n\' "$old"\n'
        "    echo '@@acquired'; exit 0\n"
        "  fi\n"
        "  flock -u 9\n"
        '  if [ "$(date +%s)" -ge "$end" ]; then printf \'@@held %s %s\\n\' "$age" "$old"; exit 3; fi\n'
        "  sleep 1\n"
        "done\n"
    )
    start = time.monotonic()
    res = r.run(_lock_script(layout, body), sudo=True, check=False, timeout=wait + 60, label="lock journal")
    out = res.stdout
    if "@@acquired" in out:
        broke = next((ln.removeprefix("@@broke").strip() for ln in out.splitlines() if ln.startswith("@@broke")), None)
        if broke is not None:
            broke = _SAFE_OWNER.sub("?", broke)[:200] or "an unnamed owner"
        return JournalLock(token, owner, broke)
    held = next((ln.removeprefix("@@held ") for ln in out.splitlines() if ln.startswith("@@held ")), None)
    if held is not None:
        age, _, who = held.partition(" ")
        raise JournalLocked(
            r.host,
            _SAFE_OWNER.sub("?", who.strip())[:200] or "an unnamed owner",
            int(age) if age.isdigit() else 0,
            round(time.monotonic() - start),
        )
    raise _lock_trouble(r, res, "lock the journal")


def unlock_journal(r: Runner, layout: HostLayout, lock: JournalLock) -> None:
    """Release the lock if it is still ours (a broken and re-taken lock is left to its new owner)."""
    body = f'{_GUARD}tok=; read -r tok < "$L" 2>/dev/null\nif [ "$tok" = {q(lock.token)} ]; then rm -f "$L"; fi\n'
    res = r.run(_lock_script(layout, body), sudo=True, check=False, label="unlock journal")
    if not res.ok:
        raise _lock_trouble(r, res, "unlock the journal")


@contextmanager
def journal_locked(
    r: Runner, layout: HostLayout, *, purpose: str = "converge", wait: float = LOCK_WAIT
) -> Iterator[JournalLock]:
    """Hold the journal lock for the block. A release that fails (the connection died) is not an
    error: the lock names the connection's sshd session, so it goes stale when that session ends."""
    lock = lock_journal(r, layout, purpose=purpose, wait=wait)
    try:
        yield lock
    finally:
        with suppress(BareMetalError):
            unlock_journal(r, layout, lock)


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


def write_journal(r: Runner, layout: HostLayout, journal: dict[str, Any], lock: JournalLock | None = None) -> None:
    """Write (or, with no step left, remove) the journal atomically. With ``lock``: only while the
    lock is still ours (checked under the ``flock``), and the write is the lock's heartbeat."""
    if not journal["steps"]:
        script, label = f"rm -f {q(layout.journal)}", "remove journal"
    else:
        script, label = write_file_script(layout.journal, json.dumps(journal, indent=1) + "\n", "0600"), "write journal"
    if lock is None:
        r.run(script, sudo=True, write=True, label=label)
        return
    body = (
        f'{_GUARD}tok=; read -r tok < "$L" 2>/dev/null\n'
        f"[ \"$tok\" = {q(lock.token)} ] || {{ echo '@@lost'; exit 3; }}\n"
        f'touch "$L" && {script}\n'
    )
    res = r.run(_lock_script(layout, body), sudo=True, write=True, check=False, label=label)
    if "@@lost" in res.stdout:
        raise StepFailed(
            r.host,
            "the journal lock was broken by another run (stale: no heartbeat for a long time); this run stopped",
            "re-run; steps resume where they stopped",
        )
    if not res.ok:
        raise _lock_trouble(r, res, label)


@dataclass
class Outcome:
    """What a converge did on one host."""

    host: str
    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    undone: list[str] = field(default_factory=list)
    writes: int = 0
    journal: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    """Things a person should hear about (a stale journal lock that was broken)."""


def plan(r: Runner, layout: HostLayout, steps: Sequence[Step]) -> dict[str, str]:
    """Read-only: what converge would do, per step id → ``"ok"`` / ``"apply: <why>"`` / ``"undo"``."""
    journal = read_journal(r, layout)
    out: dict[str, str] = {}
    for step in steps:
        found = step.check(r, layout)
        entry = journal["steps"].get(step.id)
        same = entry is not None and entry.get("desired") == step.desired()
        if found.done and same and entry is not None and entry.get("status") == "applied":
            out[step.id] = "ok"
        elif entry is not None and not same and step.undo_before_change:
            out[step.id] = "replace: undo the old, apply the new"
        elif found.done:
            out[step.id] = "journal"
        else:
            out[step.id] = f"apply: {found.detail}"
    for sid in journal["steps"]:
        if sid not in {s.id for s in steps}:
            out[sid] = "undo"
    return out


def _record(journal: dict[str, Any], step: Step, undo: dict[str, Any], status: str) -> None:
    journal["steps"][step.id] = {"desired": step.desired(), "undo": undo, "status": status, "at": time.time()}


def converge(
    r: Runner,
    layout: HostLayout,
    steps: Sequence[Step],
    *,
    undo_unlisted: dict[str, Step] | None = None,
    lock_wait: float = LOCK_WAIT,
) -> Outcome:
    """Bring the host to the desired steps; undo journaled steps no longer desired.

    ``undo_unlisted`` maps journaled step ids that are no longer wanted to a Step able to undo
    them (the provider rebuilds them from its old inputs). Holds the journal lock throughout
    (waiting up to ``lock_wait`` seconds for another run's).
    """
    with journal_locked(r, layout, purpose="converge", wait=lock_wait) as lock:
        return _converge(r, layout, steps, undo_unlisted, lock)


def _converge(
    r: Runner, layout: HostLayout, steps: Sequence[Step], undo_unlisted: dict[str, Step] | None, lock: JournalLock
) -> Outcome:
    before = r.writes
    journal = read_journal(r, layout)
    outcome = Outcome(r.host)
    if lock.broke is not None:
        outcome.notes.append(f"broke a stale journal lock held by {lock.broke}")
    for step in steps:
        entry = journal["steps"].get(step.id)
        if entry is not None and step.undo_before_change and entry.get("desired") != step.desired():
            # Not changeable in place (scratch on other devices, at another mountpoint): the old
            # one comes down first, by its own journaled record, then the new one is applied.
            step.undo(r, layout, entry["undo"])
            del journal["steps"][step.id]
            write_journal(r, layout, journal, lock)
            outcome.undone.append(step.id)
            entry = None
        found = step.check(r, layout)
        journaled = entry["undo"] if entry is not None else None
        step.admit(r, found, journaled)
        record = step.merge_undo(journaled, found.before)
        if found.done:
            if (
                entry is None
                or entry.get("status") != "applied"
                or entry.get("desired") != step.desired()
                or entry.get("undo") != record
            ):
                # In place but not (fully) journaled: a run cut short after apply. Record it.
                _record(journal, step, record, "applied")
                write_journal(r, layout, journal, lock)
            outcome.unchanged.append(step.id)
            continue
        # Intent first, with the *original* values, so a cut connection never loses them.
        _record(journal, step, record, "applying")
        write_journal(r, layout, journal, lock)
        kept = step.apply(r, layout, replace(found, before=record))
        step.verify(r, layout)
        _record(journal, step, kept, "applied")
        write_journal(r, layout, journal, lock)
        outcome.changed.append(step.id)
    wanted = {s.id for s in steps}
    for sid in [s for s in reversed(list(journal["steps"])) if s not in wanted]:
        undoer = (undo_unlisted or {}).get(sid)
        if undoer is None:
            continue
        undoer.undo(r, layout, journal["steps"][sid]["undo"])
        del journal["steps"][sid]
        write_journal(r, layout, journal, lock)
        outcome.undone.append(sid)
    outcome.writes = r.writes - before
    outcome.journal = journal
    return outcome


def revert(r: Runner, layout: HostLayout, steps: Sequence[Step], *, lock_wait: float = LOCK_WAIT) -> Outcome:
    """Undo every journaled step we know, newest first, and drop it from the journal (holding the
    journal lock throughout, like ``converge``)."""
    with journal_locked(r, layout, purpose="revert", wait=lock_wait) as lock:
        return _revert(r, layout, steps, lock)


def _revert(r: Runner, layout: HostLayout, steps: Sequence[Step], lock: JournalLock) -> Outcome:
    before = r.writes
    journal = read_journal(r, layout)
    by_id = {s.id: s for s in steps}
    outcome = Outcome(r.host)
    if lock.broke is not None:
        outcome.notes.append(f"broke a stale journal lock held by {lock.broke}")
    for sid in reversed(list(journal["steps"])):
        step = by_id.get(sid)
        if step is None:
            continue
        step.undo(r, layout, journal["steps"][sid]["undo"])
        del journal["steps"][sid]
        write_journal(r, layout, journal, lock)
        outcome.undone.append(sid)
    outcome.writes = r.writes - before
    outcome.journal = journal
    return outcome


# --- configuration → steps ------------------------------------------------------------------


class _Camel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)


class ScratchConfig(_Camel):
    devices: list[str] = Field(min_length=1, description="whole disks: /dev/... paths, ideally /dev/disk/by-id/...")
    mountpoint: str = "/mnt/scratch"
    fstype: str = Field(default="ext4", pattern=r"^[a-z0-9]{1,16}$")
    format: bool = Field(default=False, description="consent to create the array and filesystem on blank disks")

    @field_validator("devices")
    @classmethod
    def _devices(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("a device is listed twice")
        return [check_device(d, f"device {i}") for i, d in enumerate(v)]

    @field_validator("mountpoint")
    @classmethod
    def _mountpoint(cls, v: str) -> str:
        return check_path(v, "mountpoint", mountpoint=True)


class ServiceUserConfig(_Camel):
    name: str = Field(pattern=r"^[a-z_][a-z0-9_-]{0,31}$")
    authorized_keys: list[str] = Field(min_length=1)

    @field_validator("authorized_keys")
    @classmethod
    def _keys(cls, v: list[str]) -> list[str]:
        return [check_authorized_key(k, f"key {i}") for i, k in enumerate(v)]


class HostConfig(_Camel):
    """What to configure on every host (stack config ``fullserver:dedicated.configure``)."""

    scratch: ScratchConfig | None = None
    network_tuning: bool | dict[str, str] = False
    hugepages: int | None = Field(default=None, ge=0)
    gpu_persistence: bool = False
    service_user: ServiceUserConfig | None = None
    root: str = "/"
    sysctl_dir: str = "/proc/sys"

    @field_validator("network_tuning")
    @classmethod
    def _sysctls(cls, v: bool | dict[str, str]) -> bool | dict[str, str]:
        if isinstance(v, dict):
            for key, value in v.items():
                check_sysctl(key, value, "networkTuning")
        return v

    @field_validator("root", "sysctl_dir")
    @classmethod
    def _paths(cls, v: str) -> str:
        return check_path(v, "path")

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
