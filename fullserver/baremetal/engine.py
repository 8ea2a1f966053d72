"""The engine: read each step's facts over the transport, let the step decide, run its commands,
verify, and journal the undo record, all under the host lock.

Every step's facts are read from the host itself (not only from our journal), so re-applying
with nothing to change runs no write at all, and a run cut short converges when re-run. Per step:
see the design notes.

Design notes: docs/design/bare-metal.md.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from fullserver.baremetal.config import HostLayout
from fullserver.baremetal.errors import Failure, Refusal
from fullserver.baremetal.journal import Journal, read_journal, write_journal
from fullserver.baremetal.lock import LOCK_WAIT, JournalLock, journal_locked
from fullserver.baremetal.operations.base import Change, HostContext, NoOp, Record, Step
from fullserver.baremetal.shell import Command
from fullserver.baremetal.transport import Runner

MAX_ROUNDS = 4
"""Rounds of commands one step may take before it must be in place (scratch needs three)."""

AnyStep = Step[Any]


@dataclass
class Outcome:
    """What a converge or revert did on one host."""

    host: str
    changed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    undone: list[str] = field(default_factory=list)
    writes: int = 0
    journal: Journal = field(default_factory=Journal)
    notes: list[str] = field(default_factory=list)
    """Things a person should hear about (a stale journal lock that was broken)."""


@dataclass(frozen=True)
class StepPlan:
    """What ``converge`` would do about one step: ``ok`` (nothing), ``journal`` (in place, only
    journaled), ``apply``, ``replace`` (undo the old, apply the new) or ``undo`` (no longer
    wanted), with the exact ``commands`` it would run, the later rounds' commands as far as they
    are known now (``then``), and the refusal that would stop it (``refused``)."""

    action: Literal["ok", "journal", "apply", "replace", "undo"]
    detail: str = ""
    commands: tuple[str, ...] = ()
    then: tuple[str, ...] = ()
    refused: str | None = None

    def __str__(self) -> str:
        if self.action == "apply":
            return f"apply: {self.detail}"
        if self.action == "replace":
            return "replace: undo the old, apply the new"
        return self.action

    def shown(self) -> list[str]:
        """Everything a person should see: the commands, then the refusal or the later rounds."""
        if self.refused is not None:
            return [*self.commands, f"# refused: {self.refused}"]
        return [*self.commands, *(f"# then: {t}" for t in self.then)]


@contextmanager
def _on(host: str) -> Iterator[None]:
    """Pure code's refusals and failures become the host's ``StepRefused``/``StepFailed``."""
    try:
        yield
    except (Refusal, Failure) as exc:
        raise exc.at(host) from None


def read_facts(r: Runner, step: AnyStep, layout: HostLayout) -> Any:
    """Run the step's read-only fact script (one round trip) and parse it."""
    fact = step.fact(layout)
    res = r.run(fact.command(), sudo=fact.sudo, check=not fact.judge_exit, label=fact.label)
    with _on(r.host):
        return fact.parse(res)


def _run(r: Runner, commands: Sequence[Command]) -> None:
    for c in commands:
        r.run(c.cmd, sudo=True, write=True, timeout=c.timeout, label=c.label)


def _texts(commands: Sequence[Command]) -> tuple[str, ...]:
    return tuple(c.text for c in commands)


def plan(
    r: Runner, layout: HostLayout, steps: Sequence[AnyStep], *, undo_unlisted: Mapping[str, AnyStep] | None = None
) -> dict[str, StepPlan]:
    """Read-only: what converge would do, per step id (journaled steps no longer listed: ``undo``,
    with its commands when ``undo_unlisted`` has a step able to undo it)."""
    ctx = HostContext(layout, r.user)
    journal = read_journal(r, layout)
    out: dict[str, StepPlan] = {}
    for step in steps:
        facts = read_facts(r, step, layout)
        with _on(r.host):
            status = step.status(facts)
        entry = journal.steps.get(step.id)
        same = entry is not None and entry.desired == step.desired()
        if status.done and same and entry is not None and entry.status == "applied":
            out[step.id] = StepPlan("ok", status.detail)
        elif entry is not None and not same and step.undo_before_change:
            undo = _texts(step.undo(layout, entry.undo))
            refusal = step.change_refusal(entry.desired)
            out[step.id] = StepPlan(
                "replace",
                status.detail,
                undo,
                ("apply anew, decided from the host after the undo",),
                refused=None if refusal is None else _said(refusal),
            )
        elif status.done:
            out[step.id] = StepPlan("journal", status.detail)
        else:
            out[step.id] = _preview(step, facts, ctx, entry.undo if entry is not None else None, status.detail)
    for sid, entry in journal.steps.items():
        if sid not in {s.id for s in steps}:
            undoer = (undo_unlisted or {}).get(sid)
            out[sid] = StepPlan("undo", "no longer wanted", _texts(undoer.undo(layout, entry.undo)) if undoer else ())
    return out


def _preview(step: AnyStep, facts: Any, ctx: HostContext, journaled: Record | None, detail: str) -> StepPlan:
    try:
        decision = step.decide(facts, ctx, journaled)
    except (Refusal, Failure) as exc:
        return StepPlan("apply", detail, refused=_said(exc))
    if isinstance(decision, NoOp):  # not reached: decide agrees with status
        return StepPlan("apply", detail)
    return StepPlan("apply", detail, _texts(decision.commands), decision.then)


