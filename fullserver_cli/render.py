"""Human-readable tables for the CLI (rich); JSON output goes through the pydantic models instead.

Every column folds long cells inside itself, so a table fits whatever width the console has.
"""

from __future__ import annotations

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from fullserver.balance import BalanceReport
from fullserver.catalog import Catalog, Offer
from fullserver.plan import StackPlan, budget_breaches
from fullserver.platform import Platform
from fullserver.profiles import Profile
from fullserver.recommend import Choice


def money(usd: float | None) -> str:
    return "-" if usd is None else f"${usd:,.2f}"


def balance_table(report: BalanceReport, title: str = "balance") -> _WholeWords:
    t = _table("dimension", "required", "provided", "", "reason", title=title)
    for line in report.lines:
        if not line.known:  # a gap in the sources: unchecked, not short (the plan's warnings ask for it)
            t.add_row(
                line.dimension,
                f"{line.required:g} {line.unit}",
                "not published",
                Text("GAP", style="bold yellow"),
                line.reason,
            )
            continue
        mark = Text("ok", style="green") if line.ok else Text("SHORT", style="bold red")
        provided = f"{round(line.provided, 1):g} {line.unit}" + (
            f" ({line.note})" if line.note and line.dimension == "nvme" else ""
        )
        t.add_row(line.dimension, f"{line.required:g} {line.unit}", provided, mark, line.reason)
    return _whole_words(t, "dimension", "required", "provided")


def _table(*columns: str, title: str | None = None, lines: bool = False) -> Table:
    t = Table(title=title, title_justify="left", show_edge=False, show_lines=lines)
    for col in columns:
        t.add_column(col, overflow="fold")
    return t


class _WholeWords:
    """A table that keeps whole words in the named columns (all by default) when the console is
    wide enough: rich then shrinks it by wrapping cells at spaces rather than splitting
    ``us-central1`` across two lines. Where even whole words cannot fit, cells fold as usual
    (never cropped)."""

    def __init__(self, table: Table, names: tuple[str, ...]) -> None:
        self.table = table
        self.names = names

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        mins: dict[int, int] = {}
        for i, column in enumerate(self.table.columns):
            if self.names and column.header not in self.names:
                continue
            cells = [c.plain if isinstance(c, Text) else str(c) for c in column.cells] + [str(column.header)]
            mins[i] = max(len(w) for cell in cells for w in (cell.split() or [""]))
        others = len(self.table.columns) - len(mins)
        needed = sum(mins.values()) + 4 * others + 3 * len(self.table.columns)
        for i, column in enumerate(self.table.columns):
            column.min_width = mins.get(i) if needed <= options.max_width else None
        yield self.table


def _whole_words(t: Table, *names: str) -> _WholeWords:
    return _WholeWords(t, names)


def _shortfall(plan: StackPlan) -> str:
    short = [line.dimension for line in plan.spec.balance.lines if not line.ok]
    return "ok" if not short else "short: " + ", ".join(short)


def summary_table(
    plans: list[StackPlan], warnings: dict[str, list[str]], max_monthly_usd: float | None, width: int
) -> _WholeWords:
    """One row per stack, the first thing ``plan`` prints: what each stack is, whether it is
    balanced, what it costs and whether that fits its budget. Below 120 columns the same facts
    stack inside five columns, so an 80-column terminal never splits a word."""
    wide = width >= 120
    if wide:
        t = _table("stack", "profile", "platform", "region", "shape", "balance", "$/month", "budget", "warn")
    else:
        t = _table("stack, profile", "where", "shape", "$/month", "status")
    t.box = box.SIMPLE_HEAD
    t.padding = (0, 1, 0, 0)
    t.pad_edge = False
    for p in plans:
        s = p.spec
        breaches = budget_breaches(p, max_monthly_usd)
        has_budget = max_monthly_usd is not None or p.budget_monthly_usd is not None
        budget = (
            Text("over " + ", ".join(breaches), style="bold red") if breaches else Text("ok" if has_budget else "-")
        )
        balance = _shortfall(p)
        balance_text = Text(balance, style="green" if balance == "ok" else "bold red")
        cost = f"${p.cost.usd_month:,.0f}"
        if p.cost.usd_month_peak is not None:  # a serving group: its minimum to its maximum
            cost += f"\nto ${p.cost.usd_month_peak:,.0f}"
        warned = warnings.get(p.stack, p.warnings)
        shape = s.offer + (f"\n{s.nodes} nodes" if s.nodes > 1 else "")
        if wide:
            t.add_row(
                p.stack, s.profile, s.platform.value, s.region, shape, balance_text, cost, budget, str(len(warned))
            )
        else:
            status = [Text("balanced", style="green") if balance == "ok" else balance_text]
            if breaches:
                status.append(Text("over budget", style="bold red"))
            if warned:
                status.append(Text(f"{len(warned)} warning" + ("s" if len(warned) > 1 else "")))
            t.add_row(
                f"{p.stack}\n{s.profile}", f"{s.platform.value}\n{s.region}", shape, cost, Text("\n").join(status)
            )
    return _whole_words(t)


def total_line(plans: list[StackPlan]) -> str:
    total = sum(p.cost.usd_month for p in plans)
    most = sum(p.cost.usd_month_at_most for p in plans)
    peak = f" (at most {money(most)})" if most > total else ""
    return f"{len(plans)} stack(s), {money(total)} / month in all{peak}"


