"""The idle agent on a VM node: boot-script lines that install it as a systemd service, with its
configuration and the stop command of the node's platform (``fullserver.autostop``).

The agent (``components/autostop_agent.py``: a program of its own, standard library only, that
runs on the node and logs to the journal) goes into the script gzipped
and base64-encoded: AWS user data holds 16 KiB, and the agent is a quarter of that compressed. Its
configuration is a small JSON file; the stop command is a script of the platform's, written
beside it, so the agent itself knows nothing of clouds. The unit restarts the agent if it dies;
the agent keeps its idle count across restarts (its state file, ``/var/lib/fullserver``).
"""

from __future__ import annotations

import base64
import gzip
import json
import shlex
from importlib import resources
from typing import Any

from components.startup import _heredoc

AGENT = "/usr/local/lib/fullserver/autostop.py"
CONFIG = "/etc/fullserver/autostop.json"
STOP = "/usr/local/sbin/fullserver-autostop-stop"
STATE = "/var/lib/fullserver/autostop-state.json"
KEEP_MARKER = "/var/lib/fullserver/keep"
"""``sudo touch /var/lib/fullserver/keep`` keeps the node up; removing it lets the count start."""
UNIT = "fullserver-autostop.service"
SAMPLE_SECONDS = 60
GPU_BUSY_PERCENT = 5
"""A GPU at 5 % or more is working: an idle GPU with a model loaded reads 0 %."""

_UNIT = f"""[Unit]
Description=fullserver idle autostop (stops this environment when idle; docs/autostop.md)
After=network-online.target
Wants=network-online.target

[Service]
ExecStart=/usr/bin/python3 {AGENT} {CONFIG}
Restart=always
RestartSec=10

[Install]
WantedBy=multi-user.target
"""


def agent_source() -> str:
    return resources.files("components").joinpath("autostop_agent.py").read_text(encoding="utf-8")


def agent_config(minutes: int, sample_seconds: float = SAMPLE_SECONDS, **paths: Any) -> dict[str, Any]:
    """The agent's configuration: the idle limit in seconds and where everything is (``paths``
    overrides ``stop``, ``keep_marker``, ``state``, ``session_scope_pid``: the tests' short clock
    and own files)."""
    return {
        "idle_seconds": minutes * 60,
        "sample_seconds": sample_seconds,
        "gpu_busy_percent": GPU_BUSY_PERCENT,
        "stop": [STOP],
        "keep_marker": KEEP_MARKER,
        "state": STATE,
        "session_scope_pid": 1,
        **paths,
    }


def _packed(source: str) -> str:
    """gzip (no timestamp: the same agent gives the same user data) and base64, 76 per line."""
    data = base64.b64encode(gzip.compress(source.encode(), mtime=0)).decode()
    return "\n".join(data[i : i + 76] for i in range(0, len(data), 76)) + "\n"


def autostop_boot_lines(minutes: int, stop_script: str) -> str:
    """Boot-script lines installing the agent, its configuration, the platform's stop script and
    the unit, then (re)starting it; "" when ``minutes`` is 0."""
    if minutes <= 0:
        return ""
    config = json.dumps(agent_config(minutes), indent=1, sort_keys=True) + "\n"
    return (
        f"# fullserver: idle autostop after {minutes} minutes (docs/autostop.md)\n"
        f"install -d -m 0755 {shlex.quote(AGENT.rsplit('/', 1)[0])} /var/lib/fullserver\n"
        f"base64 -d <<'FULLSERVER_EOF' | gunzip > {AGENT}\n{_packed(agent_source())}FULLSERVER_EOF\n"
        f"chmod 0644 {AGENT}\n"
        + _heredoc(CONFIG, config, "0644")
        + _heredoc(STOP, stop_script, "0755")
        + _heredoc(f"/etc/systemd/system/{UNIT}", _UNIT, "0644")
        + "systemctl daemon-reload\n"
        + f"systemctl enable {UNIT}\n"
        + f"systemctl restart --no-block {UNIT}\n"
    )
