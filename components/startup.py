"""Boot-time configuration shared by AWS user data, GCP startup scripts and TPU VM metadata.

One script, rendered per cloud, installs a systemd oneshot unit that runs on *every* boot
(AWS user data runs only on the first one) and: see the design notes.

Design notes: docs/design/components.md.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

DLAMI_NVME = "/opt/dlami/nvme"
# An EBS volume attached by ``ec2.VolumeAttachment`` appears only after the instance is running
# (Pulumi creates the volume in the instance's zone, then attaches it); 10 minutes covers creating
# and attaching a large provisioned gp3 volume with room to spare.
DATA_WAIT_SECONDS = 600


@dataclass(frozen=True)
class DiskPlan:
    """What the boot script should find: how many scratch devices, and whether a data disk exists."""

    scratch_glob: str
    scratch_devices: int
    data_glob: str
    data_disk: bool
    data_read_only: bool = False
    data_wait_seconds: int = DATA_WAIT_SECONDS
    """How long the script waits for the data disk to appear (it may be attached after boot)."""


_DISKS = r"""#!/bin/bash
# fullserver: /scratch = RAID0 over local NVMe, /data = the data disk. Idempotent; runs every boot.
# FULLSERVER_* variables override paths and waits (tests run this against loop devices); the
# systemd unit sets none of them.
set -euo pipefail
SCRATCH_GLOB=__SCRATCH_GLOB__
DATA_GLOB=__DATA_GLOB__
SCRATCH_GLOB="${FULLSERVER_SCRATCH_GLOB:-$SCRATCH_GLOB}"
SCRATCH_EXPECTED="${FULLSERVER_SCRATCH_EXPECTED:-__SCRATCH_EXPECTED__}"
SCRATCH_DIR="${FULLSERVER_SCRATCH_DIR:-/scratch}"
SCRATCH_WAIT="${FULLSERVER_SCRATCH_WAIT:-120}"
DATA_GLOB="${FULLSERVER_DATA_GLOB:-$DATA_GLOB}"
DATA_WANTED="${FULLSERVER_DATA_WANTED:-__DATA_WANTED__}"
DATA_READ_ONLY="${FULLSERVER_DATA_READ_ONLY:-__DATA_READ_ONLY__}"
DATA_DIR="${FULLSERVER_DATA_DIR:-/data}"
# An EBS data volume is attached only after its instance runs: wait for it (seconds).
DATA_WAIT="${FULLSERVER_DATA_WAIT:-__DATA_WAIT__}"
DLAMI_NVME="${FULLSERVER_DLAMI_NVME:-__DLAMI_NVME__}"
FSTAB="${FULLSERVER_FSTAB:-/etc/fstab}"
SYS_BLOCK="${FULLSERVER_SYS_BLOCK:-/sys/class/block}"
POLL=2

log() { echo "fullserver-disks: $*" >&2; }

has_fs() { [ -n "$(blkid -p -o value -s TYPE "$1" 2>/dev/null)" ]; }
has_parts() { [ -n "$(blkid -p -o value -s PTTYPE "$1" 2>/dev/null)" ]; }
has_signature() {  # a filesystem or a partition table: never format over it
  has_fs "$1" || has_parts "$1"
}

in_use() {  # mounted (itself or a partition), swap, or held by an array or device mapper: not ours
  [ -n "$(lsblk -nro MOUNTPOINT "$1" 2>/dev/null | tr -d '[:space:]')" ] && return 0
  local holders
  holders="$SYS_BLOCK/$(basename "$1")/holders"
  [ -d "$holders" ] && [ -n "$(ls -A "$holders" 2>/dev/null)" ] && return 0
  return 1
}

list_devices() {  # whole devices only, sorted, resolved to /dev/nvmeXnY
  local path
  for path in $1; do
    [ -e "$path" ] || continue
    case "$path" in *-part*) continue ;; esac
    readlink -f "$path"
  done | sort -u
}

held_by() {  # the md array a device already belongs to: a reboot assembles it on its own, often as md127
  local holder
  for holder in "$SYS_BLOCK/$(basename "$1")"/holders/md*; do
    [ -e "$holder" ] || continue
    echo "/dev/$(basename "$holder")"
    return 0
  done
  return 1
}

