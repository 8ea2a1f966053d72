"""Boot-time configuration shared by AWS user data, GCP startup scripts and TPU VM metadata.

One script, rendered per cloud, installs a systemd oneshot unit that runs on *every* boot
(AWS user data runs only on the first one) and:

* assembles the local NVMe disks into one RAID0 array mounted at ``/scratch``. Local SSDs and
  instance store are ephemeral: after a stop/start they come back blank, so the array is created
  again; on a reboot it is re-assembled. Where the Deep Learning AMI already mounted the instance
  store at ``/opt/dlami/nvme`` (DLAMI release notes, "nvme_location"), ``/scratch`` links to it
  instead of fighting over the devices.
* formats the data disk only when it carries no filesystem *and* no partition table, then mounts
  it at ``/data`` with ``nofail`` (a dataset disk is never reformatted; read-only disks are never
  formatted at all).

Prior art: Google Cluster Toolkit ``setup-raid.yml`` (guards on the mount point, devices by id,
``nofail``). Devices are found by stable ``/dev/disk/by-id`` names, never by ``/dev/nvmeXn1``
order, which changes between boots.
"""

from __future__ import annotations

import base64
import json
import shlex
from dataclasses import dataclass

# Stable device names of local NVMe: AWS instance store and GCP local SSD (NVMe interface).
AWS_INSTANCE_STORE = "/dev/disk/by-id/nvme-Amazon_EC2_NVMe_Instance_Storage_*"
GCP_LOCAL_SSD = "/dev/disk/by-id/google-local-nvme-ssd-*"
# Data disks: the non-root EBS volume; the GCE disk attached with device name "data"; the first
# data disk of a TPU VM (TPU VMs name attached disks persistent-disk-N).
AWS_EBS = "/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_*"
GCP_DATA = "/dev/disk/by-id/google-data"
TPU_DATA = "/dev/disk/by-id/google-persistent-disk-1"

DLAMI_NVME = "/opt/dlami/nvme"


@dataclass(frozen=True)
class DiskPlan:
    """What the boot script should find: how many scratch devices, and whether a data disk exists."""

    scratch_glob: str
    scratch_devices: int
    data_glob: str
    data_disk: bool
    data_read_only: bool = False


_DISKS = r"""#!/bin/bash
# fullserver: /scratch = RAID0 over local NVMe, /data = the data disk. Idempotent; runs every boot.
set -euo pipefail
SCRATCH_GLOB=__SCRATCH_GLOB__
SCRATCH_EXPECTED=__SCRATCH_EXPECTED__
DATA_GLOB=__DATA_GLOB__
DATA_WANTED=__DATA_WANTED__
DATA_READ_ONLY=__DATA_READ_ONLY__

has_signature() {  # a filesystem or a partition table: never format over it
  [ -n "$(blkid -p -o value -s TYPE "$1" 2>/dev/null)" ] || [ -n "$(blkid -p -o value -s PTTYPE "$1" 2>/dev/null)" ]
}

list_devices() {  # whole devices only, sorted, resolved to /dev/nvmeXnY
  local path
  for path in $1; do
    [ -e "$path" ] || continue
    case "$path" in *-part*) continue ;; esac
    readlink -f "$path"
  done | sort -u
}

scratch() {
  [ "$SCRATCH_EXPECTED" -gt 0 ] || return 0
  mountpoint -q /scratch && return 0
  if mountpoint -q __DLAMI_NVME__; then
    ln -sfn __DLAMI_NVME__ /scratch
    return 0
  fi
  local devs=() tries=0
  while true; do
    mapfile -t devs < <(list_devices "$SCRATCH_GLOB")
    if [ "${#devs[@]}" -ge "$SCRATCH_EXPECTED" ] || [ "$tries" -ge 60 ]; then break; fi
    tries=$((tries + 1)); sleep 2
  done
  if [ "${#devs[@]}" -eq 0 ]; then echo "fullserver: no local NVMe found" >&2; return 0; fi
  local dev
  if [ "${#devs[@]}" -eq 1 ]; then
    dev="${devs[0]}"
  else
    command -v mdadm >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mdadm; }
    dev=/dev/md/fullserver-scratch
    if [ ! -e "$dev" ]; then
      mdadm --assemble "$dev" "${devs[@]}" 2>/dev/null \
        || mdadm --create "$dev" --level=0 --raid-devices="${#devs[@]}" --run "${devs[@]}"
    fi
  fi
  has_signature "$dev" || mkfs.ext4 -q -F -m 0 -E lazy_itable_init=1,lazy_journal_init=1,nodiscard "$dev"
  [ -L /scratch ] && rm -f /scratch
  mkdir -p /scratch
  mount -o defaults,noatime,nofail,discard "$dev" /scratch
  chmod 1777 /scratch
}

data() {
  [ "$DATA_WANTED" = 1 ] || return 0
  mountpoint -q /data && return 0
  local root_disk dev="" path
  root_disk="$(lsblk -no PKNAME "$(findmnt -no SOURCE /)" 2>/dev/null || true)"
  for path in $(list_devices "$DATA_GLOB"); do
    [ "$(basename "$path")" = "$root_disk" ] && continue
    dev="$path"; break
  done
  if [ -z "$dev" ]; then echo "fullserver: data disk not found" >&2; return 0; fi
  mkdir -p /data
  if [ "$DATA_READ_ONLY" = 1 ]; then
    mount -o ro,noatime,nofail "$dev" /data
    return 0
  fi
  has_signature "$dev" || mkfs.ext4 -q -F -m 0 -E lazy_itable_init=1,lazy_journal_init=1 "$dev"
  mount -o defaults,noatime,nofail "$dev" /data
  local uuid
  uuid="$(blkid -o value -s UUID "$dev")"
  grep -q "UUID=$uuid" /etc/fstab || echo "UUID=$uuid /data ext4 defaults,noatime,nofail 0 2" >> /etc/fstab
}

scratch
data
"""

