"""How a platform's capacity comes, and what follows from it for everyone who asks.

Machines chosen by accelerator and count (``MACHINES``), slices named by type (``SLICES``: an
environment is one slice, its hosts its nodes) or servers the stack declares (``DECLARED``).
Sizing, cost, the plan, recommend and the CLI ask ``PlatformRules.supply`` what an environment
is built and billed as, what a stack names and where hardware is priced, instead of branching on
flags (issue 36); ``docs/adding-a-platform.md`` shows a platform's answers.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Supply:
    """One way capacity comes; its answers are read only through the methods below."""

    name: str
    _by_type: bool = False
    _declared: bool = False

    def units(self, nodes: int) -> int:
        """The resources an environment of ``nodes`` nodes is built, balanced and billed as: a
        slice is one resource whatever its hosts (no multislice); machines are one each."""
        return 1 if self._by_type else nodes

    def nodes(self, hosts: int, asked: int) -> int:
        """The nodes of an environment of a shape with ``hosts`` hosts when the stack asks ``asked``:
        a slice's nodes are its hosts; machines are as many as asked."""
        return hosts if self._by_type else asked

    def queued(self, asked: bool, hosts: int) -> bool:
        """Requested through a queued resource: a slice when the stack asks, or when it spans hosts
        (Cloud TPU); machines never."""
        return self._by_type and (asked or hosts > 1)

    @property
    def named_by_type(self) -> bool:
        """A stack names its capacity by type (``v5p-128``), not by accelerator and count: its
        offers are the types, and a count is the type's, never a choice."""
        return self._by_type

    def offered_as(self, offer_name: str, accelerator: str | None) -> str:
        """What a stack names an offer by, in a list of what the platform takes."""
        return offer_name if self._by_type else str(accelerator)

    @property
    def offered_noun(self) -> str:
        """The word for what ``offered_as`` lists."""
        return "types" if self._by_type else "accelerators"

    @property
    def from_catalog(self) -> bool:
        """Hardware is chosen and priced from the catalog; else the stack declares rented servers
        (audited later), priced by their contract, their zone a free label."""
        return not self._declared

    @property
    def hardware_key(self) -> str:
        """The stack key that names the hardware, which a stack on the platform must give."""
        return "dedicated" if self._declared else "accelerator"

    def hardware_missing(self, platform: str) -> tuple[str, str]:
        """(what, hint) when a stack on ``platform`` gives no ``hardware_key``."""
        if self._declared:
            return f"platform {platform} needs a 'dedicated' section", "add monthlyUsd and host"
        return (
            f"platform {platform} needs an accelerator",
            "name a GPU model like H100-80GB, or a TPU type like v5litepod-8",
        )

    def boot_disk_shown(self, sized: bool) -> bool:
        """The plan shows a boot disk where the platform sizes one (``sized``), and on declared
        servers the one the profile asks of them."""
        return sized or self._declared

    @property
    def reached_over_ssh(self) -> bool:
        """Deploying configures the servers over SSH (declared servers: no cloud API builds them),
        so the stack's private key is the deployer's, not a login for cloud nodes."""
        return self._declared


MACHINES = Supply("machines")
SLICES = Supply("slices", _by_type=True)
DECLARED = Supply("declared", _declared=True)
