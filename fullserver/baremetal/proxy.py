"""A ProxyCommand for the SSH layer: a process whose stdin and stdout carry the SSH stream.

What ``gcloud compute start-iap-tunnel %h %p --listen-on-stdin`` or ``aws ssm start-session
--document-name AWS-StartSSHSession`` are to OpenSSH's ``ProxyCommand``. The process is started
from an argv (no shell) with both ends on one side of a socket pair, and ``ProxySocket`` is the
other side: a real socket to paramiko, so its timeouts, its ``recv() == b""`` end of stream and
its ``send`` back-pressure behave as over TCP.

paramiko's own ``ProxyCommand`` is not used: its stderr is a pipe nobody reads (the user never
sees why gcloud refused, and a chatty proxy stalls once 64 KiB are buffered), its ``recv`` spins
until the timeout on end of stream (a proxy that exited looks like a server that is silent until
the banner timeout), and ``close()`` sends SIGTERM without ever reaping the process.

Here stderr is read by a thread that keeps its tail for the error message, and ``close()`` (from
paramiko's transport, from the session, from every failure path) is idempotent: it closes our
end (the proxy sees end of input), sends SIGTERM to the proxy's process group (started in a
session of its own, so helpers it spawned go too: ``aws ssm`` runs ``session-manager-plugin``),
SIGKILL after the grace period, and reaps. No paramiko here; ``fullserver.baremetal.ssh`` wires it.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
from collections.abc import Sequence
from contextlib import suppress
from typing import IO

from fullserver.baremetal.errors import HostUnreachable, ProxyNotStarted

STDERR_KEEP = 4096
"""Bytes of the proxy's stderr kept (its last words are what explains a failure)."""


class ProxySocket:
    """Our end of the proxy's stdin/stdout, and the owner of the proxy process.

    ``where`` names the host in errors. Socket methods paramiko calls (``send``, ``recv``,
    ``settimeout``, ``close``, ``_closed``) are those of the socket pair's end."""

    def __init__(self, argv: Sequence[str], where: str, kill_grace: float = 5.0) -> None:
        self.argv = tuple(argv)
        self.where = where
        self.kill_grace = kill_grace
        self._lock = threading.Lock()
        self._closed = False
        self._signalled = False
        self._finished = threading.Event()  # close() is done: the exit status is final
        self._stderr = bytearray()
        ours, theirs = socket.socketpair()
        try:
            self.process: subprocess.Popen[bytes] = subprocess.Popen(
                self.argv,
                stdin=theirs.fileno(),
                stdout=theirs.fileno(),
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except FileNotFoundError:
            ours.close()
            raise ProxyNotStarted(
                where, f"proxy command '{self.name}' not found", "install it or put it on PATH"
            ) from None
        except OSError as exc:
            ours.close()
            raise ProxyNotStarted(
                where,
                f"proxy command '{self.name}' cannot be started: {exc.strerror or exc}",
                "check proxyCommand's first word is an executable program",
            ) from None
        finally:
            theirs.close()
        self._sock = ours
        stream = self.process.stderr
        assert stream is not None  # stderr=PIPE
        self._reader = threading.Thread(target=self._read_stderr, args=(stream,), daemon=True, name="proxy-stderr")
        self._reader.start()

    @property
    def name(self) -> str:
        """The proxy's program as the user wrote it (``gcloud``), for messages."""
        return self.argv[0] if self.argv else ""

    @property
    def pid(self) -> int:
        return self.process.pid

    def _read_stderr(self, stream: IO[bytes]) -> None:
        while True:
            try:
                chunk = os.read(stream.fileno(), 4096)
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                self._stderr += chunk
                del self._stderr[:-STDERR_KEEP]

    # --- what paramiko's Transport and Packetizer call -------------------------------------------

    def send(self, data: bytes) -> int:
        return self._sock.send(data)

    def sendall(self, data: bytes) -> None:
        self._sock.sendall(data)

    def recv(self, size: int) -> bytes:
        return self._sock.recv(size)

    def settimeout(self, timeout: float | None) -> None:
        self._sock.settimeout(timeout)

    def gettimeout(self) -> float | None:
        return self._sock.gettimeout()

    def fileno(self) -> int:
        return self._sock.fileno()

    def close(self) -> None:
        """End the proxy: EOF on its input, SIGTERM to its group, SIGKILL after the grace; reaped."""
        with self._lock:
            first, self._closed = not self._closed, True
        if not first:  # paramiko's thread and the session both close it: neither returns before it is reaped
            self._finished.wait(self.kill_grace + 3.0)
            return
        try:
            self._settle()
            with suppress(OSError):
                self._sock.close()
            if self.process.poll() is None:
                self._signalled = True  # before the signal: an exit from here on is ours, not the proxy's
            self._signal(signal.SIGTERM)
            try:
                self.process.wait(self.kill_grace)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.process.wait()
            self._signal(signal.SIGKILL)  # helpers of a proxy that exited on SIGTERM without them
        finally:
            self._finished.set()
        self._reader.join(1.0)
        if not self._reader.is_alive() and self.process.stderr is not None:
            self.process.stderr.close()

    def _signal(self, sig: int) -> None:
        # The group outlives its leader while a member lives; Linux never reuses a live group's id.
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, sig)

    def _settle(self, wait: float = 1.0) -> None:
        """A proxy that closed its output is exiting (its stdout is gone before it is a zombie):
        give it ``wait`` seconds to end, so its own exit status is the one recorded."""
        try:
            closed = self._sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except OSError:  # nothing to read yet, or our end is already closed
            closed = False
        if closed:
            with suppress(subprocess.TimeoutExpired):
                self.process.wait(wait)

    # --- what explains a failure -----------------------------------------------------------------

    def stderr_tail(self, limit: int = 300) -> str:
        """The proxy's last stderr lines, on one line (its own error message, e.g. gcloud's)."""
        with self._lock:
            text = self._stderr.decode("utf-8", "replace")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        tail = " | ".join(lines[-3:])
        return tail if len(tail) <= limit else "..." + tail[-limit:]

    def ended(self) -> str | None:
        """``"exited 1"`` (or ``"was killed by signal 9"``) when the proxy ended on its own, else
        None: still running, or ended by ``close()`` (paramiko's transport closes its socket when
        a wait runs out, and that is the wait's failure, not the proxy's)."""
        if not self._closed:
            self._settle()
        if self._closed:  # by paramiko's thread, maybe still settling: its verdict counts
            self._finished.wait(self.kill_grace + 2.0)
        status = self.process.poll()
        if status is None or self._signalled:
            return None
        self._reader.join(0.5)  # its last words, written just before it exited
        return f"was killed by signal {-status}" if status < 0 else f"exited {status}"

    def failure(self, stage: str) -> HostUnreachable | None:
        """The proxy's own end as the host's error, with its last stderr lines (gcloud's "not
        authorized"), or None while it still runs. A proxy that ended is why the handshake
        stopped, whatever paramiko says."""
        ended = self.ended()
        if ended is None:
            return None
        tail = self.stderr_tail()
        return HostUnreachable(
            self.where,
            f"proxy command '{self.name}' {ended} {stage}" + (f": {tail}" if tail else " (nothing on its stderr)"),
            "its message says why (its login, its permissions, the node's name); run it by hand to check",
        )
