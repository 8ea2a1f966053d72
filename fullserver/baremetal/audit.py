"""Audit: probed facts against a profile → the same ``BalanceReport`` a cloud shape gets.

GPU names from ``nvidia-smi`` ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-40GB", "Tesla T4") are
matched to catalog accelerators by family (name or alias) and then by memory (within 12%, so an
H100 NVL or a V100-32GB is *not* passed off as the 80 GB / 16 GB entry). An unknown model is
reported, and the RAM ratio still uses the memory ``nvidia-smi`` reports. Mixed models are
reported too, and the balance then uses the largest memory (the conservative requirement).

Design notes: docs/design/bare-metal.md.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from fullserver.balance import BalanceReport, Host, evaluate
from fullserver.baremetal.errors import BareMetalError
from fullserver.baremetal.idle import Idleness, IdleProbe, read_idleness
from fullserver.baremetal.inventory import Target
from fullserver.baremetal.probe import HostFacts, probe
from fullserver.catalog import Catalog
from fullserver.catalog.model import Accelerator
from fullserver.errors import FullserverError
from fullserver.platform import Platform
from fullserver.profiles import Profile
from fullserver.workload import DedicatedHost

MEMORY_TOLERANCE = 0.12
_VENDOR = re.compile(r"^(nvidia|tesla|geforce|quadro|rtx)\s+", re.IGNORECASE)


def match_accelerator(catalog: Catalog, gpu_name: str, memory_mib: int | None) -> Accelerator | None:
    """The catalog accelerator an ``nvidia-smi`` name denotes, or None when the catalog lacks it."""
    name = gpu_name.strip()
    while _VENDOR.match(name):
        name = _VENDOR.sub("", name, count=1)
    family = re.split(r"[\s\-_]", name.lower(), maxsplit=1)[0]
    candidates = [
        a
        for a in catalog.accelerators.values()
        if a.name.lower().split("-")[0] == family or family in (x.lower() for x in a.aliases)
    ]
    if not candidates:
        return None
    if memory_mib is None:
        return candidates[0] if len(candidates) == 1 else None
    gib = memory_mib / 1024
    best = min(candidates, key=lambda a: abs(a.memory_gib - gib))
    return best if abs(best.memory_gib - gib) <= MEMORY_TOLERANCE * best.memory_gib else None


class HostAudit(BaseModel):
    """One host's audit: its facts, the balance report, and anything that stops a clean verdict."""

    model_config = ConfigDict(frozen=True)

    name: str
    address: str
    status: Literal["balanced", "short", "unverified", "error"]
    accelerator: str | None = None
    report: BalanceReport | None = None
    facts: HostFacts | None = None
    problems: list[str] = []
    error: str | None = None
    idle: Idleness | None = None
    """Whether its accelerators are idle, and what that costs (``fullserver.baremetal.idle``)."""

    @property
    def ok(self) -> bool:
        return self.status == "balanced"

    def summary(self) -> str:
        """One line: what is wrong with this host (or that it is balanced)."""
        if self.error:
            return f"{self.name}: {self.error}"
        parts = [line.shortfall for line in (self.report.short if self.report else [])] + self.problems
        return f"{self.name}: " + ("; ".join(parts) if parts else "balanced")


def facts_to_host(facts: HostFacts, catalog: Catalog) -> tuple[Host, str | None, list[str]]:
    """``HostFacts`` → the core's ``Host`` (+ the catalog accelerator name and any problems)."""
    problems: list[str] = []
    by_model: dict[str, tuple[int, Accelerator | None, float]] = {}
    for model, count in facts.gpu_models.items():
        mems = [g.memory_mib for g in facts.gpus if g.name == model and g.memory_mib is not None]
        acc = match_accelerator(catalog, model, max(mems) if mems else None)
        mem_gib = acc.memory_gib if acc else (max(mems) / 1024 if mems else 0.0)
        by_model[model] = (count, acc, mem_gib)
        if acc is None:
            problems.append(
                f"GPU model '{model}' is not in the catalog (add it to fullserver/catalog/data/accelerators.yaml)"
            )
    if not facts.gpus:
        why = next(
            (w for w in facts.warnings if "nvidia-smi" in w),
            "nvidia-smi lists none (driver not loaded, or the GPUs fell off the bus?)",
        )
        problems.append(f"no GPU visible: {why}")
    if len(by_model) > 1:
        problems.append("mixed GPU models: " + ", ".join(f"{c} x {m}" for m, (c, _, _) in by_model.items()))
    accelerator = None
    memory = 0.0
    if by_model:
        _, (_, top_acc, _) = max(by_model.items(), key=lambda kv: kv[1][0])
        accelerator = top_acc.name if top_acc else None
        memory = max(m for _, _, m in by_model.values())
    host = Host(
        accelerator=accelerator,
        accelerator_count=len(facts.gpus),
        accelerator_memory_gib=memory,
        vcpus=facts.cpu.threads,
        physical_cores=facts.cpu.physical_cores,
        memory_gib=round(facts.memory_gib, 1),
        local_nvme_gib=round(facts.local_nvme_gib, 1),
        network_gbps=round(facts.network_gbps, 1),
    )
    return host, accelerator, problems


