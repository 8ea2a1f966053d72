"""Human-readable tables for the CLI (rich); JSON output goes through the pydantic models instead."""

from __future__ import annotations

from rich.console import Console, Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from fullserver.balance import BalanceReport
from fullserver.catalog import Catalog, Offer
from fullserver.plan import StackPlan
from fullserver.platform import Platform
from fullserver.profiles import Profile
from fullserver.recommend import Choice


def money(usd: float | None) -> str:
    return "-" if usd is None else f"${usd:,.2f}"


def balance_table(report: BalanceReport, title: str = "balance") -> Table:
    t = Table(title=title, title_justify="left", show_edge=False)
    for col in ("dimension", "required", "provided", "", "reason"):
        t.add_column(col, overflow="fold")
    for line in report.lines:
        mark = Text("ok", style="green") if line.ok else Text("SHORT", style="bold red")
        provided = f"{round(line.provided, 1):g} {line.unit}" + (
            f" ({line.note})" if line.note and line.dimension == "nvme" else ""
        )
        t.add_row(line.dimension, f"{line.required:g} {line.unit}", provided, mark, line.reason)
    return t


def stack_plan(plan: StackPlan) -> Group:
    s, c = plan.spec, plan.cost
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    accel = f"{s.accelerator_count} x {s.accelerator}" if s.accelerator else "none"
    rows = [
        ("stack", f"{plan.stack}  ({plan.path})"),
        ("profile", escape(f"{s.profile}  [{s.stage.value}, {s.purpose.value}]")),
        ("platform", f"{s.platform.value} in {s.region}" + (f" ({s.zone})" if s.zone else "")),
        ("shape", f"{s.offer}: {accel} per node, {s.vcpus} vCPU, {s.memory_gib:g} GiB, {s.nodes} node(s)"),
        (
            "pricing",
            f"{s.pricing.value}"
            + (" (spot)" if s.spot else "")
            + f"; lifecycle {s.lifecycle.mode}"
            + (f", TTL {s.lifecycle.ttl_hours:g} h" if s.lifecycle.ttl_hours else "")
            + (", protected" if s.lifecycle.protect else ""),
        ),
        (
            "cost",
            f"{money(c.usd_month)} / month; compute {money(c.compute_usd_hour)} / hour while running;"
            + f" {money(c.usd_per_productive_hour)} per productive hour with every cost included",
        ),
    ]
    if s.tpu:
        rows.append(
            (
                "tpu",
                f"{s.tpu.accelerator_type}, topology {s.tpu.topology}, {s.tpu.hosts} host(s), runtime {s.tpu.runtime_version}"
                + (", queued resource" if s.tpu.queued else ""),
            )
        )
    storage = [] if s.platform is Platform.TPU_VM else [f"boot {s.boot_disk_gib} GiB {s.boot_disk_kind}".rstrip()]
    if s.data_disk:
        d = s.data_disk
        storage.append(
            f"data {d.size_gib} GiB {d.kind}"
            + (f" {d.iops} IOPS" if d.iops else "")
            + (f" {d.throughput_mbps} MiB/s" if d.throughput_mbps else "")
        )
    if s.local_nvme_disks:
        storage.append(f"{s.local_nvme_disks} x {s.local_nvme_disk_gib:.0f} GiB local NVMe (RAID0 scratch)")
    rows.append(("storage", ", ".join(storage) or "none attached (a TPU VM's boot disk is part of the TPU)"))
    n = s.network
    net = f"{n.gbps_per_node:g} Gbps/node, fabric {n.interconnect.value}"
    if n.efa_interfaces:
        net += f", {n.efa_interfaces} EFA interfaces"
    if n.compact_placement:
        net += ", compact placement"
    net += ", public IP" if n.public_ip else ", no public IP"
    rows.append(("network", net))
    for k, v in rows:
        head.add_row(k, v)

    cost = Table(title="cost per month", title_justify="left", show_edge=False)
    for col in ("item", "USD/month", "note"):
        cost.add_column(col)
    for line in c.lines:
        cost.add_row(line.item, money(line.usd_month), line.note)

    parts: list[Table | Text] = [head, balance_table(s.balance), cost]
    if plan.comparison:
        cmp = Table(title="the same job elsewhere", title_justify="left", show_edge=False)
        for col in ("platform", "shape", "region", "USD/month", "note"):
            cmp.add_column(col, overflow="fold")
        cmp.add_row(s.platform.value + " (chosen)", s.offer, s.region, money(c.usd_month), "")
        for alt in plan.comparison:
            cmp.add_row(alt.platform.value, alt.offer or "-", alt.region, money(alt.usd_month), alt.note)
        parts.append(cmp)
    if s.near_misses:
        nm = Table(title="rejected near-misses", title_justify="left", show_edge=False)
        nm.add_column("shape")
        nm.add_column("USD/hour")
        nm.add_column("why", overflow="fold")
        for m in s.near_misses:
            nm.add_row(m.offer, money(m.usd_hour), m.reason)
        parts.append(nm)
    for w in plan.warnings:
        parts.append(Text(f"warning: {w}", style="yellow"))
    return Group(*parts, Text(""))


def profiles_table(profiles: dict[str, Profile]) -> Table:
    t = Table(show_edge=False)
    for col in ("name", "stage", "purpose", "platforms", "pricing", "lifecycle", "description"):
        t.add_column(col, overflow="fold")
    for p in profiles.values():
        life = p.lifecycle.mode + (f" {p.lifecycle.ttl_hours:g}h" if p.lifecycle.ttl_hours else "")
        t.add_row(
            p.name,
            p.stage.value,
            p.purpose.value,
            ", ".join(x.value for x in p.platforms),
            p.pricing.value,
            life,
            p.description,
        )
    return t


def catalog_table(catalog: Catalog, offers: list[Offer]) -> Table:
    t = Table(show_edge=False)
    for col in (
        "shape",
        "platform",
        "accelerator",
        "vCPU",
        "RAM GiB",
        "NVMe GiB",
        "net Gbps",
        "fabric",
        "on-demand $/h by region",
        "sources",
    ):
        t.add_column(col, overflow="fold")
    for o in offers:
        h = o.host
        accel = f"{o.total_accelerators} x {h.accelerator}" + (
            f" ({h.accelerator_memory_gib:g} GiB)" if h.accelerator_memory_gib else ""
        )
        prices = " ".join(
            f"{r}:{p.on_demand:.2f}" + (f"/spot {p.spot:.2f}" if p.spot else "") for r, p in sorted(o.prices.items())
        )
        srcs = sorted({f.source for f in o.figures.values()} | {p.source for p in o.prices.values()})
        t.add_row(
            o.name,
            o.platform.value,
            accel,
            f"{h.vcpus * o.hosts}",
            f"{h.memory_gib * o.hosts:g}",
            f"{h.local_nvme_gib:.0f}",
            f"{h.network_gbps:g}" if h.network_gbps else "-",
            o.interconnect.value,
            prices or "-",
            ", ".join(srcs),
        )
    return t


def recommendations(choices: list[Choice]) -> Table:
    t = Table(show_edge=False, show_lines=True)
    for col in ("#", "profile", "platform", "score", "shape priced", "USD/month", "why"):
        t.add_column(col, overflow="fold")
    for i, c in enumerate(choices, 1):
        shape = f"{c.cost.offer} in {c.cost.region}" if c.cost.offer else c.cost.note
        why = "\n".join(c.reasons) or "no rule applies"
        t.add_row(str(i), c.profile, c.platform.value, str(c.score), shape, money(c.cost.usd_month), why)
    return t


def make_console() -> Console:
    return Console(width=160, soft_wrap=False)
