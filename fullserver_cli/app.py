"""The ``fullserver`` command: profiles, catalog, plan, diff, quota, recommend, audit, verify,
ephemeral, janitor, start.

Design notes: docs/design/cli.md.
"""

from __future__ import annotations

import gc
import importlib
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer
from typer._click import Command, Context
from typer._click import exceptions as click_exceptions
from typer.core import TyperGroup

from fullserver.errors import EXIT_INPUT, FullserverError
from fullserver_cli.output import STACKS_DIR, console, emit_json, fail

if TYPE_CHECKING:  # loaded by the command that uses it: --version stays bare
    from fullserver.recommend import Recommendation

_json = emit_json
_fail = fail

COMMANDS = (
    ("plan", "fullserver_cli.plan:plan"),
    ("diff", "fullserver_cli.diff:diff"),
    ("quota", "fullserver_cli.quota:quota"),
    ("recommend", None),
    ("audit", "fullserver_cli.audit:audit"),
    ("verify", "fullserver_cli.verify:verify"),
    ("ephemeral", None),
    ("janitor", None),
    ("start", "fullserver_cli.start:start"),
    ("profiles", None),
    ("catalog", "fullserver_cli.catalog:catalog_app"),
)
"""Every command in the order ``--help`` lists them; where a module is named (``module:attribute``:
the command's function, or a Typer app for a group), it is imported only when that command runs
or help lists it. Why: importing every command's module (the core, SSH, the diff's git reader)
took most of a second before ``--version`` or ``plan`` printed anything."""


def _load(name: str, target: str) -> Command:
    """The click command of one lazily imported command (``COMMANDS``), built as ``app.command()``
    or ``app.add_typer`` would have built it."""
    module, _, attribute = target.partition(":")
    found = getattr(importlib.import_module(module), attribute)
    if isinstance(found, typer.Typer):
        return typer.main.get_group(found)
    single = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None)
    single.command(name=name)(found)
    return typer.main.get_command(single)


class OneLineErrors(TyperGroup):
    """Usage errors as the one line every other error uses, and help (not an error) for no
    arguments; the commands of ``COMMANDS`` that name a module are loaded when first asked for."""

    def list_commands(self, ctx: Context) -> list[str]:
        return [name for name, _ in COMMANDS]

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        target = dict(COMMANDS).get(cmd_name)
        if target is not None and cmd_name not in self.commands:
            self.commands[cmd_name] = _load(cmd_name, target)
        return self.commands.get(cmd_name)

    def resolve_command(self, ctx: Context, args: list[str]) -> tuple[str | None, Command | None, list[str]]:
        if args and args[0] not in dict(COMMANDS):  # a typo: typer suggests from every loaded command
            for name in self.list_commands(ctx):
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            code = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except click_exceptions.NoArgsIsHelpError as exc:
            sys.stdout.write(exc.ctx.get_help() + "\n" if exc.ctx else "")
            code = 0
        except click_exceptions.UsageError as exc:
            path = exc.ctx.command_path if exc.ctx else "fullserver"
            message = " ".join(exc.format_message().split())
            sys.stderr.write(f"error: {path}: {message} (see '{path} --help')\n")
            code = EXIT_INPUT
        except typer.Abort:
            code = 130
        except Exception as exc:  # the one boundary for cloud SDK errors (fullserver.cloud_errors)
            from fullserver.cloud_errors import one_line  # only on a failure: --version loads no core

            error = one_line(exc)
            if error is None:
                raise
            sys.stderr.write(f"error: {error.line()}\n")
            code = error.exit_code
        if not standalone_mode:
            return code
        sys.exit(code if isinstance(code, int) else 0)


def _version() -> str:
    try:
        return version("fullserver")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


