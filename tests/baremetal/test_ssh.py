"""The SSH layer against real sshd hosts: pinned keys, bounded waits, faults."""

from __future__ import annotations

import base64
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import paramiko
import pytest

from fullserver.baremetal import liblog
from fullserver.baremetal.errors import (
    AuthFailed,
    CommandFailed,
    CommandTimeout,
    HostKeyMismatch,
    HostUnreachable,
    NoSudo,
    ProxyNotStarted,
)
from fullserver.baremetal.inventory import Target, Timeouts, inventory_from_data, keys_from_known_hosts
from fullserver.baremetal.proxy import ProxySocket
from fullserver.baremetal.ssh import connection, session, tcp
from fullserver.errors import InputError
from fullserver_cli.verify import read_identity
from tests.baremetal.testbed import SshdHost, Testbed, free_port

FAST = Timeouts(
    connect=2,
    banner=2,
    auth=3,
    channel=3,
    command=10,
    kill_grace=1,
    keepalive_interval=1,
    keepalive_count=2,
    connect_attempts=2,
    retry_base=0.1,
)


def test_runs_commands_on_one_reused_connection(host: SshdHost) -> None:
    with session(host.target(), host.user_key) as s:
        r = s.run(["printf", "%s|", "a b", "c'd"])
        assert r.stdout == "a b|c'd|"  # argv is quoted word by word
        r = s.run("echo out; echo err >&2; exit 0")
        assert (r.stdout, r.stderr, r.ok) == ("out\n", "err\n", True)  # stderr alone is not failure
        # each command's sh runs under its own `timeout`; the process above that is the connection's sshd
        pids = {s.run("ps -o ppid= -p $PPID").stdout.strip() for _ in range(3)}
        assert s.commands == 5 and len(host.session_pids()) <= 3  # one connection, many channels
        assert len(pids) == 1 and int(pids.pop()) in host.session_pids()  # one connection for all


def test_wrong_host_key_is_refused_and_nothing_runs(bed: Testbed, host: SshdHost) -> None:
    other = bed.add_host("impostor-keys")
    other.stop()
    marker = host.root / "ran"
    with (
        pytest.raises(HostKeyMismatch) as exc,
        session(host.target(host_keys=[other.host_key_line]), host.user_key) as s,
    ):
        s.run(f"touch {marker}")
    line = exc.value.line()
    assert line.startswith(f"{host.name}: host key refused: offered ssh-ed25519 SHA256:")
    assert "expected ssh-ed25519 SHA256:" in line and exc.value.offered != exc.value.expected[0]
    assert not marker.exists()
    assert "Accepted publickey" not in (host.dir / "sshd.log").read_text()  # we never even authenticated


def test_rotation_several_pinned_keys(bed: Testbed, host: SshdHost) -> None:
    old = bed.add_host("old-key")
    old.stop()
    with session(host.target(host_keys=[old.host_key_line, host.host_key_line]), host.user_key) as s:
        assert s.run("echo ok").stdout == "ok\n"


def test_known_hosts_file_we_are_given(host: SshdHost, tmp_path: object) -> None:
    kh = host.dir / "fleet_known_hosts"
    kh.write_text(f"[127.0.0.1]:{host.port} {host.host_key_line}\n")
    keys = keys_from_known_hosts(kh, "127.0.0.1", host.port)
    t = Target(host.name, "127.0.0.1", host.port, "root", tuple(keys), None, FAST)
    with session(t, host.user_key) as s:
        assert s.run("echo ok").ok


