"""Rented or owned servers reached over SSH (``bare-metal``): everything fullserver knows about them.

Nothing is chosen from the catalog: the stack declares the servers (``fullserver:dedicated``)
and their monthly price from the contract, an audit checks the declared hardware against the
real hosts (``fullserver.baremetal``), and configuration goes over SSH with pinned host keys.
Region and zone are labels of where the servers are, not a cloud's names.
"""

from __future__ import annotations

from fullserver.platform import AcceleratorKind, Platform, PricingModel
from fullserver.platforms.base import Leaning, PlatformRules

RUNS_WHAT_IS_INSTALLED = "does not apply to bare-metal servers (they run what is installed on them)"

SCRATCH = "/mnt/scratch"
"""Where a rented server's scratch filesystem is mounted unless the inventory says otherwise
(what ``fullserver verify`` measures with fio)."""


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
    declared_hardware=True,
    configured_over_ssh=True,
    boot_disk_sized=False,  # the servers' disks are theirs, not provisioned or priced here
    scratch=SCRATCH,
    autostop=lambda _spec: "a dedicated server is billed by the month whether it runs or not: it is never stopped",
)

PLATFORMS = (RULES,)
"""What this module registers (``fullserver.platforms`` finds every module's)."""