_UNIT = """[Unit]
Description=fullserver local NVMe scratch (RAID0) and data disk
After=local-fs.target network-online.target
Wants=network-online.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/fullserver-disks

[Install]
WantedBy=multi-user.target
"""


def disks_script(plan: DiskPlan) -> str:
    """The disk script itself (installed as /usr/local/sbin/fullserver-disks)."""
    values = {
        "__SCRATCH_GLOB__": shlex.quote(plan.scratch_glob),
        "__SCRATCH_EXPECTED__": str(plan.scratch_devices),
        "__DATA_GLOB__": shlex.quote(plan.data_glob),
        "__DATA_WANTED__": "1" if plan.data_disk else "0",
        "__DATA_READ_ONLY__": "1" if plan.data_read_only else "0",
        "__DLAMI_NVME__": DLAMI_NVME,
    }
    text = _DISKS
    for key, value in values.items():
        text = text.replace(key, value)
    return text


def _heredoc(path: str, content: str, mode: str) -> str:
    marker = "FULLSERVER_EOF"
    assert marker not in content
    return f"install -d -m 0755 {shlex.quote(path.rsplit('/', 1)[0])}\ncat > {shlex.quote(path)} <<'{marker}'\n{content}{marker}\nchmod {mode} {shlex.quote(path)}\n"


def gcp_gpu_metrics() -> str:
    """Ops Agent: reports agent.googleapis.com/gpu/utilization, which the serving autoscaler holds.

    The install script is Google's documented one ("Install the Ops Agent"), fetched over HTTPS to a
    file and run, and only when the agent is missing.
    """
    return (
        "if ! systemctl list-unit-files google-cloud-ops-agent.service >/dev/null 2>&1; then\n"
        "  curl -fsSL -o /tmp/add-ops-agent-repo.sh https://dl.google.com/cloudagents/add-google-cloud-ops-agent-repo.sh\n"
        "  bash /tmp/add-ops-agent-repo.sh --also-install\n"
        "fi\n"
    )


def aws_gpu_metrics() -> str:
    """CloudWatch agent (shipped on the DLAMI): GPU utilisation per Auto Scaling group.

    ``nvidia_gpu`` publishes ``CWAgent/nvidia_smi_utilization_gpu``; aggregating by
    ``AutoScalingGroupName`` gives the group average the target-tracking policy holds.
    """
    config = {
        "metrics": {
            "namespace": "CWAgent",
            "append_dimensions": {"AutoScalingGroupName": "${aws:AutoScalingGroupName}"},
            "aggregation_dimensions": [["AutoScalingGroupName"]],
            "metrics_collected": {
                "nvidia_gpu": {"measurement": ["utilization_gpu"], "metrics_collection_interval": 60}
            },
        }
    }
    path = "/opt/aws/amazon-cloudwatch-agent/etc/fullserver-gpu.json"
    return _heredoc(path, json.dumps(config, indent=2) + "\n", "0644") + (
        "/opt/aws/amazon-cloudwatch-agent/bin/amazon-cloudwatch-agent-ctl -a fetch-config -m ec2 "
        f"-c file:{path} -s || echo 'fullserver: CloudWatch agent not available' >&2\n"
    )


def boot_script(plan: DiskPlan, extra: str = "") -> str:
    """The full startup script / user data: install the disk unit, start it, then ``extra``."""
    return (
        "#!/bin/bash\n"
        "# fullserver boot configuration (idempotent: safe on every boot and on re-runs).\n"
        "set -euo pipefail\n"
        + _heredoc("/usr/local/sbin/fullserver-disks", disks_script(plan), "0755")
        + _heredoc("/etc/systemd/system/fullserver-disks.service", _UNIT, "0644")
        + "systemctl daemon-reload\n"
        "systemctl enable fullserver-disks.service\n"
        "systemctl start fullserver-disks.service\n" + extra
    )


def user_data_base64(script: str) -> str:
    """Launch templates take user data base64-encoded (EC2 API)."""
    return base64.b64encode(script.encode()).decode()