def _said(exc: Refusal | Failure) -> str:
    return f"{exc.what} ({exc.hint})" if exc.hint else exc.what


def converge(
    r: Runner,
    layout: HostLayout,
    steps: Sequence[AnyStep],
    *,
    undo_unlisted: Mapping[str, AnyStep] | None = None,
    lock_wait: float = LOCK_WAIT,
) -> Outcome:
    """Bring the host to the desired steps; undo journaled steps no longer desired.

    ``undo_unlisted`` maps journaled step ids that are no longer wanted to a Step able to undo
    them (the provider rebuilds them from its old inputs). Holds the journal lock throughout
    (waiting up to ``lock_wait`` seconds for another run's).
    """
    with journal_locked(r, layout, purpose="converge", wait=lock_wait) as lock:
        return _converge(r, layout, steps, undo_unlisted or {}, lock)


def _converge(
    r: Runner, layout: HostLayout, steps: Sequence[AnyStep], undo_unlisted: Mapping[str, AnyStep], lock: JournalLock
) -> Outcome:
    ctx = HostContext(layout, r.user)
    before = r.writes
    journal = read_journal(r, layout)
    outcome = _started(r, lock)
    for step in steps:
        entry = journal.steps.get(step.id)
        if entry is not None and step.undo_before_change and entry.desired != step.desired():
            # Not changeable in place (scratch on other devices, at another mountpoint): the old
            # one comes down first, by its own journaled record, then the new one is applied;
            # unless the new one could not be applied then, which is refused with nothing undone.
            refusal = step.change_refusal(entry.desired)
            if refusal is not None:
                raise refusal.at(r.host)
            _run(r, step.undo(layout, entry.undo))
            del journal.steps[step.id]
            write_journal(r, layout, journal, lock)
            outcome.undone.append(step.id)
            entry = None
        facts = read_facts(r, step, layout)
        with _on(r.host):
            decision = step.decide(facts, ctx, entry.undo if entry is not None else None)
        if isinstance(decision, NoOp):
            if (
                entry is None
                or entry.status != "applied"
                or entry.desired != step.desired()
                or entry.undo != decision.record
            ):
                # In place but not (fully) journaled: a run cut short after apply. Record it.
                journal.record(step.id, step.desired(), decision.record, "applied")
                write_journal(r, layout, journal, lock)
            outcome.unchanged.append(step.id)
            continue
        # Intent first, with the *original* values, so a cut connection never loses them.
        journal.record(step.id, step.desired(), decision.intent, "applying")
        write_journal(r, layout, journal, lock)
        kept = _apply(r, step, ctx, decision)
        journal.record(step.id, step.desired(), kept, "applied")
        write_journal(r, layout, journal, lock)
        outcome.changed.append(step.id)
    wanted = {s.id for s in steps}
    for sid in [s for s in reversed(list(journal.steps)) if s not in wanted]:
        undoer = undo_unlisted.get(sid)
        if undoer is not None:
            _undo(r, layout, journal, lock, undoer, sid, outcome)
    return _finished(r, outcome, before, journal)


def _apply(r: Runner, step: AnyStep, ctx: HostContext, change: Change) -> Record:
    """Run the change's rounds, each decided from fresh facts, and verify; the record to keep."""
    rounds = 1
    while True:
        _run(r, change.commands)
        facts = read_facts(r, step, ctx.layout)
        with _on(r.host):
            status = step.status(facts)
            if status.done:
                return change.keep
            if change.final or rounds >= MAX_ROUNDS:
                raise step.unverified(facts, status)
            change = step.change(facts, ctx, change.intent)
        rounds += 1


def _undo(
    r: Runner, layout: HostLayout, journal: Journal, lock: JournalLock, step: AnyStep, sid: str, outcome: Outcome
) -> None:
    _run(r, step.undo(layout, journal.steps[sid].undo))
    del journal.steps[sid]
    write_journal(r, layout, journal, lock)
    outcome.undone.append(sid)


def _started(r: Runner, lock: JournalLock) -> Outcome:
    outcome = Outcome(r.host)
    if lock.broke is not None:
        outcome.notes.append(f"broke a stale journal lock held by {lock.broke}")
    return outcome


def _finished(r: Runner, outcome: Outcome, writes_before: int, journal: Journal) -> Outcome:
    outcome.writes = r.writes - writes_before
    outcome.journal = journal
    return outcome


def revert(r: Runner, layout: HostLayout, steps: Sequence[AnyStep], *, lock_wait: float = LOCK_WAIT) -> Outcome:
    """Undo every journaled step we know, newest first, and drop it from the journal (holding the
    journal lock throughout, like ``converge``)."""
    with journal_locked(r, layout, purpose="revert", wait=lock_wait) as lock:
        before = r.writes
        journal = read_journal(r, layout)
        by_id = {s.id: s for s in steps}
        outcome = _started(r, lock)
        for sid in reversed(list(journal.steps)):
            step = by_id.get(sid)
            if step is not None:
                _undo(r, layout, journal, lock, step, sid, outcome)
        return _finished(r, outcome, before, journal)