scratch() {  # called in a list (`scratch || log`), so each step that can fail returns itself
  [ "$SCRATCH_EXPECTED" -gt 0 ] || return 0
  mountpoint -q "$SCRATCH_DIR" && return 0
  if mountpoint -q "$DLAMI_NVME"; then
    ln -sfn "$DLAMI_NVME" "$SCRATCH_DIR"
    return 0
  fi
  local devs=() waited=0
  while true; do
    mapfile -t devs < <(list_devices "$SCRATCH_GLOB")
    if [ "${#devs[@]}" -ge "$SCRATCH_EXPECTED" ] || [ "$waited" -ge "$SCRATCH_WAIT" ]; then break; fi
    waited=$((waited + POLL)); sleep "$POLL"
  done
  if [ "${#devs[@]}" -eq 0 ]; then log "no local NVMe found"; return 0; fi
  local dev
  if [ "${#devs[@]}" -eq 1 ]; then
    dev="${devs[0]}"
  else
    command -v mdadm >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mdadm; }
    dev=/dev/md/fullserver-scratch
    local existing
    if existing="$(held_by "${devs[0]}")"; then
      dev="$existing"  # the array, assembled at boot under another name: never assembled or created over
    elif [ ! -e "$dev" ]; then
      mdadm --assemble "$dev" "${devs[@]}" 2>/dev/null \
        || mdadm --create "$dev" --level=0 --raid-devices="${#devs[@]}" --run "${devs[@]}" \
        || return 1
    fi
  fi
  has_signature "$dev" || mkfs.ext4 -q -F -m 0 -E lazy_itable_init=1,lazy_journal_init=1,nodiscard "$dev" || return 1
  if [ -L "$SCRATCH_DIR" ]; then rm -f "$SCRATCH_DIR"; fi
  mkdir -p "$SCRATCH_DIR"
  mount -o defaults,noatime,nofail,discard "$dev" "$SCRATCH_DIR" || return 1
  chmod 1777 "$SCRATCH_DIR"
}

find_data() {  # the first whole device of DATA_GLOB that is not the root disk and not in use
  local root_disk path
  root_disk="$(lsblk -no PKNAME "$(findmnt -no SOURCE /)" 2>/dev/null || true)"
  for path in $(list_devices "$DATA_GLOB"); do
    [ -n "$root_disk" ] && [ "$(basename "$path")" = "$root_disk" ] && continue
    in_use "$path" && continue
    echo "$path"
    return 0
  done
  return 1
}

data() {
  [ "$DATA_WANTED" = 1 ] || return 0
  mountpoint -q "$DATA_DIR" && return 0
  local dev="" waited=0
  until dev="$(find_data)"; do
    if [ "$waited" -ge "$DATA_WAIT" ]; then
      log "data disk not attached after ${DATA_WAIT}s; /data is not mounted (re-run: systemctl restart fullserver-disks)"
      return 0
    fi
    waited=$((waited + POLL)); sleep "$POLL"
  done
  udevadm settle --timeout=10 2>/dev/null || true
  mkdir -p "$DATA_DIR"
  if [ "$DATA_READ_ONLY" = 1 ]; then
    if has_fs "$dev"; then mount -o ro,noatime,nofail "$dev" "$DATA_DIR"; else log "read-only $dev has no filesystem"; fi
    return 0
  fi
  if ! has_fs "$dev"; then
    if has_parts "$dev"; then  # someone partitioned it: theirs to mount, never ours to format
      log "$dev has a partition table and no filesystem; leaving it alone"
      return 0
    fi
    mkfs.ext4 -q -F -m 0 -E lazy_itable_init=1,lazy_journal_init=1 "$dev"
  fi
  mount -o defaults,noatime,nofail "$dev" "$DATA_DIR"
  local uuid
  uuid="$(blkid -o value -s UUID "$dev")"
  grep -q "UUID=$uuid" "$FSTAB" 2>/dev/null || echo "UUID=$uuid $DATA_DIR ext4 defaults,noatime,nofail 0 2" >> "$FSTAB"
}

