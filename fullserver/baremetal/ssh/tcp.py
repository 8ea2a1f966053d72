"""The TCP connection to a host's sshd, with a bounded connect and kernel keepalive."""

from __future__ import annotations

import socket

from fullserver.baremetal.inventory import Target


def open_socket(target: Target) -> socket.socket:
    """A connected socket to ``target``'s address and port, with TCP keepalive on."""
    t = target.timeouts
    sock = socket.create_connection((target.address, target.port), timeout=t.connect)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    # The kernel declares the peer dead after idle + interval x count seconds without ACKs.
    for opt, value in (
        ("TCP_KEEPIDLE", t.keepalive_interval),
        ("TCP_KEEPINTVL", t.keepalive_interval),
        ("TCP_KEEPCNT", t.keepalive_count),
    ):
        if hasattr(socket, opt):
            sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, opt), max(1, int(value)))
    return sock
