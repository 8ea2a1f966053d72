"""The Job ``fullserver verify`` runs on one node of a Kubernetes pool, and the script it runs.

Design notes: docs/design/kubernetes.md.
"""

from __future__ import annotations

import secrets
import string
from dataclasses import dataclass, field
from typing import Any

from fullserver.baremetal.measure import NIC_NUMA_SCRIPT, Caps, gpu_script
from fullserver.baremetal.probe import PROBE_SCRIPT, SECTION_FUNCTIONS
from fullserver.kube.manifest import SMOKE_JOBS, Manifest, tolerations
from fullserver.kube.pool import KubePlan, label_value

JOB_PREFIX = "fullserver-verify-"
"""Every verify Job's name starts so: a leftover one is recognisably ours."""
SUFFIX_LENGTH = 5
MAX_NAME = 63
"""A Job's name becomes its pods' ``job-name`` label value: at most 63 characters."""
CONTAINER = "measure"
APP = "fullserver-verify"
HOST_SYS = "/host/sys"
HOST_PROC = "/host/proc"
DONE = "@@fullserver:done"
"""The script's last line: a log without it was cut short."""

GPU_IMAGE = SMOKE_JOBS["gpu"][0]
"""NVIDIA's CUDA base image (Ubuntu): nvidia-smi on PATH (``/usr/local/nvidia/bin``), util-linux's lsblk."""
TPU_IMAGE = "ubuntu:22.04"
"""A TPU node needs no driver in the container: sh, coreutils, grep, awk and lsblk."""

TTL_AFTER_FINISHED = 300
"""Seconds a finished Job may outlive a verify that could not delete it."""
GPU_ENV = 'export PATH="/usr/local/nvidia/bin:$PATH" LD_LIBRARY_PATH="/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"'
"""Where GKE's device plugin mounts the driver in a GPU container (module doc), first on both paths."""
REQUESTS = {"cpu": "100m", "memory": "128Mi"}
"""The measuring container's own CPU and memory: a few shell tools and nvidia-smi."""


def job_name(node: str, suffix: str | None = None) -> str:
    """``fullserver-verify-<node>-<random>``, within 63 characters and a DNS label's alphabet."""
    tail = suffix or "".join(secrets.choice(string.ascii_lowercase + string.digits) for _ in range(SUFFIX_LENGTH))
    room = MAX_NAME - len(JOB_PREFIX) - len(tail) - 1
    middle = "".join(c if c.isalnum() else "-" for c in node.lower())[:room].strip("-")
    return f"{JOB_PREFIX}{middle}-{tail}" if middle else f"{JOB_PREFIX}{tail}"


def on_host(script: str) -> str:
    """A script reading the node's NICs (``/host/sys/class/net``) where it read the container's.

    Only the network class is per network namespace; CPU topology, NUMA nodes, PCI devices, block
    devices and InfiniBand ports read the same in the container's own ``/sys``."""
    return script.replace("/sys/class/net/", f"{HOST_SYS}/class/net/")


def measure_script(caps: Caps, gpus: bool) -> str:
    """The probe (CPU, RAM, disks, NICs, InfiniBand, GPUs), the node's mount table, block device
    numbers and the container's cgroup limits, then on a GPU node ``nvidia-smi -q -x``, ``topo -m``,
    the PCIe capabilities and the NICs' NUMA nodes, and ``DONE``. Each piece that ends with ``exit`` runs in a subshell."""
    parts = [
        *([GPU_ENV] if gpus else []),
        SECTION_FUNCTIONS,
        on_host(PROBE_SCRIPT),
        f"s hostmounts; cat {HOST_PROC}/1/mountinfo; e hostmounts $?",
        # name|maj:min|parent|slaves: a partition's parent is its disk; dm and md devices list members
        f's devnums; for b in {HOST_SYS}/class/block/*; do p=$(readlink -f "$b"); p=${{p%/*}}; '
        'printf \'%s|%s|%s|%s\\n\' "${b##*/}" "$(cat "$b/dev" 2>/dev/null)" "${p##*/}" '
        "\"$(ls \"$b/slaves\" 2>/dev/null | tr '\\n' ' ')\"; done; e devnums 0",
        "s cgroup; nproc; cat /sys/fs/cgroup/cpu.max /sys/fs/cgroup/memory.max 2>/dev/null; e cgroup 0",
    ]
    if gpus:
        parts += [f"( {on_host(gpu_script(caps))} )", f"s nicnuma; ( {on_host(NIC_NUMA_SCRIPT)} ); e nicnuma 0"]
    parts.append(f"echo {DONE}")
    return "\n".join(parts) + "\n"


def _gpu_pool(plan: KubePlan) -> bool:
    return plan.accelerator_resource == "nvidia.com/gpu"


def default_image(plan: KubePlan) -> str:
    return GPU_IMAGE if _gpu_pool(plan) else TPU_IMAGE


def deadline_seconds(caps: Caps, pull_seconds: int) -> int:
    """The pod's whole life: the image pull, then the probe and the GPU commands, with margin."""
    return pull_seconds + 2 * caps.gpu_seconds + 120


def verify_job(
    plan: KubePlan,
    node: str,
    *,
    name: str,
    namespace: str,
    image: str,
    caps: Caps,
    deadline: int,
) -> Manifest:
    """The Job measuring ``node``: pinned to it, tolerating the pool's taints, holding all of its
    accelerators, read-only host mounts, nothing privileged, gone ``TTL_AFTER_FINISHED`` after."""
    labels = {
        "app.kubernetes.io/name": APP,
        "app.kubernetes.io/managed-by": "fullserver",
        "fullserver-verify-node": label_value(node),
    }
    quantities = {**REQUESTS, plan.accelerator_resource: str(plan.accelerators_per_node)}
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": image,
        "command": ["/bin/sh", "-c", measure_script(caps, gpus=_gpu_pool(plan))],
        "env": [{"name": "LC_ALL", "value": "C"}],
        "resources": {"requests": dict(quantities), "limits": dict(quantities)},
        "securityContext": {
            "privileged": False,
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": "host-sys", "mountPath": HOST_SYS, "readOnly": True},
            {"name": "host-proc", "mountPath": HOST_PROC, "readOnly": True},
        ],
    }
    pod_spec: dict[str, Any] = {
        "restartPolicy": "Never",
        # the pool's own selector too (GKE expects a TPU pod to name the TPU type and topology)
        "nodeSelector": {**plan.node_selector, "kubernetes.io/hostname": node},
        "tolerations": tolerations(plan),
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "terminationGracePeriodSeconds": 5,
        "containers": [container],
        "volumes": [
            {"name": "host-sys", "hostPath": {"path": "/sys", "type": "Directory"}},
            {"name": "host-proc", "hostPath": {"path": "/proc", "type": "Directory"}},
        ],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": deadline,
            "ttlSecondsAfterFinished": TTL_AFTER_FINISHED,
            "template": {"metadata": {"labels": labels}, "spec": pod_spec},
        },
    }


PULL_SECONDS = 600
"""Seconds allowed for pulling the measuring image: a node that never pulled it may take minutes."""


@dataclass(frozen=True)
class JobOptions:
    """Where and how the measuring Jobs run."""

    namespace: str = "default"
    image: str | None = None
    """Else ``verify_job.default_image`` for the pool's accelerator."""
    timeout: int | None = None
    """Seconds per node, the pod's own deadline too; else ``deadline_seconds(caps, PULL_SECONDS)``."""
    caps: Caps = field(default_factory=Caps)
    poll_seconds: float = 2.0
    """How often the pod's phase is read while it runs."""
