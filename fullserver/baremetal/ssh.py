"""The SSH layer: paramiko behind ``Runner``, with pinned host keys and every wait bounded.

The only module that imports paramiko. What it guarantees (see ../shared/reference/ssh.md §2.10):

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
"""

from __future__ import annotations

import io
import random
import socket
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any

import paramiko
from paramiko.ssh_exception import IncompatiblePeer

from fullserver.baremetal import liblog
from fullserver.baremetal.errors import (
    AuthFailed,
    BareMetalError,
    CommandFailed,
    CommandTimeout,
    HostKeyMismatch,
    HostUnreachable,
    NoSudo,
    ProxyNotStarted,
)
from fullserver.baremetal.inventory import Target, fingerprint
from fullserver.baremetal.keys import passphrase_protected
from fullserver.baremetal.proxy import ProxySocket
from fullserver.baremetal.transport import Result, as_script, remote_command
from fullserver.errors import InputError

liblog.install()  # before any transport thread can log

OUTPUT_CAP = 4 << 20
"""Bytes kept per stream and command; the rest is drained and dropped (``Result.truncated``)."""

_HOSTKEY_ALGOS = (
    "ssh-ed25519",
    "ssh-ed25519-cert-v01@openssh.com",
    "sk-ssh-ed25519@openssh.com",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp256-cert-v01@openssh.com",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp384-cert-v01@openssh.com",
    "ecdsa-sha2-nistp521",
    "ecdsa-sha2-nistp521-cert-v01@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
    "rsa-sha2-512",
    "rsa-sha2-256",
    "ssh-rsa",
    "rsa-sha2-512-cert-v01@openssh.com",
    "rsa-sha2-256-cert-v01@openssh.com",
    "ssh-rsa-cert-v01@openssh.com",
    "ssh-dss",
)


def _allowed_algorithms(target: Target) -> set[str]:
    allowed: set[str] = set()
    for key in target.host_keys:
        allowed.add(key.key_type)
        if key.key_type == "ssh-rsa":  # one RSA key, three signature algorithms
            allowed |= {"rsa-sha2-512", "rsa-sha2-256"}
    return allowed


class PinnedKeyPolicy(paramiko.RejectPolicy):
    """Accept exactly the pinned host keys; refuse anything else. Never adds, never saves."""

    def __init__(self, target: Target) -> None:
        self.target = target

    # RejectPolicy's stub says it never returns; this one returns (accepts) for pinned keys only.
    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:  # type: ignore[override]
        blob = key.asbytes()
        if any(pinned.blob == blob for pinned in self.target.host_keys):
            return
        raise HostKeyMismatch(
            self.target.name,
            offered=f"{key.get_name()} {fingerprint(blob)}",
            expected=self.target.expected_fingerprints,
        )


def load_private_key(text: str, where: str, passphrase: str | None = None) -> paramiko.PKey:
    """A private key from its text (a Pulumi secret, an env var); never touches disk, never echoed."""
    for cls in (paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey):
        try:
            key: paramiko.PKey = cls.from_private_key(io.StringIO(text), password=passphrase)
            return key
        except paramiko.PasswordRequiredException:
            raise InputError(
                where, "the private key is encrypted and no passphrase was given", "decrypt it or pass a passphrase"
            ) from None
        except (paramiko.SSHException, ValueError, IndexError, TypeError):
            continue
    if passphrase is not None and passphrase_protected(text):
        raise InputError(
            where, "wrong passphrase for the private key", "pass the passphrase the key was encrypted with"
        )
    raise InputError(
        where,
        "the private key is not an OpenSSH/PEM ed25519, ecdsa or rsa key",
        "give the whole private key text (-----BEGIN ... PRIVATE KEY----- to -----END ...), not a path or a public key",
    )


def _socket(target: Target) -> socket.socket:
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


def _at(target: Target) -> str:
    """Where a connect-phase message says it tried: ``(addr:port)``, and the proxy it went through."""
    via = f" through proxy command '{target.proxy[0]}'" if target.proxy else ""
    return f"({target.endpoint}{via})"


def _unreachable(target: Target, exc: BaseException) -> HostUnreachable:
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
    return HostUnreachable(target.name, f"{what} {_at(target)}", hint)


