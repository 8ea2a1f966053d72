"""``fullserver diff``: what a change does to every stack, against a git base or a saved plan.

Both sides are planned by the *current* code: the working tree's stacks, profiles and catalog on
one side; on the other the base commit's (``git archive`` into a temporary directory, see
``fullserver_cli.gitbase``) or a saved ``fullserver plan --json``. Each stack's plan document is
``plan --json``'s entry (spec, balance, cost, warnings, the resources of the same mock evaluation)
plus the guardrail policy pack's findings on those resources; ``fullserver.diff`` compares the two
lists and this module renders the result as a table, one pull-request comment (Markdown) or JSON.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from fullserver.catalog import DATA_DIR, Catalog, load_catalog
from fullserver.catalog.staleness import DEFAULT_MAX_PRICE_AGE_DAYS
from fullserver.diff import PlanDiff, check_increase, compare
from fullserver.errors import FullserverError, InputError
from fullserver.plan import check_max_monthly_usd, plan_paths
from fullserver.plan_document import Guardrail, StackDoc, read_document
from fullserver.profiles import Profile, load_profiles, project_profiles_dir, shipped_profiles_dir
from fullserver.rules import STACK_FILE_GLOB, stack_file, stack_of_file
from fullserver.yamlio import read_text
from fullserver_cli import gitbase
from fullserver_cli.diff_render import markdown, terminal
from fullserver_cli.guardrails import available as guardrails_available
from fullserver_cli.output import console, emit_json, fail
from fullserver_cli.plan import STACKS_DIR, dated_warnings, plan_document

CATALOG_DIR = DATA_DIR
"""The catalog the working tree plans with; its base version is read from the base commit when
the repository carries it (fullserver's own), else both sides use the installed one."""


class Format(StrEnum):
    table = "table"
    markdown = "markdown"
    json = "json"


def diff(
    stacks: Annotated[
        Optional[list[str]], typer.Argument(help="stack names (default: every stack on either side)")
    ] = None,
    base: Annotated[
        Optional[str],
        typer.Option("--base", help="git ref to compare with (default: the merge base with the default branch)"),
    ] = None,
    base_plan: Annotated[
        Optional[Path], typer.Option("--base-plan", help="compare with a saved `fullserver plan --json` instead")
    ] = None,
    stacks_dir: Annotated[Path, typer.Option("--stacks-dir", help="where the stack configs live")] = STACKS_DIR,
    output: Annotated[Format, typer.Option("--format", help="table, markdown (one PR comment) or json")] = Format.table,
    as_json: Annotated[bool, typer.Option("--json", help="the same as --format json")] = False,
    max_increase_usd: Annotated[
        Optional[float], typer.Option(help="exit 3 if the monthly total rises by more than this many USD")
    ] = None,
    max_increase_pct: Annotated[
        Optional[float], typer.Option(help="exit 3 if the monthly total rises by more than this percentage")
    ] = None,
    max_price_age_days: Annotated[
        int, typer.Option(min=1, max=3650, help="warn about any price used that is older than this many days")
    ] = DEFAULT_MAX_PRICE_AGE_DAYS,
) -> None:
    """Compare stacks with a base: shape, balance, cost, resources, guardrails and warnings (offline).

    Exit 3 when the monthly total rises above --max-increase-usd or --max-increase-pct; 2 on bad input.
    """
    try:
        check_max_monthly_usd(max_increase_usd, "--max-increase-usd")
        check_max_monthly_usd(max_increase_pct, "--max-increase-pct", unit="%")
        if base is not None and base_plan is not None:
            raise InputError("--base-plan", "cannot be given with --base", "compare with a git ref or a saved plan")
        result, label = run_diff(stacks or [], stacks_dir, base, base_plan, max_price_age_days)
    except FullserverError as exc:
        raise fail(exc) from None
    fmt = Format.json if as_json else output
    checked = guardrails_available()
    if fmt is Format.json:
        emit_json({"base": label, "guardrails_run": checked, **result.to_json()})
    elif fmt is Format.markdown:
        typer.echo(markdown(result, label, checked), nl=False)
    else:
        con = console()
        con.print(terminal(result, label, checked))
    try:
        check_increase(result, max_increase_usd, max_increase_pct)
    except FullserverError as exc:
        raise fail(exc) from None


def run_diff(
    names: list[str], stacks_dir: Path, base: str | None, base_plan: Path | None, max_price_age_days: int
) -> tuple[PlanDiff, str]:
    """The diff of the working tree against ``base_plan`` or the git ``base``, and how the base is
    named. The git base is resolved first (a mistyped ref answers in well under a second), then the
    working tree is planned: its errors are bad input before any base work, and the base reuses the
    resource graph of every stack whose plan did not change."""
    # The base is resolved first: a mistyped --base answers at once, not after the planning.
    cwd = Path.cwd().resolve()
    resolved = gitbase.resolve(cwd, base) if base_plan is None else None
    head_paths = _stack_paths(stacks_dir)
    head = [head_paths[n] for n in sorted(head_paths) if not names or n in names]
    graphs: dict[str, Evaluated] = {}
    after_docs, _ = plan_documents(head, load_profiles(), load_catalog(CATALOG_DIR), max_price_age_days, graphs=graphs)
    after = read_document(after_docs, "working tree")
    notes: dict[str, str] = {}
    if resolved is None:
        assert base_plan is not None
        before = _saved_plan(base_plan)
        label = f"saved plan {base_plan}"
    else:
        label = f"{resolved.label} ({resolved.short})" if resolved.label != resolved.short else resolved.short
        before, notes = _base_documents(resolved, cwd, stacks_dir, names, max_price_age_days, graphs)
    if _wanted(names, {s.stack for s in before} | set(notes), set(head_paths), stacks_dir) is not None:
        before = [s for s in before if s.stack in names]
    return compare(before, after, notes), label


def _stack_paths(stacks_dir: Path) -> dict[str, Path]:
    """Every stack file in ``stacks_dir`` by stack name ({} when the directory is absent or empty:
    every base stack is then removed)."""
    out: dict[str, Path] = {}
    for path in sorted(stacks_dir.glob(STACK_FILE_GLOB)) if stacks_dir.is_dir() else []:
        name = stack_of_file(path.name)
        if name is not None:
            out[name] = path
    return out


def _wanted(names: list[str], before: set[str], after: set[str], stacks_dir: Path) -> set[str] | None:
    if not names:
        return None
    unknown = [n for n in names if n not in before and n not in after]
    if unknown:
        known = ", ".join(sorted(before | after)) or "none"
        raise InputError(
            f"stack '{unknown[0]}'",
            f"is on neither side (no {stacks_dir / stack_file(unknown[0])} here or in the base)",
            f"known stacks: {known}",
        )
    return set(names)


SAVED_PLAN_MAX_BYTES = 64 << 20
"""A saved plan of hundreds of stacks with their resources is a few MiB; more is not a plan."""


def _saved_plan(path: Path) -> list[StackDoc]:
    text = read_text(path, SAVED_PLAN_MAX_BYTES, "a saved plan")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            str(path),
            f"is not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
            "save one with `fullserver plan --json > plan.json`",
        ) from None
    except ValueError:  # json raises it for an integer past Python's 4,300 digits
        raise InputError(
            str(path), "is not a plan: it holds a number of over 4,300 digits", "save one with `fullserver plan --json`"
        ) from None
    return read_document(data, str(path))


