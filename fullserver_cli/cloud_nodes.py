"""A cloud stack's nodes, from what its ``pulumi up`` exported: the ``nodes`` output (one way in
per node), and the members of its ``nodeGroups`` (serving groups), listed now with the cloud's CLI.

Stacks deployed before ``nodes`` existed export only ``publicIps``: those are read as direct SSH
nodes, so an older stack stays verifiable without a new ``pulumi up``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import ValidationError

from fullserver import platforms
from fullserver.baremetal.proxy import run_captured
from fullserver.clouds import install_hint
from fullserver.errors import InputError
from fullserver.nodes import NodeAccess, NodeGroupAccess

LIST_TIMEOUT = 120.0
"""Seconds a group listing may take (one API call, plus the CLI's own start-up and auth)."""


def stack_nodes(stack: str, outputs: Mapping[str, Any], user: str | None) -> list[NodeAccess]:
    """Every node of the stack, exported ones first, then each group's running members.

    ``user`` (``--user``) replaces the exported login user when given."""
    where = f"stack '{stack}' outputs"
    nodes = _parse(NodeAccess, outputs.get("nodes"), f"{where}: nodes")
    groups = _parse(NodeGroupAccess, outputs.get("nodeGroups"), f"{where}: nodeGroups")
    kinds = platforms.group_kinds()
    for i, group in enumerate(groups):
        if group.provider not in kinds:
            raise InputError(
                f"{where}: nodeGroups[{i}].provider",
                f"'{group.provider}' is none of {', '.join(kinds)}",
                "run `pulumi up` with this version of fullserver",
            )
    for group in groups:
        nodes += group_members(group, stack)
    if not nodes and "nodes" not in outputs:
        nodes = [
            NodeAccess(name=f"{stack}-{i}", private_ip="", public_ip=str(ip), user="ubuntu", keys=True, via="ssh")
            for i, ip in enumerate(outputs.get("publicIps") or [])
        ]
    return [n.model_copy(update={"user": user}) if user else n for n in nodes]


T = TypeVar("T", NodeAccess, NodeGroupAccess)


def _parse(model: type[T], raw: object, where: str) -> list[T]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InputError(where, "is not a list", "run `pulumi up` with this version of fullserver")
    parsed = []
    for i, item in enumerate(raw):
        try:
            parsed.append(model.model_validate(item))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise InputError(
                f"{where}[{i}].{field}", first["msg"], "run `pulumi up` with this version of fullserver"
            ) from None
    return parsed


def group_members(group: NodeGroupAccess, stack: str) -> list[NodeAccess]:
    """The running members of one group: its ``listCommand`` run now, its JSON read by the platform."""
    argv = group.list_command
    where = f"stack '{stack}' group {', '.join(group.groups)}"
    if shutil.which(argv[0]) is None:
        raise InputError(where, f"'{argv[0]}' is not installed", install_hint(argv[0]) or f"put {argv[0]} on PATH")
    try:
        done = run_captured(argv, LIST_TIMEOUT)  # our secrets withheld; on timeout its whole group killed
    except subprocess.TimeoutExpired:
        raise InputError(
            where, f"listing its members took over {LIST_TIMEOUT:.0f}s", f"check that `{' '.join(argv[:3])}` works"
        ) from None
    if done.returncode != 0:
        said = " ".join((done.stderr.strip() or done.stdout.strip()).split())[-300:]
        raise InputError(where, f"listing its members failed: {said}", f"check `{' '.join(argv)}` works for you")
    try:
        members = platforms.group_members(group.provider)  # the platform reads its own listing
        return members(json.loads(done.stdout), group)
    except ValueError as exc:
        raise InputError(where, f"the member list is not what {argv[0]} prints: {exc}", "update the CLI") from None


def inventory_hosts(stack: str, nodes: Sequence[NodeAccess], known_hosts: str) -> list[dict[str, object]]:
    """Inventory entries for the nodes: direct ones at their public address, the others by name
    through their proxy command; every host key pinned from ``known_hosts``; the private address is
    where the other nodes reach them (verify's iperf3 ring)."""
    hosts: list[dict[str, object]] = []
    for node in nodes:
        refusal = node.unreachable(f"stack '{stack}' node {node.name}")
        if refusal is not None:
            raise refusal
        entry: dict[str, object] = {
            "name": node.name,
            "address": node.address,
            "user": node.user,
            "knownHostsFile": known_hosts,
        }
        if node.proxy_command:
            entry["proxyCommand"] = list(node.proxy_command)
        if node.private_ip:
            entry["peerAddress"] = node.private_ip
        hosts.append(entry)
    return hosts
