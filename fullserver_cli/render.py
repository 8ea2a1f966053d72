"""Human-readable tables for the CLI (rich); JSON output goes through the pydantic models instead.

Every table is a ``fullserver_cli.tables`` table: it fits the console it is printed on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group
from rich.markup import escape
from rich.text import Text

from fullserver.balance import BalanceReport
from fullserver.capacity import CapacitySet, capacity_rows, headline
from fullserver.catalog import Offer
from fullserver.kube import KubePlan, Resources
from fullserver.kube.access import control_plane, pod_credentials
from fullserver.plan import StackPlan, budget_breaches
from fullserver.platforms import rules_for
from fullserver.profiles import Profile
from fullserver.serving import ServingSpec
from fullserver.spec import EnvironmentSpec
from fullserver_cli.autostop_view import autostop_rows
from fullserver_cli.tables import Cell, FitTable, grid, table

if TYPE_CHECKING:  # recommend's models are built only when `recommend` runs
    from fullserver.recommend import Choice


def money(usd: float | None) -> str:
    return "-" if usd is None else f"${usd:,.2f}"


def balance_table(report: BalanceReport, title: str = "balance") -> FitTable:
    t = table("dimension", "required", "provided", "", "reason", title=title)
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
    return t


def _shortfall(plan: StackPlan) -> str:
    short = [line.dimension for line in plan.spec.balance.lines if not line.ok]
    return "balanced" if not short else "short: " + ", ".join(short)


def summary_table(plans: list[StackPlan], warnings: dict[str, list[str]], max_monthly_usd: float | None) -> FitTable:
    """One row per stack, the first thing ``plan`` prints: what each stack is, whether it is
    balanced, what it costs and whether that fits its budget (a status line each). Its cells are
    plain text, never markup: a profile is named by its file, and ``tune[red]`` is a file name."""
    t = table(
        "stack",
        "profile",
        "platform",
        "region",
        "shape",
        "$/month",
        "status",
        narrow=[("stack", "profile"), ("platform", "region"), ("shape",), ("$/month",), ("status",)],
    )
    for p in plans:
        s = p.spec
        balance = _shortfall(p)
        status = [Text(balance, style="green" if balance == "balanced" else "bold red")]
        breaches = budget_breaches(p, max_monthly_usd)
        if breaches:
            status.append(Text("over budget: " + ", ".join(breaches), style="bold red"))
        warned = warnings.get(p.stack, p.warnings)
        if warned:
            status.append(Text(f"{len(warned)} warning" + ("s" if len(warned) > 1 else "")))
        cost = f"${p.cost.usd_month:,.0f}"
        if p.cost.usd_month_peak is not None:  # a serving group: its minimum to its maximum
            cost += f"\nto ${p.cost.usd_month_peak:,.0f}"
        shape = s.offer + (f"\n{s.nodes} nodes" if s.nodes > 1 else "")
        named = (p.stack, s.profile, s.platform.value, s.region, shape, cost)
        t.add_row(*(Text(cell) for cell in named), Text("\n").join(status))
    return t


def total_line(plans: list[StackPlan]) -> str:
    total = sum(p.cost.usd_month for p in plans)
    most = sum(p.cost.usd_month_at_most for p in plans)
    peak = f" (at most {money(most)})" if most > total else ""
    return f"{len(plans)} stack(s), {money(total)} / month in all{peak}"


def stack_plan(plan: StackPlan, warnings: list[str]) -> Group:
    """One stack in full: decision, balance, cost lines, comparisons, near-misses and every warning
    (the same list ``--json`` gives)."""
    s, c = plan.spec, plan.cost
    head = grid(_head_rows(plan))

    cost = table("item", "USD/month", "note", title="cost per month")
    for line in c.lines:
        cost.add_row(line.item, money(line.usd_month), line.note)

    parts: list[FitTable | Text] = [head, balance_table(s.balance), cost]
    if plan.quotas:
        parts.append(quota_table(plan))
    if s.capacity is not None:
        parts.append(stockout_table(s.capacity))
    if plan.capacity_paths:
        parts.append(capacity_table(plan))
    if plan.comparison:
        parts.append(comparison_table(plan))
    if s.near_misses:
        nm = table("shape", "USD/hour", "why", title="rejected near-misses")
        for m in s.near_misses:
            nm.add_row(m.offer, money(m.usd_hour), m.reason)
        parts.append(nm)
    for w in warnings:
        parts.append(Text(f"warning: {w}", style="yellow"))
    return Group(*parts)


def _storage(s: EnvironmentSpec) -> str:
    """The disks of a node: boot (where the platform sizes one, or the declared servers'), data, local NVMe."""
    rules = rules_for(s.platform)
    # a TPU VM's boot disk is part of the TPU; declared servers show the boot disk the profile asks of them
    shown = rules.supply.boot_disk_shown(rules.boot_disk_sized)
    storage = [f"boot {s.boot_disk_gib} GiB {s.boot_disk_kind}".rstrip()] if shown else []
    if s.data_disk:
        d = s.data_disk
        storage.append(
            f"data {d.size_gib} GiB {d.kind}"
            + (f" {d.iops} IOPS" if d.iops else "")
            + (f" {d.throughput_mbps} MiB/s" if d.throughput_mbps else "")
            + (" per pod (a generic ephemeral volume at /data)" if s.kube is not None else "")
        )
    if s.local_nvme_disks:
        storage.append(f"{s.local_nvme_disks} x {s.local_nvme_disk_gib:.0f} GiB local NVMe (RAID0 scratch)")
    return ", ".join(storage) or "none attached (a TPU VM's boot disk is part of the TPU)"


def _head_rows(plan: StackPlan) -> list[tuple[str, Cell]]:
    """The decision in rows: stack, profile, platform, shape, pricing, cost, TPU, storage, network,
    serving. The stack's file and its profile's name are plain text, never markup (as in the summary)."""
    s, c = plan.spec, plan.cost
    accel = f"{s.accelerator_count} x {s.accelerator}" if s.accelerator else "none"
    rows: list[tuple[str, Cell]] = [
        ("stack", Text(f"{plan.stack}  ({plan.path})")),
        ("profile", Text(f"{s.profile}  [{s.stage.value}, {s.purpose.value}]")),
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
    if s.capacity is not None:
        rows.append(("capacity", headline(s.capacity, s.spot)))
    if s.tpu:
        rows.append(
            (
                "tpu",
                f"{s.tpu.accelerator_type}, topology {s.tpu.topology}, {s.tpu.hosts} host(s), runtime {s.tpu.runtime_version}"
                + (", queued resource" if s.tpu.queued else ""),
            )
        )
    if s.kube is not None:
        rows.extend(_kube_rows(s.kube))
    rows.extend(autostop_rows(plan.autostop))
    rows.append(("storage", _storage(s)))
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
                    f"health {srv.health_path}); {e.load_balancer} load balancer {_listening(e)}, "
                    f"OpenAI API at {_api(e)}; "
                    f"{e.min_replicas}-{e.max_replicas} replicas holding {e.target_utilisation:.0%} of "
                    f"{e.replica_requests_per_second:g} requests/s each; health checks wait "
                    f"{e.health_initial_delay_seconds // 60} min for the model to load"
                ),
            )
        )
    return rows


