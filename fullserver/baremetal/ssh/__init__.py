"""The SSH layer: paramiko behind ``Runner``, with pinned host keys and every wait bounded.

The only package that imports paramiko. What it guarantees (each a parameter of paramiko 5.1's own
``SSHClient.connect``/``Transport``, https://docs.paramiko.org/en/stable/api/client.html):

* **Host keys** are checked against the target's pinned keys only. The client starts with an
  empty key store (no ``load_system_host_keys``: the operator's known_hosts would win over the
  pins) and a ``RejectPolicy`` subclass that accepts exactly the pinned blobs and refuses the
  rest with expected vs offered ``SHA256:`` fingerprints. paramiko's ``HostKeys`` keeps one key
  per type, so several pinned keys of one type (rotation) are compared by the policy itself;
  host-key algorithms other than the pinned types are disabled so negotiation picks a pinned
  one. Nothing is ever written back.
* **Auth** with an in-memory private key only: ``allow_agent=False, look_for_keys=False``, no
  agent forwarding (never requested). A jump host is a ``direct-tcpip`` channel through a
  pinned bastion — never agent forwarding. A ``proxyCommand`` (``gcloud compute
  start-iap-tunnel``, ``aws ssm start-session``) is a process carrying the stream on its
  stdin/stdout (``fullserver.baremetal.proxy``); the key is still pinned under the target's
  address (with a proxy, a node name: OpenSSH's ``HostKeyAlias``), and the process is ended and
  reaped on every path out, its stderr's last words named when it fails.
* **Waits**: TCP connect, banner, auth and channel-open timeouts are explicit. Each command has a
  remote ``timeout -k`` *and* a local monotonic deadline; stdout and stderr are drained together
  (no 2 MiB window deadlock, paramiko#1778) and captured up to a cap. A silent command triggers
  ``keepalive@openssh.com`` requests that must be answered (paramiko's own keepalive never
  notices a dead peer, paramiko#2463); the socket also has TCP keepalive.
* **Retries** only for connect-phase errors (refused, timeout, banner EOF), bounded, with jitter;
  never for auth or host-key failures (retries lock accounts; a wrong key stays wrong). Through a
  jump host the *whole path* is retried (``connect_attempts`` in all, not attempts per hop), and
  each hop authenticates with its own private key.
* **Starting a command** is bounded too: paramiko's ``exec_command`` waits for the server's
  answer without a timeout, so a watchdog closes the connection after the channel timeout (a
  server that stalls right after opening the session raises ``CommandTimeout``); stdin is sent
  with the channel's own send timeout.
* **One connection per host**, reused for all its commands; a session refuses to be used from a
  thread other than the one that opened it (paramiko#1904).
* **No library output**: paramiko's log records never reach stderr as such (its transport thread
  logs a traceback for every connection it loses); ``liblog`` drops them or passes one line on.
  A connect-phase failure is named by the phase it stopped in — no SSH banner within N s, key
  exchange not finished — never by the follow-on error paramiko raises ("No existing session").

Modules, one concept each:

* ``private_keys`` — a private key from its text, and its public half's line;
* ``host_keys`` — the pinned-key policy and the host-key algorithms it leaves on;
* ``tcp`` — the TCP socket to a host, with keepalive;
* ``connect_errors`` — what a failed connect is called: the phase it stopped in, or the refusal;
* ``connection`` — the path to a host (direct, jump hosts, proxy command), retries, ``session()``;
* ``ssh_session`` — ``SshSession``: one connection running one host's commands;
* ``keepalive`` — a keepalive the server must answer;
* ``drain`` — a running command's stdout and stderr, read together until it exits;
* ``exit_status`` — what a finished command's exit status means (timeout, sudo refused, failed).

Import from here (``from fullserver.baremetal.ssh import session``); the modules are this
package's own arrangement.
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
