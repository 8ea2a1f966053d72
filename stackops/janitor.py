"""The janitor: find ephemeral stacks whose time is up and destroy them.

Design notes: docs/design/stackops.md.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pulumi import automation as auto

from fullserver.errors import EXIT_LEFT_BEHIND, EXIT_OK
from stackops.events import Notify, ignore
from stackops.limits import MAX_BACKOFF_S, MAX_RETRIES, check_count, check_seconds
from stackops.naming import EXPIRES_FORMAT, TAG_BASE_STACK, TAG_EPHEMERAL, TAG_EXPIRES_AT
from stackops.teardown import destroy_and_remove
from stackops.workspace import PulumiOptions, StackOpsError, error_line, make_workspace, run_cli


@dataclass(frozen=True)
class EphemeralStack:
    """One ephemeral stack as the backend reports it."""

    name: str
    expires_at: datetime | None
    """``None`` when the tag is missing or unreadable: never destroyed, only reported."""
    last_update: str | None
    resource_count: int | None
    base_stack: str | None
    project: str | None = None
    """The stack's project when the backend names it (``org/project/stack`` with ``--all``);
    ``None`` for this project's stacks, which the CLI lists by their short name."""
    update_in_progress: bool = False

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now


@dataclass
class JanitorReport:
    now: datetime
    project: str = ""
    expired: list[EphemeralStack] = field(default_factory=list)
    """Expired stacks of this project with no update in progress: what ``--destroy`` destroys."""
    busy: list[EphemeralStack] = field(default_factory=list)
    """Expired, but an update is in progress: skipped this time."""
    foreign: list[EphemeralStack] = field(default_factory=list)
    """Expired stacks of other projects (``--all-projects``): listed, never destroyed from here."""
    waiting: list[EphemeralStack] = field(default_factory=list)
    unreadable: list[EphemeralStack] = field(default_factory=list)
    destroyed: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    """Every stack the sweep could not read or clean up, with the reason (``EXIT_LEFT_BEHIND``)."""

    @property
    def exit_code(self) -> int:
        return EXIT_LEFT_BEHIND if self.failed else EXIT_OK

    def foreign_reason(self, s: EphemeralStack) -> str:
        return (
            f"belongs to project '{s.project}', not '{self.project}': pulumi destroy needs that project's "
            "Pulumi.yaml and stack config, so run the janitor in its checkout (--project-dir)"
        )

    def to_json(self) -> dict[str, Any]:
        def row(s: EphemeralStack) -> dict[str, Any]:
            return {
                "name": s.name,
                "expiresAt": s.expires_at.strftime(EXPIRES_FORMAT) if s.expires_at else None,
                "lastUpdate": s.last_update,
                "resourceCount": s.resource_count,
                "baseStack": s.base_stack,
            }

        return {
            "now": self.now.strftime(EXPIRES_FORMAT),
            "expired": [row(s) for s in self.expired],
            "updateInProgress": [row(s) for s in self.busy],
            "otherProjects": [row(s) | {"project": s.project} for s in self.foreign],
            "notExpired": [row(s) for s in self.waiting],
            "unreadableExpiry": [row(s) for s in self.unreadable],
            "destroyed": self.destroyed,
            "failed": self.failed,
        }


def parse_expiry(text: str | None) -> datetime | None:
    """The ``expires-at`` tag (or ``--at``): ISO 8601; a time without a zone is taken as UTC.

    ``None`` for anything unreadable, including a time that is valid where it was written but
    outside the years 1-9999 once moved to UTC (``9999-12-31T23:59:59-01:00``): one odd tag must
    not crash the sweep of every other stack."""
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    except (ValueError, OverflowError):
        return None


def project_of(name: str) -> str | None:
    """The project in a stack name as ``stack ls`` prints it: ``org/project/stack`` names one; the
    CLI elides it (``stack``, ``org/stack``) when it is the current project's."""
    parts = name.split("/")
    return parts[1] if len(parts) == 3 else None


