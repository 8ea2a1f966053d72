"""``NodeVerify``: ``fullserver verify`` as the last step of a cloud environment's ``pulumi up``.

Opt-in per profile (``verify: {on_up: true}``) and only when the stack holds the private key that
logs in (``fullserver:sshPrivateKey``, whose public half the program installs for the login user):
a node that does not deliver (a narrow PCIe link, a missing NVLink, retired GPU memory, slow
scratch, a slow network between the nodes) is reported while it is still cheap to replace. Bare
metal does the same inside its own provider (``components.bare_metal``).

Design notes: docs/design/components.md.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, Resource, ResourceProvider, UpdateResult

from fullserver.baremetal.inventory import Target, expand_proxy, parse_key_line
from fullserver.baremetal.measure import Caps
from fullserver.baremetal.proxy import run_captured
from fullserver.baremetal.verify import Promise, verify_fleet
from fullserver.catalog import load_catalog
from fullserver.errors import FullserverError
from fullserver.nodes import NodeAccess
from fullserver.platform import Platform
from fullserver.platforms import rules_for
from fullserver.platforms.base import CLOUD_SCRATCH
from fullserver.profiles import load_profiles

INPUTS = ("nodes", "private_key", "profile", "platform", "scratch", "fio_seconds", "fio_size_mib")
"""What a re-verify follows: the nodes (and how verify measures them). The key-wait bounds only
say how patient one run is."""
SECRET_INPUTS = ("private_key",)
KEY_WAIT_SECONDS = 600.0
"""How long a node's host keys may take to appear (they are published during first boot)."""
KEY_RETRY_SECONDS = 15.0
COMMAND_TIMEOUT = 60.0
"""Seconds one host-keys command may take (one API call, plus the CLI's start-up and auth)."""
_NO_COMMAND = "no command reads its host keys from the cloud"


HostKeysParser = Callable[[str, NodeAccess], list[str]]


def host_keys_parser(platform: str) -> HostKeysParser:
    """What reads a ``hostKeysCommand``'s answer: the nodes' platform's parser (its ``PlatformRules``)."""
    parse = rules_for(Platform(platform)).host_keys_parser
    if parse is None:
        raise ValueError(f"{platform} nodes publish no host keys to read")
    return parse


def fetch_host_keys(node: NodeAccess, parse: HostKeysParser | None, wait: float, retry: float) -> list[str] | str:
    """The node's host key lines, or why there are none: its ``hostKeysCommand`` run until it
    answers with keys, every ``retry`` seconds within ``wait`` (the last failure is the reason),
    read by ``parse``."""
    argv = list(node.host_keys_command)
    if not argv or parse is None:
        return _NO_COMMAND
    deadline = time.monotonic() + wait
    reason = "no host keys published"
    while True:
        try:
            done = run_captured(argv, COMMAND_TIMEOUT)  # our secrets withheld from the CLI
            if done.returncode == 0:
                keys = parse(done.stdout, node)
                if keys:
                    return keys
                reason = "no host keys published"
            else:
                said = " ".join((done.stderr.strip() or done.stdout.strip()).split())
                reason = f"`{' '.join(argv[:4])}` failed: {said[-200:]}"
        except FileNotFoundError:
            return f"'{argv[0]}' is not installed where pulumi runs"
        except subprocess.TimeoutExpired:
            reason = f"`{' '.join(argv[:4])}` took over {COMMAND_TIMEOUT:.0f}s"
        except ValueError as exc:  # JSON, or a key that is not one: waiting will not fix it
            return f"its host keys could not be read: {exc}"
        if time.monotonic() + retry > deadline:
            return f"{reason} within {wait:.0f}s"
        time.sleep(retry)


def target(node: NodeAccess, keys: list[str]) -> Target:
    """The node as the SSH layer reaches it: pinned under its ``address`` (the name behind a proxy),
    through its proxy command, its private address where the other nodes reach it."""
    pinned = tuple(dict.fromkeys(parse_key_line(k, f"node {node.name} host key") for k in keys))
    proxy = None
    if node.proxy_command:
        proxy = expand_proxy(list(node.proxy_command), address=node.address, port=22, user=node.user, name=node.name)
    return Target(
        name=node.name,
        address=node.address,
        user=node.user,
        host_keys=pinned,
        proxy=proxy,
        peer_address=node.private_ip,
    )


