"""The configuration steps, one module per concept, each pure: facts and the desired state in,
the exact commands out (``base``). ``build_steps`` turns a ``HostConfig`` into steps, in apply
order (undo runs in reverse).

* ``scratch`` — local NVMe RAID0 scratch: mdadm array, filesystem, mount, fstab; re-assembled or
  re-mounted if it exists; formats only with explicit consent and only disks proven blank;
* ``sysctl`` — network tuning for large transfers, and huge pages;
* ``gpu`` — GPU persistence mode (``nvidia-smi -pm 1``);
* ``user`` — a service user with exactly the given authorized keys.
"""

from __future__ import annotations

from typing import Any

from fullserver.baremetal.config import HostConfig
from fullserver.baremetal.operations.base import Change, HostContext, NoOp, Record, Status, Step
from fullserver.baremetal.operations.gpu import GpuPersistenceStep
from fullserver.baremetal.operations.scratch import ScratchStep
from fullserver.baremetal.operations.sysctl import NETWORK_SYSCTLS, HugepagesStep, SysctlStep
from fullserver.baremetal.operations.user import ServiceUserStep

__all__ = [
    "NETWORK_SYSCTLS",
    "Change",
    "GpuPersistenceStep",
    "HostContext",
    "HugepagesStep",
    "NoOp",
    "Record",
    "ScratchStep",
    "ServiceUserStep",
    "Status",
    "Step",
    "SysctlStep",
    "build_steps",
]


def build_steps(cfg: HostConfig) -> list[Step[Any]]:
    """The steps a config asks for, in apply order (undo runs in reverse)."""
    steps: list[Step[Any]] = []
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
