"""``BareMetalEnvironment``: dedicated servers over SSH as one Pulumi component.

One ``BareMetalFleet`` (a dynamic resource, ``components.bare_metal.provider``) per inventory
audits, configures and reverts every host; this component reads the inventory and the key
sources once, when the program runs, and reports failed hosts and verify results as warnings.
"""

from __future__ import annotations

from typing import Any, Optional

import pulumi

from components.bare_metal.provider import BareMetalFleet, base_dir, verify_warnings
from components.outputs import EnvironmentComponent
from fullserver.baremetal.config import HostConfig
from fullserver.baremetal.inventory import InventoryEntry, inventory_from_data
from fullserver.baremetal.operations import build_steps
from fullserver.workload import DedicatedHost
from fullserver.yamlio import parse


class BareMetalEnvironment(EnvironmentComponent):
    """Dedicated servers from an inventory: audited against a profile, configured, reverted on delete.

    Args:
        hosts: inventory entries (the inventory file format: name, address, port, user, hostKeys
            or knownHostsFile, privateKeyFile or privateKeyEnv, jump, ...), as plain dicts. A host's
            (or jump host's) own key source is read now and passed on as a secret.
        private_key: the SSH private key text as a secret (``config.require_secret(...)``), for
            hosts and jump hosts without a key source of their own (optional if all have one).
        profile: the profile whose bare-metal balance minimums the audit applies.
        config: what to configure (``HostConfig``: scratch, networkTuning, hugepages, gpuPersistence,
            serviceUser).
        expected: the rented-hardware contract (``DedicatedHost`` as a camelCase dict, a stack's
            ``dedicated.host``); every host is audited against it too (a host's ``expect`` wins).
    """

    host_status: pulumi.Output[dict[str, Any]]
    failed_hosts: pulumi.Output[dict[str, str]]

    def __init__(
        self,
        name: str,
        *,
        hosts: list[dict[str, Any]],
        private_key: Optional[pulumi.Input[str]] = None,
        profile: str,
        config: Optional[dict[str, Any]] = None,
        expected: Optional[dict[str, Any]] = None,
        opts: Optional[pulumi.ResourceOptions] = None,
    ) -> None:
        super().__init__("fullserver:index:BareMetalEnvironment", name, {}, opts)
        inv = inventory_from_data(hosts, base_dir(), f"BareMetalEnvironment {name}: hosts")  # fail fast, before preview
        own_keys = inv.own_keys()  # read once, here; the provider gets the texts as secrets (also for destroy)
        build_steps(parse(HostConfig, config or {}, f"BareMetalEnvironment {name}: config"))
        contract = parse(DedicatedHost, expected, f"BareMetalEnvironment {name}: expected") if expected else None
        fleet = BareMetalFleet(
            f"{name}-fleet",
            {
                "hosts": [InventoryEntry.model_validate(h).model_dump(by_alias=True, exclude_none=True) for h in hosts],
                **({"private_key": pulumi.Output.secret(private_key)} if private_key is not None else {}),
                **({"private_keys": pulumi.Output.secret(own_keys)} if own_keys else {}),
                "profile": profile,
                "config": config or {},
                "expected": contract.model_dump(by_alias=True, exclude_none=True) if contract else None,
            },
            pulumi.ResourceOptions(parent=self),
        )
        self.host_status = fleet.host_status
        self.failed_hosts = fleet.failed_hosts

        def warn(failed: dict[str, str] | None) -> None:
            for line in (failed or {}).values():
                pulumi.log.warn(f"bare metal: {line}", self)

        fleet.failed_hosts.apply(warn)

        def warn_verify(status: dict[str, Any] | None) -> None:
            for line in verify_warnings(status):
                pulumi.log.warn(line, self)

        fleet.host_status.apply(warn_verify)
        self.register({"host_status": self.host_status, "failed_hosts": self.failed_hosts})


def bare_metal_args(spec: Any) -> dict[str, Any]:
    """``BareMetalEnvironment``'s keyword args for a stack spec: its inventory, its profile, the
    SSH key from the secret config ``fullserver:sshPrivateKey``, and the rented hardware
    (``dedicated.host``) as the contract every host is audited against."""
    dedicated = spec.dedicated
    return {
        "hosts": [h.model_dump(by_alias=True, exclude_none=True) for h in dedicated.hosts] if dedicated else [],
        "profile": spec.profile,
        "private_key": pulumi.Config("fullserver").require_secret("sshPrivateKey"),
        "expected": dedicated.host.model_dump(by_alias=True, exclude_none=True) if dedicated else None,
    }