app = typer.Typer(
    cls=OneLineErrors,
    name="fullserver",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
profiles_app = typer.Typer(help="The named workload-maturity profiles.", no_args_is_help=True, rich_markup_mode=None)
app.add_typer(profiles_app, name="profiles")


def _show_version(value: bool) -> None:
    if value:
        sys.stdout.write(f"fullserver {_version()}\n")
        raise typer.Exit(0)


@app.callback()
def _root(
    show_version: Annotated[
        bool, typer.Option("--version", callback=_show_version, is_eager=True, help="print the version and exit")
    ] = False,
) -> None:
    """Balanced full-server environments for ML accelerators, from workload-maturity profiles.

    Exit codes, the same for every command: 0 success; 2 bad input; 3 over budget;
    4 a host short of its profile or not verified, or a quota short; 5 a host unreachable; 6 Pulumi
    (or start's start command) failed; 7 something was left behind.
    """


@profiles_app.command("list")
def profiles_list(
    directory: Annotated[Optional[Path], typer.Option("--dir", help="profiles directory")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List the profiles."""
    from fullserver.profiles import load_profiles
    from fullserver_cli import render

    try:
        profiles = load_profiles(directory) if directory else load_profiles()
    except FullserverError as exc:
        raise _fail(exc) from None
    if as_json:
        _json([p.model_dump(mode="json") for p in profiles.values()])
    else:
        console().print(render.profiles_table(profiles))


@profiles_app.command("show")
def profiles_show(
    name: str,
    directory: Annotated[Optional[Path], typer.Option("--dir", help="profiles directory")] = None,
) -> None:
    """Show one profile fully resolved (after extends), as YAML-like JSON."""
    from fullserver.profiles import get_profile, load_profiles

    try:
        profiles = load_profiles(directory) if directory else load_profiles()
        profile = get_profile(name, profiles, where="profiles show")
    except FullserverError as exc:
        raise _fail(exc) from None
    _json(profile.model_dump(mode="json"))


@profiles_app.command("schema")
def profiles_schema() -> None:
    """Print the JSON Schema of a profile file (extends included), for editor completion."""
    from fullserver.profiles import profile_file_schema

    _json(profile_file_schema())


@app.command()
def recommend(
    framework: Annotated[str, typer.Option(help="pytorch, jax, tensorflow or other")] = "pytorch",
    purpose: Annotated[str, typer.Option(help="training or inference")] = "training",
    maturity: Annotated[
        Optional[str],
        typer.Option(
            help="exploring, adapting, stable or production; unset: training starts at experimentation,"
            " inference is planned by --traffic"
        ),
    ] = None,
    scale: Annotated[str, typer.Option(help="single or multi-node")] = "single",
    portability: Annotated[
        bool, typer.Option("--portable/--not-portable", help="must the workload move between providers?")
    ] = False,
    kubernetes: Annotated[
        bool, typer.Option("--kubernetes/--no-kubernetes", help="does the team already run Kubernetes (GKE, EKS)?")
    ] = False,
    cloud: Annotated[str, typer.Option(help="the team's cloud: a cloud platform's provider key, or any")] = "any",
    traffic: Annotated[
        Optional[str],
        typer.Option(help="inference traffic: realtime-variable or steady-batch (unset: realtime-variable)"),
    ] = None,
    demand: Annotated[str, typer.Option(help="variable or steady")] = "variable",
    region: Annotated[Optional[str], typer.Option(help="preferred region")] = None,
    gpu: Annotated[Optional[str], typer.Option(help="GPU model to price, e.g. H100-80GB")] = None,
    gpu_count: Annotated[Optional[int], typer.Option(help="GPUs per node to price")] = None,
    tpu: Annotated[Optional[str], typer.Option(help="TPU type to price, e.g. v5litepod-8")] = None,
    dedicated_monthly_usd: Annotated[Optional[float], typer.Option(help="monthly price of a dedicated server")] = None,
    top: Annotated[int, typer.Option(help="how many choices to show")] = 5,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Rank profile + platform choices for a workload, with reasons and the cost of each.

    Every platform is priced for the same accelerator memory (a TPU slice sized to the GPUs
    asked for, the ratio shown) and each price names its pricing model; ties are broken on the
    on-demand price of that capacity. With --portable a TPU is never first.
    """
    from pydantic import ValidationError

    from fullserver.catalog import load_catalog
    from fullserver.profiles import load_profiles
    from fullserver.recommend import Needs, recommendation
    from fullserver.yamlio import validation_error

    answers = {
        "framework": framework,
        "purpose": purpose,
        "maturity": maturity,
        "scale": scale,
        "portability": portability,
        "kubernetes": kubernetes,
        "cloud": cloud,
        "traffic": traffic,
        "demand": demand,
        "region": region,
        "gpu": gpu,
        "gpu_count": gpu_count,
        "tpu": tpu,
        "dedicated_monthly_usd": dedicated_monthly_usd,
    }
    try:
        try:
            needs = Needs.model_validate(answers)
        except ValidationError as exc:
            raise validation_error("recommend", exc, prefix="--") from None
        ranked = recommendation(needs, load_profiles(), load_catalog(), top=top)
    except FullserverError as exc:
        raise _fail(exc) from None
    _show(ranked, as_json)


def _show(ranked: Recommendation, as_json: bool) -> None:
    """The ranking, then the notes on the answers; with --json the notes go to stderr, so stdout
    stays the list of choices scripts read."""
    from fullserver_cli import render

    notes = [f"note: {n}" for n in ranked.notes]
    if as_json:
        _json([c.model_dump(mode="json") for c in ranked.choices])
        for line in notes:
            sys.stderr.write(line + "\n")
        return
    con = console()
    con.print(render.recommendations(ranked.choices))
    for line in notes:
        con.print(line, markup=False)


# --- stackops: ephemeral CI stacks and the janitor (Pulumi Automation API, imported lazily) ---


@app.command(context_settings={"allow_interspersed_args": False})
def ephemeral(
    command: Annotated[Optional[list[str]], typer.Argument(help="the command to run, after --")] = None,
    profile: Annotated[Optional[str], typer.Option(help="workload profile (an ephemeral one)")] = None,
    stack: Annotated[Optional[str], typer.Option("--stack", help="base stack whose config is copied")] = None,
    ttl: Annotated[
        str, typer.Option(help="time to live: 2h, 90m, 1h30m (at most 30 days); tagged and labelled")
    ] = "2h",
    config: Annotated[
        Optional[list[str]], typer.Option("--config", "-c", help="override KEY=VALUE (YAML value), repeatable")
    ] = None,
    prefix: Annotated[str, typer.Option(help="stack name prefix")] = "ci",
    backend: Annotated[Optional[str], typer.Option(help="state backend URL (PULUMI_BACKEND_URL)")] = None,
    stacks_dir: Annotated[Path, typer.Option("--stacks-dir", help="where the stack configs live")] = STACKS_DIR,
    project_dir: Annotated[Path, typer.Option("--project-dir", help="directory holding Pulumi.yaml")] = Path("."),
    max_monthly_usd: Annotated[Optional[float], typer.Option(help="refuse to create above this estimate")] = None,
    retries: Annotated[int, typer.Option(help="destroy attempts before reporting what is left (1-20)")] = 4,
    backoff: Annotated[float, typer.Option(help="first retry delay in seconds, 0-60 (doubles, at most 60)")] = 5.0,
    grace: Annotated[
        float, typer.Option(help="seconds (0-3600) the command gets after a signal before SIGKILL")
    ] = 30.0,
    pulumi_root: Annotated[Optional[Path], typer.Option(help="use <root>/bin/pulumi instead of PATH")] = None,
    secrets_provider: Annotated[Optional[str], typer.Option(help="secrets provider for the new stack")] = None,
    secret_output: Annotated[
        Optional[list[str]],
        typer.Option(
            "--secret-output",
            help="hand this secret stack output to the command's environment (repeatable); never written to disk",
        ),
    ] = None,
) -> None:
    """Create a throwaway stack, run a command with its outputs, and always destroy it.

    The command sees FULLSERVER_STACK, FULLSERVER_OUTPUT_<NAME> per stack output and
    FULLSERVER_OUTPUTS_FILE (all outputs as JSON); a secret output only with --secret-output NAME,
    and the file shows "[secret]" for every secret output. Exit code: the command's; 128+N after
    signal N; 2 bad input, 3 over budget, 4 a quota short (checked before anything is created), 6
    Pulumi failed (nothing left); 7 a stack or its resources were left behind.
    """
    from fullserver.plan import check_max_monthly_usd
    from fullserver.yamlio import load_yaml_text
    from fullserver_cli.stackops_view import to_stderr
    from stackops.ephemeral import EphemeralSettings, run_ephemeral
    from stackops.workspace import PulumiOptions

    try:
        check_max_monthly_usd(max_monthly_usd)
    except FullserverError as exc:
        raise _fail(exc) from None
    overrides: dict[str, Any] = {}
    for item in config or []:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise _fail(FullserverError("--config", f"'{item}' is not KEY=VALUE", "e.g. --config region=us-west-2"))
        try:
            overrides[key] = load_yaml_text(value, f"--config {key}") if value else ""
        except FullserverError as exc:
            raise _fail(exc) from None
    settings = EphemeralSettings(
        profile=profile,
        ttl=ttl,
        base_stack=stack,
        config=overrides,
        prefix=prefix,
        stacks_dir=stacks_dir,
        project_dir=project_dir,
        max_monthly_usd=max_monthly_usd,
        pulumi=PulumiOptions(backend=backend, pulumi_root=pulumi_root, secrets_provider=secrets_provider),
        retries=retries,
        backoff_s=backoff,
        pass_secret_outputs=tuple(secret_output or ()),
        notify=to_stderr,
    )
    raise typer.Exit(run_ephemeral(command or [], settings, grace_s=grace))


@app.command()
def janitor(
    backend: Annotated[Optional[str], typer.Option(help="state backend URL (PULUMI_BACKEND_URL)")] = None,
    destroy: Annotated[bool, typer.Option("--destroy", help="destroy and remove them (default: dry run)")] = False,
    project_dir: Annotated[Path, typer.Option("--project-dir", help="directory holding Pulumi.yaml")] = Path("."),
    all_projects: Annotated[bool, typer.Option("--all-projects", help="look beyond this project's stacks")] = False,
    prefix: Annotated[Optional[str], typer.Option(help="only stacks whose name starts with this")] = None,
    at: Annotated[Optional[str], typer.Option("--at", help="judge expiry at this ISO time instead of now")] = None,
    retries: Annotated[int, typer.Option(help="destroy attempts per stack")] = 2,
    backoff: Annotated[float, typer.Option(help="first retry delay in seconds (doubles, at most 60)")] = 5.0,
    pulumi_root: Annotated[Optional[Path], typer.Option(help="use <root>/bin/pulumi instead of PATH")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """List ephemeral stacks whose fullserver:expires-at has passed; --destroy destroys and removes them.

    Exit code 7 when a stack's tags could not be read, its destroy or removal failed, or (with --destroy)
    an expired stack belongs to another project; stacks with an unreadable expiry or an update in
    progress are only reported. Each is named.
    """
    from fullserver_cli.janitor_view import render as render_report
    from fullserver_cli.stackops_view import to_stderr
    from stackops.janitor import janitor as sweep
    from stackops.janitor import parse_expiry
    from stackops.workspace import PulumiOptions

    now = parse_expiry(at) if at is not None else None
    if at is not None and now is None:  # '' too: an empty --at is no time, not "now"
        raise _fail(FullserverError("--at", f"'{at}' is not an ISO time", "e.g. 2026-01-01T12:00:00Z"))
    opts = PulumiOptions(backend=backend, pulumi_root=pulumi_root)
    try:
        report = sweep(
            opts,
            project_dir=project_dir,
            destroy=destroy,
            now=now,
            all_projects=all_projects,
            prefix=prefix,
            retries=retries,
            backoff_s=backoff,
            notify=to_stderr,
        )
    except FullserverError as exc:
        raise _fail(exc) from None
    if as_json:
        _json(report.to_json())
    else:
        render_report(report, opts, destroy, console())
    for name, why in report.failed.items():
        sys.stderr.write(f"error: stack '{name}' was not cleaned up: {why}\n")
    raise typer.Exit(report.exit_code)


def main() -> None:
    try:
        app()
    finally:
        # A plan's resource graph leaves the SDK's event loop behind: close it while the process is
        # whole (only where ``components.graph`` was imported: plan, diff).
        graph = sys.modules.get("components.graph")
        if graph is not None:
            graph.close_event_loop()
        # The command is done and the process ends: what it kept (every plan, the catalog's memo)
        # is left to the operating system rather than scanned by the interpreter's last cyclic
        # collection (about 0.1 ms per stack planned, and 70 ms of every command).
        gc.freeze()


if __name__ == "__main__":
    main()