# --- plan documents -------------------------------------------------------------------------


@dataclass(frozen=True)
class Evaluated:
    """What a stack plan's mock evaluation gave: resources (as ``plan --json`` lists them), the
    program's warnings and the guardrail findings (``None``: pulumi-policy not installed)."""

    resources: list[dict[str, Any]]
    warnings: list[str]
    guardrails: list[Guardrail] | None


def plan_documents(
    paths: list[Path],
    profiles: dict[str, Profile],
    catalog: Catalog,
    max_price_age_days: int = DEFAULT_MAX_PRICE_AGE_DAYS,
    *,
    tolerate: bool = False,
    graphs: dict[str, Evaluated] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """``plan --json``'s entry for each stack file, with the guardrail findings added.

    With ``tolerate`` (the base side), a stack the current code cannot plan is left out and its
    error returned by stack name, so the diff shows it as added (or removed, where the working tree
    deleted it) with the reason; on the working
    tree an error is bad input, as for ``fullserver plan``. ``graphs`` holds what was evaluated
    by plan (the resource graph is a function of the plan alone), so a stack whose plan is the
    same on both sides is evaluated once: most of a diff's time is graphs.
    """
    from components.graph import fast_graph, rows_json
    from fullserver_cli.guardrails import run_guardrails

    today = dt.date.today()
    docs: list[dict[str, Any]] = []
    notes: dict[str, str] = {}
    for path in paths:
        try:
            [plan] = plan_paths([path], profiles, catalog)
            key = plan.model_dump_json()
            done = graphs.get(key) if graphs is not None else None
            if done is None:
                graph = fast_graph(plan)
                done = Evaluated(rows_json(graph), graph.warnings, run_guardrails(graph))
                if graphs is not None:
                    graphs[key] = done
        except (FullserverError, ValueError) as exc:
            # The base's data may predate what the current code reads (a catalog figure it lacks
            # fails the code's own models with a ValueError): a base-side stack, not a crash.
            if not tolerate:
                raise
            what = exc.line() if isinstance(exc, FullserverError) else " ".join(str(exc).split())[:300]
            notes[stack_of_file(path.name) or path.name] = f"the base does not plan with the current code: {what}"
            continue
        staleness = dated_warnings(plan, catalog, today, max_price_age_days)
        docs.append(
            {
                **plan_document(plan, [*plan.warnings, *staleness, *done.warnings], done.resources),
                "guardrails": None if done.guardrails is None else [g.model_dump(mode="json") for g in done.guardrails],
            }
        )
    return docs, notes


@contextlib.contextmanager
def _working_dir(path: Path) -> Iterator[None]:
    """Run with ``path`` as the working directory: the base's relative stack paths and its
    project profiles (``profiles/`` beside ``Pulumi.yaml``) then read as the working tree's do."""
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def _base_inputs(top: Path, cwd: Path, stacks_dir: Path) -> list[Path]:
    """What a plan reads, inside the repository: the stacks, every ``Pulumi.yaml`` and
    ``profiles/`` from the working directory up to the top, the shipped profiles and the catalog
    when the repository carries them."""
    paths = [stacks_dir if stacks_dir.is_absolute() else cwd / stacks_dir]
    for folder in (cwd, *cwd.parents):
        paths += [folder / "Pulumi.yaml", folder / "Pulumi.yml", folder / "profiles"]
        if folder == top:
            break
    project = project_profiles_dir(cwd)
    paths += [p for p in (project, shipped_profiles_dir(), CATALOG_DIR) if p is not None]
    return [p for p in paths if gitbase.inside(p, top)]


def _base_documents(
    base: gitbase.Base,
    cwd: Path,
    stacks_dir: Path,
    names: list[str],
    max_price_age_days: int,
    graphs: dict[str, Evaluated],
) -> tuple[list[StackDoc], dict[str, str]]:
    top = base.top
    with gitbase.snapshot(base, _base_inputs(top, cwd, stacks_dir)) as snap:
        here = snap / cwd.relative_to(top)
        here.mkdir(parents=True, exist_ok=True)
        shipped = shipped_profiles_dir()
        catalog_dir = snap / CATALOG_DIR.resolve().relative_to(top) if gitbase.inside(CATALOG_DIR, top) else CATALOG_DIR
        with _working_dir(here):
            try:
                # fullserver's own checkout ships its profiles from the repository: take the base's.
                # Elsewhere the installed profiles stay and the base's project layer is read.
                if gitbase.inside(shipped, top):
                    profiles = load_profiles(snap / shipped.resolve().relative_to(top))
                else:
                    profiles = load_profiles()
                catalog = load_catalog(catalog_dir)
            except FullserverError as exc:
                raise InputError(
                    f"base {base.short}", f"its profiles or catalog do not load with the current code: {exc.line()}", ""
                ) from None
            if stacks_dir.is_absolute():
                if not gitbase.inside(stacks_dir, top):
                    raise InputError(
                        "--stacks-dir", f"{stacks_dir} is outside the repository {top}", "give --base-plan"
                    )
                base_dir = snap / stacks_dir.resolve().relative_to(top)
            else:
                base_dir = stacks_dir  # relative, read from the base's copy of the working directory
            paths = _stack_paths(base_dir)
            chosen = [paths[n] for n in sorted(paths) if not names or n in names]
            docs, notes = plan_documents(chosen, profiles, catalog, max_price_age_days, tolerate=True, graphs=graphs)
    return read_document(docs, f"base {base.short}"), notes
