"""What `audit` and `verify` show while they work on many hosts at once, and after.

Both reach a fleet over SSH in parallel: a transient progress bar on stderr while hosts answer
(the SSH library's warnings come through as one line each, never a traceback), then a table per
host (or the JSON list), then one line on stderr for every host that is not fine.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console, RenderableType
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from fullserver.baremetal import liblog
from fullserver.errors import EXIT_SHORT, EXIT_UNREACHABLE
from fullserver_cli.output import console


@contextmanager
def fleet_progress(err: Console, verb: str, total: int) -> Iterator[Callable[[str, object], None]]:
    """A progress bar ("probing", "measuring") over ``total`` hosts; yields the per-host callback."""
    with (
        liblog.output(lambda line: err.print(f"warning: {line}", markup=False, highlight=False)),
        Progress(
            TextColumn(verb),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=err,
            transient=True,
        ) as bar,
    ):
        task = bar.add_task("", total=total)

        def done(name: str, _: object) -> None:
            bar.update(task, advance=1, description=name)

        yield done


def show_fleet(
    results: Sequence[Any],
    err: Console,
    *,
    as_json: bool,
    to_json: Callable[[Any], dict[str, Any]],
    table: Callable[[Any], RenderableType],
) -> None:
    """The JSON list or a table per host on stdout, then a line on stderr per host not fine."""
    if as_json:
        sys.stdout.write(json.dumps([to_json(r) for r in results], indent=2) + "\n")
    else:
        out = console()
        for r in results:
            out.print(table(r))
    for r in results:
        if not r.ok:
            err.print(
                f"{'unreachable' if r.status == 'error' else r.status}: {r.summary()}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )


def exit_code(results: Sequence[Any]) -> int:
    """4 when a host is short or could not be verified, else 5 when one could not be reached."""
    if any(r.status in ("short", "unverified") for r in results):
        return EXIT_SHORT
    if any(r.status == "error" for r in results):
        return EXIT_UNREACHABLE
    return 0
