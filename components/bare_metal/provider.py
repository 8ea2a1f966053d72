"""The dynamic provider behind ``BareMetalEnvironment`` (``components.bare_metal.environment``):
dedicated servers over SSH.

It does the work with the Pulumi-free core (``fullserver.baremetal``): see the design notes.

Design notes: docs/design/components.md.
"""

from __future__ import annotations

import json
import os
from typing import Any, Optional

import pulumi
from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    CreateResult,
    DiffResult,
    ReadResult,
    Resource,
    ResourceProvider,
    UpdateResult,
)

from components.node_verify import verify_warnings as node_warnings
from fullserver.baremetal.audit import audit_facts, run_fleet
from fullserver.baremetal.config import JOURNAL, HostConfig
from fullserver.baremetal.engine import StepPlan, converge, plan, revert
from fullserver.baremetal.errors import BareMetalError, HostUnreachable
from fullserver.baremetal.inventory import Inventory, InventoryEntry, inventory_from_data
from fullserver.baremetal.measure import Caps
from fullserver.baremetal.operations import Step, build_steps
from fullserver.baremetal.probe import HostFacts, probe
from fullserver.baremetal.transport import Runner
from fullserver.baremetal.verify import Promise, verify_host
from fullserver.catalog import Catalog, load_catalog
from fullserver.errors import FullserverError
from fullserver.profiles import load_profiles
from fullserver.workload import DedicatedHost
from fullserver.yamlio import parse

INPUTS = ("hosts", "config", "profile", "private_key", "private_keys", "expected")
SECRET_INPUTS = ("private_key", "private_keys")
FORGET_ENV = "FULLSERVER_FORGET_UNREACHABLE"
"""Hosts ``delete`` may drop without reverting when unreachable: names, comma-separated, or ``*``."""


def _inputs(props: dict[str, Any]) -> dict[str, Any]:
    return {k: props[k] for k in INPUTS if k in props}


def _facts_summary(f: HostFacts) -> dict[str, Any]:
    return {
        "os": f.os,
        "kernel": f.kernel,
        "cpu": f"{f.cpu.model}: {f.cpu.sockets} sockets, {f.cpu.physical_cores} cores, {f.cpu.threads} threads, {f.cpu.numa_nodes} NUMA",
        "memory_gib": round(f.memory_gib, 1),
        "gpus": f.gpu_models,
        "gpu_driver": f.gpus[0].driver_version if f.gpus else None,
        "local_nvme_gib": round(f.local_nvme_gib, 1),
        "network_gbps": round(f.network_gbps, 1),
    }


class _Fleet:
    """Everything one provider call needs, rebuilt from props on every call (nothing on self)."""

    def __init__(self, props: dict[str, Any]) -> None:
        self.inventory = _inventory(props, "BareMetalEnvironment.hosts")
        self.config = parse(HostConfig, props.get("config") or {}, "BareMetalEnvironment.config")
        self.steps: list[Step[Any]] = build_steps(self.config)
        self.profile = load_profiles()[str(props["profile"])]
        raw = props.get("expected")
        self.expected = parse(DedicatedHost, raw, "BareMetalEnvironment.expected") if raw else None

    def entries(self) -> list[InventoryEntry]:
        """The hosts to audit and configure (jump hosts are only passed through)."""
        return self.inventory.hosts

    def errors(
        self, work: Any, entries: list[InventoryEntry] | None = None
    ) -> tuple[dict[str, Any], dict[str, FullserverError]]:
        """Run ``work(entry, session)`` on every host concurrently; (results, errors by host)."""
        from fullserver.baremetal.ssh import session

        def one(entry: InventoryEntry) -> Any:
            key, jump_keys = self.inventory.credentials(entry)  # each host's and hop's own key, as audit
            with session(self.inventory.target(entry), key, jump_keys=jump_keys) as s:
                return work(entry, s)

        results = run_fleet(entries if entries is not None else self.entries(), lambda e: e.name, one)
        ok = {n: r for n, r in results.items() if not isinstance(r, FullserverError)}
        failed = {n: r for n, r in results.items() if isinstance(r, FullserverError)}
        return ok, failed

    def each(self, work: Any, entries: list[InventoryEntry] | None = None) -> tuple[dict[str, Any], dict[str, str]]:
        """``errors`` with each error as its one line."""
        ok, failed = self.errors(work, entries)
        return ok, {n: e.line() for n, e in failed.items()}


