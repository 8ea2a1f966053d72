"""The SSH layer: paramiko behind ``Runner``, with pinned host keys and every wait bounded.

The only package that imports paramiko. What it guarantees (each a parameter of paramiko 5.1's own
``SSHClient.connect``/``Transport``, https://docs.paramiko.org/en/stable/api/client.html):
see the design notes.

Design notes: docs/design/bare-metal.md.
"""

from __future__ import annotations

from fullserver.baremetal import liblog
from fullserver.baremetal.ssh.connection import connect, session
from fullserver.baremetal.ssh.drain import OUTPUT_CAP
from fullserver.baremetal.ssh.exit_status import SUDO_REFUSALS
from fullserver.baremetal.ssh.host_keys import PinnedKeyPolicy
from fullserver.baremetal.ssh.private_keys import load_private_key, public_key_line
from fullserver.baremetal.ssh.ssh_session import SshSession

liblog.install()  # before any transport thread can log

__all__ = [
    "OUTPUT_CAP",
    "SUDO_REFUSALS",
    "PinnedKeyPolicy",
    "SshSession",
    "connect",
    "load_private_key",
    "public_key_line",
    "session",
]