# /data does not depend on /scratch: a scratch that cannot be set up is logged, and /data still mounts.
scratch || log "local NVMe scratch not set up; $SCRATCH_DIR is not mounted (see above; re-run: systemctl restart fullserver-disks)"
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
# bounded: the scratch wait and the data disk wait (DiskPlan.data_wait_seconds) end well before this
TimeoutStartSec=20min

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
        "__DATA_WAIT__": str(plan.data_wait_seconds),
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


MODEL_UNIT = "fullserver-model.service"
MODEL_CONTAINER = "fullserver-model"
MODEL_ENV_FILE = "/etc/fullserver/model-server.env"
"""``KEY=value`` lines handed to the server container: rewritten at every server start from the
serving secrets (``HF_TOKEN``, ``VLLM_API_KEY``) where there are any, so lines written by hand
last only on nodes without secrets. No secret sits in user data or instance metadata."""
GPU_WAIT_SECONDS = 900
"""The Deep Learning VM images build and load the NVIDIA driver on first boot; the server waits
(bounded) until ``nvidia-smi`` sees the GPUs."""

_MODEL = r"""#!/bin/bash
# fullserver: the model server container, run in the foreground by fullserver-model.service.
set -euo pipefail
waited=0
until nvidia-smi -L >/dev/null 2>&1; do
  if [ "$waited" -ge __GPU_WAIT__ ]; then echo "fullserver-model: no GPU after __GPU_WAIT__s" >&2; exit 1; fi
  waited=$((waited + 5)); sleep 5
done
# FULLSERVER_* variables override paths (tests run this with stand-in docker and nvidia-smi);
# the systemd unit sets none of them.
SCRATCH_DIR="${FULLSERVER_SCRATCH_DIR:-/scratch}"
ENV_FILE="${FULLSERVER_MODEL_ENV:-__ENV_FILE__}"
# Weights cached on the local NVMe scratch where there is one (fast re-loads after a restart).
CACHE="${FULLSERVER_MODEL_CACHE:-/var/lib/fullserver/model-cache}"
if mountpoint -q "$SCRATCH_DIR" || [ -L "$SCRATCH_DIR" ]; then CACHE="$SCRATCH_DIR/model-cache"; fi
mkdir -p "$CACHE"
# The secrets (the Hugging Face token as HF_TOKEN, the endpoint's API key as VLLM_API_KEY), fetched
# from the cloud's secret store at every start (rotation needs a restart only) into a file only
# root reads; docker hands them to the container as environment variables.
__SECRETS__
if [ -s "$ENV_FILE.tmp" ]; then mv "$ENV_FILE.tmp" "$ENV_FILE"; fi
# The container never reaches the metadata server (the node's credentials): it needs none.
if command -v iptables >/dev/null 2>&1 && iptables -n -L DOCKER-USER >/dev/null 2>&1; then
  iptables -C DOCKER-USER -d 169.254.169.254/32 -j DROP 2>/dev/null \
    || iptables -I DOCKER-USER -d 169.254.169.254/32 -j DROP
fi
ENV_ARGS=(__KEEP_ALIVE__)
if [ -s "$ENV_FILE" ]; then ENV_ARGS+=(--env-file "$ENV_FILE"); fi
docker rm -f __CONTAINER__ >/dev/null 2>&1 || true
# Pulled only when missing: a restart with the image cached needs no registry (an outage there
# must not stop a replica from coming back).
docker image inspect __IMAGE__ >/dev/null 2>&1 || docker pull __IMAGE__
exec docker run --rm --name __CONTAINER__ --gpus all --ipc=host \
  -p __PORT__:__PORT__ -v "$CACHE":/root/.cache/huggingface "${ENV_ARGS[@]}" \
  __IMAGE__ __ARGS__
"""

_MODEL_UNIT = """[Unit]
Description=fullserver model server (__IMAGE__, port __PORT__)
After=docker.service fullserver-disks.service network-online.target
Requires=docker.service
Wants=network-online.target fullserver-disks.service

[Service]
ExecStart=/usr/local/sbin/fullserver-model
ExecStop=/usr/bin/docker stop -t 30 __CONTAINER__
# restarted whenever it exits: the load balancer's health check sees it down meanwhile
Restart=always
RestartSec=15
# the image pull (~10 GB) and the GPU wait happen before the server starts
TimeoutStartSec=45min

[Install]
WantedBy=multi-user.target
"""