def _host_report(fleet: _Fleet, entry: InventoryEntry, s: Runner, catalog: Catalog) -> dict[str, Any]:
    """Probe one host and audit it (against its contract, if any): the report every call shows."""
    facts = probe(s)
    audit = audit_facts(
        facts,
        fleet.profile,
        catalog,
        address=f"{entry.address}:{entry.port}",
        expected=entry.expect or fleet.expected,
    )
    return {"status": audit.status, "audit": audit.summary(), "facts": _facts_summary(facts)}


def base_dir() -> Any:
    """Where an inventory's relative paths (key and known_hosts files) are read from: the
    directory Pulumi runs the program and the provider in (the project's)."""
    from pathlib import Path

    return Path.cwd()


def _inventory(props: dict[str, Any], where: str) -> Inventory:
    """The inventory with the key texts the program read (``private_keys``) and the default key."""
    key = props.get("private_key")
    return inventory_from_data(
        list(props.get("hosts") or []),
        base_dir(),
        where,
        keys={str(k): str(v) for k, v in (props.get("private_keys") or {}).items()},
        default_key=str(key) if isinstance(key, str) else None,
    )


def _key_users(inv: Inventory) -> list[InventoryEntry]:
    """Every entry whose key a connection uses: the hosts and the jump hosts on their way."""
    out = {e.name: e for e in inv.hosts}
    for e in inv.hosts:
        out.update({hop.name: hop for hop in inv.hops(e)})
    return list(out.values())


def _check_keys(news: dict[str, Any]) -> list[CheckFailure]:
    """Every key a host or hop will use must parse; failures name the host and the key source."""
    from fullserver.baremetal.ssh import load_private_key

    try:
        inv = _inventory(news, "hosts")
        users = _key_users(inv)
    except FullserverError:
        inv, users = None, []  # reported under "hosts"
    without = [e.name for e in users if not Inventory.has_key_source(e)]
    failures: list[CheckFailure] = []
    key = news.get("private_key")
    if inv is None or without or key is not None:
        if not isinstance(key, str) or "PRIVATE KEY" not in key:
            used_by = (
                f"; used by the hosts without privateKeyFile/privateKeyEnv: {', '.join(without)}" if without else ""
            )
            failures.append(
                CheckFailure(
                    "private_key",
                    "expected the private key's text (a Pulumi secret), e.g. from `pulumi config set --secret`"
                    + used_by,
                )
            )
        else:
            try:
                load_private_key(key, "private_key")
            except FullserverError as exc:
                failures.append(CheckFailure("private_key", exc.what))  # never the key itself
    for e in users:
        if inv is None or not inv.has_key_source(e):
            continue
        try:
            load_private_key(inv.private_key(e), inv.key_source(e))
        except FullserverError as exc:
            failures.append(CheckFailure("private_keys", exc.line()))  # names host and source, never the key
    return failures