def _handshake_failure(
    target: Target, client: paramiko.SSHClient, exc: BaseException, sock: object, banner: float
) -> HostUnreachable:
    """Name the phase an SSH handshake stopped in, from the transport's state, not from the error.

    paramiko's own error depends on which of its waits ran out first: the transport thread's
    banner timeout ("Error reading SSH protocol banner", with the cause as ``__context__``) or
    ``start_client``'s, after which ``connect`` asks for the server key and gets "No existing
    session". What the transport got tells the phases apart either way."""
    t = target.timeouts
    transport = client.get_transport()
    at = _at(target)
    if isinstance(sock, ProxySocket):
        stage = "before the SSH banner" if transport is None or not transport.remote_version else "during the handshake"
        ended = sock.failure(stage)
        if ended is not None:
            return ended
    if transport is not None and not transport.remote_version:  # no banner ever arrived
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
    if transport is not None and not transport.initial_kex_done:
        return HostUnreachable(
            target.name,
            f"key exchange did not finish within {banner + t.connect:g} s {at}",
            "sshd stalled or overloaded after its banner; check the host's console and load",
        )
    return _unreachable(target, exc)


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

    def _transport(self) -> paramiko.Transport:
        transport = self._client.get_transport()
        if transport is None or not transport.is_active():
            raise HostUnreachable(
                self.host, "the connection is closed", "the host or network dropped it; re-run to reconnect"
            )
        return transport

    def _ping(self) -> threading.Event:
        """Send a keepalive the server must answer; the event is set when it does."""
        answered = threading.Event()
        transport = self._transport()

        def ask() -> None:
            try:
                transport.global_request("keepalive@openssh.com", wait=True)
            except (paramiko.SSHException, EOFError, OSError):
                return
            if transport.is_active():
                answered.set()

        threading.Thread(target=ask, name=f"keepalive-{self.host}", daemon=True).start()
        return answered

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
        transport = self._transport()
        try:
            chan = transport.open_session(timeout=t.channel)
        except (paramiko.SSHException, EOFError, OSError) as exc:
            raise HostUnreachable(
                self.host,
                f"cannot open a channel: {exc}",
                "the connection died or sshd refused a session (MaxSessions?)",
            ) from None
        self.commands += 1
        if write:
            self.writes += 1
        start = time.monotonic()
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
            status, out, err, truncated = self._drain(chan, transport, start + limit + t.kill_grace + 5.0, what, limit)
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
        finally:
            chan.close()
            self._last_activity = time.monotonic()
        result = Result(status, out, err, truncated, time.monotonic() - start)
        if status == -1:
            if not transport.is_active():
                raise HostUnreachable(
                    self.host, f"connection lost while running `{what}`", "re-run; steps resume where they stopped"
                )
            raise CommandFailed(
                self.host,
                f"`{what}` ended without an exit status (killed by a signal?)",
                "check the host's logs",
                stderr=err,
            )
        if status in (124, 137) and result.seconds >= limit - 0.5:
            raise CommandTimeout(
                self.host,
                f"`{what}` passed its {limit:.0f}s deadline and was killed on the host",
                "raise the command timeout or fix the hang",
            )
        if use_sudo and status in (1, 127) and _sudo_refused(err):
            raise NoSudo(
                self.host,
                f"user '{self.target.user}' may not run `{what}` through sudo -n: {result.tail(120)}",
                f"add a NOPASSWD sudoers rule for {self.target.user} (/etc/sudoers.d/fullserver), or log in as root",
                exit_status=status,
                stderr=err,
            )
        if check and status != 0:
            raise CommandFailed(
                self.host,
                f"`{what}` exited {status}: {result.tail()}",
                "see the command's message",
                exit_status=status,
                stderr=err,
            )
        return result

    def _drain(
        self, chan: paramiko.Channel, transport: paramiko.Transport, deadline: float, what: str, limit: float
    ) -> tuple[int, str, str, bool]:
        """Read stdout and stderr together until exit, the local deadline, or a dead peer."""
        t = self.target.timeouts
        out, err = bytearray(), bytearray()
        dropped = 0
        last_rx = time.monotonic()
        ping: threading.Event | None = None
        ping_sent = 0.0
        pause = 0.002
        exited = 0.0
        while True:
            got = False
            while chan.recv_ready():
                data = chan.recv(65536)
                keep = max(0, OUTPUT_CAP - len(out))
                out += data[:keep]
                dropped += len(data) - min(len(data), keep)
                got = True
            while chan.recv_stderr_ready():
                data = chan.recv_stderr(65536)
                keep = max(0, OUTPUT_CAP - len(err))
                err += data[:keep]
                dropped += len(data) - min(len(data), keep)
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
                    self.host,
                    f"`{what}` gave no exit status within {limit:.0f}s (local deadline); abandoned",
                    "the host may be hung (wedged driver, stalled sshd)",
                )
            if got:
                last_rx, ping, pause = now, None, 0.002
                continue
            if now - last_rx > t.keepalive_interval:
                if ping is None:
                    ping, ping_sent = self._ping(), now
                elif ping.is_set():
                    last_rx, ping = now, None
                elif now - ping_sent > t.keepalive_interval * t.keepalive_count:
                    transport.close()
                    raise HostUnreachable(
                        self.host,
                        f"no answer to keepalives for {now - ping_sent:.0f}s while running `{what}`",
                        "the host or its sshd is hung or gone",
                    )
            chan.status_event.wait(pause)
            pause = min(pause * 2, 0.05)
        return status, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), dropped > 0


SUDO_REFUSALS = (
    "sudo: a password is required",
    "sudo: a terminal is required to read the password",
    "sudo: sorry, you must have a tty to run sudo",
    "is not in the sudoers file",
    "is not allowed to execute",
    "may not run sudo on",
)
"""sudo's own refusal messages (plugins/sudoers); a command's "not found" is not one of them."""


