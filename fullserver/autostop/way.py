"""How an idle environment stops on one platform: each platform module answers with a ``StopWay``
(``PlatformRules.autostop``), or says why its environments do not stop themselves."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StopWay:
    """One way of stopping, as the plan and the components need it.

    ``key`` names it to the components (which stop command the node runs, which grant it gets);
    ``bills_while_stopped``: the cost lines (``fullserver.cost``) that go on billing while it is
    stopped; every other line stops with the nodes.
    """

    key: str
    how: str
    lost: str
    """What a stop loses, in words: what is not on a disk that survives it."""
    start: str
    """How ``fullserver start`` brings it back."""
    bills_while_stopped: frozenset[str]
    restored_by_up: bool
    """``pulumi up --refresh`` restores it (group sizes, a deleted node), which ``fullserver start``
    runs; else ``fullserver start`` runs each node's start command from the stack's ``autostop``
    output (``startCommands``, ``fullserver.autostop.start``)."""


ENVIRONMENT_BILLS = frozenset({"NAT gateway", "CloudWatch alarms", "cluster fee"})
"""Lines billed by the hour whether or not any node runs (an AWS NAT gateway is billed per hour it
exists; a Cloud NAT per VM using it, so it stops with the VMs)."""


def running_nodes(states: Sequence[str | None], stopped: frozenset[str], group_sizes: Sequence[int | None] = ()) -> int:
    """The nodes not known to be stopped, from what the provider last read: each node whose state
    is not one of its platform's ``STOPPED_STATES`` (a state not read counts as running: the output
    never says stopped without the cloud saying so), and each group's target size."""
    return sum(1 for s in states if s not in stopped) + sum(int(n or 0) for n in group_sizes)