def _apply(fleet: _Fleet, old: _Fleet | None, configured: set[str] | None = None) -> dict[str, Any]:
    catalog = load_catalog()
    undo = {s.id: s for s in (old.steps if old else [])}

    def work(entry: InventoryEntry, s: Any) -> dict[str, Any]:
        report = _host_report(fleet, entry, s, catalog)
        outcome = converge(s, fleet.config.layout, fleet.steps, undo_unlisted=undo)
        return {
            **report,
            "steps": {sid: e.status for sid, e in outcome.journal.steps.items()},
            "changed": outcome.changed,
            "writes": outcome.writes,
            **({"notes": outcome.notes} if outcome.notes else {}),  # e.g. a stale journal lock broken
            **({"verify": _verify(fleet, entry, s, catalog)} if fleet.profile.verify.on_up else {}),
        }

    hosts, failed = fleet.each(work)
    if old is not None:  # hosts dropped from the inventory: revert them with the old steps
        kept = {x.name for x in fleet.entries()}
        gone = [e for e in old.entries() if e.name not in kept and e.name in (configured or set())]
        _, revert_failed = old.each(lambda e, s: revert(s, old.config.layout, old.steps).undone, gone)
        failed.update({n: f"while reverting a removed host: {m}" for n, m in revert_failed.items()})
    if not hosts and failed:
        raise BareMetalError(
            "BareMetalEnvironment",
            "every host failed: " + " | ".join(failed.values()),
            "fix the hosts and run pulumi up again",
        )
    return {"host_status": hosts, "failed_hosts": failed}


def _verify(fleet: _Fleet, entry: InventoryEntry, s: Runner, catalog: Catalog) -> dict[str, Any]:
    """The profile's ``verify: {on_up: true}``: measure the configured host's delivered balance
    (``fullserver.baremetal.verify``; no peer here, so no iperf3: ``fullserver verify`` on the
    inventory measures between hosts). A host that does not deliver is reported, not failed:
    the configuration is in place, and replacing the server is a person's call."""
    scratch = fleet.config.scratch.mountpoint if fleet.config.scratch else "/mnt/scratch"
    promise = Promise(fleet.profile, catalog, entry.expect or fleet.expected, scratch)
    caps = Caps(fio_seconds=fleet.profile.verify.fio_seconds, fio_size_mib=fleet.profile.verify.fio_size_mib)
    try:
        v = verify_host(s, promise, caps, entry.name, f"{entry.address}:{entry.port}")
    except FullserverError as exc:
        return {"status": "error", "summary": f"{entry.name}: {exc.line()}"}
    return {
        "status": v.status,
        "summary": v.summary(),
        "lines": {x.dimension: {"promised": x.promised, "delivered": x.delivered, "ratio": x.ratio} for x in v.lines},
    }


def verify_warnings(host_status: dict[str, Any] | None) -> list[str]:
    """One warning per host whose ``verify`` (profile ``verify: {on_up: true}``) did not deliver,
    in the words the cloud nodes' verify uses (``components.node_verify.verify_warnings``)."""
    return node_warnings(
        {name: host.get("verify") for name, host in (host_status or {}).items() if isinstance(host, dict)}
    )


def _show_plan(pending: dict[str, dict[str, StepPlan]]) -> None:
    """One message per host with pending steps: each step's summary and the exact commands the
    update would run. A dynamic provider's ``DiffResult`` can only say *that* something changes;
    this is how ``pulumi preview`` shows *what* (the provider process has no engine connection, so
    ``pulumi.log`` writes to its stderr, which the engine shows beside the resource)."""
    for host, steps in sorted(pending.items()):
        if not steps:
            continue
        lines = [f"bare metal: {host} would run:"]
        for sid, p in steps.items():
            lines.append(f"  {sid}: {p}")
            lines += [f"    {c}" if c.startswith("# ") else f"    $ {c}" for c in p.shown()]
        pulumi.log.info("\n".join(lines))


