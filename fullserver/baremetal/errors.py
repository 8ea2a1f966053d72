"""Per-host errors of the bare-metal path: one line naming the host, what failed and how to fix it.

All are ``FullserverError``s, so the CLI prints ``error: <host>: <what> (<hint>)`` and never a
traceback. A fleet run collects them per host (one host's error never stops the others).
"""

from __future__ import annotations

from fullserver.errors import EXIT_UNREACHABLE, FullserverError

__all__ = [
    "EXIT_UNREACHABLE",  # the one exit-code table is fullserver.errors; re-exported for older imports
    "AuthFailed",
    "BareMetalError",
    "CommandFailed",
    "CommandTimeout",
    "Failure",
    "HostKeyMismatch",
    "HostUnreachable",
    "JournalLocked",
    "NoSudo",
    "ProbeError",
    "ProxyNotStarted",
    "Refusal",
    "StepFailed",
    "StepRefused",
]


class BareMetalError(FullserverError):
    """Something went wrong on (or on the way to) one host; ``where`` is the host's name."""

    @property
    def host(self) -> str:
        return self.where


class HostUnreachable(BareMetalError):
    """TCP connect, banner or key exchange failed, or the connection died (a connect-phase error)."""


class ProxyNotStarted(HostUnreachable):
    """A host's ``proxyCommand`` could not be started (not found, not executable). Never retried:
    unlike a proxy that exits (an IAP tunnel refused while the node boots), it stays missing."""


class HostKeyMismatch(BareMetalError):
    """The server offered a host key that is not pinned for it; nothing was sent or run."""

    def __init__(self, where: str, offered: str, expected: list[str], hint: str = "") -> None:
        self.offered = offered
        self.expected = list(expected)
        pinned = ", ".join(expected) if expected else "none pinned"
        super().__init__(
            where,
            f"host key refused: offered {offered}, expected {pinned}",
            hint
            or "if the host was re-installed, verify the new key out of band (console: ssh-keygen -lf "
            "/etc/ssh/ssh_host_ed25519_key.pub) and update hostKeys; otherwise treat it as an attack",
        )


class AuthFailed(BareMetalError):
    """The server refused our key (never retried: retries can lock accounts)."""


class CommandFailed(BareMetalError):
    """A remote command exited non-zero (or with no exit status)."""

    def __init__(self, where: str, what: str, hint: str = "", *, exit_status: int = -1, stderr: str = "") -> None:
        self.exit_status = exit_status
        self.stderr = stderr
        super().__init__(where, what, hint)


class NoSudo(CommandFailed):
    """The login user may not run the command through ``sudo -n`` (no NOPASSWD rule)."""


class CommandTimeout(BareMetalError):
    """A remote command passed its deadline (remote ``timeout`` or the local one)."""


class ProbeError(BareMetalError):
    """The facts could not be gathered or parsed (missing tool, malformed output)."""


class StepRefused(BareMetalError):
    """A configuration step would destroy data or needs consent the config does not give."""


class StepFailed(BareMetalError):
    """A configuration step applied but its verify found the host not in the desired state."""


class JournalLocked(BareMetalError):
    """Another run holds the host's journal lock (and its owner's SSH session is still alive)."""

    def __init__(self, where: str, owner: str, age_s: int, waited_s: float) -> None:
        self.owner = owner
        super().__init__(
            where,
            f"the journal is locked by {owner}, for {age_s} s (waited {waited_s:g} s)",
            "another fullserver run (pulumi up, refresh or destroy of this or another stack) is configuring "
            "this host; re-run when it is done. A lock whose owner's SSH session has ended is broken "
            "automatically",
        )


class _HostlessError(Exception):
    """What a pure fact parser or operation found wrong. Pure code does not know which host it
    judges; the engine re-raises it as the matching ``BareMetalError`` naming the host (``at``)."""

    def __init__(self, what: str, hint: str = "") -> None:
        super().__init__(what)
        self.what = what
        self.hint = hint

    def at(self, host: str) -> BareMetalError:
        raise NotImplementedError


class Refusal(_HostlessError):
    """A step must not go ahead (it would destroy data, or needs consent): ``StepRefused``."""

    def at(self, host: str) -> BareMetalError:
        return StepRefused(host, self.what, self.hint)


class Failure(_HostlessError):
    """The host cannot do what the step needs, or did not end up as it should: ``StepFailed``."""

    def at(self, host: str) -> BareMetalError:
        return StepFailed(host, self.what, self.hint)