def list_ephemeral(
    ws: auto.LocalWorkspace, all_projects: bool = False, errors: dict[str, str] | None = None
) -> list[EphemeralStack]:
    """Every stack tagged ephemeral in the workspace's backend (this project's, or all with
    ``all_projects``). A stack whose tags cannot be read is left out and its error recorded in
    ``errors`` by name (raised when ``errors`` is ``None``); the others are still listed."""
    args = ["stack", "ls", "--json", "--tag", f"{TAG_EPHEMERAL}=true"]
    if all_projects:
        args.append("--all")
    try:
        rows = json.loads(run_cli(ws, args).stdout or "[]")
    except auto.errors.CommandError as exc:
        raise StackOpsError("pulumi stack ls", error_line(exc), "check --backend and the credentials for it") from None
    out: list[EphemeralStack] = []
    for row in rows:
        name = str(row["name"])
        try:
            tags = ws.list_tags(name)
        except auto.errors.CommandError as exc:
            if errors is None:
                raise StackOpsError(f"pulumi stack tag ls --stack {name}", error_line(exc)) from None
            errors[name] = (
                f"its tags could not be read, so its expiry is unknown (pulumi stack tag ls: {error_line(exc)})"
            )
            continue
        if tags.get(TAG_EPHEMERAL) != "true":  # the CLI filtered already; older ones may not
            continue
        out.append(
            EphemeralStack(
                name=name,
                expires_at=parse_expiry(tags.get(TAG_EXPIRES_AT)),
                last_update=row.get("lastUpdate"),
                resource_count=row.get("resourceCount"),
                base_stack=tags.get(TAG_BASE_STACK),
                project=project_of(name),
                update_in_progress=row.get("updateInProgress") is True,
            )
        )
    return out


def _short(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def janitor(
    opts: PulumiOptions,
    *,
    project_dir: Path = Path("."),
    destroy: bool = False,
    now: datetime | None = None,
    all_projects: bool = False,
    prefix: str | None = None,
    retries: int = 2,
    backoff_s: float = 5.0,
    notify: Notify = ignore,
    pulumi_output: bool = False,
    work_root: Path | None = None,
) -> JanitorReport:
    """List ephemeral stacks, sort them by expiry, and (with ``destroy``) destroy the expired ones.

    ``prefix`` narrows to stack names starting with it (e.g. one CI run's ``ci-<run id>``), so a
    run's own cleanup step cannot touch other pipelines' stacks. ``work_root`` is where the
    throwaway workspace goes (the system temp dir by default); it is removed however the sweep ends.
    Each destroy's progress goes to ``notify`` as it happens (``stackops.events``; the CLI's own
    lines too with ``pulumi_output``); the report is what the sweep found and did."""
    check_count("--retries", retries, 1, MAX_RETRIES, "attempts")
    check_seconds("--backoff", backoff_s, 0.0, MAX_BACKOFF_S)
    opts.check()
    report = JanitorReport(now=(now or datetime.now(UTC)).astimezone(UTC))
    with tempfile.TemporaryDirectory(prefix="fullserver-janitor-", dir=work_root) as tmp:
        ws = make_workspace(project_dir, Path(tmp), opts)
        report.project = str(ws.project_settings().name)
        errors: dict[str, str] = {}
        found = list_ephemeral(ws, all_projects, errors)
        report.failed.update({n: why for n, why in errors.items() if not prefix or _short(n).startswith(prefix)})
        for s in sorted(found, key=lambda s: (s.expires_at or report.now, s.name)):
            if prefix and not _short(s.name).startswith(prefix):
                continue
            if s.expires_at is None:
                report.unreadable.append(s)
            elif not s.expired(report.now):
                report.waiting.append(s)
            elif s.update_in_progress:
                report.busy.append(s)
            elif s.project is not None and s.project != report.project:
                report.foreign.append(s)
            else:
                report.expired.append(s)
        if not destroy:
            return report
        for s in report.foreign:
            report.failed[s.name] = f"not destroyed: it {report.foreign_reason(s)}"
        for s in report.expired:
            t = destroy_and_remove(
                ws,
                s.name,
                retries=retries,
                backoff_s=backoff_s,
                max_backoff_s=MAX_BACKOFF_S,
                notify=notify,
                by="janitor",
                pulumi_output=pulumi_output,
                refresh=True,  # its run ended without a teardown: the state may hold pending operations
            )
            if t.removed:
                report.destroyed.append(s.name)
            elif t.pending:
                report.failed[s.name] = (
                    f"destroyed but not removed: {t.last_error}; check the cloud for those resources, then run "
                    f"`pulumi refresh --stack {s.name}` interactively to import or clear them"
                )
            else:
                step = "stack rm (resources destroyed)" if t.destroyed else "destroy"
                report.failed[s.name] = f"{step} failed: {t.last_error}"
    return report
