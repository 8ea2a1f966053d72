"""``BareMetalEnvironment`` for other languages (``pulumi package add``).

The component (``components.bare_metal.environment``) takes keyword arguments, which the
component analyzer cannot read (it needs one ``args`` parameter with a TypedDict). The subclass
here gives it that contract without changing the Python API stacks use; it keeps the class name
because the type token (``fullserver:index:BareMetalEnvironment``) must match it.

No ``from __future__ import annotations``: the analyzer reads these annotations as types.
"""

from typing import Any, NotRequired, Optional, TypedDict

import pulumi

from components.bare_metal import environment as bare_metal


class BareMetalHostArgs(TypedDict):
    """One dedicated server reachable over SSH, with its host keys pinned (never trust-on-first-use)."""

    name: str
    address: str
    port: NotRequired[int]
    """SSH port; default 22."""
    user: NotRequired[str]
    """SSH user that can ``sudo -n``; default root."""
    host_keys: NotRequired[list[str]]
    """Pinned host public keys (``ssh-ed25519 AAAA...``), read out of band."""
    known_hosts_file: NotRequired[str]
    """A known_hosts file with the pinned keys, instead of ``host_keys``."""
    jump: NotRequired[str]
    """Name of another host in the inventory to jump through."""
    connect_timeout: NotRequired[float]
    command_timeout: NotRequired[float]


class ScratchArgs(TypedDict):
    """Local NVMe disks assembled into one scratch filesystem."""

    devices: list[str]
    mountpoint: NotRequired[str]
    fstype: NotRequired[str]
    format: NotRequired[bool]
    """Consent to create the array and filesystem on blank disks."""


class ServiceUserArgs(TypedDict):
    """An unprivileged user for the workload, reached with these keys."""

    name: str
    authorized_keys: list[str]


class HostConfigArgs(TypedDict):
    """What to configure on every host; each step is journaled on the host and reverted on delete."""

    scratch: NotRequired[ScratchArgs]
    network_tuning: NotRequired[bool]
    """Apply fullserver's network sysctls (the custom-sysctl form is available from Python only)."""
    hugepages: NotRequired[int]
    gpu_persistence: NotRequired[bool]
    service_user: NotRequired[ServiceUserArgs]


class BareMetalEnvironmentArgs(TypedDict):
    """Dedicated servers from an inventory, audited against a profile's bare-metal minimums."""

    hosts: list[BareMetalHostArgs]
    private_key: pulumi.Input[str]
    """The SSH private key text; pass a secret."""
    profile: str
    """The profile whose balance minimums the audit applies, e.g. dedicated-steady."""
    config: NotRequired[HostConfigArgs]


class BareMetalEnvironment(bare_metal.BareMetalEnvironment):
    """Dedicated servers from an inventory: audited against a profile, configured, reverted on delete."""

    host_status: pulumi.Output[dict[str, Any]]
    """Per host: audit status and summary, probed facts, step states (the bare-metal report)."""
    failed_hosts: pulumi.Output[dict[str, str]]
    """Hosts that could not be configured, with the reason; the next ``pulumi up`` retries them."""

    def __init__(
        self, name: str, args: BareMetalEnvironmentArgs, opts: Optional[pulumi.ResourceOptions] = None
    ) -> None:
        hosts: list[dict[str, Any]] = [dict(h) for h in args["hosts"]]
        config: dict[str, Any] | None = dict(args["config"]) if "config" in args else None
        super().__init__(
            name, hosts=hosts, private_key=args["private_key"], profile=args["profile"], config=config, opts=opts
        )
