"""How an ephemeral stack is named and tagged, so that a person and the janitor can find it.

The name is unique and sorts by creation time (``<prefix>-<UTC time>-<random>``); the tags are
what ``fullserver janitor`` lists (``stack ls --tag fullserver:ephemeral=true``) and judges expiry
by (``fullserver:expires-at``, written in ``EXPIRES_FORMAT``). Both sides import them from here,
so the writer and the reader cannot drift apart; the tag keys themselves are ``fullserver.rules``'
(the policy pack reads them too).
"""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime

from fullserver.errors import InputError
from fullserver.rules import TAG_BASE_STACK, TAG_EPHEMERAL, TAG_EXPIRES_AT, TAG_PROFILE

__all__ = ["EXPIRES_FORMAT", "TAG_BASE_STACK", "TAG_EPHEMERAL", "TAG_EXPIRES_AT", "TAG_PROFILE", "stack_name"]

EXPIRES_FORMAT = "%Y-%m-%dT%H:%M:%SZ"

_PREFIX = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")


def stack_name(prefix: str, now: datetime) -> str:
    """Unique and sortable: ``ci-20260101-120000-3fa9c2`` (Pulumi allows 100 chars of ``[A-Za-z0-9-_.]``)."""
    if not _PREFIX.match(prefix):
        raise InputError(
            "--prefix", f"'{prefix}' is not a valid stack name prefix", "use lowercase letters, digits and '-'"
        )
    return f"{prefix}-{now.astimezone(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"
