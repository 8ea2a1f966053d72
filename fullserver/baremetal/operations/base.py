"""A configuration step as pure decisions: the host's facts and the desired state in, commands out.

Design notes: docs/design/bare-metal.md.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from fullserver.baremetal.config import HostLayout
from fullserver.baremetal.errors import Failure, Refusal
from fullserver.baremetal.facts import Fact, FactModel
from fullserver.baremetal.shell import Command

Record = dict[str, Any]
"""A step's undo record, as journaled (JSON)."""

F = TypeVar("F", bound=FactModel)


@dataclass(frozen=True, slots=True)
class HostContext:
    """What a step may know about the host besides its facts: the layout and the login user (a
    service user must never be the user fullserver logs in as)."""

    layout: HostLayout
    login_user: str = "root"


@dataclass(frozen=True, slots=True)
class Status:
    """Whether the host is in the desired state; ``detail`` says what differs, or why it is fine."""

    done: bool
    detail: str


@dataclass(frozen=True, slots=True)
class NoOp:
    """Nothing to run: ``reason`` says why; ``record`` is the undo record to journal (a run cut
    short after applying may not have journaled it yet)."""

    reason: str
    record: Record


@dataclass(frozen=True, slots=True)
class Change:
    """Commands to run, in order (each must succeed).

    ``intent`` is journaled (``applying``) before they run, so a connection cut half-way leaves
    the *original* values on the host; ``keep`` is journaled once the step verifies. A step that
    can only decide its next commands after seeing the effect of these (scratch: the filesystem's
    UUID exists only after ``mkfs``) says ``final=False``: the engine re-reads the facts and asks
    ``change`` again. ``then`` shows those later commands in a plan, as far as they are known."""

    commands: tuple[Command, ...]
    intent: Record
    keep: Record
    final: bool = True
    then: tuple[str, ...] = ()


class Step(ABC, Generic[F]):
    """One configuration step; subclasses are pure (see the module docstring)."""

    id: str
    undo_before_change: ClassVar[bool] = False
    """When the desired state changes, undo the journaled old one before applying the new one
    (a change that cannot be made in place, such as scratch moving to other devices)."""

    def change_refusal(self, journaled: Mapping[str, Any]) -> Refusal | None:
        """Why the desired state may not replace the journaled one (``journaled``: its ``desired``)
        at all; asked before anything is undone, so a change that could not be applied after the
        undo leaves the host as it was. ``None``: it may."""
        return None

    @abstractmethod
    def describe(self) -> str: ...

    @abstractmethod
    def desired(self) -> dict[str, Any]:
        """JSON-able description of the desired state (what diff compares with the journal)."""

    @abstractmethod
    def fact(self, layout: HostLayout) -> Fact[F]:
        """The read-only probe whose result ``status`` and ``change`` decide from."""

    @abstractmethod
    def status(self, facts: F) -> Status:
        """In the desired state or not. May refuse what can never be done (a missing device)."""

    @abstractmethod
    def before(self, facts: F) -> Record:
        """The undo record for the host as it is now."""

    def admit(self, facts: F, ctx: HostContext, journaled: Record | None) -> None:
        """Refuse (``Refusal``) what this step must never take over; ``journaled`` is the undo
        record of an earlier run, if any. Runs before anything is written (journal included)."""
        return None

    def merge_undo(self, journaled: Record | None, now: Record) -> Record:
        """The undo record to journal: the journaled one (the *original* values) wins over what
        the facts show now, which is often our own earlier change."""
        return journaled if journaled is not None else now

    @abstractmethod
    def change(self, facts: F, ctx: HostContext, record: Record) -> Change:
        """The commands that make it so (``record`` is the merged undo record)."""

    @abstractmethod
    def undo(self, layout: HostLayout, record: Record) -> list[Command]:
        """The commands that restore what ``record`` says (none: nothing to restore)."""

    def unverified(self, facts: F, status: Status) -> Failure:
        """The failure when the host is still not in place after the commands ran."""
        return Failure(
            f"{self.describe()}: still not in place after applying ({status.detail})",
            "see the host's logs; re-run to retry",
        )

    def decide(self, facts: F, ctx: HostContext, journaled: Record | None = None) -> NoOp | Change:
        """Facts in, commands out: what the engine would do about this step on a host showing
        ``facts`` (``journaled``: the undo record an earlier run kept)."""
        status = self.status(facts)
        self.admit(facts, ctx, journaled)
        record = self.merge_undo(journaled, self.before(facts))
        if status.done:
            return NoOp(status.detail, record)
        return self.change(facts, ctx, record)