def contract_problems(host: Host, expected: DedicatedHost) -> list[str]:
    """Where the host differs from what the contract (stack ``dedicated.host``) says was rented."""
    out = []
    if expected.accelerator_count and host.accelerator_count < expected.accelerator_count:
        out.append(
            f"{host.accelerator_count} GPUs visible, contract says {expected.accelerator_count} (one fell off the bus?)"
        )
    if expected.accelerator and host.accelerator and expected.accelerator != host.accelerator:
        out.append(f"GPU model {host.accelerator}, contract says {expected.accelerator}")
    if host.vcpus < expected.vcpus:
        out.append(f"{host.vcpus} threads, contract says {expected.vcpus}")
    if host.memory_gib < expected.memory_gib * 0.95:  # firmware reserves a little
        out.append(f"{host.memory_gib:.0f} GiB RAM, contract says {expected.memory_gib:.0f}")
    return out


def audit_facts(
    facts: HostFacts,
    profile: Profile,
    catalog: Catalog,
    *,
    address: str = "",
    expected: DedicatedHost | None = None,
    platform: Platform = Platform.BARE_METAL,
) -> HostAudit:
    """The host's facts against the profile's minimums for ``platform`` (a cloud node verified
    after ``pulumi up`` is held to its own platform's balance, as its plan was)."""
    host, accelerator, problems = facts_to_host(facts, catalog)
    if expected is not None:
        problems += contract_problems(host, expected)
    report = evaluate(profile.balance_for(platform), host)
    status: Literal["balanced", "short", "unverified"] = (
        "short" if not report.ok else ("unverified" if problems else "balanced")
    )
    return HostAudit(
        name=facts.host,
        address=address,
        status=status,
        accelerator=accelerator,
        report=report,
        facts=facts,
        problems=problems,
    )


def audit_error(target: Target, exc: FullserverError) -> HostAudit:
    return HostAudit(
        name=target.name,
        address=target.endpoint,
        status="error",
        error=exc.what + (f" ({exc.hint})" if exc.hint else ""),
    )


T = TypeVar("T")
R = TypeVar("R")


def run_fleet(
    items: Iterable[T],
    name: Callable[[T], str],
    work: Callable[[T], R],
    *,
    max_workers: int = 64,
    on_done: Callable[[str, R | FullserverError], None] | None = None,
) -> dict[str, R | FullserverError]:
    """Run ``work`` for every item in its own thread; errors are returned per name, never raised.

    ``work`` opens its own connection inside its thread (a session is never shared). Results come
    back in the items' order.
    """
    todo = list(items)
    results: dict[str, R | FullserverError] = {}
    lock = threading.Lock()

    def one(item: T) -> None:
        key = name(item)
        out: R | FullserverError
        try:
            out = work(item)
        except FullserverError as exc:
            out = exc
        except Exception as exc:  # a bug on one host must not take the fleet down
            out = BareMetalError(key, f"internal error: {type(exc).__name__}: {exc}", "please report this")
        with lock:
            results[key] = out
        if on_done is not None:
            on_done(key, out)

    if todo:
        with ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(todo))), thread_name_prefix="fleet") as pool:
            list(pool.map(one, todo))
    return {name(i): results[name(i)] for i in todo}


def audit_host(
    target: Target,
    private_key: str,
    profile: Profile,
    catalog: Catalog,
    expected: DedicatedHost | None = None,
    *,
    jump_keys: Mapping[str, str] | None = None,
    idle: IdleProbe | None = None,
) -> HostAudit:
    """Connect (pinned key), probe in one round trip, audit; ``idle``: also read whether the
    host is idle, in the same session. Raises per-host errors."""
    from fullserver.baremetal.ssh import session

    with session(target, private_key, jump_keys=jump_keys) as s:
        facts = probe(s)
        idleness = read_idleness(s, idle) if idle is not None else None
    audit = audit_facts(facts, profile, catalog, address=target.endpoint, expected=expected)
    return audit.model_copy(update={"idle": idleness})


def audit_fleet(
    hosts: list[tuple[Target, str]],
    profile: Profile,
    catalog: Catalog,
    *,
    max_workers: int = 64,
    on_done: Callable[[str, HostAudit | FullserverError], None] | None = None,
    expected: Mapping[str, DedicatedHost] | None = None,
    jump_keys: Mapping[str, str] | None = None,
    idle: IdleProbe | None = None,
) -> list[HostAudit]:
    """Audit every ``(target, private key)`` concurrently; failures become ``status="error"`` rows.

    ``expected`` is each host's contract by name; ``jump_keys`` the jump hosts' own keys by name;
    ``idle`` how to read each host's idleness (None: not read)."""
    targets = {t.name: t for t, _ in hosts}
    contracts = expected or {}
    results = run_fleet(
        hosts,
        lambda h: h[0].name,
        lambda h: audit_host(h[0], h[1], profile, catalog, contracts.get(h[0].name), jump_keys=jump_keys, idle=idle),
        max_workers=max_workers,
        on_done=on_done,
    )
    return [r if isinstance(r, HostAudit) else audit_error(targets[n], r) for n, r in results.items()]
