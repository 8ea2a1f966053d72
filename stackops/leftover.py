"""What a failed cleanup left behind, and the commands that clean it up.

When teardown fails after every retry, or the state still lists pending operations, a person
must act: the report names the stack, the backend, the directory holding its config (kept for
the cleanup), and a command to copy and paste. The exit code is ``EXIT_LEFT_BEHIND`` from the one
table in ``fullserver.errors``, distinct from every other outcome, so CI can tell "something is
still running and costing money" from "a Pulumi step failed and nothing is left".
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from fullserver.errors import EXIT_LEFT_BEHIND
from stackops.naming import EXPIRES_FORMAT, TAG_EPHEMERAL, TAG_EXPIRES_AT
from stackops.workspace import PulumiOptions, StackOpsError


class LeftoverStackError(StackOpsError):
    """Teardown left something (a step failed after every retry, or the state still lists pending
    operations): a person must act."""

    exit_code = EXIT_LEFT_BEHIND

    def __init__(self, stack: str, report: list[str]) -> None:
        self.stack = stack
        self.report = report
        super().__init__(f"stack '{stack}'", "was not cleaned up", report[0] if report else "")


def leftover_report(
    name: str,
    *,
    pulumi: PulumiOptions,
    work_dir: Path | None,
    retries: int,
    expires_at: datetime,
    destroyed: bool,
    last: str,
    pending: Sequence[str] = (),
) -> list[str]:
    """The lines a person reads: what is left, where, and the command that removes it."""
    p = pulumi
    cwd = f" --cwd {work_dir}" if work_dir else ""
    if pending:
        return [
            f"stack '{name}' was NOT removed: {last}",
            "  left behind: operations a Pulumi CLI started and never finished; a pending create is a cloud "
            "resource the state has no id for, so destroy could not delete it",
            f"  backend:     {p.describe_backend()}",
            f"  config:      {work_dir} (Pulumi.yaml and Pulumi.{name}.yaml, kept for the cleanup)",
            "  clean up:    find each resource in the cloud console (it carries the fullserver labels), then "
            f"{p.env_prefix()}pulumi refresh --stack {name}{cwd} interactively (import the ones that "
            f"exist, clear the others), then {p.env_prefix()}pulumi destroy --yes --remove --stack {name}{cwd}",
        ]
    if destroyed:
        what = "the empty stack record (its resources were destroyed)"
        cmd = f"{p.env_prefix()}pulumi stack rm --yes {name}{cwd}"
    else:
        what = "the stack and possibly running cloud resources"
        cmd = f"{p.env_prefix()}pulumi destroy --yes --remove --stack {name}{cwd}"
    backend_flag = f" --backend {p.backend}" if p.backend else ""
    return [
        f"stack '{name}' was NOT cleaned up after {retries} attempt(s); last error: {last}",
        f"  left behind: {what}",
        f"  backend:     {p.describe_backend()}",
        f"  config:      {work_dir} (Pulumi.yaml and Pulumi.{name}.yaml, kept for the cleanup)",
        f"  clean up:    {cmd}",
        f"  or:          fullserver janitor{backend_flag} --destroy   (tagged {TAG_EPHEMERAL}=true, "
        f"{TAG_EXPIRES_AT}={expires_at.strftime(EXPIRES_FORMAT)})",
    ]