def _listening(e: ServingSpec) -> str:
    """Where the serving load balancer listens, and with which certificate."""
    if e.tls is None:
        return f"on port {e.lb_port} (HTTP)"
    cert = (
        f"ACM certificate {e.tls.certificate_arn}"
        if e.tls.certificate_arn
        else f"a Google-managed certificate for {', '.join(e.tls.domains)}"
    )
    return f"with HTTPS on port {e.tls.port} ({cert}), port {e.lb_port} redirecting to it"


def _api(e: ServingSpec) -> str:
    """The API's URL when the plan knows it (a named domain), else how to read it after ``up``."""
    if e.tls is not None and e.tls.host:
        return f"https://{e.tls.host}/v1 (point {e.tls.host} at `pulumi stack output dnsTarget` after up)"
    return "<endpoint>/v1 (`pulumi stack output endpoint` after up)"


def _resources(r: Resources) -> str:
    return f"{r.cpu_m / 1000:,.2f} vCPU, {r.memory_mib / 1024:,.1f} GiB memory, {r.ephemeral_mib / 1024:,.0f} GiB ephemeral"


def _way_in(k: KubePlan) -> str:
    """How the cluster is reached, where the stack says (``fullserver.kube.access``)."""
    a = k.access
    if a is None:
        return ""
    reach = control_plane(k.provider, a) if k.create_cluster else ""
    said = [reach, pod_credentials(k)]
    if a.subnets:
        said.append("node groups in " + ", ".join(a.subnets))
    return "".join(f"; {s}" for s in said if s)


