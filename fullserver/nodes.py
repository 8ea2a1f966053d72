"""The way into each node of a cloud environment: the stack's ``nodes`` and ``nodeGroups`` outputs.

Design notes: docs/design/core.md.
"""

from typing import Literal, TypedDict, cast

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from fullserver.errors import InputError

Via = Literal["ssh", "iap", "ssm"]
"""``ssh``: straight to the public address; ``iap``: GCP Identity-Aware Proxy TCP forwarding;
``ssm``: AWS Systems Manager Session Manager (``AWS-StartSSHSession``)."""


class NodeAccessOutput(TypedDict):
    """A ``NodeAccess`` as the ``nodes`` output holds it. The component package's schema is read
    from these types, so other languages get a typed output; the keys are the output's own
    (camelCase), since Pulumi passes list items through unrenamed."""

    name: str
    privateIp: str
    publicIp: str
    user: str
    keys: bool
    via: str
    proxyCommand: list[str]
    hostKeysCommand: list[str]


class NodeGroupAccessOutput(TypedDict):
    """A ``NodeGroupAccess`` as the ``nodeGroups`` output holds it (see ``NodeAccessOutput``)."""

    provider: str
    groups: list[str]
    region: str
    zone: str
    project: str
    user: str
    keys: bool
    via: str
    listCommand: list[str]
    privateIps: list[str]


class _Exported(BaseModel):
    """camelCase in the stack outputs (Pulumi's convention), snake_case in Python."""

    model_config = ConfigDict(frozen=True, alias_generator=to_camel, populate_by_name=True, extra="forbid")


class NodeAccess(_Exported):
    """One node and how to reach it over SSH."""

    name: str
    """GCP: the instance name; AWS: the instance id. Through a proxy there is no address to pin a
    host key under, so the known_hosts line names the node by this (OpenSSH's ``HostKeyAlias``)."""
    private_ip: str
    """The address other nodes of the environment reach it at (verify's iperf3 ring uses it)."""
    public_ip: str = ""
    user: str
    """The login user that ``fullserver:sshPublicKeys`` are installed for."""
    keys: bool
    """Whether the stack installed SSH keys for ``user``; without them only the cloud's own login
    (OS Login, Session Manager's shell) works, and verify says so instead of failing to log in."""
    via: Via
    proxy_command: list[str] = []
    """The argv that carries SSH over stdin/stdout (``ProxyCommand``); empty for ``via: ssh``."""
    host_keys_command: list[str] = []
    """The argv whose answer holds the node's SSH host keys as the cloud heard them from the node
    at first boot (guest attributes, the console output), so they can be pinned without trusting
    the network (``platforms.<provider>.parse_host_keys`` reads it); empty where none is known
    (a group's members listed later)."""

    def exported(self) -> NodeAccessOutput:
        return cast(NodeAccessOutput, self.model_dump(by_alias=True, mode="json"))

    def unreachable(self, where: str) -> InputError | None:
        """Why SSH cannot reach this node at all (``where`` names it), before anything connects:
        ``fullserver verify STACK`` refuses with it, the verify ``pulumi up`` runs reports it."""
        if not self.keys:
            return InputError(
                where,
                f"no SSH key is installed for its login user '{self.user}'",
                "add your public key to fullserver:sshPublicKeys and run `pulumi up`",
            )
        if self.via != "ssh" and not self.proxy_command:
            return InputError(
                where,
                f"it is reached through {self.via.upper()} and no proxy command can carry SSH to it",
                "verify from a host inside its network: list its privateIps in an inventory",
            )
        if self.via == "ssh" and not self.public_ip:
            return InputError(
                where, "it has no public address and no proxy command", "verify from a host inside its network"
            )
        return None

    @property
    def address(self) -> str:
        """What SSH connects to and the host key is pinned under: the public address when direct,
        the node's name when a proxy carries the connection."""
        return self.public_ip if self.via == "ssh" else self.name


class NodeGroupAccess(_Exported):
    """A group whose members a manager starts and replaces (an auto scaling group, a managed
    instance group), or whose way in is only known at connect time (a TPU VM's workers behind
    IAP): listed when someone needs them, with ``list_command``."""

    provider: str
    """The group's kind: the short name of the platform that built it (``PlatformRules.short``),
    whose ``group_members`` reads the listing. Which kinds exist is the registry's
    (``platforms.group_kinds``), checked where the group is read back (``fullserver_cli.cloud_nodes``):
    the platforms build on this module, so it cannot ask them."""
    groups: list[str]
    """AWS: the auto scaling groups (the spot group and its on-demand fallback); GCP: the managed
    instance group; TPU: the TPU node."""
    region: str
    zone: str = ""
    """GCP: a zonal group's zone (empty: the group is regional)."""
    project: str = ""
    user: str
    keys: bool
    via: Via
    list_command: list[str]
    """The argv whose JSON answer names the running members (``platforms.<provider>.group_members``
    reads it)."""
    private_ips: list[str] = []
    """TPU: each worker's internal address, in worker order (the node's ``networkEndpoints`` at
    deploy time), because the guest attributes that name the workers carry no address. Empty for
    the other groups, whose listing carries each member's address."""

    def exported(self) -> NodeGroupAccessOutput:
        return cast(NodeGroupAccessOutput, self.model_dump(by_alias=True, mode="json"))
