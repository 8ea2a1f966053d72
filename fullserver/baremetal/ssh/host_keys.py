"""Pinned host keys: the policy that accepts exactly them, and the algorithms negotiation may pick.

paramiko's ``HostKeys`` keeps one key per type, so several pinned keys of one type (rotation) are
compared by the policy itself; host-key algorithms other than the pinned types are disabled, so
the server is asked for a key it has pinned. Nothing is ever added or saved."""

from __future__ import annotations

import paramiko

from fullserver.baremetal.errors import HostKeyMismatch
from fullserver.baremetal.inventory import Target, fingerprint

HOSTKEY_ALGOS = (
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
"""Every host-key algorithm paramiko knows; all but the pinned ones are disabled per connection."""


def allowed_algorithms(target: Target) -> set[str]:
    """The host-key algorithms the target's pinned keys can sign with."""
    allowed: set[str] = set()
    for key in target.host_keys:
        allowed.add(key.key_type)
        if key.key_type == "ssh-rsa":  # one RSA key, three signature algorithms
            allowed |= {"rsa-sha2-512", "rsa-sha2-256"}
    return allowed


def disabled_algorithms(target: Target) -> list[str]:
    """The host-key algorithms to disable for ``target``: every one its pins cannot sign with."""
    allowed = allowed_algorithms(target)
    return [a for a in HOSTKEY_ALGOS if a not in allowed]


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
