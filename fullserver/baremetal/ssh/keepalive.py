"""A keepalive the server must answer: how a silent command tells a slow host from a dead one.

paramiko's own keepalive (``Transport.set_keepalive``) never waits for an answer, so it never
notices a dead peer (paramiko#2463); ``keepalive@openssh.com`` with ``wait=True`` does."""

from __future__ import annotations

import threading

import paramiko


def ping(transport: paramiko.Transport, host: str) -> threading.Event:
    """Send a keepalive the server must answer; the event is set when it does."""
    answered = threading.Event()

    def ask() -> None:
        try:
            transport.global_request("keepalive@openssh.com", wait=True)
        except (paramiko.SSHException, EOFError, OSError):
            return
        if transport.is_active():
            answered.set()

    threading.Thread(target=ask, name=f"keepalive-{host}", daemon=True).start()
    return answered
