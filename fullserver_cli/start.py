"""``fullserver start STACK``: bring back a stack whose idle agent stopped it (docs/autostop.md).

The stack's ``autostop`` output says how (``fullserver.autostop.start``): ``pulumi up --refresh``
through the Automation API, in a private workspace with the stack's own config file (as
``stackops`` runs every operation), or each node's start command, run as an argv without a
shell, its output passed through. ``--dry-run`` prints what would run and runs nothing, after
what the outputs say of the nodes now (``runningNodes``, as of the last program run).
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from fullserver.autostop.start import StartPlan, start_plan
from fullserver.clouds import install_hint
from fullserver.errors import EXIT_PULUMI, FullserverError, InputError
from fullserver_cli.output import STACKS_DIR, fail

if TYPE_CHECKING:  # the Automation API is imported only when a stack is started
    from stackops.workspace import PulumiOptions


class StartFailed(FullserverError):
    """``pulumi up`` or a node's start command failed: the stack is (partly) still stopped."""

    exit_code = EXIT_PULUMI


def _say(line: str) -> None:
    sys.stderr.write(f"fullserver start: {line}\n")
    sys.stderr.flush()


def _up(plan: StartPlan, project_dir: Path, stacks_dir: Path, opts: PulumiOptions) -> None:
    """``pulumi up --refresh`` on the stack, with its config file (``stacks/Pulumi.<stack>.yaml``)."""
    from pulumi import automation as auto

    from stackops.workspace import error_line, make_workspace

    config = stacks_dir / f"Pulumi.{plan.stack}.yaml"
    if not config.is_file():
        raise InputError(str(config), "no such stack config file", "run from the repository root or pass --stacks-dir")
    with tempfile.TemporaryDirectory(prefix="fullserver-start-") as tmp:
        ws = make_workspace(project_dir, Path(tmp), opts)
        shutil.copyfile(config, Path(tmp) / config.name)
        try:
            stack = auto.Stack.select(plan.stack, ws)
            stack.up(refresh=True, on_output=print, message="fullserver start")
        except auto.errors.CommandError as exc:
            raise StartFailed(f"stack '{plan.stack}'", f"pulumi up --refresh failed: {error_line(exc)}") from None


def _run(plan: StartPlan) -> None:
    """Each node's start command; every one is tried, the failures named together."""
    failed: list[str] = []
    for argv in plan.commands:
        if shutil.which(argv[0]) is None:
            raise InputError(
                argv[0], "not found on PATH", f"{install_hint(argv[0]) or 'install it'}; nothing was started"
            )
    for argv in plan.commands:
        _say(f"running {shlex.join(argv)}")
        code = subprocess.run(list(argv), stdin=subprocess.DEVNULL, check=False).returncode
        if code != 0:
            failed.append(f"`{shlex.join(argv)}` exited with {code}")
    if failed:
        raise StartFailed(f"stack '{plan.stack}'", "; ".join(failed), "see its output above, then run it again")


def start(
    stack: Annotated[str, typer.Argument(help="the stack to start again")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="print what would run, run nothing")] = False,
    backend: Annotated[Optional[str], typer.Option(help="state backend URL (PULUMI_BACKEND_URL)")] = None,
    stacks_dir: Annotated[Path, typer.Option("--stacks-dir", help="where the stack configs live")] = STACKS_DIR,
    project_dir: Annotated[Path, typer.Option("--project-dir", help="directory holding Pulumi.yaml")] = Path("."),
    pulumi_root: Annotated[Optional[Path], typer.Option(help="use <root>/bin/pulumi instead of PATH")] = None,
) -> None:
    """Start a stack its idle agent stopped: pulumi up --refresh, or each node's start command.

    The stack's autostop output says which. Exit code 2 bad input or a stack that does not stop
    itself, 6 pulumi up or a start command failed.
    """
    from stackops.outputs import read_stack_outputs
    from stackops.workspace import PulumiOptions

    opts = PulumiOptions(backend=backend, pulumi_root=pulumi_root)
    try:
        opts.check()
        plan = start_plan(stack, read_stack_outputs(project_dir, stack, opts))
        if dry_run:
            _say(plan.state())
            for argv in [["pulumi", "up", "--refresh", "--stack", stack]] if plan.up else plan.commands:
                print(shlex.join(argv))
            return
        if plan.up:
            _say(f"pulumi up --refresh {stack} (the program sets the node count back)")
            _up(plan, project_dir, stacks_dir, opts)
        else:
            _run(plan)
    except FullserverError as exc:
        raise fail(exc) from None
    _say(f"{stack} started")
