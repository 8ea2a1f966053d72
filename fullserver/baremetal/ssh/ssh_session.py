"""``SshSession``: one authenticated connection to one host, running all that host's commands.

Each command has a remote ``timeout -k`` *and* a local monotonic deadline. Starting it is bounded
too: paramiko's ``exec_command`` waits for the server's answer without a timeout, so a watchdog
closes the connection after the channel timeout (a server that stalls right after opening the
session raises ``CommandTimeout``); stdin is sent with the channel's own send timeout. A session
refuses to be used from a thread other than the one that opened it (paramiko#1904)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import paramiko

from fullserver.baremetal.errors import CommandTimeout, HostUnreachable
from fullserver.baremetal.inventory import Target
from fullserver.baremetal.proxy import ProxySocket
from fullserver.baremetal.ssh.drain import drain
from fullserver.baremetal.ssh.exit_status import outcome
from fullserver.baremetal.ssh.keepalive import ping
from fullserver.baremetal.transport import Result, as_script, remote_command


class SshSession:
    """One authenticated connection to one host, used by one thread for all that host's commands."""

    def __init__(
        self,
        target: Target,
        client: paramiko.SSHClient,
        jump: SshSession | None = None,
        proxy: ProxySocket | None = None,
    ) -> None:
        self.target = target
        self._client = client
        self._jump = jump
        self._proxy = proxy
        self._owner = threading.get_ident()
        self._last_activity = time.monotonic()
        self.writes = 0
        self.commands = 0

    @property
    def host(self) -> str:
        return self.target.name

    @property
    def is_root(self) -> bool:
        return self.target.user == "root"

    @property
    def user(self) -> str:
        return self.target.user

    def __enter__(self) -> SshSession:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._client.close()
        if self._proxy is not None:  # paramiko closes it with the transport; a transport-less client does not
            self._proxy.close()
        if self._jump is not None:
            self._jump.close()

    def transport(self) -> paramiko.Transport:
        """The live transport; ``HostUnreachable`` when the connection is gone."""
        transport = self._client.get_transport()
        if transport is None or not transport.is_active():
            raise HostUnreachable(
                self.host, "the connection is closed", "the host or network dropped it; re-run to reconnect"
            )
        return transport

    def _ping(self) -> threading.Event:
        """Send a keepalive the server must answer; the event is set when it does."""
        return ping(self.transport(), self.host)

    def alive(self, wait: float | None = None) -> bool:
        """True when the server answers a keepalive within ``wait`` seconds."""
        t = self.target.timeouts
        try:
            ok = self._ping().wait(wait if wait is not None else t.keepalive_interval)
        except HostUnreachable:
            return False
        if not ok:
            self._client.close()
        return ok

    def run(
        self,
        command: str | Sequence[str],
        *,
        timeout: float | None = None,
        sudo: bool = False,
        stdin: bytes | None = None,
        check: bool = True,
        write: bool = False,
        label: str | None = None,
    ) -> Result:
        if threading.get_ident() != self._owner:
            raise RuntimeError(f"{self.host}: an SSH session must not be shared between threads; open one per thread")
        t = self.target.timeouts
        limit = timeout if timeout is not None else t.command
        script = as_script(command)
        what = label or script.strip().splitlines()[0][:80] if script.strip() else "(empty)"
        use_sudo = sudo and not self.is_root
        cmd = remote_command(script, timeout=limit, kill_grace=t.kill_grace, sudo=use_sudo)
        if time.monotonic() - self._last_activity > t.keepalive_interval and not self.alive():
            raise HostUnreachable(
                self.host, "the host stopped answering on an idle connection", "check the host; re-run to reconnect"
            )
        transport = self.transport()
        chan = self._open_channel(transport)
        self.commands += 1
        if write:
            self.writes += 1
        start = time.monotonic()
        try:
            status, out, err, truncated = self._execute(chan, transport, cmd, stdin, what, limit, start)
        finally:
            chan.close()
            self._last_activity = time.monotonic()
        return outcome(
            Result(status, out, err, truncated, time.monotonic() - start),
            host=self.host,
            user=self.target.user,
            what=what,
            limit=limit,
            sudo=use_sudo,
            check=check,
            connected=transport.is_active(),
        )

    def _open_channel(self, transport: paramiko.Transport) -> paramiko.Channel:
        try:
            return transport.open_session(timeout=self.target.timeouts.channel)
        except (paramiko.SSHException, EOFError, OSError) as exc:
            raise HostUnreachable(
                self.host,
                f"cannot open a channel: {exc}",
                "the connection died or sshd refused a session (MaxSessions?)",
            ) from None

    def _execute(
        self,
        chan: paramiko.Channel,
        transport: paramiko.Transport,
        cmd: str,
        stdin: bytes | None,
        what: str,
        limit: float,
        start: float,
    ) -> tuple[int, str, str, bool]:
        """Start ``cmd`` on ``chan`` (bounded by a watchdog), send ``stdin``, and drain its output."""
        t = self.target.timeouts
        stalled = threading.Event()

        def watchdog() -> None:  # exec_command() waits for the server's reply with no timeout
            stalled.set()
            transport.close()

        timer = threading.Timer(t.channel, watchdog)
        timer.daemon = True
        try:
            timer.start()
            try:
                chan.exec_command(cmd)
            finally:
                timer.cancel()
            if stalled.is_set():
                raise paramiko.SSHException("stalled")
            if stdin:
                chan.settimeout(t.channel)  # send() waits for window space; bounded by this
                chan.sendall(stdin)
            chan.shutdown_write()
            deadline = start + limit + t.kill_grace + 5.0
            return drain(
                chan, transport, host=self.host, timeouts=t, ping=self._ping, deadline=deadline, what=what, limit=limit
            )
        except TimeoutError:
            transport.close()
            raise CommandTimeout(
                self.host,
                f"`{what}` did not accept its input within {t.channel:.0f}s",
                "the host or its sshd is stalled; re-run",
            ) from None
        except (paramiko.SSHException, EOFError, OSError) as exc:
            if stalled.is_set():
                raise CommandTimeout(
                    self.host,
                    f"the server did not start `{what}` within {t.channel:.0f}s; connection closed",
                    "the host or its sshd is stalled (overloaded, or a hung PAM/session setup); re-run",
                ) from None
            raise HostUnreachable(
                self.host, f"connection lost while running `{what}`: {exc}", "re-run; steps resume where they stopped"
            ) from None