# NVIDIA Container Toolkit install guide (apt): the repository key, the signed source list, the
# package, then `nvidia-ctk runtime configure --runtime=docker` (its `--config` flag is "path to the
# config file for the target runtime": nvidia-container-toolkit, cmd/nvidia-ctk/runtime/configure). The AWS Deep Learning AMIs ship
# Docker and the toolkit; a GCP Deep Learning VM image or a custom image may lack either, so each is
# installed only when missing. The script runs on every boot (a GCP startup script does): docker is
# restarted only when `nvidia-ctk` changed its daemon.json (docker reads it only when it starts), so
# a reboot never restarts docker under containers already started by then.
CONTAINER_RUNTIME = """if ! command -v docker >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io
fi
if ! command -v nvidia-ctk >/dev/null 2>&1; then
  curl -fsSL https://nvidia.github.io/libnvidia-container/gpgkey \
    | gpg --dearmor --yes -o /usr/share/keyrings/nvidia-container-toolkit-keyring.gpg
  curl -fsSL https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list \
    | sed 's#deb https://#deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] https://#g' \
    > /etc/apt/sources.list.d/nvidia-container-toolkit.list
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nvidia-container-toolkit
fi
DOCKER_DAEMON_JSON="${FULLSERVER_DOCKER_DAEMON_JSON:-/etc/docker/daemon.json}"
docker_before="$(sha256sum "$DOCKER_DAEMON_JSON" 2>/dev/null || true)"
nvidia-ctk runtime configure --runtime=docker --config="$DOCKER_DAEMON_JSON" >/dev/null
docker_after="$(sha256sum "$DOCKER_DAEMON_JSON" 2>/dev/null || true)"
systemctl enable docker
if [ "$docker_before" != "$docker_after" ] && systemctl is-active --quiet docker; then
  systemctl restart docker
else
  systemctl start docker
fi
"""


SECRET_VARIABLES = {"token": "HF_TOKEN", "api_key": "VLLM_API_KEY"}
"""What the server reads each secret as: the Hugging Face hub's token, and vLLM's API key (vLLM's
OpenAI server then answers ``/v1`` requests only with ``Authorization: Bearer <key>``; ``/health``
stays open for the load balancer's checks)."""


def _fetch_secrets(secrets: dict[str, list[str]]) -> str:
    """Wrapper lines that write each secret's ``NAME=value`` into the root-only env file."""
    if not secrets:
        return ""
    lines = ['mkdir -p "$(dirname "$ENV_FILE")"', '(umask 077 && : > "$ENV_FILE.tmp")']
    for kind, command in secrets.items():
        variable = SECRET_VARIABLES[kind]
        lines.append(f'value="$({" ".join(shlex.quote(a) for a in command)})"')
        lines.append(f'printf \'{variable}=%s\\n\' "$value" >> "$ENV_FILE.tmp"')
    lines.append("unset value")
    return "\n".join(lines)


def model_server_script(
    image: str,
    args: list[str],
    port: int,
    secrets: dict[str, list[str]] | None = None,
    keep_alive_seconds: int | None = None,
) -> str:
    """Boot-script lines that install the container runtime where missing and start the model
    server as a systemd unit (restarted when it exits, started on every boot).

    ``image`` and every argument are shell-quoted into the server's wrapper script (the core refuses
    shell characters in the image and model and line breaks in every argument:
    ``fullserver.serving_keys``), and the unit itself names only the image.
    ``secrets`` maps ``token`` / ``api_key`` to the command printing it (``aws_secret_command``,
    ``gcp_secret_command``); the values never enter the script, the state or user data.
    ``keep_alive_seconds`` becomes vLLM's ``VLLM_HTTP_TIMEOUT_KEEP_ALIVE`` (``components.serving.
    server_keep_alive``): idle connections stay open longer than the load balancer keeps them.
    """
    if not 1 <= port <= 65535:
        raise ValueError(f"{port} is not a TCP port")
    values = {
        "__GPU_WAIT__": str(GPU_WAIT_SECONDS),
        "__ENV_FILE__": MODEL_ENV_FILE,
        "__CONTAINER__": MODEL_CONTAINER,
        "__PORT__": str(port),
        "__IMAGE__": shlex.quote(image),
        "__ARGS__": " ".join(shlex.quote(a) for a in args),
        "__SECRETS__": _fetch_secrets(secrets or {}),
        "__KEEP_ALIVE__": f"--env VLLM_HTTP_TIMEOUT_KEEP_ALIVE={int(keep_alive_seconds)}" if keep_alive_seconds else "",
    }
    wrapper, unit = _MODEL, _MODEL_UNIT
    for key, value in values.items():
        wrapper = wrapper.replace(key, value)
        unit = unit.replace(key, value)
    return (
        "# fullserver: the model server\n"
        + CONTAINER_RUNTIME
        + _heredoc("/usr/local/sbin/fullserver-model", wrapper, "0755")
        + _heredoc(f"/etc/systemd/system/{MODEL_UNIT}", unit, "0644")
        + "systemctl daemon-reload\n"
        + f"systemctl enable {MODEL_UNIT}\n"
        + f"systemctl restart --no-block {MODEL_UNIT}\n"
    )


