"""A Kubernetes node's measurement (the verify Job's log, the node object) → ``HostVerify``.

The log is the SSH path's sections (``fullserver.kube.verify_job.measure_script``), read by the
same parsers: the probe (``parse_probe``), the GPU script (``fullserver.baremetal.verify.gpu_measures``).
Two things differ inside a container, and are put right here: see the design notes.

Design notes: docs/design/kubernetes.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from fullserver.balance import Host, evaluate
from fullserver.baremetal import measure
from fullserver.baremetal.audit import HostAudit, audit_facts
from fullserver.baremetal.errors import ProbeError
from fullserver.baremetal.probe import HostFacts, parse_probe
from fullserver.baremetal.verify import HostVerify, Line, balance_lines, gpu_measures, host_result
from fullserver.baremetal.verify import Measured as _Measured
from fullserver.catalog import Catalog
from fullserver.kube.pool import KubePlan
from fullserver.kube.verify_job import DONE
from fullserver.profiles import Profile

OS_MOUNTS = ("/", "/boot")
"""Mount points (and what is below ``/boot``) whose disks are the node's OS disk."""


@dataclass(frozen=True)
class Node:
    """What the Kubernetes API says of one node of the pool."""

    name: str
    allocatable: dict[str, str] = field(default_factory=dict)
    ready: bool = True
    address: str = ""


# --- quantities ---------------------------------------------------------------------------------

_SUFFIX = {
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
}


def quantity(text: str) -> Decimal:
    """A Kubernetes quantity (``47810m``, ``182416Mi``, ``1870953804Ki``, ``8``, ``1e3``) → its value."""
    value = text.strip()
    for suffix in sorted(_SUFFIX, key=len, reverse=True):
        if value.endswith(suffix) and not value.endswith("e" + suffix):
            number, scale = value[: -len(suffix)], _SUFFIX[suffix]
            break
    else:
        number, scale = value, Decimal(1)
    try:
        return Decimal(number) * scale
    except InvalidOperation:
        raise ValueError(f"not a Kubernetes quantity: {text!r}") from None


# --- the log ------------------------------------------------------------------------------------