class BareMetalProvider(ResourceProvider):
    """The dynamic provider (stateless: see the module docstring)."""

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        failures: list[CheckFailure] = []
        try:
            inv = _inventory(news, "hosts")
            for e in inv.entries:
                inv.target(e)  # pinned keys present and well formed
        except FullserverError as exc:
            failures.append(CheckFailure("hosts", exc.line()))
        try:
            build_steps(parse(HostConfig, news.get("config") or {}, "config"))
        except FullserverError as exc:
            failures.append(CheckFailure("config", exc.what))
        except ValueError as exc:
            failures.append(CheckFailure("config", str(exc)))
        if news.get("expected"):
            try:
                parse(DedicatedHost, news["expected"], "expected")
            except FullserverError as exc:
                failures.append(CheckFailure("expected", exc.what))
        if str(news.get("profile")) not in load_profiles():
            failures.append(CheckFailure("profile", f"unknown profile {news.get('profile')!r}"))
        failures += _check_keys(news)
        return CheckResult(news, failures)

    def create(self, props: dict[str, Any]) -> CreateResult:
        fleet = _Fleet(props)
        outs = _apply(fleet, None)
        return CreateResult(
            id_="fleet-" + "-".join(sorted(e.name for e in fleet.entries()))[:100], outs={**_inputs(props), **outs}
        )

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [
            k for k in INPUTS if json.dumps(olds.get(k), sort_keys=True) != json.dumps(news.get(k), sort_keys=True)
        ]
        if changed:
            return DiffResult(changes=True, replaces=[])
        if olds.get("failed_hosts"):
            return DiffResult(changes=True)
        fleet = _Fleet(news)
        pending, failed = fleet.each(
            lambda _e, s: {k: v for k, v in plan(s, fleet.config.layout, fleet.steps).items() if v.action != "ok"}
        )
        _show_plan(pending)
        return DiffResult(changes=bool(failed) or any(pending.values()))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(
            outs={**_inputs(news), **_apply(_Fleet(news), _Fleet(olds), set(olds.get("host_status") or {}))}
        )

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        fleet = _Fleet(props)
        catalog = load_catalog()

        def work(entry: InventoryEntry, s: Any) -> dict[str, Any]:
            report = _host_report(fleet, entry, s, catalog)
            pending = plan(s, fleet.config.layout, fleet.steps)
            commands = {k: v.shown() for k, v in pending.items() if v.shown()}
            return {
                **report,
                "steps": {k: ("applied" if v.action == "ok" else f"drift: {v}") for k, v in pending.items()},
                **({"commands": commands} if commands else {}),  # exactly what the next update would run
            }

        hosts, failed = fleet.each(work)
        outs = {**_inputs(props), "host_status": hosts, "failed_hosts": failed}
        return ReadResult(id_=id_, outs=outs, inputs=_inputs(props))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        fleet = _Fleet(props)
        _, failed = fleet.errors(lambda _e, s: revert(s, fleet.config.layout, fleet.steps).undone)
        forget = {n.strip() for n in os.environ.get(FORGET_ENV, "").split(",") if n.strip()}
        for name, exc in list(failed.items()):
            if isinstance(exc, HostUnreachable) and ("*" in forget or name in forget):
                pulumi.log.warn(
                    f"bare metal: {name} forgotten without reverting ({exc.what}): whatever fullserver changed "
                    f"there stays, with its journal {JOURNAL}"
                )
                del failed[name]
        if failed:
            gone = [n for n, e in failed.items() if isinstance(e, HostUnreachable)]
            hint = "fix the hosts and run pulumi destroy again (reverting is idempotent)"
            if gone:
                hint += (
                    f"; if {', '.join(gone)} is gone for good, run {FORGET_ENV}={','.join(gone)} pulumi destroy "
                    "to drop it without reverting"
                )
            raise BareMetalError(
                "BareMetalEnvironment", "could not revert: " + " | ".join(e.line() for e in failed.values()), hint
            )


class BareMetalFleet(Resource, module="fullserver", name="BareMetalFleet"):
    """The dynamic resource (one per inventory); use ``BareMetalEnvironment``."""

    host_status: pulumi.Output[dict[str, Any]]
    failed_hosts: pulumi.Output[dict[str, str]]

    def __init__(self, name: str, props: dict[str, Any], opts: Optional[pulumi.ResourceOptions] = None) -> None:
        secret = pulumi.ResourceOptions(additional_secret_outputs=list(SECRET_INPUTS))
        super().__init__(
            BareMetalProvider(),
            name,
            {**props, "host_status": None, "failed_hosts": None},
            pulumi.ResourceOptions.merge(opts, secret),
        )
