"""The path to a host and the handshake over it: direct TCP, through jump hosts, or through a
proxy command; retried as a whole for connect-phase errors only.

Retries are bounded, with exponential backoff and jitter, and never for auth or host-key failures
(retries lock accounts; a wrong key stays wrong). Through a jump host the *whole path* is retried
(``connect_attempts`` in all, not attempts per hop), and each hop authenticates with its own
private key. A proxy command's process is ended and reaped on every path out."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any

import paramiko

from fullserver.baremetal.errors import BareMetalError, HostUnreachable, ProxyNotStarted
from fullserver.baremetal.inventory import Target
from fullserver.baremetal.proxy import ProxySocket
from fullserver.baremetal.ssh.connect_errors import connect_failure, jump_failed, unreachable
from fullserver.baremetal.ssh.host_keys import PinnedKeyPolicy, disabled_algorithms
from fullserver.baremetal.ssh.private_keys import load_private_key
from fullserver.baremetal.ssh.ssh_session import SshSession
from fullserver.baremetal.ssh.tcp import open_socket


def _through_jump(target: Target, pkey: paramiko.PKey, hop_keys: Mapping[str, paramiko.PKey]) -> tuple[Any, SshSession]:
    """A ``direct-tcpip`` channel to ``target`` through its jump host (connected here, each hop
    with its own key), and the jump host's session, for the caller to close."""
    assert target.jump is not None
    try:
        jump = _connect_once(target.jump, hop_keys.get(target.jump.name, pkey), hop_keys)
    except BareMetalError as exc:
        raise jump_failed(target, exc) from None
    try:
        channel = jump.transport().open_channel(
            "direct-tcpip", (target.address, target.port), ("127.0.0.1", 0), timeout=target.timeouts.connect
        )
    except (paramiko.SSHException, EOFError, OSError) as exc:
        jump.close()
        raise HostUnreachable(
            target.name,
            f"jump host {target.jump.name} could not reach {target.endpoint}: {exc}",
            "check the address from the bastion and its AllowTcpForwarding",
        ) from None
    except BaseException:  # an interrupt while the jump host opens the channel
        jump.close()
        raise
    return channel, jump


def _open_stream(
    target: Target, pkey: paramiko.PKey, hop_keys: Mapping[str, paramiko.PKey]
) -> tuple[Any, SshSession | None]:
    """What the SSH stream runs over: a proxy command's process, a jump host's channel, or a TCP
    socket; with the jump host's session when there is one."""
    try:
        if target.proxy:
            return ProxySocket(target.proxy, target.name, target.timeouts.kill_grace), None
        if target.jump is not None:
            return _through_jump(target, pkey, hop_keys)
        return open_socket(target), None
    except OSError as exc:
        raise unreachable(target, exc) from None


def _connect_once(target: Target, pkey: paramiko.PKey, hop_keys: Mapping[str, paramiko.PKey]) -> SshSession:
    """One attempt along the whole path (jump hosts first, each with its own key, or the proxy
    command); no retries."""
    t = target.timeouts
    # A proxy's own connecting (gcloud's start-up, the tunnel's) happens before the banner can.
    banner = t.banner + (t.connect if target.proxy else 0.0)
    # Everything that can fail before connect() comes before the stream: from the proxy's start
    # on, every path out is inside the try that ends it.
    client = paramiko.SSHClient()  # an empty key store: no load_system_host_keys(), on purpose
    client.set_missing_host_key_policy(PinnedKeyPolicy(target))
    disabled = disabled_algorithms(target)
    sock, jump = _open_stream(target, pkey, hop_keys)
    try:
        client.connect(
            target.address,
            port=target.port,
            username=target.user,
            pkey=pkey,
            sock=sock,
            # With our own socket, paramiko uses ``timeout`` only as start_client's wait (banner +
            # key exchange): longer than the banner timeout, so a silent server is always named
            # by the banner's wait, never by start_client's.
            timeout=banner + t.connect,
            banner_timeout=banner,
            auth_timeout=t.auth,
            channel_timeout=t.channel,
            allow_agent=False,
            look_for_keys=False,
            disabled_algorithms={"keys": disabled},
        )
        transport = client.get_transport()
        if transport is None:
            raise HostUnreachable(target.name, "no transport after connect", "re-run")
        transport.set_keepalive(max(1, int(t.keepalive_interval)))
    except BaseException as exc:  # never leave a proxy or a jump host behind, whatever happened
        error = connect_failure(target, client, exc, sock, banner)  # reads the transport: before closing
        _close(client, sock, jump)
        if error is None:
            raise
        raise error from None
    return SshSession(target, client, jump, sock if isinstance(sock, ProxySocket) else None)


def _close(client: paramiko.SSHClient, sock: Any, jump: SshSession | None) -> None:
    client.close()
    with suppress(OSError):
        sock.close()
    if jump is not None:
        jump.close()


def connect(target: Target, pkey: paramiko.PKey, hop_keys: Mapping[str, paramiko.PKey] | None = None) -> SshSession:
    """Open a session, retrying connect-phase errors (with exponential backoff and jitter) only.

    ``hop_keys`` maps jump hosts' names to their own keys (``pkey`` when absent). A failure
    anywhere on the path retries the whole path, ``connect_attempts`` times in all; a proxy
    command that cannot be started (``ProxyNotStarted``) is not retried."""
    t = target.timeouts
    attempts = max(1, t.connect_attempts)
    for attempt in range(attempts):
        try:
            return _connect_once(target, pkey, hop_keys or {})
        except ProxyNotStarted:
            raise
        except HostUnreachable:
            if attempt + 1 >= attempts:
                raise
            time.sleep(t.retry_base * (2**attempt) + random.uniform(0, t.retry_base))
    raise AssertionError("unreachable")


@contextmanager
def session(
    target: Target, private_key: str, passphrase: str | None = None, *, jump_keys: Mapping[str, str] | None = None
) -> Iterator[SshSession]:
    """``with session(target, key_text) as s: s.run([...])`` — connect, use, always close.

    ``jump_keys`` gives jump hosts (by name) their own private key text; a hop not named there
    uses ``private_key``."""
    pkey = load_private_key(private_key, target.name, passphrase)
    hops: dict[str, paramiko.PKey] = {}
    hop = target.jump
    while hop is not None:
        if jump_keys and hop.name in jump_keys:
            hops[hop.name] = load_private_key(jump_keys[hop.name], hop.name)
        hop = hop.jump
    s = connect(target, pkey, hops)
    try:
        yield s
    finally:
        s.close()
