"""Rented or owned servers reached over SSH (``bare-metal``): everything fullserver knows about them.

Nothing is chosen from the catalog: the stack declares the servers (``fullserver:dedicated``)
and their monthly price from the contract, an audit checks the declared hardware against the
real hosts (``fullserver.baremetal``), and configuration goes over SSH with pinned host keys.
Region and zone are labels of where the servers are, not a cloud's names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from fullserver.platform import AcceleratorKind, Platform, PricingModel
from fullserver.platforms.base import Leaning, PlatformRules, Refusal
from fullserver.platforms.supply import DECLARED

RUNS_WHAT_IS_INSTALLED = "does not apply to bare-metal servers (they run what is installed on them)"

SCRATCH = "/mnt/scratch"
"""Where a rented server's scratch filesystem is mounted unless the inventory says otherwise
(what ``fullserver verify`` measures with fio)."""


class _Host(Protocol):
    @property
    def accelerator(self) -> str | None: ...
    @property
    def accelerator_count(self) -> int: ...


class _Dedicated(Protocol):
    @property
    def host(self) -> _Host: ...
    @property
    def hosts(self) -> Sequence[object]: ...


class _Stack(Protocol):
    """What ``servers_agree`` reads of a ``Workload``."""

    @property
    def nodes(self) -> int: ...
    @property
    def accelerator(self) -> str | None: ...
    @property
    def accelerator_count(self) -> int | None: ...
    @property
    def dedicated(self) -> _Dedicated | None: ...


def servers_agree(stack: _Stack) -> Refusal | None:
    """The stack's node and accelerator keys say what ``fullserver:dedicated`` declares: the
    servers are rented, so a count that differs is a mistake, never a request for more."""
    if stack.dedicated is None:
        return None
    hosts, host = len(stack.dedicated.hosts), stack.dedicated.host
    if hosts and stack.nodes not in (1, hosts):
        return Refusal(
            "nodes",
            "nodes",
            f"is {stack.nodes}, but bare metal has one node per server in fullserver:dedicated.hosts ({hosts})",
            "remove fullserver:nodes or list the servers",
        )
    if stack.accelerator_count is not None and stack.accelerator_count != host.accelerator_count:
        return Refusal(
            "acceleratorCount",
            "accelerator_count",
            f"is {stack.accelerator_count}, but the dedicated host has {host.accelerator_count}",
            "make them agree: fullserver:dedicated.host.acceleratorCount is what was rented",
        )
    if stack.accelerator is not None and host.accelerator is None:
        return Refusal(
            "accelerator", "accelerator", f"is {stack.accelerator}, but the dedicated host has none", "make them agree"
        )
    return None


RULES = PlatformRules(
    platform=Platform.BARE_METAL,
    provider="dedicated",
    short="bare-metal",
    components="components.bare_metal",
    order=40,
    core="fullserver.baremetal",
    leanings=(Leaning({"portability": (True,)}, 1, "the same server image runs at any provider"),),
    accelerator_kinds=frozenset({AcceleratorKind.GPU}),
    # The contract sets the price; the profile's pricing model only says how idle hours count.
    pricing=frozenset(PricingModel),
    options={
        "dedicated": "it describes rented servers",
        "sshPrivateKey": "bare metal is configured over SSH with it",
    },
    lacks={
        "reservation": RUNS_WHAT_IS_INSTALLED,
        "image": RUNS_WHAT_IS_INSTALLED,
        "sshSourceRanges": "does not apply to bare-metal servers (fullserver opens no firewall on them: set it at the provider)",
        "publicIp": "does not apply to bare-metal servers (their addresses are the provider's: list them in dedicated.hosts)",
    },
    stack_rules=(servers_agree,),
    supply=DECLARED,
    boot_disk_sized=False,  # the servers' disks are theirs, not provisioned or priced here
    scratch=SCRATCH,
    autostop=lambda _spec: "a dedicated server is billed by the month whether it runs or not: it is never stopped",
)

PLATFORMS = (RULES,)
"""What this module registers (``fullserver.platforms`` finds every module's)."""