def _count_dials(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every TCP connect the SSH layer makes, by target name."""
    dials: list[str] = []
    real = tcp.open_socket

    def counting(target: Target) -> socket.socket:
        dials.append(target.name)
        return real(target)

    monkeypatch.setattr(connection, "open_socket", counting)
    return dials


def test_unreachable_is_bounded_and_retried(host: SshdHost, monkeypatch: pytest.MonkeyPatch) -> None:
    dials = _count_dials(monkeypatch)
    waits: list[float] = []
    # the backoff between attempts, recorded instead of slept (the connecting module's clock only)
    monkeypatch.setattr(connection, "time", SimpleNamespace(sleep=waits.append, monotonic=time.monotonic))
    t = Target("gone", "127.0.0.1", free_port(), "root", host.target().host_keys, None, FAST)
    with pytest.raises(HostUnreachable, match="connection refused"):
        session(t, host.user_key).__enter__()
    assert dials == ["gone"] * FAST.connect_attempts  # retried, and only as often as configured
    # exponential backoff with at most one retry_base of jitter, and none after the last attempt
    assert len(waits) == FAST.connect_attempts - 1
    for i, wait in enumerate(waits):
        assert FAST.retry_base * 2**i <= wait <= FAST.retry_base * (2**i + 1)


def test_unreachable_bastion_retries_the_whole_path_not_each_hop(
    host: SshdHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    dials = _count_dials(monkeypatch)
    bastion = Target("bastion", "127.0.0.1", free_port(), "root", host.target().host_keys, None, FAST)
    inner = host.target(timeouts=FAST)
    t = Target(inner.name, inner.address, inner.port, "root", inner.host_keys, bastion, FAST)
    with pytest.raises(HostUnreachable, match=r"its jump host bastion \(127\.0\.0\.1:\d+\): connection refused"):
        session(t, host.user_key).__enter__()
    assert dials == ["bastion"] * FAST.connect_attempts  # not attempts x attempts


def test_server_stalling_after_session_open_times_out(host: SshdHost, monkeypatch: pytest.MonkeyPatch) -> None:
    """sshd opens the channel, then stops (SIGSTOP) before answering the exec request."""
    opened = paramiko.Transport.open_session

    def open_then_stall(self: paramiko.Transport, *args: Any, **kwargs: Any) -> paramiko.Channel:
        chan = opened(self, *args, **kwargs)
        host.pause()
        return chan

    quick = Timeouts(connect=2, banner=2, auth=3, channel=1, command=10, kill_grace=1)
    t = host.target(timeouts=quick)
    outcome: list[BaseException | None] = []
    with session(t, host.user_key) as s:
        s.run("true")
        monkeypatch.setattr(paramiko.Transport, "open_session", open_then_stall)

        def run() -> None:  # in a thread, so a hang fails the test instead of hanging it
            try:
                s._owner = threading.get_ident()
                s.run("echo never")
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)

        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        worker.join(60)  # a hang guard only: which wait ended it is the message's to say
        host.resume()
    assert outcome, "run() still waiting after 60 s: exec_command is unbounded"
    assert isinstance(outcome[0], CommandTimeout), outcome
    assert f"did not start `echo never` within {quick.channel:.0f}s" in outcome[0].line()


def test_stalled_server_banner_times_out(host: SshdHost, monkeypatch: pytest.MonkeyPatch) -> None:
    dials = _count_dials(monkeypatch)
    host.pause()  # SIGSTOP: the kernel still accepts TCP, sshd never speaks
    with pytest.raises(HostUnreachable) as exc:
        session(host.target(timeouts=FAST), host.user_key).__enter__()
    assert dials == [host.name] * FAST.connect_attempts  # one banner wait per attempt, no more
    assert exc.value.line() == (
        f"{host.name}: no SSH banner within 2 s (127.0.0.1:{host.port}) "
        "(sshd stalled or overloaded; check the host's console and load)"
    )


def test_stalled_banner_is_named_whichever_wait_runs_out_first(host: SshdHost, monkeypatch: pytest.MonkeyPatch) -> None:
    """paramiko's start_client wait (the connect timeout) used to end before the banner's, and the
    host was then named "connection failed: No existing session"."""
    dials = _count_dials(monkeypatch)
    quick = Timeouts(connect=1, banner=2, auth=3, channel=3, connect_attempts=1)
    host.pause()
    with pytest.raises(HostUnreachable) as exc:
        session(host.target(timeouts=quick), host.user_key).__enter__()
    assert "no SSH banner within 2 s" in exc.value.line() and "No existing session" not in exc.value.line()
    assert dials == [host.name]  # costs its one banner wait, no retry


def test_paramiko_log_records_never_reach_other_handlers(host: SshdHost) -> None:
    """The transport thread logs a lost connection as ERROR records (the traceback one record a
    line); none may reach the root logger, where any configured handler would print them."""
    seen: list[logging.LogRecord] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            seen.append(record)

    keep = Keep(level=logging.DEBUG)
    logging.getLogger().addHandler(keep)
    try:
        host.pause()
        with pytest.raises(HostUnreachable):
            session(host.target(timeouts=FAST), host.user_key).__enter__()
        time.sleep(0.5)  # the transport thread logs as it dies
    finally:
        logging.getLogger().removeHandler(keep)
        host.resume()
    assert not [r for r in seen if r.name.startswith("paramiko")], [r.getMessage() for r in seen]


def test_library_warnings_reach_the_sink_as_one_line(caplog: pytest.LogCaptureFixture) -> None:
    lines: list[str] = []
    log = logging.getLogger("paramiko.transport")
    with liblog.output(lines.append):
        log.warning("Oops, unhandled type %d\n  with a second line", 3)
        log.error("Exception (client): Error reading SSH protocol banner")
        log.error("Traceback (most recent call last):")
        log.debug("Banner: x")
    with caplog.at_level(logging.WARNING, logger="fullserver.baremetal"):
        log.warning("after the block: the core's logger")
    assert lines == ["ssh: Oops, unhandled type 3 with a second line"]
    # Outside a command's block the core prints nothing: the line goes to its logger.
    assert [(r.name, r.getMessage()) for r in caplog.records if r.name == "fullserver.baremetal"] == [
        ("fullserver.baremetal", "ssh: after the block: the core's logger")
    ]


def test_peer_stalls_mid_command_keepalive_detects_it(host: SshdHost) -> None:
    t = host.target(
        timeouts=Timeouts(connect=2, banner=2, auth=3, channel=3, command=60, keepalive_interval=1, keepalive_count=2)
    )
    with session(t, host.user_key) as s:
        s.run("true")
        threading.Timer(0.5, host.pause).start()
        start = time.monotonic()
        with pytest.raises(HostUnreachable, match="no answer to keepalives"):
            s.run("sleep 30")
        assert time.monotonic() - start < 8  # far below the 60 s command deadline


def test_non_zero_exit(host: SshdHost) -> None:
    with session(host.target(), host.user_key) as s:
        with pytest.raises(CommandFailed) as exc:
            s.run("echo broken >&2; exit 3", label="step x")
        assert exc.value.exit_status == 3 and "broken" in exc.value.line() and exc.value.line().startswith(host.name)
        assert s.run("exit 3", check=False).exit_status == 3


def test_command_deadline_remote_timeout(host: SshdHost) -> None:
    with session(host.target(), host.user_key) as s:
        start = time.monotonic()
        with pytest.raises(CommandTimeout, match="deadline"):
            s.run("sleep 20", timeout=1)
        assert time.monotonic() - start < 5
        assert s.run("echo still usable").ok


def test_large_output_both_streams_no_deadlock_and_capped(host: SshdHost) -> None:
    with session(host.target(), host.user_key) as s:
        r = s.run("head -c 6000000 /dev/zero | tr '\\0' a; head -c 3000000 /dev/zero | tr '\\0' b >&2", timeout=30)
        assert r.ok and r.truncated and len(r.stdout) == 4 << 20 and len(r.stderr) == 3000000


def test_no_sudo_rights(host: SshdHost, nosudo: str) -> None:
    with session(host.target(user=nosudo), host.user_key) as s:
        assert s.run("id -un").stdout.strip() == nosudo
        with pytest.raises(NoSudo, match="sudo -n") as exc:
            s.run(["cat", "/etc/shadow"], sudo=True)
        assert "NOPASSWD" in exc.value.line()


def test_sudo_user_runs_as_root(host: SshdHost, ops: str) -> None:
    with session(host.target(user=ops), host.user_key) as s:
        assert s.run("id -u", sudo=True).stdout.strip() == "0"
        assert s.run("id -u").stdout.strip() != "0"


def test_auth_failure_is_not_retried(bed: Testbed, host: SshdHost) -> None:
    stranger = bed.add_host("stranger")
    stranger.stop()
    start = time.monotonic()
    with pytest.raises(AuthFailed):
        session(host.target(timeouts=FAST), stranger.user_key).__enter__()
    assert (host.dir / "sshd.log").read_text().count("Failed publickey") == 1
    assert time.monotonic() - start < 2


def test_session_is_not_shared_between_threads(host: SshdHost) -> None:
    errors: list[BaseException] = []
    with session(host.target(), host.user_key) as s:

        def other() -> None:
            try:
                s.run("true")
            except BaseException as exc:
                errors.append(exc)

        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert errors and "shared between threads" in str(errors[0])


def test_jump_host_direct_tcpip(bed: Testbed, host: SshdHost) -> None:
    bastion = bed.add_host("bastion")
    try:
        bastion.authorize("root", host.user_pub)  # same operator key on the bastion
        inner = host.target()
        t = Target(inner.name, inner.address, inner.port, "root", inner.host_keys, bastion.target(), inner.timeouts)
        with session(t, host.user_key) as s:
            assert s.run("echo via-bastion").stdout == "via-bastion\n"
        assert "Accepted publickey for root" in (bastion.dir / "sshd.log").read_text()
    finally:
        bastion.stop()


def test_a_jump_host_that_fails_is_named_as_the_jump_host_on_the_host_it_leads_to(bed: Testbed, host: SshdHost) -> None:
    bastion = bed.add_host("dead-bastion")
    bastion.stop()  # nothing listens where the jump host should be
    inner = host.target()
    jump = bastion.target(timeouts=Timeouts(connect=1, banner=1, auth=2, channel=1, connect_attempts=1))
    t = Target(inner.name, inner.address, inner.port, "root", inner.host_keys, jump, jump.timeouts)
    with pytest.raises(HostUnreachable) as err:
        session(t, host.user_key).__enter__()
    assert err.value.host == inner.name
    assert str(err.value).startswith(f"{inner.name}: its jump host {jump.name} ({jump.address}:{jump.port}): ")


@pytest.mark.parametrize(
    ("address", "port", "shown"),
    [("2001:db8::12", 2222, "[2001:db8::12]:2222"), ("10.0.0.5", 22, "10.0.0.5:22"), ("gpu-a", 2222, "gpu-a:2222")],
)
def test_an_ipv6_address_is_shown_in_brackets_before_its_port(address: str, port: int, shown: str) -> None:
    assert Target("h", address, port).endpoint == shown


# --- proxyCommand (issue 12: IAP / Session Manager) -----------------------------------------------


def _proxied(host: SshdHost, kh: Path, proxy: list[str], timeouts: Timeouts = FAST) -> Target:
    """``gpu-a`` at the node name ``node-a`` (resolvable nowhere), reached through ``proxy``, its
    key pinned by a known_hosts file keyed by that name, as ``inv.target`` builds it."""
    inv = inventory_from_data(
        {"hosts": [{"name": "gpu-a", "address": "node-a", "knownHostsFile": str(kh), "proxyCommand": proxy}]},
        kh.parent,
        "inv.yaml",
    )
    return inv.target(inv.entries[0], timeouts)


def _runs(log: Path) -> list[dict[str, Any]]:
    """What the stand-in proxy logged, one record per start."""
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _running(pid: int) -> bool:
    """Whether ``pid`` is still a process (a zombie, dead but not reaped, is not running)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_proxy_command_carries_the_session_and_the_key_is_pinned_under_the_node_name(
    host: SshdHost, tmp_path: Path
) -> None:
    kh, log = tmp_path / "known_hosts", tmp_path / "proxy.log"
    kh.write_text(f"node-a {host.host_key_line}\n")  # the node's name, as OpenSSH's HostKeyAlias
    t = _proxied(host, kh, host.proxy_command(log))
    assert t.lookup == "node-a" and t.peer == "node-a"
    with session(t, host.user_key) as s:
        assert s.run("echo via-proxy").stdout == "via-proxy\n"
        assert s.run("echo again").ok  # one proxy, one connection, many commands
        big = s.run("head -c 3000000 /dev/zero | tr '\\0' a", timeout=30)  # back-pressure through the pipe
        assert len(big.stdout) == 3000000
        [run] = _runs(log)
        assert _running(run["pid"])
    # %h %p %r %n: the entry's address, port, user and name, each its own word
    assert run["argv"][-4:] == ["node-a", "22", "root", "gpu-a"]
    assert not Path(f"/proc/{run['pid']}").exists()  # ended and reaped on close
    assert "Accepted publickey for root" in (host.dir / "sshd.log").read_text()


def test_proxy_host_with_another_key_is_refused_and_the_proxy_ended(
    bed: Testbed, host: SshdHost, tmp_path: Path
) -> None:
    other = bed.add_host("impostor-proxy")
    other.stop()
    kh, log = tmp_path / "known_hosts", tmp_path / "proxy.log"
    kh.write_text(f"node-a {other.host_key_line}\n")
    with pytest.raises(HostKeyMismatch) as exc:
        session(_proxied(host, kh, host.proxy_command(log)), host.user_key).__enter__()
    assert exc.value.line().startswith("gpu-a: host key refused: offered ssh-ed25519 SHA256:")
    assert "Accepted publickey" not in (host.dir / "sshd.log").read_text()
    [run] = _runs(log)  # a wrong key is never retried
    assert not Path(f"/proc/{run['pid']}").exists()


def test_proxy_host_key_is_not_looked_up_where_the_proxy_goes(host: SshdHost, tmp_path: Path) -> None:
    kh = tmp_path / "known_hosts"
    kh.write_text(f"[127.0.0.1]:{host.port} {host.host_key_line}\n")  # the real socket's name: not the host's
    with pytest.raises(InputError, match="host 'gpu-a': no host key pinned"):
        _proxied(host, kh, host.proxy_command(tmp_path / "proxy.log"))


def test_missing_proxy_program_is_one_line_and_not_retried(host: SshdHost, tmp_path: Path) -> None:
    kh = tmp_path / "known_hosts"
    kh.write_text(f"node-a {host.host_key_line}\n")
    t = _proxied(host, kh, ["fullserver-no-such-proxy", "compute", "start-iap-tunnel", "%h", "%p"])
    start = time.monotonic()
    with pytest.raises(ProxyNotStarted) as exc:
        session(t, host.user_key).__enter__()
    assert exc.value.line() == (
        "gpu-a: proxy command 'fullserver-no-such-proxy' not found (install it or put it on PATH)"
    )
    assert isinstance(exc.value, HostUnreachable)  # unreachable (exit 5), like any connect failure
    assert time.monotonic() - start < FAST.retry_base  # no retry, no backoff


def test_proxy_that_exits_is_named_with_its_stderr_retried_and_reaped(host: SshdHost, tmp_path: Path) -> None:
    kh, log = tmp_path / "known_hosts", tmp_path / "proxy.log"
    kh.write_text(f"node-a {host.host_key_line}\n")
    start = time.monotonic()
    with pytest.raises(HostUnreachable) as exc:
        session(_proxied(host, kh, host.proxy_command(log, "fail")), host.user_key).__enter__()
    assert exc.value.line() == (
        f"gpu-a: proxy command '{sys.executable}' exited 1 before the SSH banner: WARNING: noise first | "
        "ERROR: (gcloud.compute.start-iap-tunnel) Error while connecting [4033: 'not authorized']. "
        "(its message says why (its login, its permissions, the node's name); run it by hand to check)"
    )
    assert time.monotonic() - start < FAST.banner  # known at its exit, not at the banner timeout
    runs = _runs(log)
    assert len(runs) == FAST.connect_attempts  # the whole path is retried, as through a jump host
    assert not any(Path(f"/proc/{r['pid']}").exists() for r in runs)


def test_silent_proxy_costs_the_connect_and_banner_timeouts_and_is_ended(host: SshdHost, tmp_path: Path) -> None:
    kh, log = tmp_path / "known_hosts", tmp_path / "proxy.log"
    kh.write_text(f"node-a {host.host_key_line}\n")
    quick = Timeouts(connect=1, banner=1, auth=3, channel=3, kill_grace=1, connect_attempts=1)
    proxy = host.proxy_command(log, "silent")
    start = time.monotonic()
    with pytest.raises(HostUnreachable) as exc:
        session(_proxied(host, kh, proxy, quick), host.user_key).__enter__()
    elapsed = time.monotonic() - start
    assert exc.value.line() == (
        f"gpu-a: no SSH banner within 2 s (node-a:22 through proxy command '{sys.executable}') "
        "(the proxy or sshd stalled; run the proxy command by hand to check it connects)"
    )
    assert 2 <= elapsed < 2 + quick.kill_grace + 1.5, elapsed
    [run] = _runs(log)
    assert not Path(f"/proc/{run['pid']}").exists()


def test_proxy_ignoring_sigterm_and_its_helpers_are_killed_on_close(host: SshdHost, tmp_path: Path) -> None:
    """Like ``aws ssm start-session``, which runs ``session-manager-plugin``: the whole group goes."""
    kh, log = tmp_path / "known_hosts", tmp_path / "proxy.log"
    kh.write_text(f"node-a {host.host_key_line}\n")
    with session(_proxied(host, kh, host.proxy_command(log, "stubborn")), host.user_key) as s:
        assert s.run("echo ok").ok
        [run] = _runs(log)
        assert _running(run["pid"]) and _running(run["helper"])
        start = time.monotonic()
    assert time.monotonic() - start < FAST.kill_grace + 1.5  # SIGTERM ignored: SIGKILL after the grace
    assert not Path(f"/proc/{run['pid']}").exists()
    # SIGKILLed with the group (its exit is asynchronous; reaping it is init's business, not ours)
    deadline = time.monotonic() + 2
    while _running(run["helper"]) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _running(run["helper"])


def test_a_bastion_reached_through_a_proxy_carries_the_jump(bed: Testbed, host: SshdHost, tmp_path: Path) -> None:
    """A jump host may itself have a proxyCommand (a bastion reached through IAP)."""
    bastion = bed.add_host("proxied-bastion")
    try:
        bastion.authorize("root", host.user_pub)
        kh, log = tmp_path / "known_hosts", tmp_path / "proxy.log"
        kh.write_text(f"bastion-node {bastion.host_key_line}\n[127.0.0.1]:{host.port} {host.host_key_line}\n")
        entries = [
            {"name": "gpu", "address": "127.0.0.1", "port": host.port, "jump": "bastion"},
            {"name": "bastion", "address": "bastion-node", "proxyCommand": bastion.proxy_command(log)},
        ]
        inv = inventory_from_data({"defaults": {"knownHostsFile": str(kh)}, "hosts": entries}, tmp_path, "inv.yaml")
        t = inv.target(inv.entry("gpu"), FAST)
        assert t.proxy is None and t.jump is not None and t.jump.proxy is not None
        with session(t, host.user_key) as s:
            assert s.run("echo via-proxied-bastion").stdout == "via-proxied-bastion\n"
        [run] = _runs(log)
        assert run["argv"][-4:] == ["bastion-node", "22", "root", "bastion"]
        assert not Path(f"/proc/{run['pid']}").exists()
        assert "Accepted publickey for root" in (bastion.dir / "sshd.log").read_text()
    finally:
        bastion.stop()


def test_lines_a_proxy_prints_before_the_banner_do_not_cut_the_banner_wait(host: SshdHost, tmp_path: Path) -> None:
    """session-manager-plugin prints "Starting session with SessionId: ..." before the stream;
    paramiko waits only 2 s for each line after its first, so a greeting 3 s later used to fail."""
    kh, log = tmp_path / "known_hosts", tmp_path / "proxy.log"
    kh.write_text(f"node-a {host.host_key_line}\n")
    patient = Timeouts(connect=2, banner=5, auth=3, channel=3, command=10, kill_grace=1, connect_attempts=1)
    with session(_proxied(host, kh, host.proxy_command(log, "ssm"), patient), host.user_key) as s:
        assert s.run("echo after-the-plugin").stdout == "after-the-plugin\n"


def test_what_a_proxy_printed_before_a_banner_that_never_came_is_in_the_error(host: SshdHost, tmp_path: Path) -> None:
    kh, log = tmp_path / "known_hosts", tmp_path / "proxy.log"
    kh.write_text(f"node-a {host.host_key_line}\n")
    quick = Timeouts(connect=1, banner=1, auth=3, channel=3, kill_grace=1, connect_attempts=1)  # 2 s < the 3 s
    with pytest.raises(HostUnreachable) as exc:
        session(_proxied(host, kh, host.proxy_command(log, "ssm"), quick), host.user_key).__enter__()
    assert exc.value.line() == (
        f"gpu-a: no SSH banner within 2 s (node-a:22 through proxy command '{sys.executable}'): "
        "the proxy printed: Starting session with SessionId: name-0123abcd "
        "(the proxy or sshd stalled; run the proxy command by hand to check it connects)"
    )


def test_a_proxy_making_its_stdin_non_blocking_loses_nothing_to_a_slow_reader(
    host: SshdHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gcloud --listen-on-stdin sets O_NONBLOCK on its stdin; on a stdout that shared the open file
    (one socket for both) writes that would block were lost once we fell behind."""
    kh, log = tmp_path / "known_hosts", tmp_path / "proxy.log"
    kh.write_text(f"node-a {host.host_key_line}\n")
    real_recv = ProxySocket.recv

    def slow_recv(self: ProxySocket, size: int) -> bytes:
        time.sleep(0.003)  # a reader behind the proxy: its stdout's buffer fills
        return real_recv(self, size)

    monkeypatch.setattr(ProxySocket, "recv", slow_recv)
    with session(_proxied(host, kh, host.proxy_command(log, "nonblock")), host.user_key) as s:
        r = s.run("head -c 3000000 /dev/zero | base64", timeout=60)
    assert r.stdout == base64.encodebytes(bytes(3000000)).decode()  # byte-exact, coreutils' 76-column lines
    assert not r.truncated


@pytest.mark.parametrize("source", ["privateKeyEnv", "--identity-passphrase-env"])
def test_secrets_read_from_the_environment_never_reach_the_proxy(
    host: SshdHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    """A key's text or its passphrase would be readable in the proxy's /proc/PID/environ (and in
    its helpers', gcloud's and session-manager-plugin's)."""
    kh, log = tmp_path / "known_hosts", tmp_path / "proxy.log"
    kh.write_text(f"node-a {host.host_key_line}\n")
    entry = {"name": "gpu-a", "address": "node-a", "knownHostsFile": str(kh)}
    entry["proxyCommand"] = host.proxy_command(log, "environ")  # type: ignore[assignment]
    if source == "privateKeyEnv":
        variable, secret = "FULLSERVER_TEST_PROXY_KEY", host.user_key
        monkeypatch.setenv(variable, secret)
        inv = inventory_from_data({"hosts": [{**entry, "privateKeyEnv": variable}]}, tmp_path, "inv.yaml")
        key, passphrase = inv.private_key(inv.entries[0]), None
    else:
        variable, secret = "FULLSERVER_TEST_KEY_PASS", "correct horse battery"
        monkeypatch.setenv(variable, secret)
        path = tmp_path / "id_ed25519"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", secret, "-f", str(path)], check=True)
        host.authorize("root", path.with_suffix(".pub").read_text().strip())
        identity = read_identity(path, variable)
        key, passphrase = identity.text, identity.passphrase
        inv = inventory_from_data({"hosts": [entry]}, tmp_path, "inv.yaml")
    with session(inv.target(inv.entries[0], FAST), key, passphrase) as s:
        assert s.run("echo ok").ok
    [run] = _runs(log)
    assert variable not in run["environ"] and "PATH" in run["environ"]
    assert not [name for name, value in run["environ"].items() if secret.strip() in value]
    assert os.environ[variable] == secret  # withheld from children, not taken from us


def test_an_interrupt_before_the_handshake_leaves_no_proxy_running(
    host: SshdHost, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kh, log = tmp_path / "known_hosts", tmp_path / "proxy.log"
    kh.write_text(f"node-a {host.host_key_line}\n")

    def interrupted(target: Target) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(connection, "PinnedKeyPolicy", interrupted)
    with pytest.raises(KeyboardInterrupt):
        session(_proxied(host, kh, host.proxy_command(log)), host.user_key).__enter__()
    time.sleep(0.3)  # a proxy started and left behind has logged its start by now
    assert not [r for r in _runs(log) if _running(r["pid"])]
