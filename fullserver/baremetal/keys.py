"""SSH key texts: pinned public host keys (parsing and checking one ``"<type> <base64>"`` line),
and whether a private key is passphrase-protected.

Its own module, free of the inventory and of ``fullserver.workload``, so that every model that
holds host keys (the inventory entry here, the stack config's ``dedicated.hosts`` in
``fullserver.workload``) can refuse a malformed key *when it is validated* — the plan, the
provider's ``check`` and ``fullserver audit`` then agree, instead of the audit alone finding out.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator, StrictStr

from fullserver.errors import InputError

KNOWN_KEY_TYPES = (
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "ssh-rsa",
)


@dataclass(frozen=True)
class PinnedKey:
    """One pinned public host key: its type and the raw key blob."""

    key_type: str
    blob: bytes

    @property
    def fingerprint(self) -> str:
        """OpenSSH's ``SHA256:...`` form (what ``ssh-keygen -lf`` prints)."""
        return fingerprint(self.blob)

    def line(self) -> str:
        return f"{self.key_type} {base64.b64encode(self.blob).decode()}"


def fingerprint(blob: bytes) -> str:
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def _key_blob(key_type: str, text: str) -> bytes | str:
    """The decoded key blob, or what is wrong with it: not base64, or naming another type (the
    blob starts with its own type as an SSH string)."""
    try:
        blob = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return "is not valid base64"
    n = int.from_bytes(blob[:4], "big") if len(blob) >= 4 else -1
    if n < 0 or blob[4 : 4 + n].decode("ascii", "replace") != key_type:
        return f"blob does not match its type {key_type}"
    return blob


def parse_key_line(line: str, where: str) -> PinnedKey:
    """``"ssh-ed25519 AAAA... [comment]"`` → ``PinnedKey``; the blob must name the same type."""
    parts = line.split()
    if len(parts) < 2 or parts[0] not in KNOWN_KEY_TYPES:
        raise InputError(
            where,
            f"not a public host key: {line[:40]!r}",
            f"write '<type> <base64>', type one of {', '.join(KNOWN_KEY_TYPES)}",
        )
    blob = _key_blob(parts[0], parts[1])
    if isinstance(blob, str) and blob.startswith("is not"):
        raise InputError(where, f"host key {blob}", "copy the line from /etc/ssh/ssh_host_*_key.pub")
    if isinstance(blob, str):
        raise InputError(where, f"host key {blob}", "copy the whole line unchanged")
    return PinnedKey(parts[0], blob)


def check_host_key(value: str) -> str:
    """A pydantic validator: the line must parse as a pinned host key (the error names the field).

    Raises ``ValueError`` (what pydantic turns into a field error) with the same words as
    ``parse_key_line``, so a malformed key reads the same wherever it is caught."""
    try:
        parse_key_line(value, "")
    except InputError as exc:
        raise ValueError(f"{exc.what}; {exc.hint}" if exc.hint else exc.what) from None
    return value


def check_host_keys(values: list[str]) -> list[str]:
    """``check_host_key`` for every line of a ``hostKeys`` list, naming the bad one by its index
    (for a ``field_validator`` on a model whose ``hostKeys`` field is declared elsewhere)."""
    for i, value in enumerate(values):
        try:
            check_host_key(value)
        except ValueError as exc:
            raise ValueError(f"key {i}: {exc}") from None
    return values


HostKeyLine = Annotated[StrictStr, AfterValidator(check_host_key)]
"""A host key line checked at validation time: ``list[HostKeyLine]`` for a ``hostKeys`` field."""


# --- people's public keys (``fullserver:sshPublicKeys``), installed on cloud nodes ----------------

USER_KEY_TYPES = (
    *KNOWN_KEY_TYPES,
    "sk-ssh-ed25519@openssh.com",
    "sk-ecdsa-sha2-nistp256@openssh.com",
)
"""Key types OpenSSH accepts in ``authorized_keys`` (host key types plus FIDO security keys)."""
MAX_PUBLIC_KEY_LINE = 8_192
"""A 16,384-bit RSA key is ~2,800 characters; anything longer is not one key."""
_PRINTABLE = re.compile(r"[\x20-\x7e]*")


def check_public_key(value: str) -> str:
    """One OpenSSH public key line (``id_ed25519.pub``): ``<type> <base64> [comment]``.

    It ends up in ``authorized_keys``, in Compute Engine's ``ssh-keys`` metadata (one
    ``user:key`` per line) and in a boot script, so it must be exactly one key on one line of
    printable ASCII: no ``authorized_keys`` options before the type (``command=...`` would
    restrict or hijack the login), no second line. Returned as ``type base64 comment`` with
    single spaces. Raises ``ValueError`` (a pydantic field error) naming what is wrong.
    """
    if len(value) > MAX_PUBLIC_KEY_LINE or not _PRINTABLE.fullmatch(value):
        raise ValueError("is not one line of printable ASCII (one public key per list item)")
    parts = value.split()
    if len(parts) < 2 or parts[0] not in USER_KEY_TYPES:
        raise ValueError(
            f"not an OpenSSH public key: {value[:40]!r}; paste the whole line of your ~/.ssh/id_*.pub "
            f"('<type> <base64> [comment]', type one of {', '.join(USER_KEY_TYPES)}; no options)"
        )
    blob = _key_blob(parts[0], parts[1])
    if isinstance(blob, str):
        raise ValueError(f"public key {blob}; paste the whole line of your ~/.ssh/id_*.pub unchanged")
    return " ".join(parts)


PublicKeyLine = Annotated[StrictStr, AfterValidator(check_public_key)]
"""A person's public key line, checked (and normalised) at validation time."""


def passphrase_protected(text: str) -> bool:
    """Whether a private key's text is passphrase-protected (PEM headers, or an OpenSSH key whose
    cipher is not ``none``): told without paramiko, so the command line can ask for the passphrase
    before any connection starts."""
    if "ENCRYPTED" in text:
        return True
    body = "".join(line for line in text.strip().splitlines() if not line.startswith("-----"))
    try:
        raw = base64.b64decode(body, validate=False)
    except (ValueError, binascii.Error):
        return False
    magic = b"openssh-key-v1\0"
    if not raw.startswith(magic) or len(raw) < len(magic) + 4:
        return False
    n = int.from_bytes(raw[len(magic) : len(magic) + 4], "big")
    return raw[len(magic) + 4 : len(magic) + 4 + n] != b"none"
