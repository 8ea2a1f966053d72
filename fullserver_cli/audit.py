"""``fullserver audit INVENTORY --profile P``: probe every host over SSH and check its balance.

Design notes: docs/design/cli.md.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.text import Text

from fullserver.baremetal.audit import HostAudit, audit_fleet
from fullserver.baremetal.idle import RENTED, IdleProbe
from fullserver.baremetal.inventory import Inventory, InventoryEntry, load_inventory
from fullserver.catalog import load_catalog
from fullserver.errors import FullserverError
from fullserver.profiles import get_profile, load_profiles
from fullserver_cli.fleet_view import exit_code, fleet_progress, show_fleet
from fullserver_cli.output import console
from fullserver_cli.tables import FitTable, table


def audit(
    inventory: Annotated[
        Path, typer.Argument(help="inventory YAML: hosts with address, user, pinned host keys, private key source")
    ],
    profile: Annotated[str, typer.Option("--profile", "-p", help="profile whose bare-metal balance minimums apply")],
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
    profiles_dir: Annotated[Optional[Path], typer.Option("--profiles-dir", help="profiles directory")] = None,
    workers: Annotated[int, typer.Option(help="hosts probed at once (one connection each)")] = 64,
) -> None:
    """Audit bare-metal hosts over SSH against a profile: the same balance report as a cloud shape."""
    err = console(stderr=True)
    try:
        profiles = load_profiles(profiles_dir) if profiles_dir else load_profiles()
        prof = get_profile(profile, profiles, where="--profile")
        catalog = load_catalog()
        inv = load_inventory(inventory)
        hosts = [(inv.target(e), inv.private_key(e)) for e in inv.hosts]
        jump_keys = {name: key for e in inv.hosts for name, key in inv.jump_keys(e).items()}
        expected = {e.name: e.expect for e in inv.hosts if e.expect is not None}
        check_keys(inv, [*inv.hosts, *(hop for e in inv.hosts for hop in inv.hops(e))])
    except FullserverError as exc:
        sys.stderr.write(f"error: {exc.line()}\n")
        raise typer.Exit(exc.exit_code) from None

    with fleet_progress(err, "probing", len(hosts)) as done:
        audits = audit_fleet(
            hosts,
            prof,
            catalog,
            max_workers=workers,
            on_done=done,
            expected=expected,
            jump_keys=jump_keys,
            idle=idle_probe(RENTED),
        )

    show_fleet(audits, err, as_json=as_json, to_json=_json, table=host_table)
    code = exit_code(audits)
    raise typer.Exit(code)


def check_keys(inv: Inventory, entries: list[InventoryEntry]) -> None:
    """Parse every private key now: a bad one is bad input (``InputError``, exit 2) naming the host
    and where its key comes from, found before any connection (not an "unreachable" host later)."""
    from fullserver.baremetal.ssh import load_private_key  # paramiko loads only when audit runs

    for e in {e.name: e for e in entries}.values():
        load_private_key(inv.private_key(e), inv.key_source(e))


def idle_probe(stop: str, monthly_usd: float | None = None) -> IdleProbe:
    """How audit and verify read a host's idleness: the idle agent's own sample (its source and
    its default configuration, ``components.autostop``), priced at ``monthly_usd`` a server."""
    from components.autostop import agent_config, agent_source

    return IdleProbe(agent=agent_source(), config=agent_config(0), stop=stop, monthly_usd=monthly_usd)


def _json(a: HostAudit) -> dict[str, object]:
    data = a.model_dump(mode="json")
    data["ok"] = a.ok
    data["short"] = [line.shortfall for line in a.report.short] if a.report else []
    return data


def host_table(a: HostAudit) -> FitTable:
    colour = {"balanced": "green", "short": "bold red", "unverified": "yellow", "error": "bold red"}[a.status]
    title = Text.assemble((a.name, "bold"), f" {a.address}  ", (a.status.upper(), colour))
    if a.facts is None:
        failed = table("error", title=title)
        failed.add_row(Text(a.error or ""))
        return failed
    f = a.facts
    t = table(
        "dimension",
        "required",
        "provided",
        "",
        "host",
        title=title,
        caption=Text(f"{f.os}, kernel {f.kernel} ({f.arch})"),
        narrow=[("dimension", ""), ("required", "provided"), ("host",)],
    )
    gpus = ", ".join(f"{n} x {m}" for m, n in f.gpu_models.items()) or "no GPU"
    detail = {
        "cpu": f"{f.cpu.model}: {f.cpu.sockets} socket(s), {f.cpu.physical_cores} cores, {f.cpu.threads} threads, {f.cpu.numa_nodes} NUMA",
        "ram": f"{f.memory_gib:.0f} GiB; {gpus}" + (f" (driver {f.gpus[0].driver_version})" if f.gpus else ""),
        "nvme": f"{sum(1 for d in f.disks if d.nvme and not d.os_disk)} data NVMe disk(s)",
        "network": f"{sum(1 for n in f.nics if n.physical and n.operstate == 'up')} NIC(s) up, {len(f.rdma)} RDMA port(s)",
    }
    for line in a.report.lines if a.report else []:
        mark = Text("ok", style="green") if line.ok else Text("SHORT", style="bold red")
        t.add_row(
            line.dimension,
            f"{line.required:g} {line.unit}",
            f"{round(line.provided, 1):g} {line.unit}",
            mark,
            Text(detail.get(line.dimension, "")),
        )
    for p in a.problems:
        t.add_row("problem", "", "", Text("!", style="yellow"), Text(p))
    for w in f.warnings:
        t.add_row("warning", "", "", Text("!", style="yellow"), Text(w))
    if a.idle is not None:
        t.add_row("idle", "", "", idle_mark(a.idle.idle), Text(a.idle.line()))
    return t


def idle_mark(idle: bool | None) -> Text:
    return Text("n/a", style="dim") if idle is None else Text("idle", style="yellow") if idle else Text("busy")
