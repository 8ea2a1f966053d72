"""A ProxyCommand for the SSH layer: a process whose stdin and stdout carry the SSH stream.

Design notes: docs/design/bare-metal.md.
"""

from __future__ import annotations

import errno
import os
import select
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from contextlib import suppress
from typing import IO

from fullserver.baremetal.errors import HostUnreachable, ProxyNotStarted

STDERR_KEEP = 4096
"""Bytes of the proxy's stderr kept (its last words are what explains a failure); as many of
what it printed on stdout before the SSH banner."""

_withheld: set[str] = set()
_withheld_lock = threading.Lock()


def withhold_from_children(name: str) -> None:
    """Keep the environment variable ``name`` (a secret we read) from every process started
    with ``child_environ()``: proxy commands, their helpers, cloud CLIs."""
    with _withheld_lock:
        _withheld.add(name)


def child_environ() -> dict[str, str]:
    """Our environment minus the withheld names: what a child process is started with."""
    with _withheld_lock:
        hidden = set(_withheld)
    return {k: v for k, v in os.environ.items() if k not in hidden}


def run_captured(argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` to completion, its output captured as text, with ``child_environ()``, in a
    session of its own; past ``timeout`` its whole process group is killed (a CLI's helpers go
    too, where ``subprocess.run`` kills only the child and then waits on the helpers' pipes) and
    ``subprocess.TimeoutExpired`` is raised."""
    with subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=child_environ(),
        start_new_session=True,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)


class ProxySocket:
    """Our ends of the proxy's stdin and stdout, and the owner of the proxy process.

    ``where`` names the host in errors. paramiko calls ``send``, ``recv``, ``settimeout`` and
    ``close`` and reads ``_closed``: ``send`` writes to the proxy's stdin pair, ``recv`` reads its
    stdout pair (past anything printed before the SSH banner), ``settimeout`` applies to both."""

    def __init__(self, argv: Sequence[str], where: str, kill_grace: float = 5.0) -> None:
        self.argv = tuple(argv)
        self.where = where
        self.kill_grace = kill_grace
        self._lock = threading.Lock()
        self._closed = False
        self._signalled = False
        self._finished = threading.Event()  # close() is done: the exit status is final
        self._stderr = bytearray()
        self._timeout: float | None = None
        self._banner = False  # the server's SSH- line has started: bytes pass untouched
        self._dropping = False  # inside a line before the banner that is not the SSH- line
        self._held = b""  # the start of a line too short to tell yet (b"SS")
        self._ready = bytearray()  # sifted bytes not yet returned by recv
        self._printed = bytearray()  # the lines dropped before the banner, for the error message
        self._in, their_in = socket.socketpair()
        self._out, their_out = socket.socketpair()
        try:
            self.process: subprocess.Popen[bytes] = subprocess.Popen(
                self.argv,
                stdin=their_in.fileno(),
                stdout=their_out.fileno(),
                stderr=subprocess.PIPE,
                start_new_session=True,
                env=child_environ(),
            )
        except FileNotFoundError:
            self._close_ends()
            raise ProxyNotStarted(
                where, f"proxy command '{self.name}' not found", "install it or put it on PATH"
            ) from None
        except OSError as exc:
            self._close_ends()
            raise ProxyNotStarted(
                where,
                f"proxy command '{self.name}' cannot be started: {exc.strerror or exc}",
                "check proxyCommand's first word is an executable program",
            ) from None
        finally:
            their_in.close()
            their_out.close()
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
        return self._in.send(data)

    def sendall(self, data: bytes) -> None:
        self._in.sendall(data)

    def recv(self, size: int) -> bytes:
        """Up to ``size`` bytes of the SSH stream; b"" at its end; ``socket.timeout`` when nothing
        of the stream came within the timeout (lines before the banner are not the stream)."""
        if not self._ready:
            if self._banner:
                return self._out.recv(size)
            self._sift_until_banner()
        data = bytes(self._ready[:size])
        del self._ready[:size]
        return data

    def settimeout(self, timeout: float | None) -> None:
        self._timeout = timeout
        self._in.settimeout(timeout)
        self._out.settimeout(timeout)

    def fileno(self) -> int:
        """The end we read (what a ``select`` on this socket waits for)."""
        return self._out.fileno()

    # --- before the banner -----------------------------------------------------------------------

    def _sift_until_banner(self) -> None:
        """Read until some of the SSH stream is ready, the stream ends, or the timeout passes."""
        deadline = None if self._timeout is None else time.monotonic() + self._timeout
        while not self._ready and not self._banner:
            if deadline is not None and not self._readable(deadline - time.monotonic()):
                raise TimeoutError("timed out")  # socket.timeout, as paramiko expects
            data = self._out.recv(65536)
            if not data:
                return  # end of stream: recv returns b""
            self._sift(data)

    def _readable(self, wait: float) -> bool:
        fd = self._out.fileno()
        if fd < 0:  # closed by close(): what recv on a closed socket raises
            raise OSError(errno.EBADF, "the proxy's socket is closed")
        poll = select.poll()
        poll.register(fd, select.POLLIN)
        return bool(poll.poll(max(0, int(wait * 1000) + 1)))

    def _sift(self, data: bytes) -> None:
        """Drop whole lines that do not start with ``SSH-``; from the one that does, keep all."""
        buf = self._held + data
        self._held = b""
        while buf:
            if self._dropping:
                end = buf.find(b"\n")
                line, buf = (buf, b"") if end < 0 else (buf[: end + 1], buf[end + 1 :])
                self._dropping = end < 0
                with self._lock:
                    self._printed += line
                    del self._printed[:-STDERR_KEEP]
            elif buf.startswith(b"SSH-"):
                self._banner = True
                self._ready += buf
                return
            elif b"SSH-".startswith(buf):
                self._held = buf  # b"SS": the next bytes tell
                return
            else:
                self._dropping = True

    def printed(self, limit: int = 300) -> str:
        """What the proxy printed on its stdout before the SSH banner, on one line."""
        with self._lock:
            text = self._printed.decode("utf-8", "replace")
        return _one_line(text, limit)

    def close(self) -> None:
        """End the proxy: EOF on its input, SIGTERM to its group, SIGKILL after the grace; reaped."""
        with self._lock:
            first, self._closed = not self._closed, True
        if not first:  # paramiko's thread and the session both close it: neither returns before it is reaped
            self._finished.wait(self.kill_grace + 3.0)
            return
        try:
            self._settle()
            self._close_ends()  # our end of its stdin first: the proxy sees end of input
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

    def _close_ends(self) -> None:
        for end in (self._in, self._out):
            with suppress(OSError):
                end.close()

    def _signal(self, sig: int) -> None:
        # The group outlives its leader while a member lives; Linux never reuses a live group's id.
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, sig)

    def _settle(self, wait: float = 1.0) -> None:
        """A proxy that closed its output is exiting (its stdout is gone before it is a zombie):
        give it ``wait`` seconds to end, so its own exit status is the one recorded."""
        try:
            closed = self._out.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
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
        return _one_line(text, limit)

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
        tail = self.stderr_tail() or self.printed()
        return HostUnreachable(
            self.where,
            f"proxy command '{self.name}' {ended} {stage}" + (f": {tail}" if tail else " (nothing on its stderr)"),
            "its message says why (its login, its permissions, the node's name); run it by hand to check",
        )


def _one_line(text: str, limit: int) -> str:
    """The last three non-empty lines of ``text``, joined, at most ``limit`` characters."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    tail = " | ".join(lines[-3:])
    return tail if len(tail) <= limit else "..." + tail[-limit:]
