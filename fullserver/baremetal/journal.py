"""The on-host journal: which steps fullserver applied to a host, and how to undo each.

Design notes: docs/design/bare-metal.md.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fullserver.baremetal.config import HostLayout
from fullserver.baremetal.errors import Failure, Refusal
from fullserver.baremetal.lock import JournalLock, write_locked
from fullserver.baremetal.shell import q, write_file_script
from fullserver.baremetal.transport import Runner

JOURNAL_VERSION: Final = 1
"""The journal layout this fullserver reads and writes."""


class JournalEntry(BaseModel):
    """One applied (or applying) step: the desired state it was applied for, and its undo record."""

    model_config = ConfigDict(extra="forbid")

    desired: dict[str, Any]
    undo: dict[str, Any]
    """The step's undo record (each step documents its shape)."""
    status: Literal["applying", "applied"]
    """``applying``: journaled before its commands ran, not verified yet."""
    at: float
    """When it was journaled (Unix time)."""


class Journal(BaseModel):
    """The whole journal; ``steps`` keeps the order steps were applied in."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = JOURNAL_VERSION
    steps: dict[str, JournalEntry] = Field(default_factory=dict)

    def record(self, step_id: str, desired: dict[str, Any], undo: dict[str, Any], status: str) -> None:
        """Journal a step (replacing its entry, if any) as of now."""
        self.steps[step_id] = JournalEntry.model_validate(
            {"desired": desired, "undo": undo, "status": status, "at": time.time()}
        )

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), indent=1) + "\n"


def _from_unversioned(data: dict[str, Any]) -> dict[str, Any]:
    """Version 0 (no ``version`` key) → 1: the same entries; ``status`` and ``at`` filled in."""
    steps = data.get("steps")
    if isinstance(steps, dict):
        steps = {sid: {"status": "applying", "at": 0.0, **e} if isinstance(e, dict) else e for sid, e in steps.items()}
    return {**data, "steps": steps, "version": 1}


_MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {0: _from_unversioned}
"""Version N → the function that turns a version-N journal into version N + 1."""


def parse_journal(text: str, path: str) -> Journal:
    """The journal file's text → ``Journal`` (empty text: no journal), migrated to
    ``JOURNAL_VERSION``. Raises ``Refusal`` for a newer version, ``Failure`` for anything unreadable."""
    if not text.strip():
        return Journal()
    broken = Failure(
        f"the journal {path} is not valid JSON", "inspect it; move it aside only if you know what fullserver changed"
    )
    try:
        data = json.loads(text)
    except ValueError:
        raise broken from None
    if not isinstance(data, dict) or not isinstance(data.get("steps"), dict):
        raise broken
    version = data.get("version", 0)
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        raise Failure(
            f"the journal {path} has no valid version ({version!r})",
            "inspect it; move it aside only if you know what fullserver changed",
        )
    if version > JOURNAL_VERSION:
        raise Refusal(
            f"the journal {path} is version {version}, newer than this fullserver reads (up to {JOURNAL_VERSION})",
            "a newer fullserver configured this host: upgrade fullserver to manage it",
        )
    while version < JOURNAL_VERSION:
        data = _MIGRATIONS[version](data)
        version += 1
    try:
        return Journal.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise Failure(
            f"the journal {path} is not a valid journal ({where}: {err['msg']})",
            "inspect it; move it aside only if you know what fullserver changed",
        ) from None


def read_journal(r: Runner, layout: HostLayout) -> Journal:
    res = r.run(f"cat {q(layout.journal)} 2>/dev/null || true", sudo=True, label="read journal")
    try:
        return parse_journal(res.stdout, layout.journal)
    except (Refusal, Failure) as exc:
        raise exc.at(r.host) from None


def write_journal(r: Runner, layout: HostLayout, journal: Journal, lock: JournalLock | None = None) -> None:
    """Write (or, with no step left, remove) the journal atomically. With ``lock``: only while the
    lock is still ours (checked under the ``flock``), and the write is the lock's heartbeat."""
    if not journal.steps:
        script, label = f"rm -f {q(layout.journal)}", "remove journal"
    else:
        script, label = write_file_script(layout.journal, journal.to_json(), "0600"), "write journal"
    if lock is None:
        r.run(script, sudo=True, write=True, label=label)
    else:
        write_locked(r, layout, lock, script, label)