def _sudo_refused(stderr: str) -> bool:
    s = stderr.lower()
    return any(p in s for p in SUDO_REFUSALS)


def _connect_once(target: Target, pkey: paramiko.PKey, hop_keys: Mapping[str, paramiko.PKey]) -> SshSession:
    """One attempt along the whole path (jump hosts first, each with its own key, or the proxy
    command); no retries."""
    t = target.timeouts
    jump: SshSession | None = None
    sock: Any
    # A proxy's own connecting (gcloud's start-up, the tunnel's) happens before the banner can.
    banner = t.banner + (t.connect if target.proxy else 0.0)
    # Everything that can fail before connect() comes before the socket: from the proxy's start
    # on, every path out is inside the try that ends it.
    client = paramiko.SSHClient()  # an empty key store: no load_system_host_keys(), on purpose
    client.set_missing_host_key_policy(PinnedKeyPolicy(target))
    allowed = _allowed_algorithms(target)
    try:
        if target.proxy:
            sock = ProxySocket(target.proxy, target.name, t.kill_grace)
        elif target.jump is not None:
            try:
                jump = _connect_once(target.jump, hop_keys.get(target.jump.name, pkey), hop_keys)
            except BareMetalError as exc:
                raise _jump_failed(target, exc) from None
            try:
                sock = jump._transport().open_channel(
                    "direct-tcpip", (target.address, target.port), ("127.0.0.1", 0), timeout=t.connect
                )
            except (paramiko.SSHException, EOFError, OSError) as exc:
                raise HostUnreachable(
                    target.name,
                    f"jump host {target.jump.name} could not reach {target.endpoint}: {exc}",
                    "check the address from the bastion and its AllowTcpForwarding",
                ) from None
        else:
            sock = _socket(target)
    except OSError as exc:
        if jump is not None:
            jump.close()
        raise _unreachable(target, exc) from None
    except BaseException:  # BareMetalError, or an interrupt while the jump host opens the channel
        if jump is not None:
            jump.close()
        raise
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
            disabled_algorithms={"keys": [a for a in _HOSTKEY_ALGOS if a not in allowed]},
        )
        transport = client.get_transport()
        if transport is None:
            raise HostUnreachable(target.name, "no transport after connect", "re-run")
        transport.set_keepalive(max(1, int(t.keepalive_interval)))
    except HostKeyMismatch:
        _close(client, sock, jump)
        raise
    except paramiko.BadHostKeyException as exc:  # not expected with an empty key store; kept strict anyway
        _close(client, sock, jump)
        raise HostKeyMismatch(
            target.name, f"{exc.key.get_name()} {fingerprint(exc.key.asbytes())}", target.expected_fingerprints
        ) from None
    except paramiko.AuthenticationException as exc:
        _close(client, sock, jump)
        raise AuthFailed(
            target.name,
            f"user '{target.user}' was refused: {exc}",
            f"add the public key to ~{target.user}/.ssh/authorized_keys on the host",
        ) from None
    except IncompatiblePeer as exc:
        _close(client, sock, jump)
        if "host key" in str(exc):
            pinned = ", ".join(sorted({k.key_type for k in target.host_keys}))
            raise HostKeyMismatch(
                target.name,
                "none of the pinned key types",
                target.expected_fingerprints,
                f"the server offers no {pinned} host key; pin the key it really has, read out of band",
            ) from None
        raise HostUnreachable(
            target.name, f"no common algorithms: {exc}", "the server's sshd is too old or too restricted"
        ) from None
    except (paramiko.SSHException, EOFError, OSError) as exc:
        error = _handshake_failure(target, client, exc, sock, banner)
        _close(client, sock, jump)
        raise error from None
    except BaseException:  # an interrupt or an unexpected error: never leave a proxy behind
        _close(client, sock, jump)
        raise
    return SshSession(target, client, jump, sock if isinstance(sock, ProxySocket) else None)


def _jump_failed(target: Target, exc: BareMetalError) -> BareMetalError:
    """The jump host's own failure, reported on the host it leads to and saying it is the jump host.

    Why: it was reported under the jump host's name and address alone, as if that were the host
    asked for. The error keeps its kind (unreachable, key refused, ...), so retries and exit codes
    are the jump host's."""
    assert target.jump is not None
    exc.where = target.name
    exc.what = f"its jump host {target.jump.name} ({target.jump.endpoint}): {exc.what}"
    exc.args = (exc.line(),)
    return exc


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


def public_key_line(private_text: str, comment: str = "fullserver-verify") -> str:
    """The ``"<type> <base64> <comment>"`` line of a private key's public half: what a cloud stack
    installs for its login user when ``fullserver:sshPrivateKey`` is set, so the verify that
    ``pulumi up`` runs (profile ``verify: {on_up: true}``) can log in with the private half. The
    public half is no secret; the private text stays in memory."""
    key = load_private_key(private_text, "fullserver:sshPrivateKey")
    return f"{key.get_name()} {key.get_base64()} {comment}"