def verify_nodes(props: dict[str, Any], wait: float | None = None, retry: float | None = None) -> dict[str, Any]:
    """Every node's ``{status, summary}``, and ``lines`` (each dimension's promised, delivered and
    ratio) for a node that was measured (module docstring); nothing here raises for a node."""
    nodes = [NodeAccess.model_validate(row) for row in props.get("nodes") or []]
    wait = float(props.get("key_wait_seconds") or KEY_WAIT_SECONDS) if wait is None else wait
    retry = float(props.get("key_retry_seconds") or KEY_RETRY_SECONDS) if retry is None else retry
    status: dict[str, Any] = {}
    ready = []
    for node in nodes:
        refusal = node.unreachable(node.name)
        if refusal is not None:
            status[node.name] = {"status": "error", "summary": f"{node.name}: {refusal.what}"}
        else:
            ready.append(node)
    parse = host_keys_parser(str(props["platform"])) if any(n.host_keys_command for n in ready) else None
    with ThreadPoolExecutor(max_workers=max(1, min(32, len(ready)))) as pool:
        fetched = list(pool.map(lambda n: fetch_host_keys(n, parse, wait, retry), ready))
    hosts = []
    for node, keys in zip(ready, fetched, strict=True):
        if isinstance(keys, str):
            status[node.name] = {"status": "unverified", "summary": f"{node.name}: host keys not pinned: {keys}"}
            continue
        try:
            hosts.append((target(node, keys), str(props["private_key"])))
        except FullserverError as exc:
            status[node.name] = {"status": "unverified", "summary": f"{node.name}: {exc.line()}"}
    if hosts:
        try:
            status.update(_measure(props, hosts))
        except Exception as exc:  # a report, never a failed `up`: the nodes exist either way
            why = exc.line() if isinstance(exc, FullserverError) else f"{type(exc).__name__}: {exc}"
            for t, _ in hosts:
                status[t.name] = {"status": "error", "summary": f"{t.name}: verify could not run: {why}"}
    return {name: status[name] for name in sorted(status)}


def _measure(props: dict[str, Any], hosts: list[tuple[Target, str]]) -> dict[str, Any]:
    """``verify_fleet`` over the nodes whose keys were pinned, against the plan's profile on its
    platform; each node's ``{status, summary, lines}``."""
    profile = load_profiles()[str(props["profile"])]
    caps = Caps(fio_seconds=int(props.get("fio_seconds") or 10), fio_size_mib=int(props.get("fio_size_mib") or 1024))
    promise = Promise(
        profile,
        load_catalog(),
        scratch=str(props.get("scratch") or CLOUD_SCRATCH),
        platform=Platform(str(props["platform"])),
    )
    out: dict[str, Any] = {}
    for v in verify_fleet(hosts, promise, caps):
        lines = {x.dimension: {"promised": x.promised, "delivered": x.delivered, "ratio": x.ratio} for x in v.lines}
        out[v.name] = {"status": v.status, "summary": v.summary(), **({"lines": lines} if lines else {})}
    return out


def verify_warnings(node_status: dict[str, Any] | None) -> list[str]:
    """One warning per node (or bare-metal host) whose verify did not deliver."""
    out = []
    for v in (node_status or {}).values():
        if isinstance(v, dict) and v.get("status") != "delivers":
            out.append(f"verify: {v.get('status')}: {v.get('summary')}")
    return out


def _inputs(props: dict[str, Any]) -> dict[str, Any]:
    return {k: props[k] for k in (*INPUTS, "key_wait_seconds", "key_retry_seconds") if k in props}


class NodeVerifyProvider(ResourceProvider):
    """The dynamic provider (stateless; see the module docstring)."""

    def create(self, props: dict[str, Any]) -> CreateResult:
        names = sorted(str(row.get("name")) for row in props.get("nodes") or [])
        return CreateResult(
            id_=("verify-" + "-".join(names))[:100], outs={**_inputs(props), "node_status": verify_nodes(props)}
        )

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [
            k for k in INPUTS if json.dumps(olds.get(k), sort_keys=True) != json.dumps(news.get(k), sort_keys=True)
        ]
        return DiffResult(changes=bool(changed), replaces=[])

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs={**_inputs(news), "node_status": verify_nodes(news)})

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing was made: verify only measures."""


class NodeVerify(Resource, module="fullserver", name="NodeVerify"):
    """Verify of a cloud environment's nodes as the last step of ``pulumi up`` (module docstring).

    Args:
        nodes: the environment's ``nodes`` output (``fullserver.nodes.NodeAccess`` rows).
        private_key: the SSH private key text, a secret (``fullserver:sshPrivateKey``).
        profile: the profile whose promises verify measures against (its ``verify`` caps).
    """

    node_status: pulumi.Output[dict[str, Any]]

    def __init__(
        self,
        name: str,
        *,
        nodes: pulumi.Input[list[Any]],
        private_key: pulumi.Input[str],
        profile: str,
        platform: str,
        opts: Optional[pulumi.ResourceOptions] = None,
    ) -> None:
        policy = load_profiles()[profile].verify
        props = {
            "nodes": nodes,
            "private_key": pulumi.Output.secret(private_key),
            "profile": profile,
            "platform": platform,
            "scratch": CLOUD_SCRATCH,
            "fio_seconds": policy.fio_seconds,
            "fio_size_mib": policy.fio_size_mib,
            "node_status": None,
        }
        secret = pulumi.ResourceOptions(additional_secret_outputs=list(SECRET_INPUTS))
        super().__init__(NodeVerifyProvider(), name, props, pulumi.ResourceOptions.merge(opts, secret))
