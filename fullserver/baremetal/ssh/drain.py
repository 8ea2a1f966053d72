"""A running command's stdout and stderr, read together until it exits, its local deadline
passes, or the peer stops answering keepalives.

Both streams are read in one loop (no 2 MiB window deadlock, paramiko#1778) and kept up to
``OUTPUT_CAP`` each; the rest is read and dropped, so the command never blocks on a full window."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import paramiko

from fullserver.baremetal.errors import CommandTimeout, HostUnreachable
from fullserver.baremetal.inventory import Timeouts

OUTPUT_CAP = 4 << 20
"""Bytes kept per stream and command; the rest is drained and dropped (``Result.truncated``)."""


def _keep(buffer: bytearray, data: bytes) -> int:
    """Append what fits under the cap to ``buffer``; the number of bytes dropped."""
    keep = max(0, OUTPUT_CAP - len(buffer))
    buffer += data[:keep]
    return len(data) - min(len(data), keep)


def drain(
    chan: paramiko.Channel,
    transport: paramiko.Transport,
    *,
    host: str,
    timeouts: Timeouts,
    ping: Callable[[], threading.Event],
    deadline: float,
    what: str,
    limit: float,
) -> tuple[int, str, str, bool]:
    """Read stdout and stderr together until exit, the local deadline, or a dead peer.

    Returns the exit status (-1 when the channel closed without one), stdout, stderr and whether
    anything was dropped. ``deadline`` is on the monotonic clock; ``limit`` is the command's own
    timeout, for the message; ``ping`` sends a keepalive the server must answer."""
    t = timeouts
    out, err = bytearray(), bytearray()
    dropped = 0
    last_rx = time.monotonic()
    pinged: threading.Event | None = None
    ping_sent = 0.0
    pause = 0.002
    exited = 0.0
    while True:
        got = False
        while chan.recv_ready():
            dropped += _keep(out, chan.recv(65536))
            got = True
        while chan.recv_stderr_ready():
            dropped += _keep(err, chan.recv_stderr(65536))
            got = True
        if chan.exit_status_ready() and not chan.recv_ready() and not chan.recv_stderr_ready():
            # sshd may send exit-status before the last stderr bytes: wait (briefly) for EOF.
            exited = exited or time.monotonic()
            if chan.eof_received or chan.closed or time.monotonic() - exited > 2.0:
                status = chan.recv_exit_status()  # ready: returns at once
                break
        if chan.closed or not transport.is_active():
            if chan.exit_status_ready():
                continue  # exit-status and close arrived together: drain, then stop above
            status = -1
            break
        now = time.monotonic()
        if now > deadline:
            raise CommandTimeout(
                host,
                f"`{what}` gave no exit status within {limit:.0f}s (local deadline); abandoned",
                "the host may be hung (wedged driver, stalled sshd)",
            )
        if got:
            last_rx, pinged, pause = now, None, 0.002
            continue
        if now - last_rx > t.keepalive_interval:
            if pinged is None:
                pinged, ping_sent = ping(), now
            elif pinged.is_set():
                last_rx, pinged = now, None
            elif now - ping_sent > t.keepalive_interval * t.keepalive_count:
                transport.close()
                raise HostUnreachable(
                    host,
                    f"no answer to keepalives for {now - ping_sent:.0f}s while running `{what}`",
                    "the host or its sshd is hung or gone",
                )
        chan.status_event.wait(pause)
        pause = min(pause * 2, 0.05)
    return status, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), dropped > 0
