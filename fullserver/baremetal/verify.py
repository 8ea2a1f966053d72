"""Delivered balance: measure what each host gives and set it beside what the plan promised.

Design notes: docs/design/bare-metal.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from pydantic import BaseModel, ConfigDict

from fullserver.baremetal import measure
from fullserver.baremetal.audit import HostAudit, audit_facts, run_fleet
from fullserver.baremetal.errors import AuthFailed, HostKeyMismatch, HostUnreachable, ProbeError
from fullserver.baremetal.idle import Idleness, IdleProbe, read_idleness
from fullserver.baremetal.inventory import Target
from fullserver.baremetal.probe import HostFacts, probe
from fullserver.baremetal.transport import Runner
from fullserver.catalog import Catalog
from fullserver.errors import FullserverError
from fullserver.platform import Platform
from fullserver.profiles import Profile
from fullserver.workload import DedicatedHost


class Line(BaseModel):
    """One dimension: what was promised, what the host delivered (None: not measured)."""

    model_config = ConfigDict(frozen=True)

    dimension: str
    unit: str
    promised: float | None
    delivered: float | None
    detail: str = ""

    @property
    def ratio(self) -> float | None:
        if self.promised is None or self.delivered is None or self.promised == 0:
            return None
        return round(self.delivered / self.promised, 2)

    @property
    def ok(self) -> bool | None:
        """None when nothing can be judged (no promise, or nothing measured)."""
        if self.promised is None or self.delivered is None:
            return None
        return self.delivered + 1e-9 >= self.promised


class HostVerify(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    address: str
    status: Literal["delivers", "short", "unverified", "error"]
    lines: list[Line] = []
    problems: list[str] = []
    gpus: str = ""
    error: str | None = None
    seconds: float = 0.0
    idle: Idleness | None = None

    @property
    def ok(self) -> bool:
        return self.status == "delivers"

    @property
    def short(self) -> list[Line]:
        return [x for x in self.lines if x.ok is False]

    def summary(self) -> str:
        if self.error:
            return f"{self.name}: {self.error}"
        parts = [
            f"{x.dimension} {_f(x.delivered)} < {_f(x.promised)} {x.unit}" + (f" ({x.detail})" if x.detail else "")
            for x in self.short
        ]
        return f"{self.name}: " + ("; ".join(parts + self.problems) if parts or self.problems else "delivers")


def _f(v: float | None) -> str:
    return "n/a" if v is None else f"{v:g}"


@dataclass(frozen=True)
class Promise:
    """What the plan promises a host: the profile (its platform's balance minimums, its storage),
    the host's contract, and where its scratch filesystem is mounted."""

    profile: Profile
    catalog: Catalog
    expect: DedicatedHost | None = None
    scratch: str = "/mnt/scratch"
    platform: Platform = Platform.BARE_METAL
    """Whose balance minimums apply: a cloud node is held to its own platform's, as its plan was."""
    idle: IdleProbe | None = None
    """How to read whether each host is idle and what that costs (None: not read)."""


@dataclass
class Measured:
    """Raw results of one host's first phase (before the network ring)."""

    audit: HostAudit
    facts: HostFacts
    lines: list[Line]
    problems: list[str]
    gpus: str
    seconds: float
    idle: Idleness | None = None


# --- pure: measurements → lines -----------------------------------------------------------------


def balance_lines(audit: HostAudit) -> list[Line]:
    """The audit's balance report as promised/delivered lines (CPU, RAM, NVMe GiB, link speed)."""
    out = []
    for b in audit.report.lines if audit.report else []:
        name = {"network": "network link", "nvme": "nvme capacity"}.get(b.dimension, b.dimension)
        out.append(Line(dimension=name, unit=b.unit, promised=b.required, delivered=b.provided, detail=b.note))
    return out


def gpu_lines(
    gpus: list[measure.GpuLink],
    topo: measure.Topology,
    nic_numa: Mapping[str, int | None],
    sysfs_width: Mapping[str, int] | None = None,
) -> list[Line]:
    """PCIe width and generation, NVLink, memory health and NUMA placement of the GPUs.

    The width promised is each GPU's own (``measure.device_width``: sysfs, else NVML's maximum,
    which an x8 slot lowers to x8). A GPU whose width is not known is left to ``gpu_problems``."""
    if not gpus:
        return []
    n = len(gpus)
    out = []
    sysfs = dict(sysfs_width or {})
    widths = [(g, g.width, m) for g in gpus if g.width and (m := measure.device_width(g, sysfs))]
    if widths:
        worst = min(widths, key=lambda w: (w[1] or 0) / (w[2] or 1))
        narrow = [f"GPU {g.index} ({g.bus_id}) at x{w} of x{m}" for g, w, m in widths if (w or 0) < (m or 0)]
        out.append(
            Line(
                dimension="gpu pcie width",
                unit="lanes",
                promised=worst[2],
                delivered=worst[1],
                detail="; ".join(narrow),
            )
        )
    gens = [(g, g.gen_max, g.gen_device_max) for g in gpus if g.gen_max and g.gen_device_max]
    if gens:
        worst_gen = min(gens, key=lambda x: (x[1] or 0) / (x[2] or 1))
        slow = [f"GPU {g.index} in a gen {s} slot (GPU supports gen {d})" for g, s, d in gens if (s or 0) < (d or 0)]
        idle = [g.index for g in gpus if g.gen is not None and g.gen_max and g.gen < g.gen_max]
        note = "; ".join(slow) or (
            f"now below max on GPU {', '.join(map(str, idle))} (idle GPUs down-clock the link)" if idle else ""
        )
        out.append(
            Line(dimension="gpu pcie gen", unit="gen", promised=worst_gen[2], delivered=worst_gen[1], detail=note)
        )
    linked = {pair: k for pair, k in topo.nvlinks.items() if pair[0] in topo.gpus and pair[1] in topo.gpus}
    best = max(linked.values(), default=0)
    if best > 0:
        weakest = min(linked.values())
        missing = [
            f"GPU {a}-{b} {'NV' + str(k) if k else 'no NVLink'}" for (a, b), k in sorted(linked.items()) if k < best
        ]
        out.append(
            Line(dimension="nvlink", unit="links/pair", promised=best, delivered=weakest, detail="; ".join(missing))
        )
    sick = []
    for g in gpus:
        why = []
        if g.ecc is not None and g.ecc.lower() == "disabled":
            why.append("ECC disabled")
        if g.retired_sbe or g.retired_dbe:
            why.append(f"{g.retired_sbe + g.retired_dbe} pages retired ({g.retired_dbe} double-bit)")
        if g.retired_pending:
            why.append("page retirement pending (reset the GPU)")
        if g.remap_failure:
            why.append("row remapping failed")
        if g.remap_pending:
            why.append("row remap pending (reset the GPU)")
        if g.remap_unc:
            why.append(f"{g.remap_unc} rows remapped for uncorrectable errors")
        if why:
            sick.append(f"GPU {g.index}: {', '.join(why)}")
    out.append(
        Line(dimension="gpu memory health", unit="GPUs", promised=n, delivered=n - len(sick), detail="; ".join(sick))
    )
    placed = numa_placement(gpus, topo, nic_numa)
    if placed is not None:
        near, detail = placed
        out.append(Line(dimension="gpu-nic numa", unit="GPUs", promised=n, delivered=near, detail=detail))
    return out


def gpu_problems(gpus: list[measure.GpuLink], sysfs_width: Mapping[str, int] | None = None) -> list[str]:
    """GPUs whose link width or generation could not be read: not measured, so the host is not
    judged as delivering (an unknown link is never read as a full one)."""
    sysfs = dict(sysfs_width or {})
    out = []
    for g in gpus:
        missing = [
            what
            for what, known in (
                ("width", g.width and measure.device_width(g, sysfs)),
                ("generation", g.gen_max and g.gen_device_max),
            )
            if not known
        ]
        if missing:
            out.append(
                f"GPU {g.index} ({g.bus_id or 'no bus id'}): PCIe link {' and '.join(missing)} not reported "
                "by nvidia-smi: not measured"
            )
    return out


def numa_placement(
    gpus: list[measure.GpuLink], topo: measure.Topology, nic_numa: Mapping[str, int | None]
) -> tuple[int, str] | None:
    """How many GPUs share a NUMA node with a NIC: from ``topo -m``'s GPU→NIC relation when it
    lists NICs (``SYS`` crosses sockets), else from the GPUs' NUMA affinity and the NICs'
    ``numa_node`` in sysfs; None when neither side knows its node."""
    if topo.gpu_nic:
        far = [i for i in sorted(topo.gpu_nic) if topo.gpu_nic[i] == "SYS"]
        return len(gpus) - len(far), "; ".join(f"GPU {i}: every NIC is across the socket link (SYS)" for i in far)
    nodes = {v for v in nic_numa.values() if v is not None}
    known = {i: topo.gpu_numa.get(i) for i in (g.index for g in gpus)}
    if not nodes or any(v is None for v in known.values()):
        return None
    far = [i for i, node in known.items() if node not in nodes]
    return len(gpus) - len(far), "; ".join(f"GPU {i} on NUMA node {known[i]}, no NIC there" for i in far)


def link_lines(facts: HostFacts, expect: DedicatedHost | None) -> list[Line]:
    """Negotiated link speed against the contract's (``expect.networkGbps``), naming each RDMA
    port that trained below the fastest port of its kind (a 400 Gb/s NDR port at 200)."""
    if expect is None:
        return []
    fastest: dict[str, float] = {}
    for p in facts.rdma:
        fastest[p.link_layer] = max(fastest.get(p.link_layer, 0.0), p.rate_gbps or 0.0)
    slow = [
        f"{p.device}/{p.port} at {p.rate_gbps or 0:g} of {fastest[p.link_layer]:g} Gb/s"
        for p in facts.rdma
        if (p.rate_gbps or 0.0) < fastest[p.link_layer]
    ]
    return [
        Line(
            dimension="network link (contract)",
            unit="Gbps",
            promised=expect.network_gbps,
            delivered=round(facts.network_gbps, 1),
            detail="; ".join(slow),
        )
    ]


def disk_lines(
    out: Mapping[str, tuple[int, str]], promise: Promise, accelerators: int, caps: measure.Caps
) -> tuple[list[Line], list[str]]:
    """fio's three runs → lines (promise: the profile's storage minimums per accelerator)."""
    storage = promise.profile.storage
    n = max(accelerators, 1)
    tput = storage.throughput_mbps_per_accelerator.value * n if storage.throughput_mbps_per_accelerator else None
    iops = storage.iops_per_accelerator.value * n if storage.iops_per_accelerator else None
    mount_rc, mount = out.get("mount", (1, ""))
    if mount_rc != 0 or not mount.strip():
        return [], [
            f"no filesystem mounted at {promise.scratch}: scratch throughput not measured (verify never touches an unmounted disk)"
        ]
    if "fio" in out:
        return [], ["fio is not installed on the host: scratch throughput not measured (apt-get install fio)"]
    avail = out.get("avail", (1, ""))[1].strip()
    need = caps.fio_size_mib
    if not avail.isdigit() or int(avail) < need * 1024 * 5 // 4:
        free = f"{int(avail) // 1024} MiB free" if avail.isdigit() else "free space unknown"
        return [], [
            f"{promise.scratch}: {free}, fio needs {need} MiB and a quarter more: scratch throughput not measured"
        ]
    if "mktemp" in out:
        return [], [f"cannot create a directory under {promise.scratch}: scratch throughput not measured"]
    if "where" in out:
        on = out["where"][1].strip() or "unknown"
        return [], [
            f"{promise.scratch} resolves to the filesystem at {on}, not the one mounted at {promise.scratch} "
            "(a symlink, or unmounted meanwhile): scratch throughput not measured"
        ]
    source = mount.split()[0]
    results: dict[str, measure.FioJob | None] = {}
    problems = []
    for job in measure.FIO_JOBS:
        rc, text = out.get(job, (-1, ""))
        try:
            results[job] = measure.parse_fio(text)
        except ValueError as exc:
            results[job] = None
            problems.append(f"fio {job} on {promise.scratch} failed (exit {rc}): {str(exc)[:160]}")
    w, r, rr = results["seqwrite"], results["seqread"], results["randread"]
    where = f"{promise.scratch} ({source})"
    lines = [
        Line(
            dimension="scratch seq read", unit="MB/s", promised=tput, delivered=r.read_mb_s if r else None, detail=where
        ),
        Line(dimension="scratch seq write", unit="MB/s", promised=tput, delivered=w.write_mb_s if w else None),
        Line(dimension="scratch 4k read", unit="IOPS", promised=iops, delivered=rr.read_iops if rr else None),
    ]
    return lines, problems


def gpu_measures(
    host: str, sec: Mapping[str, tuple[int, str]], gpu_count: int, nic_numa: Callable[[], str]
) -> tuple[list[Line], list[str], str]:
    """The GPU script's sections (``measure.gpu_script``) → lines, problems and the driver note:
    PCIe, NVLink, memory health, NUMA placement (``nic_numa``: the NICs' NUMA nodes, read only
    when nvidia-smi answered). Shared by the SSH path and the Kubernetes Job's log."""
    rc, xml = sec.get("xml", (-1, ""))
    if rc != 0:
        return [], [f"nvidia-smi -q -x failed (exit {rc}): {xml.strip()[:120]}"], ""
    problems = []
    driver, links = measure.parse_nvidia_xml(host, xml)
    topo_rc, topo_text = sec.get("topo", (-1, ""))
    topo = measure.parse_topology(topo_text) if topo_rc == 0 else measure.Topology()
    if not topo.gpus:  # nothing judged is not "no NVLink missing"
        problems.append(
            f"nvidia-smi topo -m failed (exit {topo_rc}): NVLink and GPU-NIC NUMA placement not measured"
            + (f": {topo_text.strip()[:120]}" if topo_text.strip() else "")
        )
    if len(links) < gpu_count:
        problems.append(f"nvidia-smi -q -x lists {len(links)} of the {gpu_count} GPUs the host has")
    pcie = measure.parse_pcie_sysfs(sec.get("pcie", (0, ""))[1])
    lines = gpu_lines(links, topo, measure.parse_nic_numa(nic_numa()), pcie)
    problems += gpu_problems(links, pcie)
    mem = {g.memory_mib for g in links if g.memory_mib}
    return lines, problems, f" (driver {driver}" + (f", {max(mem)} MiB each" if mem else "") + ")"


# --- on the host --------------------------------------------------------------------------------


def measure_host(runner: Runner, promise: Promise, caps: measure.Caps, address: str = "") -> Measured:
    """Phase one on one host: probe, GPUs, NIC placement, scratch throughput (one session)."""
    start = time.monotonic()
    facts = probe(runner)
    audit = audit_facts(
        facts, promise.profile, promise.catalog, address=address, expected=promise.expect, platform=promise.platform
    )
    lines = balance_lines(audit)
    problems = list(audit.problems)
    idle = read_idleness(runner, promise.idle) if promise.idle is not None else None  # before fio and the GPU load
    gpus = ", ".join(f"{c} x {m}" for m, c in facts.gpu_models.items()) or "no GPU"
    if facts.gpus:
        res = runner.run(measure.gpu_script(caps), timeout=2 * caps.gpu_seconds + 15, label="verify gpus", check=False)

        def nic_numa() -> str:
            return runner.run(measure.NIC_NUMA_SCRIPT, timeout=15, label="verify nic numa", check=False).stdout

        g_lines, g_problems, g_note = gpu_measures(runner.host, measure.sections(res.stdout), len(facts.gpus), nic_numa)
        lines, problems, gpus = lines + g_lines, problems + g_problems, gpus + g_note
    lines += link_lines(facts, promise.expect)
    active = [p for p in facts.rdma if p.state.endswith("ACTIVE")]
    if facts.rdma:
        lines.append(
            Line(
                dimension="rdma ports active",
                unit="ports",
                promised=len(facts.rdma),
                delivered=len(active),
                detail=", ".join(f"{p.device}/{p.port} {p.state} {p.rate_gbps or 0:g} Gb/s" for p in facts.rdma),
            )
        )
    try:
        script = measure.disk_script(promise.scratch, caps)
    except ValueError as exc:  # /, /var, a relative path: fio never runs there
        problems.append(f"{exc}: scratch throughput not measured")
        return Measured(audit, facts, lines, problems, gpus, time.monotonic() - start, idle)
    res = runner.run(script, timeout=caps.disk_deadline, sudo=True, label="verify scratch", check=False)
    d_lines, d_problems = disk_lines(measure.sections(res.stdout), promise, len(facts.gpus), caps)
    return Measured(audit, facts, lines + d_lines, problems + d_problems, gpus, time.monotonic() - start, idle)


def network_promise(promise: Promise, accelerators: int) -> float | None:
    """What the profile promises between nodes for this many accelerators: its inter-node minimum
    where it has one, else its host network minimum (None: no promise)."""
    balance = promise.profile.balance_for(promise.platform)
    minimum = getattr(balance, "internode_network_gbps_per_accelerator", None) or balance.network_gbps_per_accelerator
    return minimum.value * max(accelerators, 1) if minimum else None


def host_result(
    name: str, address: str, m: Measured, lines: Sequence[Line] = (), problems: Sequence[str] = ()
) -> HostVerify:
    """One host's verdict from its measurements (plus the network line or problem, if any)."""
    all_lines, all_problems = [*m.lines, *lines], [*m.problems, *problems]
    return HostVerify(
        name=name,
        address=address,
        status=_status(all_lines, all_problems),
        lines=all_lines,
        problems=all_problems,
        gpus=m.gpus,
        seconds=round(m.seconds, 2),
        idle=m.idle,
    )


def verify_host(runner: Runner, promise: Promise, caps: measure.Caps, name: str, address: str) -> HostVerify:
    """One host on its own (no peer, so no network throughput): what ``pulumi up`` runs after
    configuring a host when the profile asks for it (``verify: {on_up: true}``)."""
    return host_result(name, address, measure_host(runner, promise, caps, address=address))


def measure_pair(server: Runner, client: Runner, server_address: str, caps: measure.Caps) -> float:
    """TCP throughput client → server (Gbit/s); the server is started bounded and always stopped."""
    start = server.run(measure.iperf_server_script(caps), timeout=15, label="iperf3 server", check=False)
    if start.exit_status == 127:
        raise ProbeError(server.host, "iperf3 is not installed", "apt-get install iperf3 on the host")
    pid = start.stdout.strip().splitlines()[-1] if start.stdout.strip() else ""
    try:
        res = client.run(
            measure.iperf_client_script(server_address, caps),
            timeout=caps.net_deadline,
            label="iperf3 client",
            check=False,
        )
        if res.exit_status == 127 and not res.stdout.strip():
            raise ProbeError(client.host, "iperf3 is not installed", "apt-get install iperf3 on the host")
        try:
            return measure.parse_iperf(res.stdout)
        except ValueError as exc:
            raise ProbeError(
                client.host,
                f"iperf3 to {server.host} ({server_address}) failed: {exc}",
                "check the firewall allows TCP port " + str(caps.iperf_port),
            ) from None
    finally:
        if pid.isdigit():
            server.run(measure.iperf_stop_script(pid), timeout=10, label="iperf3 stop", check=False)


# --- the fleet ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Leg:
    """One iperf3 run of the ring: ``src`` sends to ``dst``'s server at ``address``:``port``."""

    src: str
    dst: str
    address: str
    port: int


def ring(targets: Sequence[Target], up: Sequence[str], caps: measure.Caps) -> list[Leg]:
    """Host i of ``up`` sends to host i+1 (a ring: every host sends once and receives once).

    The client goes to the server's *peer* address (``Target.peer``): a host reached through a
    proxy has a node name as ``address``, which only the proxy understands. Hosts of ``targets``
    sharing a peer address (the test bed's loopback hosts, ports forwarded to one machine) get
    distinct iperf3 ports, one per leg, so their servers never collide."""
    if len(up) < 2:
        return []
    by_name = {t.name: t for t in targets}
    peers = [t.peer for t in targets]
    legs = []
    for i, src in enumerate(up):
        dst = by_name[up[(i + 1) % len(up)]]
        port = caps.iperf_port + i if peers.count(dst.peer) > 1 else caps.iperf_port
        legs.append(Leg(src, dst.name, dst.peer, port))
    return legs


UNREACHABLE = (HostUnreachable, HostKeyMismatch, AuthFailed)
"""Failures before anything ran: the host could not be reached or logged into (exit 5)."""


def failed_host(name: str, address: str, err: FullserverError) -> HostVerify:
    """A host whose measuring stopped with an error. Only a connect-phase failure makes it
    unreachable (``error``, exit 5); a host that answered and then failed a measurement (a
    timeout, unparseable nvidia-smi output, no sudo) is reachable but ``unverified`` (exit 4)."""
    text = err.what + (f" ({err.hint})" if err.hint else "")
    if isinstance(err, UNREACHABLE):
        return HostVerify(name=name, address=address, status="error", error=text)
    return HostVerify(name=name, address=address, status="unverified", problems=[f"not verified: {text}"])


def _status(lines: list[Line], problems: list[str]) -> Literal["delivers", "short", "unverified"]:
    if any(x.ok is False for x in lines):
        return "short"
    return "unverified" if problems else "delivers"


def verify_fleet(
    hosts: list[tuple[Target, str]],
    promise: Promise,
    caps: measure.Caps,
    *,
    expected: Mapping[str, DedicatedHost] | None = None,
    jump_keys: Mapping[str, str] | None = None,
    scratch: Mapping[str, str] | None = None,
    max_workers: int = 64,
    on_done: Callable[[str, object], None] | None = None,
    passphrase: str | None = None,
) -> list[HostVerify]:
    """Phase one on every host at once; then the network ring (host i sends to host i+1).

    ``expected`` and ``scratch`` are per-host contracts and scratch mountpoints by name (else the
    promise's); ``passphrase`` opens the hosts' private key when it is protected (it is only held
    in memory)."""
    from fullserver.baremetal.ssh import session

    targets = {t.name: (t, key) for t, key in hosts}
    contracts = expected or {}

    def one(item: tuple[Target, str]) -> Measured:
        t, key = item
        p = replace(
            promise,
            expect=contracts.get(t.name, promise.expect),
            scratch=(scratch or {}).get(t.name, promise.scratch),
        )
        with session(t, key, passphrase, jump_keys=jump_keys) as s:
            return measure_host(s, p, caps, address=t.endpoint)

    first = run_fleet(hosts, lambda h: h[0].name, one, max_workers=max_workers, on_done=on_done)
    up = [name for name, r in first.items() if isinstance(r, Measured)]
    legs = ring([t for t, _ in hosts], up, caps)

    def pair(leg: Leg) -> float:
        (ts, ks), (td, kd) = targets[leg.src], targets[leg.dst]
        with (
            session(td, kd, passphrase, jump_keys=jump_keys) as server,
            session(ts, ks, passphrase, jump_keys=jump_keys) as client,
        ):
            return measure_pair(server, client, leg.address, replace(caps, iperf_port=leg.port))

    net = run_fleet(legs, lambda leg: leg.src, pair, max_workers=max_workers)
    out: list[HostVerify] = []
    for name, r in first.items():
        t, _ = targets[name]
        address = t.endpoint
        if not isinstance(r, Measured):
            out.append(failed_host(name, address, r))
            continue
        lines: list[Line] = []
        problems: list[str] = []
        peer = next((leg.dst for leg in legs if leg.src == name), None)
        promised = network_promise(promise, len(r.facts.gpus))
        if peer is None:
            problems.append("network throughput not measured: no other reachable host in this inventory")
        else:
            got = net.get(name)
            if isinstance(got, float):
                lines.append(
                    Line(
                        dimension="network iperf3",
                        unit="Gbps",
                        promised=promised,
                        delivered=got,
                        detail=f"to {peer}, {caps.iperf_streams} streams, {caps.iperf_seconds}s",
                    )
                )
            elif isinstance(got, FullserverError):
                problems.append(f"network throughput to {peer} not measured: {got.what}")
        out.append(host_result(name, address, r, lines, problems))
    return out
