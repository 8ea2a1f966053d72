"""``fullserver audit``/``verify`` say whether a bare-metal host is idle, since when where the
host's agent records it, and what the idle time costs at the dedicated price, prorated: the idle
agent's own sample (``--report``), run over the audit's SSH session on the test bed's real sshd
hosts, with a stand-in ``nvidia-smi`` written here. The audit's own session is not a user's; a
second real connection is."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from components.autostop import agent_config, agent_source
from fullserver.baremetal.audit import audit_fleet
from fullserver.baremetal.idle import Idleness, IdleProbe, read_idleness
from fullserver.baremetal.measure import Caps
from fullserver.baremetal.ssh import session
from fullserver.baremetal.verify import Promise, verify_host
from fullserver.catalog import load_catalog
from fullserver.profiles import get_profile, load_profiles
from tests.baremetal.testbed import H100_SXM, SshdHost

NEVER = "a dedicated server is billed by the month whether it runs or not: it is never stopped"
MONTHLY = 14_600.0  # $20 an hour over 730 hours

UTILIZATION = """#!/bin/sh
# stand-in: the agent's query reads ../gpu-util (one row per GPU); any other query goes to the
# test bed's own stand-in (the probe's GPU list)
here=$(dirname "$0")
if [ "$1" = --query-gpu=utilization.gpu,memory.used ]; then
  [ "$2" = --format=csv,noheader,nounits ] || exit 2
  cat "$here/../gpu-util"; exit 0
fi
exec "$here/nvidia-smi-probe" "$@"
"""


def gpus(host: SshdHost, rows: str) -> None:
    """Two H100s whose utilization and memory the agent's query reads as ``rows``."""
    host.set_gpus([H100_SXM, H100_SXM])
    (host.bin / "nvidia-smi").rename(host.bin / "nvidia-smi-probe")
    host.stand_in("nvidia-smi", UTILIZATION)
    (host.dir / "gpu-util").write_text(rows)


def probe(host: SshdHost, monthly_usd: float | None = MONTHLY) -> IdleProbe:
    """The agent's default configuration, but this host's keep marker and state file, and only
    this host's sshd's sessions (other tests' hosts share the machine)."""
    assert host.proc is not None
    cfg = agent_config(
        0,
        keep_marker=str(host.dir / "keep"),
        state=str(host.dir / "autostop-state.json"),
        session_scope_pid=host.proc.pid,
    )
    return IdleProbe(agent=agent_source(), config=cfg, stop=NEVER, monthly_usd=monthly_usd)


def read(host: SshdHost, monthly_usd: float | None = MONTHLY) -> Idleness:
    with session(host.target(), host.user_key) as s:
        return read_idleness(s, probe(host, monthly_usd))


def test_an_idle_host_is_reported_idle_with_its_hourly_and_monthly_price_and_never_stopped(host: SshdHost) -> None:
    gpus(host, "0, 0\n3, 1200\n")  # 3 % and a loaded model: below the 5 % a working GPU shows
    idle = read(host)
    assert (idle.idle, idle.since, idle.hours, idle.usd_so_far) == (True, None, None, None)
    assert idle.usd_hour == pytest.approx(20.0)
    assert idle.line() == (
        "idle now (since when is not known: no idle agent records it on this host); $20.00 an hour, "
        f"$14,600 an idle month (the dedicated price, prorated); {NEVER}"
    )


def test_a_busy_gpu_is_named(host: SshdHost) -> None:
    gpus(host, "0, 1200\n87, 30000\n")
    idle = read(host)
    assert (idle.idle, idle.why) == (False, "GPU 1 at 87% (30000 MiB used)")
    assert idle.line() == "busy: GPU 1 at 87% (30000 MiB used)"


def test_an_unreadable_gpu_counts_as_busy(host: SshdHost) -> None:
    gpus(host, "[N/A], [N/A]\n")
    idle = read(host)
    assert (idle.idle, idle.why) == (False, "GPU 0 utilization unreadable ([N/A]): counted busy")


def test_the_keep_marker_counts_as_busy(host: SshdHost) -> None:
    gpus(host, "0, 0\n0, 0\n")
    (host.dir / "keep").touch()
    idle = read(host)
    assert (idle.idle, idle.why) == (False, f"keep marker {host.dir / 'keep'} exists")


def test_another_ssh_session_counts_as_busy_and_the_reports_own_does_not(host: SshdHost) -> None:
    gpus(host, "0, 0\n0, 0\n")
    assert read(host).idle is True  # the report's own session alone

    holding = host.hold_session(4)
    try:
        time.sleep(1.0)
        idle = read(host)
    finally:
        holding.join()
    assert idle.idle is False
    assert idle.why.startswith("session open (sshd") and "@" in idle.why


def test_since_when_and_the_cost_so_far_come_from_the_agents_state_on_this_boot(host: SshdHost) -> None:
    gpus(host, "0, 0\n0, 0\n")
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    since = time.time() - 3 * 3600
    (host.dir / "autostop-state.json").write_text(json.dumps({"boot": boot, "idle_since": since}))
    idle = read(host)
    assert idle.since == pytest.approx(since)
    assert idle.hours == pytest.approx(3.0, abs=0.01)
    assert idle.usd_so_far == pytest.approx(60.0, abs=0.3)
    assert idle.line().startswith(f"idle for 3.0 h (since {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime(since))})")

    (host.dir / "autostop-state.json").write_text(json.dumps({"boot": "an earlier boot", "idle_since": since}))
    assert read(host).since is None  # a count from before a reboot says nothing about now


def test_a_host_without_python3_says_so_and_is_never_called_idle(host: SshdHost) -> None:
    gpus(host, "0, 0\n0, 0\n")
    host.stand_in("python3", "#!/bin/sh\nexit 127\n")
    idle = read(host, monthly_usd=None)
    assert (idle.idle, idle.why) == (None, "python3 is not installed on the host (the idle agent needs it)")
    assert idle.line() == "idleness not read: python3 is not installed on the host (the idle agent needs it)"


def test_audit_and_verify_carry_each_hosts_idleness(host: SshdHost) -> None:
    gpus(host, "0, 0\n0, 0\n")
    profile, catalog = get_profile("dedicated-steady", load_profiles()), load_catalog()
    [audit] = audit_fleet([(host.target(), host.user_key)], profile, catalog, idle=probe(host, None))
    assert audit.status != "error" and audit.idle is not None
    assert audit.idle.line() == f"idle now (since when is not known: no idle agent records it on this host); {NEVER}"

    (host.dir / "gpu-util").write_text("0, 0\n40, 9000\n")
    promise = Promise(profile=profile, catalog=catalog, scratch=str(host.dir / "none"), idle=probe(host))
    with session(host.target(), host.user_key) as s:
        verified = verify_host(s, promise, Caps(1, 16, 1, 1, gpu_seconds=1), host.name, host.target().endpoint)
    assert verified.idle is not None and verified.idle.line() == "busy: GPU 1 at 40% (9000 MiB used)"
