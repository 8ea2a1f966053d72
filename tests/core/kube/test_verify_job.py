"""The Job that measures one node: pinned, tolerated, holding the node's accelerators, read-only
host mounts and nothing privileged, bounded in time and removed after; and the script it runs."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from fullserver.baremetal.measure import Caps
from fullserver.baremetal.probe import PROBE_SCRIPT
from fullserver.kube.verify_job import (
    DONE,
    GPU_ENV,
    GPU_IMAGE,
    JOB_PREFIX,
    TPU_IMAGE,
    TTL_AFTER_FINISHED,
    default_image,
    job_name,
    measure_script,
    on_host,
    verify_job,
)
from fullserver.plan import StackPlan
from fullserver.platforms import name_rules
from fullserver.platforms.kubernetes import JOB_TYPE

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _job(plans: dict[str, StackPlan], stack: str, node: str = "gke-ml-prod-gpu-1a2b3c4d-x9z8") -> dict:  # type: ignore[type-arg]
    plan = plans[stack].spec.kube
    assert plan is not None
    return verify_job(
        plan, node, name=job_name(node), namespace="ml", image=default_image(plan), caps=Caps(), deadline=780
    )


def test_the_job_is_pinned_to_its_node_and_tolerates_the_pool(plans: dict[str, StackPlan]) -> None:
    job = _job(plans, "gke-gpu-attach")
    pod = job["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {
        "kubernetes.io/hostname": "gke-ml-prod-gpu-1a2b3c4d-x9z8",
        "cloud.google.com/gke-accelerator": "nvidia-l4",
        "fullserver-environment": "gke-gpu-attach",
        # spot with fallback: the pools are bound to the ComputeClass that orders them (kube.fallback)
        "cloud.google.com/compute-class": "fullserver-gke-gpu-attach",
    }
    assert pod["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "cloud.google.com/compute-class", "operator": "Exists", "effect": "NoSchedule"},
    ]
    assert pod["restartPolicy"] == "Never"
    assert job["metadata"]["namespace"] == "ml"
    assert job["metadata"]["labels"]["fullserver-verify-node"] == "gke-ml-prod-gpu-1a2b3c4d-x9z8"


def test_the_container_holds_every_accelerator_of_the_node(plans: dict[str, StackPlan]) -> None:
    gpu = _job(plans, "gke-gpu-attach")["spec"]["template"]["spec"]["containers"][0]
    # 4 x L4 on a g2-standard-48: all four, so the device plugin mounts every GPU into the pod
    assert gpu["resources"]["limits"] == {"cpu": "100m", "memory": "128Mi", "nvidia.com/gpu": "4"}
    assert gpu["resources"]["requests"] == gpu["resources"]["limits"]
    assert gpu["image"] == GPU_IMAGE
    tpu = _job(plans, "gke-tpu-slice")["spec"]["template"]["spec"]
    assert tpu["containers"][0]["resources"]["limits"]["google.com/tpu"] == "4"
    assert tpu["containers"][0]["image"] == TPU_IMAGE
    assert tpu["nodeSelector"]["cloud.google.com/gke-tpu-topology"] == "4x4"
    assert tpu["tolerations"] == [{"key": "google.com/tpu", "operator": "Exists", "effect": "NoSchedule"}]


def test_nothing_is_privileged_and_the_host_is_mounted_read_only(plans: dict[str, StackPlan]) -> None:
    pod = _job(plans, "eks-gpu-cluster")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["securityContext"] == {
        "privileged": False,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    assert all(m["readOnly"] for m in container["volumeMounts"])
    assert {v["hostPath"]["path"] for v in pod["volumes"]} == {"/sys", "/proc"}
    assert not pod.get("hostNetwork") and not pod.get("hostPID")
    assert pod["automountServiceAccountToken"] is False  # the pod never talks to the API server


def test_the_job_is_bounded_in_time_and_removed_after(plans: dict[str, StackPlan]) -> None:
    spec = _job(plans, "gke-gpu-attach")["spec"]
    assert spec["activeDeadlineSeconds"] == 780
    assert spec["ttlSecondsAfterFinished"] == TTL_AFTER_FINISHED > 0
    assert spec["backoffLimit"] == 0  # a failed measurement is reported, not retried


@pytest.mark.parametrize(
    "node",
    ["ip-10-0-12-34.ec2.internal", "gke-ml-prod-gpu-1a2b3c4d-x9z8", "A" * 200, "node_with.dots_and_UNDERSCORES"],
)
def test_job_names_are_dns_labels_with_a_stable_prefix_and_a_random_suffix(node: str) -> None:
    first, second = job_name(node), job_name(node)
    for name in (first, second):
        assert name.startswith(JOB_PREFIX)
        assert len(name) <= 63
        assert DNS_LABEL.match(name), name
        assert name_rules(JOB_TYPE)[0].problem(name) is None  # the rule the graph judges a Job by
    assert first != second  # two runs on one node never collide
    assert job_name(node, "abcde").endswith("-abcde")


def test_the_script_reads_the_nodes_nics_and_mount_table() -> None:
    script = measure_script(Caps(), gpus=True)
    assert "/host/sys/class/net/" in script and "/sys/class/net/" not in script.replace("/host/sys/class/net/", "")
    # CPU topology stays on the container's own sysfs (not per namespace; the awk reads its path)
    assert "/sys/devices/system/cpu/cpu[0-9]*/topology" in script
    assert "/host/proc/1/mountinfo" in script
    assert "nvidia-smi -q -x" in script and "nvidia-smi topo -m" in script
    assert script.rstrip().endswith(f"echo {DONE}")
    assert "nvidia-smi -q -x" not in measure_script(Caps(), gpus=False)
    assert on_host(PROBE_SCRIPT).count("/host/sys/class/net/") == PROBE_SCRIPT.count("/sys/class/net/")


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_the_script_runs_to_its_end_on_a_machine_without_gpus() -> None:
    """Here, with the container paths pointed at this machine's /sys and /proc."""
    script = measure_script(Caps(), gpus=True).replace("/host/sys", "/sys").replace("/host/proc", "/proc")
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=120, check=False).stdout
    assert out.splitlines()[-1] == DONE
    for section in ("os", "cpus", "meminfo", "lsblk", "nics", "gpus", "hostmounts", "devnums", "xml", "nicnuma"):
        assert f"@@fullserver:section {section}" in out


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_a_gpu_script_finds_gke_s_driver_where_its_device_plugin_mounts_it() -> None:
    """GKE mounts the driver at /usr/local/nvidia in every GPU container: nvidia-smi and NVML come
    first on PATH and LD_LIBRARY_PATH whatever the image sets (a --image need not set them)."""
    gpu = measure_script(Caps(), gpus=True)
    assert gpu.startswith(GPU_ENV + "\n")
    assert GPU_ENV not in measure_script(Caps(), gpus=False)  # a TPU node has no NVIDIA driver
    probe = GPU_ENV + '\necho "$PATH"; echo "$LD_LIBRARY_PATH"'
    for inherited, want in ((None, "/usr/local/nvidia/lib64"), ("/opt/x", "/usr/local/nvidia/lib64:/opt/x")):
        env = {"PATH": "/usr/bin:/bin", **({"LD_LIBRARY_PATH": inherited} if inherited else {})}
        out = subprocess.run(["sh", "-c", probe], capture_output=True, text=True, env=env, check=True).stdout
        path, libs = out.splitlines()
        assert path == "/usr/local/nvidia/bin:/usr/bin:/bin" and libs == want