def stack_plan(plan: StackPlan, warnings: list[str]) -> Group:
    """One stack in full: decision, balance, cost lines, comparisons, near-misses and every warning
    (the same list ``--json`` gives)."""
    s, c = plan.spec, plan.cost
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold", no_wrap=True)
    head.add_column(overflow="fold")
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
            f"{money(c.usd_month)} / month"
            + (
                (f" at {s.replicas} replicas" if c.peak_replicas else "")
                + f", {money(c.usd_month_peak)} {c.peak_what} (budgets hold to this)"
                if c.usd_month_peak is not None
                else ""
            )
            + f"; compute {money(c.compute_usd_hour)} / hour while running;"
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
    if s.endpoint is not None:
        e, srv = s.endpoint, s.endpoint.server
        rows.append(
            (
                "serving",
                escape(
                    f"{srv.model} on {srv.image} (tensor parallel {srv.tensor_parallel_size}, port {srv.port}, "
                    f"health {srv.health_path}); {e.load_balancer} load balancer on port {e.lb_port}, "
                    f"OpenAI API at <endpoint>/v1 (`pulumi stack output endpoint` after up); "
                    f"{e.min_replicas}-{e.max_replicas} replicas holding {e.target_utilisation:.0%} of "
                    f"{e.replica_requests_per_second:g} requests/s each; health checks wait "
                    f"{e.health_initial_delay_seconds // 60} min for the model to load"
                ),
            )
        )
    for k, v in rows:
        head.add_row(k, v)

    cost = _table("item", "USD/month", "note", title="cost per month")
    for line in c.lines:
        cost.add_row(line.item, money(line.usd_month), line.note)

    parts: list[Table | Text | _WholeWords] = [head, balance_table(s.balance), cost]
    if plan.quotas:
        parts.append(quota_table(plan))
    if plan.comparison:
        parts.append(comparison_table(plan))
    if s.near_misses:
        nm = _table("shape", "USD/hour", "why", title="rejected near-misses")
        for m in s.near_misses:
            nm.add_row(m.offer, money(m.usd_hour), m.reason)
        parts.append(nm)
    for w in warnings:
        parts.append(Text(f"warning: {w}", style="yellow"))
    return Group(*parts)


def quota_table(plan: StackPlan) -> _WholeWords:
    """Each quota the stack needs at the most it reaches: what `fullserver quota` checks."""
    t = _table("quota", "service", "where", "needs", "how", title="quotas needed (check: fullserver quota STACK)")
    for q in plan.quotas:
        t.add_row(f"{q.code}\n{q.name}", q.service, q.scope, f"{q.amount:g} {q.unit}", q.why)
    return _whole_words(t, "service", "where", "needs")


def comparison_table(plan: StackPlan) -> _WholeWords:
    """The same job elsewhere: each row's accelerator memory against the chosen environment's
    (``x 1`` is the same job) and the pricing model of its price, one model for every cloud row."""
    title = "the same job elsewhere (capacity: accelerator memory; x 1 is the same job)"
    cmp = _table("platform", "shape, capacity", "region", "USD/month, pricing", "note", title=title)
    named = [(a.platform.value, a) for a in plan.comparison]
    if plan.baseline:
        named.insert(0, (f"{plan.spec.platform.value} (chosen)", plan.baseline))
    for name, row in named:
        shape = row.offer or "-"
        if row.capacity and row.capacity_ratio:
            shape += f"\n{row.capacity} (x {row.capacity_ratio:g})"
        price = money(row.usd_month) + (f"\n{row.pricing}" if row.pricing else "")
        cmp.add_row(name, shape, row.region, price, row.note)
    return _whole_words(cmp, "platform", "region", "USD/month, pricing")


def profiles_table(profiles: dict[str, Profile]) -> _WholeWords:
    t = _table("name, stage, purpose", "platforms", "pricing, lifecycle", "description")
    for p in profiles.values():
        life = p.lifecycle.mode + (f" {p.lifecycle.ttl_hours:g}h" if p.lifecycle.ttl_hours else "")
        t.add_row(
            f"{p.name}\n{p.stage.value}\n{p.purpose.value}",
            "\n".join(x.value for x in p.platforms),
            f"{p.pricing.value}\n{life}",
            p.description,
        )
    return _whole_words(t, "name, stage, purpose", "platforms", "pricing, lifecycle")


def catalog_table(catalog: Catalog, offers: list[Offer]) -> _WholeWords:
    t = _table(
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
    )
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
    return _whole_words(t, "shape")


def recommendations(choices: list[Choice]) -> _WholeWords:
    """The ranking; each price with the capacity it buys against the question's reference job
    (``x 1`` is the same job) and its pricing model."""
    references = {c.cost.reference for c in choices if c.cost.reference}
    one = references.pop() if len(references) == 1 else None
    title = f"priced for the accelerator memory of {one}" if one else None
    # Rows on different pricing models (spot, reserved, on-demand) are not comparable in one
    # column: every cloud shape has an on-demand price, so a second column shows them all on it.
    mixed = len({c.cost.pricing for c in choices if c.cost.pricing}) > 1
    both = ("USD/month", "on demand USD/month") if mixed else ("USD/month",)
    t = _table("#", "profile, platform", "score", "shape priced", *both, "why", lines=True, title=title)
    for i, c in enumerate(choices, 1):
        shape = f"{c.cost.offer} in {c.cost.region}" if c.cost.offer else c.cost.note
        if c.cost.capacity and c.cost.capacity_ratio:
            shape += f"\n{c.cost.capacity} (x {c.cost.capacity_ratio:g}"
            shape += ")" if one else f" of {c.cost.reference})"
        price = money(c.cost.usd_month) + (f"\n{c.cost.pricing}" if c.cost.pricing else "")
        on_demand = [money(c.cost.on_demand_usd_month)] if mixed else []
        why = "\n".join(c.reasons) or "no rule applies"
        t.add_row(str(i), f"{c.profile}\n{c.platform.value}", str(c.score), shape, price, *on_demand, why)
    return _whole_words(t, "#", "profile, platform", "score", *both)