def _kube_rows(k: KubePlan) -> list[tuple[str, str]]:
    """A node-pool platform's cluster, pools, the node's allocatable and each pod's share."""
    where = k.access.location if k.access else k.region
    cluster = (
        f"{k.cluster_name} in {where} (created: {k.provider.upper()}, its fee in the cost)"
        if k.create_cluster
        else f"{k.cluster_name} in {where} (existing: attached, its fee not this stack's)"
    )
    cluster += _way_in(k)
    pools = f"in {k.zone or where}: " + "; ".join(
        f"{p.name}: {'spot' if p.spot else 'on-demand'} {p.min_nodes}-{p.max_nodes} x {k.machine_type}"
        + ("" if p.autoscaled else " (fixed)")
        for p in k.pools
    )
    taints = ", ".join(f"{t.key}={t.value}:{t.effect}" for t in k.taints)
    extra = f"; TPU topology {k.tpu_slice_topology}" if k.tpu_slice_topology else ""
    devices = "".join(f", {v} {r}" for r, v in k.pod.devices.items())
    order = [("fallback", escape(k.spot_first))] if k.spot_first else []
    return [
        ("cluster", escape(cluster)),
        (
            "pools",
            escape(
                f"{pools}; {k.accelerators_per_node} x {k.accelerator_resource} per node, driver "
                f"{k.driver or 'none needed'}, taint {taints}{extra}"
            ),
        ),
        *order,
        ("node", escape(f"allocatable {_resources(k.node_allocatable)} (of {_resources(k.node_capacity)})")),
        (
            "pod",
            escape(
                f"requests = limits: {k.pod.accelerators} x {k.accelerator_resource}, {_resources(k.pod.resources)}"
                f"{devices}"
            ),
        ),
    ]


def quota_table(plan: StackPlan) -> FitTable:
    """Each quota the stack needs at the most it reaches: what `fullserver quota` checks."""
    t = table(
        "quota",
        "service",
        "where",
        "needs",
        "how",
        title="quotas needed (check: fullserver quota STACK)",
        narrow=[("quota",), ("service", "where", "needs"), ("how",)],
    )
    for q in plan.quotas:
        t.add_row(f"{q.code}\n{q.name}", q.service, q.scope, f"{q.amount:g} {q.unit}", q.why)
    return t


def stockout_table(found: CapacitySet) -> FitTable:
    """What the cloud tries when capacity is out, in order, and what a node costs on each step."""
    t = table("step", "what the cloud tries", "USD/hour a node", title="capacity: on a stockout")
    for row in capacity_rows(found):
        t.add_row(*row)
    return t


def capacity_table(plan: StackPlan) -> FitTable:
    """Where the accelerator quota starts at 0 in a new account: the ways to capacity that fit the profile."""
    t = table(
        "path",
        "USD/hour",
        "how",
        title="a new account has 0 of this accelerator quota: capacity paths for this profile",
        narrow=[("path", "USD/hour"), ("how",)],
    )
    for p in plan.capacity_paths:
        price = (
            f"{money(p.usd_hour)} per {p.offer}"
            if p.usd_hour is not None
            else f"no {p.priced} price in the catalog"
            if p.priced
            else "its own terms"
        )
        t.add_row(p.path, price, p.how)
    return t


def comparison_table(plan: StackPlan) -> FitTable:
    """The same job elsewhere: each row's accelerator memory against the chosen environment's
    (``x 1`` is the same job) and the pricing model of its price, one model for every cloud row."""
    title = "the same job elsewhere (capacity: accelerator memory; x 1 is the same job)"
    cmp = table(
        "platform",
        "shape, capacity",
        "region",
        "USD/month, pricing",
        "note",
        title=title,
        narrow=[("platform", "region"), ("shape, capacity",), ("USD/month, pricing",), ("note",)],
    )
    named = [(a.platform.value, a) for a in plan.comparison]
    if plan.baseline:
        named.insert(0, (f"{plan.spec.platform.value} (chosen)", plan.baseline))
    for name, row in named:
        shape = row.offer or "-"
        if row.capacity and row.capacity_ratio:
            shape += f"\n{row.capacity} (x {row.capacity_ratio:g})"
        price = money(row.usd_month) + (f"\n{row.pricing}" if row.pricing else "")
        cmp.add_row(name, shape, row.region, price, row.note)
    return cmp


