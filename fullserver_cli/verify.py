"""``fullserver verify INVENTORY --profile P``: measure what each host delivers beside the promise.

Like ``audit`` (same inventory, same pinned-key SSH, same exit codes), and then it measures: GPU
PCIe links, NVLink, memory health and NUMA placement, scratch throughput with fio (only inside a
directory of its own under the *mounted* scratch filesystem), TCP throughput between the hosts
with iperf3. One table per host: promised, delivered, ratio. Exit 0 when every host delivers;
4 when any host is short or could not be verified (each named, with what it misses); 5 when the
rest deliver but some host could not be reached.

``verify STACK``: a stack's nodes are reached through the connect hints its ``pulumi up``
exported; without those outputs on this machine it says so in one line (exit 2).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from fullserver.baremetal import liblog
from fullserver.baremetal.config import check_path
from fullserver.baremetal.inventory import load_inventory
from fullserver.baremetal.measure import Caps
from fullserver.baremetal.verify import HostVerify, Promise, verify_fleet
from fullserver.catalog import load_catalog
from fullserver.errors import EXIT_SHORT, EXIT_UNREACHABLE, FullserverError, InputError
from fullserver.profiles import get_profile, load_profiles
from fullserver_cli.audit import check_keys


def verify(
    target: Annotated[
        str, typer.Argument(help="inventory YAML (hosts, pinned host keys, key source), or a stack name")
    ],
    profile: Annotated[str, typer.Option("--profile", "-p", help="profile whose promises apply")],
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
    scratch: Annotated[str, typer.Option(help="mountpoint of the scratch filesystem fio measures")] = "/mnt/scratch",
    fio_seconds: Annotated[int, typer.Option(min=1, max=600, help="seconds per fio run (3 runs)")] = 10,
    fio_size_mib: Annotated[int, typer.Option(min=1, max=65536, help="size of fio's file, MiB")] = 1024,
    iperf_seconds: Annotated[int, typer.Option(min=1, max=600, help="seconds of iperf3 per host pair")] = 5,
    iperf_streams: Annotated[int, typer.Option(min=1, max=128, help="parallel iperf3 streams")] = 4,
    iperf_port: Annotated[int, typer.Option(min=1024, max=65000, help="iperf3 server port")] = 5201,
    profiles_dir: Annotated[Optional[Path], typer.Option("--profiles-dir", help="profiles directory")] = None,
    workers: Annotated[int, typer.Option(min=1, help="hosts measured at once (one connection each)")] = 64,
) -> None:
    """Measure what bare-metal hosts deliver (PCIe, NVLink, NUMA, scratch fio, iperf3) against the plan's promise."""
    err = Console(stderr=True)
    try:
        profiles = load_profiles(profiles_dir) if profiles_dir else load_profiles()
        prof = get_profile(profile, profiles, where="--profile")
        try:
            check_path(scratch, "--scratch", mountpoint=True)
        except ValueError as exc:
            raise InputError(
                "--scratch", str(exc).split(": ", 1)[1], "name the scratch filesystem's mountpoint"
            ) from None
        path = Path(target)
        if not path.is_file():
            raise InputError(
                f"stack '{target}'" if not path.suffix else target,
                "no such inventory file, and no stack outputs on this machine to reach a stack's nodes",
                "pass an inventory file, or run `pulumi up` for the stack first (verify reads the connect hints it exports)",
            )
        inv = load_inventory(path)
        hosts = [(inv.target(e), inv.private_key(e)) for e in inv.hosts]
        jump_keys = {name: key for e in inv.hosts for name, key in inv.jump_keys(e).items()}
        expected = {e.name: e.expect for e in inv.hosts if e.expect is not None}
        check_keys(inv, [*inv.hosts, *(hop for e in inv.hosts for hop in inv.hops(e))])
    except FullserverError as exc:
        sys.stderr.write(f"error: {exc.line()}\n")
        raise typer.Exit(exc.exit_code) from None

    caps = Caps(
        fio_seconds=fio_seconds,
        fio_size_mib=fio_size_mib,
        iperf_seconds=iperf_seconds,
        iperf_streams=iperf_streams,
        iperf_port=iperf_port,
    )
    promise = Promise(profile=prof, catalog=load_catalog(), scratch=scratch)
    with (
        liblog.output(lambda line: err.print(f"warning: {line}", markup=False, highlight=False)),
        Progress(
            TextColumn("measuring"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=err,
            transient=True,
        ) as bar,
    ):
        task = bar.add_task("", total=len(hosts))

        def done(name: str, _: object) -> None:
            bar.update(task, advance=1, description=name)

        results = verify_fleet(
            hosts, promise, caps, expected=expected, jump_keys=jump_keys, max_workers=workers, on_done=done
        )

    if as_json:
        sys.stdout.write(json.dumps([to_json(r) for r in results], indent=2) + "\n")
    else:
        out = Console(width=160, soft_wrap=False)
        for r in results:
            out.print(host_table(r))
    for r in results:
        if not r.ok:
            err.print(
                f"{'unreachable' if r.status == 'error' else r.status}: {r.summary()}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
    raise typer.Exit(exit_code(results))


def exit_code(results: list[HostVerify]) -> int:
    if any(r.status in ("short", "unverified") for r in results):
        return EXIT_SHORT
    if any(r.status == "error" for r in results):
        return EXIT_UNREACHABLE
    return 0


def to_json(r: HostVerify) -> dict[str, object]:
    data = r.model_dump(mode="json", exclude={"lines"})
    data["ok"] = r.ok
    data["lines"] = [{**x.model_dump(mode="json"), "ratio": x.ratio, "ok": x.ok} for x in r.lines]
    return data


def _num(v: float | None, unit: str) -> str:
    return "n/a" if v is None else f"{round(v, 1):g} {unit}"


def host_table(r: HostVerify) -> Table:
    colour = {"delivers": "green", "short": "bold red", "unverified": "yellow", "error": "bold red"}[r.status]
    title = Text.assemble((r.name, "bold"), f" {r.address}  ", (r.status.upper(), colour))
    t = Table(title=title, title_justify="left", show_edge=False)
    if r.error:
        t.add_column("error")
        t.add_row(r.error)
        return t
    for col in ("dimension", "promised", "delivered", "ratio", "", "detail"):
        t.add_column(col, overflow="fold")
    for x in r.lines:
        mark = (
            Text("n/a", style="dim")
            if x.ok is None
            else Text("ok", style="green")
            if x.ok
            else Text("SHORT", style="bold red")
        )
        t.add_row(
            x.dimension,
            _num(x.promised, x.unit),
            _num(x.delivered, x.unit),
            "n/a" if x.ratio is None else f"{x.ratio:.2f}",
            mark,
            x.detail,
        )
    for p in r.problems:
        t.add_row("problem", "", "", "", Text("!", style="yellow"), p)
    t.caption = f"{r.gpus}; measured in {r.seconds:.1f}s"
    t.caption_justify = "left"
    return t
