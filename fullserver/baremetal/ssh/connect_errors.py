"""What a failed connect is called: the phase it stopped in, or what refused it, with a hint.

A connect-phase failure is named by the phase it stopped in — no SSH banner within N s, key
exchange not finished — never by the follow-on error paramiko raises ("No existing session").
Host-key and auth refusals keep their own kinds (``HostKeyMismatch``, ``AuthFailed``): they are
never retried."""

from __future__ import annotations

import socket

import paramiko
from paramiko.ssh_exception import IncompatiblePeer

from fullserver.baremetal.errors import AuthFailed, BareMetalError, HostKeyMismatch, HostUnreachable
from fullserver.baremetal.inventory import Target, fingerprint
from fullserver.baremetal.proxy import ProxySocket


def where(target: Target) -> str:
    """Where a connect-phase message says it tried: ``(addr:port)``, and the proxy it went through."""
    via = f" through proxy command '{target.proxy[0]}'" if target.proxy else ""
    return f"({target.endpoint}{via})"


def unreachable(target: Target, exc: BaseException) -> HostUnreachable:
    """A socket-level failure (refused, unresolvable, timed out, no banner) in words, with a hint."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, ConnectionRefusedError):
        what, hint = "connection refused", "is sshd running and is the port right?"
    elif isinstance(exc, socket.gaierror):
        what, hint = f"cannot resolve address: {text}", "check the address"
    elif isinstance(exc, TimeoutError | socket.timeout):
        what, hint = "timed out connecting", "check the address, the port and any firewall between"
    elif "banner" in text.lower():
        what, hint = f"no SSH banner: {text}", "sshd may be overloaded (MaxStartups) or hung"
    else:
        what, hint = f"connection failed: {text}", "check that sshd answers on that port"
    return HostUnreachable(target.name, f"{what} {where(target)}", hint)


def _no_banner(target: Target, exc: BaseException, sock: object, banner: float) -> HostUnreachable:
    """No SSH banner ever arrived: closed before it, or silent (through a proxy: what it said)."""
    at = where(target)
    cause = exc.__context__ if exc.__context__ is not None else exc
    if isinstance(cause, EOFError | ConnectionError):
        return HostUnreachable(
            target.name,
            f"the server closed the connection before its SSH banner {at}",
            "sshd refused it (MaxStartups, a firewall or TCP wrapper), or that port is not sshd",
        )
    if isinstance(sock, ProxySocket):
        printed, said = sock.printed(), sock.stderr_tail()
        return HostUnreachable(
            target.name,
            f"no SSH banner within {banner:g} s {at}"
            + (f": the proxy printed: {printed}" if printed else "")
            + (f": the proxy said: {said}" if said else ""),
            "the proxy or sshd stalled; run the proxy command by hand to check it connects",
        )
    return HostUnreachable(
        target.name,
        f"no SSH banner within {banner:g} s {at}",
        "sshd stalled or overloaded; check the host's console and load",
    )


def handshake_failure(
    target: Target, client: paramiko.SSHClient, exc: BaseException, sock: object, banner: float
) -> HostUnreachable:
    """Name the phase an SSH handshake stopped in, from the transport's state, not from the error.

    paramiko's own error depends on which of its waits ran out first: the transport thread's
    banner timeout ("Error reading SSH protocol banner", with the cause as ``__context__``) or
    ``start_client``'s, after which ``connect`` asks for the server key and gets "No existing
    session". What the transport got tells the phases apart either way."""
    t = target.timeouts
    transport = client.get_transport()
    if isinstance(sock, ProxySocket):
        stage = "before the SSH banner" if transport is None or not transport.remote_version else "during the handshake"
        ended = sock.failure(stage)
        if ended is not None:
            return ended
    if transport is not None and not transport.remote_version:  # no banner ever arrived
        return _no_banner(target, exc, sock, banner)
    if transport is not None and not transport.initial_kex_done:
        return HostUnreachable(
            target.name,
            f"key exchange did not finish within {banner + t.connect:g} s {where(target)}",
            "sshd stalled or overloaded after its banner; check the host's console and load",
        )
    return unreachable(target, exc)


def connect_failure(
    target: Target, client: paramiko.SSHClient, exc: BaseException, sock: object, banner: float
) -> BareMetalError | None:
    """The error to raise for what ``SSHClient.connect`` raised; ``None`` to re-raise it as it is
    (our own ``HostKeyMismatch`` from the policy, an interrupt, an unexpected error)."""
    if isinstance(exc, paramiko.BadHostKeyException):  # not expected with an empty key store; kept strict anyway
        return HostKeyMismatch(
            target.name, f"{exc.key.get_name()} {fingerprint(exc.key.asbytes())}", target.expected_fingerprints
        )
    if isinstance(exc, paramiko.AuthenticationException):
        return AuthFailed(
            target.name,
            f"user '{target.user}' was refused: {exc}",
            f"add the public key to ~{target.user}/.ssh/authorized_keys on the host",
        )
    if isinstance(exc, IncompatiblePeer):
        if "host key" in str(exc):
            pinned = ", ".join(sorted({k.key_type for k in target.host_keys}))
            return HostKeyMismatch(
                target.name,
                "none of the pinned key types",
                target.expected_fingerprints,
                f"the server offers no {pinned} host key; pin the key it really has, read out of band",
            )
        return HostUnreachable(
            target.name, f"no common algorithms: {exc}", "the server's sshd is too old or too restricted"
        )
    if isinstance(exc, paramiko.SSHException | EOFError | OSError):
        return handshake_failure(target, client, exc, sock, banner)
    return None


def jump_failed(target: Target, exc: BareMetalError) -> BareMetalError:
    """The jump host's own failure, reported on the host it leads to and saying it is the jump host.

    Why: it was reported under the jump host's name and address alone, as if that were the host
    asked for. The error keeps its kind (unreachable, key refused, ...), so retries and exit codes
    are the jump host's."""
    assert target.jump is not None
    exc.where = target.name
    exc.what = f"its jump host {target.jump.name} ({target.jump.endpoint}): {exc.what}"
    exc.args = (exc.line(),)
    return exc