def profiles_table(profiles: dict[str, Profile]) -> FitTable:
    t = table("name, stage, purpose", "platforms", "pricing, lifecycle", "description")
    for p in profiles.values():
        life = p.lifecycle.mode + (f" {p.lifecycle.ttl_hours:g}h" if p.lifecycle.ttl_hours else "")
        t.add_row(
            f"{p.name}\n{p.stage.value}\n{p.purpose.value}",
            "\n".join(x.value for x in p.platforms),
            f"{p.pricing.value}\n{life}",
            p.description,
        )
    return t


def catalog_prices(offer: Offer) -> str:
    """An offer's prices, a region a line: on-demand, then spot where there is one (USD/hour)."""
    return "\n".join(
        f"{r} {p.on_demand:.2f}" + (f" spot {p.spot:.2f}" if p.spot else "") for r, p in sorted(offer.prices.items())
    )


def catalog_sources(offers: list[Offer]) -> list[str]:
    """The sources behind these offers' figures and prices, in the order the table numbers them."""
    return sorted(
        {f.source for o in offers for f in o.figures.values()}
        | {s for o in offers for p in o.prices.values() for s in p.source.split("+")}
    )


def catalog_table(offers: list[Offer]) -> FitTable:
    """One row per offer; its sources by number (``catalog_sources``, listed below the table by
    the command), since their names alone would take a third of an 80-column screen."""
    number = {key: i for i, key in enumerate(catalog_sources(offers), 1)}
    t = table(
        "shape",
        "platform",
        "accelerator",
        "vCPU",
        "RAM GiB",
        "NVMe GiB",
        "net Gbps",
        "fabric",
        "USD/hour by region",
        "sources",
        narrow=[
            ("shape", "platform"),
            ("accelerator", "fabric"),
            ("vCPU", "RAM GiB", "NVMe GiB", "net Gbps"),
            ("USD/hour by region",),
            ("sources",),
        ],
    )
    for o in offers:
        h = o.host
        accel = f"{o.total_accelerators} x {h.accelerator}" + (
            f" ({h.accelerator_memory_gib:g} GiB)" if h.accelerator_memory_gib else ""
        )
        srcs = {f.source for f in o.figures.values()} | {s for p in o.prices.values() for s in p.source.split("+")}
        t.add_row(
            o.name,
            o.platform.value,
            accel,
            f"{h.vcpus * o.hosts}",
            f"{h.memory_gib * o.hosts:g}",
            f"{h.local_nvme_gib:.0f}",
            f"{h.network_gbps:g}" if h.network_gbps else "-",
            o.interconnect.value,
            catalog_prices(o) or "-",
            " ".join(str(n) for n in sorted(number[s] for s in srcs)),
        )
    return t


def recommendations(choices: list[Choice]) -> FitTable:
    """The ranking; each price with the capacity it buys against the question's reference job
    (``x 1`` is the same job) and its pricing model."""
    references = {c.cost.reference for c in choices if c.cost.reference}
    one = references.pop() if len(references) == 1 else None
    title = f"priced for the accelerator memory of {one}" if one else None
    # Rows on different pricing models (spot, reserved, on-demand) are not comparable in one
    # column: every cloud shape has an on-demand price, so a second column shows them all on it.
    mixed = len({c.cost.pricing for c in choices if c.cost.pricing}) > 1
    both = ("USD/month", "on demand USD/month") if mixed else ("USD/month",)
    t = table(
        "#",
        "score",
        "profile, platform",
        "shape priced",
        *both,
        "why",
        lines=True,
        title=title,
        narrow=[("#", "score"), ("profile, platform",), ("shape priced",), both, ("why",)],
    )
    for i, c in enumerate(choices, 1):
        shape = f"{c.cost.offer} in {c.cost.region}" if c.cost.offer else c.cost.note
        if c.cost.capacity and c.cost.capacity_ratio:
            shape += f"\n{c.cost.capacity} (x {c.cost.capacity_ratio:g}"
            shape += ")" if one else f" of {c.cost.reference})"
        price = money(c.cost.usd_month) + (f"\n{c.cost.pricing}" if c.cost.pricing else "")
        on_demand = [money(c.cost.on_demand_usd_month)] if mixed else []
        why = "\n".join(c.reasons) or "no rule applies"
        t.add_row(str(i), str(c.score), f"{c.profile}\n{c.platform.value}", shape, price, *on_demand, why)
    return t
