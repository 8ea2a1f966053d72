#!/usr/bin/env python3
"""fullserver-autostop: stop this environment once its accelerators, sessions and keep marker have
all been idle for the configured time (docs/autostop.md). Standard library only: it runs on the
node's own python3, installed by the boot script as a systemd service; its log is the journal.

Design notes: docs/design/components.md.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import time
from typing import Any

CONFIG = "/etc/fullserver/autostop.json"
SESSION_PREFIXES = ("sshd: ", "sshd-session: ")  # OpenSSH 9.8 renamed the per-session process
SSM_WORKER = "ssm-session-wor"  # /proc/<pid>/comm keeps 15 characters of ssm-session-worker
TPU_DEVICES = ("dev/accel*", "dev/vfio/[0-9]*")  # under ``device_root``: "/" on a node
BOOT_ID = "/proc/sys/kernel/random/boot_id"
Config = dict[str, Any]


def log(message: str) -> None:
    print(f"fullserver-autostop: {message}", file=sys.stderr, flush=True)


def _read(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def gpu_busy(cfg: Config) -> str | None:
    """Why the GPUs are busy, or None when every one is below the threshold (or there are none)."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=utilization.gpu,memory.used", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None if isinstance(exc, FileNotFoundError) else f"nvidia-smi failed ({exc}): counted busy"
    if out.returncode != 0:
        return f"nvidia-smi exit {out.returncode}: counted busy"
    for i, row in enumerate(line for line in out.stdout.splitlines() if line.strip()):
        util, _, mem = row.partition(",")
        try:
            if float(util) >= cfg["gpu_busy_percent"]:
                return f"GPU {i} at {util.strip()}% ({mem.strip()} MiB used)"
        except ValueError:  # [N/A] or [Not Supported]: unknown is never idle
            return f"GPU {i} utilization unreadable ({util.strip()}): counted busy"
    return None


def _processes(scope: int) -> list[tuple[int, str, str]]:
    """(pid, comm, cmdline) of every process under ``scope`` (1: the whole machine), except this
    program's own ancestors: run by ``fullserver audit`` over SSH, its own session is not a user's."""
    parents: dict[int, int] = {}
    found: list[tuple[int, str, str]] = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _read(f"/proc/{entry}/stat")
            parents[int(entry)] = int(stat.rpartition(")")[2].split()[1]) if ")" in stat else 0
    own: set[int] = set()
    p = os.getpid()
    while p not in own and p in parents:
        own.add(p)
        p = parents[p]
    for pid in parents:
        p = pid
        while p not in (0, scope) and p in parents:
            p = parents[p]
        if (p == scope or scope == 1) and pid not in own:
            cmd = _read(f"/proc/{pid}/cmdline").replace("\0", " ").strip()
            found.append((pid, _read(f"/proc/{pid}/comm").strip(), cmd))
    return found


def sessions_busy(cfg: Config) -> str | None:
    for pid, comm, cmd in _processes(cfg.get("session_scope_pid", 1)):
        if cmd.startswith(SESSION_PREFIXES) and "@" in cmd:
            return f"session open ({cmd}, pid {pid})"
        if comm == SSM_WORKER:
            return f"Session Manager session open (pid {pid})"
    return None


def tpu_busy(cfg: Config) -> str | None:
    """Why the TPU is busy (a process holds one of its device files open), or None. The devices
    are found under ``device_root`` ("/" on a node; a test's own directory on the test bed)."""
    root = cfg.get("device_root", "/")
    devices = {os.path.realpath(d) for pattern in TPU_DEVICES for d in glob.glob(os.path.join(root, pattern))}
    if not devices:
        return None
    for fd in glob.glob("/proc/[0-9]*/fd/*"):
        try:
            if os.path.realpath(fd) in devices:
                return f"TPU device held by pid {fd.split('/')[2]}"
        except OSError:
            continue
    return None


def busy(cfg: Config) -> str | None:
    if os.path.exists(cfg["keep_marker"]):
        return f"keep marker {cfg['keep_marker']} exists"
    return gpu_busy(cfg) or tpu_busy(cfg) or sessions_busy(cfg)


def load_state(cfg: Config, boot: str) -> Config:
    try:
        state = json.loads(_read(cfg["state"]) or "{}")
    except ValueError:
        state = {}
    return state if state.get("boot") == boot else {"boot": boot, "idle_since": None}


def save_state(cfg: Config, state: Config) -> None:
    os.makedirs(os.path.dirname(cfg["state"]), exist_ok=True)
    tmp = cfg["state"] + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f)
    os.replace(tmp, cfg["state"])  # atomic: a kill mid-write leaves the old state


def step(cfg: Config, state: Config, now: float) -> bool:
    """One sample: update ``state``; True when it changed (to be saved)."""
    why = busy(cfg)
    if why is not None:
        if state["idle_since"] is not None:
            log(f"busy again: {why}")
        changed, state["idle_since"] = state["idle_since"] is not None, None
        return changed
    if state["idle_since"] is None:
        state["idle_since"] = now
        log(f"idle (no accelerator use, no session, no keep marker); stopping after {cfg['idle_seconds']} s")
        return True
    idle = now - state["idle_since"]
    if idle < cfg["idle_seconds"] or now < state.get("retry_at", 0):
        return False
    log(f"idle for {idle:.0f} s: stopping the environment with {' '.join(cfg['stop'])}")
    done = subprocess.run(cfg["stop"], capture_output=True, text=True, timeout=300)
    if done.returncode == 0:
        log("stop requested")
        state["idle_since"] = now  # if the node is still up, the next stop needs a whole idle period
    else:
        log(f"stop failed (exit {done.returncode}): {done.stderr.strip()[-500:]}; retrying in 5 minutes")
        state["retry_at"] = now + 300
    return True


def report(cfg: Config) -> Config:
    """One sample for ``fullserver audit``/``verify`` (``--report``): the same ``busy`` the loop
    asks, and the idle-since time the agent's state holds for this boot (None where no agent runs)."""
    why = busy(cfg)
    state = load_state(cfg, _read(BOOT_ID).strip())
    since = None if why is not None else state.get("idle_since")
    return {"busy": why, "idle_since": since, "now": time.time(), "agent": os.path.exists(cfg["state"])}


def main() -> None:
    if sys.argv[1:2] == ["--report"]:  # the configuration is the next argument, as JSON
        sys.stdout.write(json.dumps(report(json.loads(sys.argv[2]))) + "\n")
        return
    cfg = json.loads(_read(sys.argv[1] if len(sys.argv) > 1 else CONFIG))
    boot = _read(BOOT_ID).strip()
    state = load_state(cfg, boot)
    if state["idle_since"] is not None:
        log(f"idle since {time.ctime(state['idle_since'])} (kept across a restart of the agent)")
    while True:
        if step(cfg, state, time.time()):
            save_state(cfg, state)
        time.sleep(cfg["sample_seconds"])


if __name__ == "__main__":
    main()
