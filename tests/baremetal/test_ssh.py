"""The SSH layer against real sshd hosts: pinned keys, bounded waits, faults."""

from __future__ import annotations

import logging
import socket
import threading
import time
from typing import Any

import paramiko
import pytest

from fullserver.baremetal import liblog, ssh
from fullserver.baremetal.errors import (
    AuthFailed,
    CommandFailed,
    CommandTimeout,
    HostKeyMismatch,
    HostUnreachable,
    NoSudo,
)
from fullserver.baremetal.inventory import Target, Timeouts, keys_from_known_hosts
from fullserver.baremetal.ssh import session
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
    real = ssh._socket

    def counting(target: Target) -> socket.socket:
        dials.append(target.name)
        return real(target)

    monkeypatch.setattr(ssh, "_socket", counting)
    return dials


def test_unreachable_is_bounded_and_retried(host: SshdHost, monkeypatch: pytest.MonkeyPatch) -> None:
    dials = _count_dials(monkeypatch)
    t = Target("gone", "127.0.0.1", free_port(), "root", host.target().host_keys, None, FAST)
    start = time.monotonic()
    with pytest.raises(HostUnreachable, match="connection refused"):
        session(t, host.user_key).__enter__()
    assert time.monotonic() - start < 2
    assert dials == ["gone"] * FAST.connect_attempts  # retried, and only as often as configured


def test_unreachable_bastion_retries_the_whole_path_not_each_hop(
    host: SshdHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    dials = _count_dials(monkeypatch)
    bastion = Target("bastion", "127.0.0.1", free_port(), "root", host.target().host_keys, None, FAST)
    inner = host.target(timeouts=FAST)
    t = Target(inner.name, inner.address, inner.port, "root", inner.host_keys, bastion, FAST)
    with pytest.raises(HostUnreachable, match="bastion: connection refused"):
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

        start = time.monotonic()
        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        worker.join(quick.channel + 5)
        elapsed = time.monotonic() - start
        host.resume()
    assert outcome, f"run() still waiting after {elapsed:.0f}s: exec_command is unbounded"
    assert isinstance(outcome[0], CommandTimeout), outcome
    assert f"did not start `echo never` within {quick.channel:.0f}s" in outcome[0].line()
    assert elapsed < quick.channel + 2


def test_stalled_server_banner_times_out(host: SshdHost) -> None:
    host.pause()  # SIGSTOP: the kernel still accepts TCP, sshd never speaks
    start = time.monotonic()
    with pytest.raises(HostUnreachable) as exc:
        session(host.target(timeouts=FAST), host.user_key).__enter__()
    elapsed = time.monotonic() - start
    assert elapsed < FAST.banner * FAST.connect_attempts + 3, elapsed
    assert exc.value.line() == (
        f"{host.name}: no SSH banner within 2 s (127.0.0.1:{host.port}) "
        "(sshd stalled or overloaded; check the host's console and load)"
    )


def test_stalled_banner_is_named_whichever_wait_runs_out_first(host: SshdHost) -> None:
    """paramiko's start_client wait (the connect timeout) used to end before the banner's, and the
    host was then named "connection failed: No existing session"."""
    quick = Timeouts(connect=1, banner=2, auth=3, channel=3, connect_attempts=1)
    host.pause()
    start = time.monotonic()
    with pytest.raises(HostUnreachable) as exc:
        session(host.target(timeouts=quick), host.user_key).__enter__()
    assert "no SSH banner within 2 s" in exc.value.line() and "No existing session" not in exc.value.line()
    assert time.monotonic() - start < quick.banner + 2  # costs its banner timeout, no more


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
