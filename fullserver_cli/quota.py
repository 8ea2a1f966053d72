"""``fullserver quota STACK...``: each quota the stacks need, against the account's limit and usage.

Reads with the caller's credentials (``fullserver.quotacheck``); prints need / limit / in use /
short per quota and the request that raises a short one; exits 4 when one is short. Without
credentials, one line saying what it needs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from fullserver.clouds import readers_for
from fullserver.errors import FullserverError
from fullserver.plan import plan_paths
from fullserver.platform import Platform
from fullserver.quotacheck import QuotaShort, check_all, short_error
from fullserver.quotas import load_quota_table
from fullserver.stacks import cloud_project, find_stacks
from fullserver.yamlio import read_yaml
from fullserver_cli.output import console, fail
from fullserver_cli.plan import STACKS_DIR
from fullserver_cli.tables import FitTable
from fullserver_cli.tables import table as fit_table


def gcp_project(path: Path, platform: Platform) -> str | None:
    """The project the stack's resources and quotas are in: its ``gcp:project``, else the variable
    pulumi-gcp reads (``fullserver.stacks.cloud_project``); ``None`` on a cloud without projects."""
    config = read_yaml(path).get("config")
    return cloud_project(platform, config if isinstance(config, dict) else {}, os.environ)


def quota(
    stacks: Annotated[Optional[list[str]], typer.Argument(help="stack names (default: every stack)")] = None,
    stacks_dir: Annotated[Path, typer.Option("--stacks-dir", help="where the stack configs live")] = STACKS_DIR,
) -> None:
    """Check each quota the stacks need against the account (exit 4 when one is short)."""
    # Everything is read before anything is printed: a stack's table (or "needs no cloud quota")
    # printed before a later stack's error read as an answer when the command had failed.
    try:
        shown, errors = _read_all(find_stacks(stacks_dir, stacks or []))
    except FullserverError as exc:
        raise fail(exc) from None
    con = console()
    for item in shown:
        con.print(item)
    if errors:
        raise fail(errors[0])


def _read_all(paths: list[Path]) -> tuple[list[str | FitTable], list[QuotaShort]]:
    """Each stack's quota table (or the line saying it needs none), and the stacks short of one."""
    table = load_quota_table()
    shown: list[str | FitTable] = []
    errors = []
    for path, plan in zip(paths, plan_paths(paths), strict=True):
        if not plan.quotas:
            shown.append(f"{plan.stack}: needs no cloud quota")
            continue
        checked = check_all(plan.quotas, readers_for(plan.quotas, table, gcp_project(path, plan.spec.platform)))
        t = fit_table(
            "quota",
            "where",
            "needs",
            "limit",
            "in use",
            "short",
            "request",
            title=f"{plan.stack}: quotas",
            narrow=[("quota", "where"), ("needs", "limit", "in use", "short"), ("request",)],
        )
        for s, reader in checked:
            n = s.need
            t.add_row(
                f"{n.code} ({n.service})",
                n.scope,
                f"{n.amount:g} {n.unit}",
                "unknown" if s.limit is None else f"{s.limit:g}",
                "unknown" if s.in_use is None else f"{s.in_use:g}",
                "?" if s.short is None else "SHORT " + f"{s.short:g}" if s.short else "ok",
                reader.request(s) if s.short else s.note,
            )
        shown.append(t)
        short = short_error(f"stack '{plan.stack}'", checked)
        if short is not None:
            errors.append(short)
    return shown, errors