LOGIN_USER = "ubuntu"
"""The login user ``fullserver:sshPublicKeys`` are installed for, on every cloud: the default user
of the Ubuntu Deep Learning AMIs, and the name given to Compute Engine's guest agent (which creates
the user from ``ssh-keys`` metadata, with sudo) on the Ubuntu DLVM and TPU runtime images."""


def authorized_keys_script(keys: list[str], user: str = LOGIN_USER) -> str:
    """Boot-script lines that add ``keys`` to ``user``'s ``~/.ssh/authorized_keys`` (AWS).

    A launch template holds one EC2 key pair; several people's keys go in through user data
    instead. Each line is added once (re-runs add nothing), the file keeps the keys already there
    (the instance's key pair, if any), and the user is created with passwordless sudo where the
    image has no such user (a custom AMI), as Compute Engine's guest agent does for ``ssh-keys``.
    It runs before the disk unit, whose data-disk wait can take minutes: keys work from first boot.
    """
    if not keys:
        return ""
    u = shlex.quote(user)
    lines = [
        f"# fullserver: SSH keys of fullserver:sshPublicKeys for {user}",
        f"if ! id {u} >/dev/null 2>&1; then",
        f"  useradd --create-home --shell /bin/bash {u}",
        f"  echo {shlex.quote(f'{user} ALL=(ALL) NOPASSWD:ALL')} > /etc/sudoers.d/90-fullserver-{user}",
        f"  chmod 0440 /etc/sudoers.d/90-fullserver-{user}",
        "fi",
        f'FS_HOME="$(getent passwd {u} | cut -d: -f6)"',
        "install -d -m 0700 -o " + u + ' -g "$(id -gn ' + u + ')" "$FS_HOME/.ssh"',
        'touch "$FS_HOME/.ssh/authorized_keys"',
    ]
    # Each key is written once (EC2 takes 16 KiB of user data; an RSA-4096 key is ~740 bytes).
    lines += [
        "while IFS= read -r key; do",
        '  [ -n "$key" ] || continue',
        '  grep -qxF -- "$key" "$FS_HOME/.ssh/authorized_keys" || printf \'%s\\n\' "$key" >> "$FS_HOME/.ssh/authorized_keys"',
        "done <<'FULLSERVER_KEYS'",
        *dict.fromkeys(keys),  # a key given twice is written once
        "FULLSERVER_KEYS",
    ]
    lines += [
        'chmod 0600 "$FS_HOME/.ssh/authorized_keys"',
        "chown " + u + ':"$(id -gn ' + u + ')" "$FS_HOME/.ssh/authorized_keys"',
    ]
    return "\n".join(lines) + "\n"


def boot_script(plan: DiskPlan, extra: str = "", before: str = "") -> str:
    """The full startup script / user data: ``before``, then install the disk unit and start it,
    then ``extra``."""
    return (
        "#!/bin/bash\n"
        "# fullserver boot configuration (idempotent: safe on every boot and on re-runs).\n"
        "set -euo pipefail\n"
        + before
        + _heredoc("/usr/local/sbin/fullserver-disks", disks_script(plan), "0755")
        + _heredoc("/etc/systemd/system/fullserver-disks.service", _UNIT, "0644")
        + "systemctl daemon-reload\n"
        "systemctl enable fullserver-disks.service\n"
        "systemctl start fullserver-disks.service\n" + extra
    )