def os_disks(mountinfo: str, devnums: str) -> set[str]:
    """The whole disks holding the node's ``OS_MOUNTS``: each mount's device number (mountinfo's
    third field) → its block device (``devnums``: ``name|maj:min|parent|slaves``), then up through
    partitions (``parent``) and device-mapper or RAID members (``slaves``) to the disks."""
    devices: dict[str, tuple[str, str, list[str]]] = {}
    for line in devnums.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 4 and parts[0]:
            devices[parts[0]] = (parts[1].strip(), parts[2].strip(), parts[3].split())
    by_number = {number: name for name, (number, _, _) in devices.items() if number}

    def disks(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        if name in seen or name not in devices:
            return set()
        _, parent, slaves = devices[name]
        if slaves:
            return set().union(*(disks(s, seen | {name}) for s in slaves))
        if parent in devices:
            return disks(parent, seen | {name})
        return {name}

    out: set[str] = set()
    for line in mountinfo.splitlines():
        fields = line.split()
        if len(fields) < 5:
            continue
        target = fields[4]
        if target in OS_MOUNTS or target.startswith("/boot/"):
            out |= disks(by_number.get(fields[2], ""))
    return out


@dataclass(frozen=True)
class NodeLog:
    """The parsed log: the node's facts (its OS disk marked) and every section by name."""

    facts: HostFacts
    sections: dict[str, tuple[int, str]]
    problems: list[str]


def parse_log(node: str, text: str) -> NodeLog:
    """The measuring pod's log → ``NodeLog``; a log cut short is a ``ProbeError`` naming the node."""
    if DONE not in text.splitlines():
        raise ProbeError(
            node,
            "the measuring pod's log ends before the measurement did",
            "run verify again; `kubectl describe node` shows whether the node was under pressure",
        )
    facts = parse_probe(node, text)
    sec = measure.sections(text)
    problems = []
    mounts_rc, mountinfo = sec.get("hostmounts", (1, ""))
    found = os_disks(mountinfo, sec.get("devnums", (0, ""))[1]) if mounts_rc == 0 else set()
    if found:
        facts = facts.model_copy(
            update={"disks": [d.model_copy(update={"os_disk": d.os_disk or d.name in found}) for d in facts.disks]}
        )
    else:
        problems.append(
            "the node's mount table (/proc/1/mountinfo) did not name its OS disk: local NVMe counts every NVMe disk"
        )
    return NodeLog(facts=facts, sections=sec, problems=problems)


# --- the verdict --------------------------------------------------------------------------------


def kube_lines(plan: KubePlan, node: Node) -> tuple[list[Line], list[str]]:
    """The node's allocatable accelerators, CPU, memory and ephemeral storage against what the
    pool promises and the workload's pods on it request."""
    pods = plan.pods_per_node
    want = plan.pod.resources
    rows = [
        ("allocatable " + plan.accelerator_resource, "", plan.accelerator_resource, plan.accelerators_per_node, 1),
        ("allocatable cpu", "cores", "cpu", want.cpu_m * pods / 1000, 1),
        ("allocatable memory", "MiB", "memory", want.memory_mib * pods, 2**20),
        ("allocatable ephemeral", "MiB", "ephemeral-storage", want.ephemeral_mib * pods, 2**20),
    ]
    lines, problems = [], []
    for dimension, unit, key, promised, scale in rows:
        raw = node.allocatable.get(key)
        try:
            got = float(quantity(raw) / scale) if raw is not None else None
        except ValueError as exc:
            problems.append(f"node {node.name}: {key} {exc}")
            got = None
        lines.append(
            Line(
                dimension=dimension,
                unit=unit or "devices",
                promised=round(promised, 2),
                delivered=None if got is None else round(got, 2),
                detail="what the workload's pods request" if key != plan.accelerator_resource else "",
            )
        )
    if not node.ready:
        problems.append(f"node {node.name} is not Ready")
    return lines, problems


def _tpu_audit(facts: HostFacts, plan: KubePlan, node: Node, profile: Profile, catalog: Catalog) -> HostAudit:
    """A TPU node's balance: the host's CPU, RAM, NVMe and links with the chips the node offers."""
    chips = int(quantity(node.allocatable.get(plan.accelerator_resource, "0")))
    acc = catalog.accelerators.get(plan.accelerator or "")
    host = Host(
        accelerator=plan.accelerator,
        accelerator_count=chips,
        accelerator_memory_gib=acc.memory_gib if acc else 0.0,
        vcpus=facts.cpu.threads,
        physical_cores=facts.cpu.physical_cores,
        memory_gib=round(facts.memory_gib, 1),
        local_nvme_gib=round(facts.local_nvme_gib, 1),
        network_gbps=round(facts.network_gbps, 1),
    )
    report = evaluate(profile.balance_for(plan.platform), host)
    return HostAudit(
        name=facts.host,
        address=node.address,
        status="balanced" if report.ok else "short",
        accelerator=plan.accelerator,
        report=report,
        facts=facts,
    )


NETWORK_LINES = ("network link", "internode network")
"""The balance lines (``fullserver.baremetal.verify.balance_lines``) read from the NICs' link speed."""


def unreadable_links(facts: HostFacts) -> list[str]:
    """The node's physical Ethernet links that are up and report no speed (module doc)."""
    return [n.name for n in facts.nics if n.physical and n.operstate == "up" and n.link_type != 32 and not n.speed_mbps]


def network_not_measurable(lines: list[Line], facts: HostFacts) -> tuple[list[Line], list[str]]:
    """A network line the readable links leave short, while some up link reports no speed: not
    measurable (``delivered`` None, the reason in its detail) and one problem saying so, never short."""
    unknown = unreadable_links(facts)
    if not unknown or not any(x.dimension in NETWORK_LINES and x.ok is False for x in lines):
        return lines, []
    verb = "reports" if len(unknown) == 1 else "report"
    why = f"not measurable: {', '.join(unknown)} {verb} no link speed in sysfs (its driver gives none, as EC2's ENA)"
    out = [
        x.model_copy(update={"delivered": None, "detail": why}) if x.dimension in NETWORK_LINES and x.ok is False else x
        for x in lines
    ]
    return out, [f"network link speed {why}; the shape's published bandwidth is in the plan, not measured here"]


def node_verdict(
    plan: KubePlan, node: Node, log: NodeLog, profile: Profile, catalog: Catalog, seconds: float = 0.0
) -> HostVerify:
    """One node's verdict: the balance (as the SSH path's), the GPUs, and what Kubernetes offers."""
    facts = log.facts
    gpu_pool = plan.accelerator_resource == "nvidia.com/gpu"
    if gpu_pool:
        audit = audit_facts(facts, profile, catalog, address=node.address, platform=plan.platform)
    else:
        audit = _tpu_audit(facts, plan, node, profile, catalog)
    lines, link_problems = network_not_measurable(balance_lines(audit), facts)
    problems = [*audit.problems, *log.problems, *link_problems]
    summary = ", ".join(f"{c} x {m}" for m, c in facts.gpu_models.items()) or (
        f"{plan.accelerator} ({node.allocatable.get(plan.accelerator_resource, '0')} chips offered)"
        if not gpu_pool
        else "no GPU"
    )
    if gpu_pool and facts.gpus:
        sec = log.sections
        g_lines, g_problems, note = gpu_measures(
            node.name, sec, len(facts.gpus), lambda: sec.get("nicnuma", (0, ""))[1]
        )
        lines, problems, summary = lines + g_lines, problems + g_problems, summary + note
    k_lines, k_problems = kube_lines(plan, node)
    measured = _Measured(audit, facts, lines + k_lines, problems + k_problems, summary, seconds)
    return host_result(node.name, node.address, measured)
