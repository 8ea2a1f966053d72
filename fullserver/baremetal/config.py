"""What to configure on a host (``HostConfig``), where it lands (``HostLayout``), and the validators
every value passes before it can reach a remote shell.

Validation happens when the config is read (the provider's ``check``, before any host is touched)
with a one-line error naming the field; the operations validate again when built directly, and
quote every value they use (``fullserver.baremetal.shell``).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

JOURNAL = "/var/lib/fullserver/journal.json"
"""The on-host journal of applied steps (under ``HostLayout.root``); the lock sits beside it."""

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


def check_device(value: str, field_name: str) -> str:
    """A ``/dev/...`` path of safe characters, without ``..`` or ``.`` components."""
    if not DEVICE_PATH.match(value) or "/../" in f"{value}/" or "/./" in f"{value}/":
        raise ValueError(
            f"{field_name}: {value!r} is not a device path (expected /dev/... with letters, digits and ._/:+- only)"
        )
    return value


def check_path(value: str, field_name: str, *, mountpoint: bool = False) -> str:
    """An absolute, normalized path; a mountpoint may not be a system directory (mounting over
    ``/var`` or ``/home`` would hide the host's own files)."""
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
    """A dotted kernel parameter name (it becomes a ``/proc/sys`` path) and a one-line value (a
    newline would add a line of our choosing to the persisted sysctl.d file)."""
    if not SYSCTL_KEY.match(key):
        raise ValueError(f"{field_name}: {key!r} is not a kernel parameter name (dotted, like net.core.rmem_max)")
    if not SYSCTL_VALUE.match(value):
        raise ValueError(f"{field_name}.{key}: {value!r} must be one line of printable characters")


def check_authorized_key(value: str, field_name: str) -> str:
    """One ``authorized_keys`` line: a second line would authorize a key nobody asked for."""
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
