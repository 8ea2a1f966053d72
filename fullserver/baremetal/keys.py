"""Pinned public host keys: parsing and checking one ``"<type> <base64>"`` line.

Its own module, free of the inventory and of ``fullserver.workload``, so that every model that
holds host keys (the inventory entry here, the stack config's ``dedicated.hosts`` in
``fullserver.workload``) can refuse a malformed key *when it is validated* — the plan, the
provider's ``check`` and ``fullserver audit`` then agree, instead of the audit alone finding out.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
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


def parse_key_line(line: str, where: str) -> PinnedKey:
    """``"ssh-ed25519 AAAA... [comment]"`` → ``PinnedKey``; the blob must name the same type."""
    parts = line.split()
    if len(parts) < 2 or parts[0] not in KNOWN_KEY_TYPES:
        raise InputError(
            where,
            f"not a public host key: {line[:40]!r}",
            f"write '<type> <base64>', type one of {', '.join(KNOWN_KEY_TYPES)}",
        )
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except (binascii.Error, ValueError):
        raise InputError(
            where, "host key is not valid base64", "copy the line from /etc/ssh/ssh_host_*_key.pub"
        ) from None
    n = int.from_bytes(blob[:4], "big") if len(blob) >= 4 else -1
    if n < 0 or blob[4 : 4 + n].decode("ascii", "replace") != parts[0]:
        raise InputError(where, f"host key blob does not match its type {parts[0]}", "copy the whole line unchanged")
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
