"""Private keys from their text (a Pulumi secret, an env var), never from disk, and their public half."""

from __future__ import annotations

import io

import paramiko

from fullserver.baremetal.keys import passphrase_protected
from fullserver.errors import InputError


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


def public_key_line(private_text: str, comment: str = "fullserver-verify") -> str:
    """The ``"<type> <base64> <comment>"`` line of a private key's public half: what a cloud stack
    installs for its login user when ``fullserver:sshPrivateKey`` is set, so the verify that
    ``pulumi up`` runs (profile ``verify: {on_up: true}``) can log in with the private half. The
    public half is no secret; the private text stays in memory."""
    key = load_private_key(private_text, "fullserver:sshPrivateKey")
    return f"{key.get_name()} {key.get_base64()} {comment}"
