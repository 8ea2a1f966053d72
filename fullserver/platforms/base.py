"""What every platform answers, and the rules more than one platform shares.

``PlatformRules`` is the one set of questions sizing, cost, the plan, the components' validators
and the policy pack ask about a platform; each platform module (``aws``, ``gcp``, ``tpu``,
``bare_metal``, ``gke``, ``eks``) answers them with its own data. Rules are functions of a ``Request`` (what an
environment asks of the platform) that return a ``Refusal`` with the one message for that rule:
the core names the stack key at fault (``fullserver:<key>``), a component the spec field
(``spec.<field>``), and both say the same words.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from fullserver.autostop.way import StopWay
from fullserver.platform import AcceleratorKind, Platform, PricingModel
from fullserver.platforms.capacity import SpotQuestion
from fullserver.platforms.name_rule import RFC1035 as RFC1035  # re-exported: every platform's names
from fullserver.platforms.name_rule import NameRule as NameRule
from fullserver.platforms.project import CloudProject
from fullserver.platforms.quota import QuotaAsk, QuotaNeed, QuotaTable
from fullserver.platforms.supply import MACHINES, Supply

if TYPE_CHECKING:  # the spec and the node records are built on the platforms, not the other way
    from fullserver.capacity import CapacitySet, CapacityStep
    from fullserver.nodes import NodeAccess, NodeGroupAccess
    from fullserver.platforms.reads import PriceReads, SpecReads


@dataclass(frozen=True)
class DiskLimits:
    """What a provisioned disk kind accepts; the free baseline is also the minimum."""

    min_iops: int
    max_iops: int
    iops_per_gib: int
    min_mbps: int
    max_mbps: int
    mbps_per_iops: float | None


@dataclass(frozen=True)
class DiskKind:
    """A block-storage kind a platform attaches."""

    name: str
    max_gib: int
    """The largest volume of the kind, GiB."""
    limits: DiskLimits | None = None
    """Provisioned IOPS/throughput limits; ``None``: performance scales with size, nothing to provision."""

    @property
    def provisioned(self) -> bool:
        return self.limits is not None


@dataclass(frozen=True)
class Refusal:
    """One rule's one message. ``key`` is the stack config key at fault (the core says
    ``fullserver:<key>``); ``field`` the spec field (a component says ``spec.<field>``)."""

    key: str
    field: str
    what: str
    hint: str


@dataclass(frozen=True)
class Request:
    """What an environment asks of a platform, as far as the asker knows it: the plan before
    building, a component from its args. Facts it does not carry keep their defaults."""

    shape: str
    """The offer, machine type or TPU type (named in messages)."""
    hosts: int = 1
    """Hosts of one node (a TPU slice's hosts)."""
    spot: bool = False
    reservation: str | None = None
    zone: str | None = None
    queued: bool = False
    """Requested through a queued resource (Cloud TPU), whether asked for or forced by the slice;
    on GKE pools, flex-start (``fullserver:flexStart``)."""
    queued_asked: bool = False
    """The stack set ``fullserver:queued`` (else a multi-host type forced it), or on GKE pools
    ``fullserver:flexStart``: the key at fault."""
    capacity_block: bool = False
    data_disk: str | None = None
    """The data disk's kind, when there is one."""
    data_disk_read_only: bool = False
    local_ssds: int = 0
    image: str | None = None
    """``fullserver:image`` as the stack gives it (checked by its form on the platforms that boot it)."""


Rule = Callable[[Request], Refusal | None]
StackRule = Callable[[Any], Refusal | None]
"""A rule on a stack's ``Workload`` (typed by each rule as a Protocol of what it reads: the
platforms sit below the model and do not import it)."""
QuotaRule = Callable[[QuotaAsk, QuotaTable], list[QuotaNeed]]


def no_quotas(ask: QuotaAsk, table: QuotaTable) -> list[QuotaNeed]:
    """A platform that rents from no cloud account (bare metal) needs no quota."""
    return []


@dataclass(frozen=True)
class ZoneForm:
    """How a platform names the zones of a region: the region, then ``suffix`` (a regex)."""

    suffix: str
    rule: str
    """The form in words, with ``{region}``, for messages."""
    _suffix: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _zone: re.Pattern[str] = field(init=False, repr=False, compare=False)
    """``suffix`` and a zone of any region, compiled once with the form, not on every look-up."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_suffix", re.compile(self.suffix))  # frozen: set once, here
        object.__setattr__(self, "_zone", re.compile(r"(.+?)" + self.suffix))

    def fits(self, zone: str, region: str) -> bool:
        """The region, then the suffix, and nothing else."""
        return zone.startswith(region) and self._suffix.fullmatch(zone, len(region)) is not None

    def region_of(self, zone: str) -> str | None:
        """The region a zone of this form lies in, or ``None`` (not such a zone)."""
        found = self._zone.fullmatch(zone)
        return found.group(1) if found else None


def spot_with_reservation(req: Request) -> Refusal | None:
    """A reservation is capacity paid for in advance; spot capacity cannot consume it (EC2
    capacity reservations and Compute Engine reservations alike)."""
    if not (req.spot and req.reservation):
        return None
    return Refusal(
        "reservation",
        "reservation",
        "spot capacity cannot consume a capacity reservation",
        "remove fullserver:reservation or use an on-demand or reserved profile",
    )


def reservation_needs_zone(req: Request) -> Refusal | None:
    """A reservation lives in one zone: without that zone the capacity cannot be used."""
    if not req.reservation or req.zone:
        return None
    return Refusal(
        "zone",
        "zone",
        f"reservation '{req.reservation}' lives in one zone and no zone is set",
        "set fullserver:zone to the reservation's zone",
    )


CAPACITY_RULES: tuple[Rule, ...] = (spot_with_reservation, reservation_needs_zone)

CLOUD_SCRATCH = "/scratch"
"""Where a cloud node's boot script mounts its scratch (RAID0 over the local NVMe disks, or the
DLAMI's instance-store array linked there): what verify measures with fio on cloud nodes."""

CLOUD_LOGIN = {
    "sshPublicKeys": "cloud nodes get them for their login user",
    "sshPrivateKey": "cloud nodes get its public half for their login user, for the verify pulumi up runs",
}
"""The option every cloud platform takes (``PlatformRules.options``), said once."""
GPU_SERVING = {"serving": "serving groups of GPU replicas behind a load balancer are built there"}
"""The option of the platforms that build serving groups."""


def disk_kind_refusal(kind: str, allowed: tuple[str, ...], said: str, field: str = "data_disk.kind") -> Refusal | None:
    """A disk of a kind the platform's component does not attach; ``said`` names the kinds in words."""
    if kind in allowed:
        return None
    return Refusal("datasetGib", field, said.format(kind=kind), "re-plan with the core, which picks the kind")


Line = tuple[str, float, str]
"""One priced line of the bill: (item, USD a month, note); ``fullserver.cost`` makes it a ``CostLine``."""


class NetworkPricer(Protocol):
    """What a cloud's price lines read (``fullserver.cost`` gives it): the network catalog for the
    spec's cloud and region, the hours billed, and the plan's warnings."""

    region: str
    hours: float
    warnings: list[str]

    def price(self, item: str) -> PriceReads | None: ...

    def hourly(self, item: str, what: str) -> float | None:
        """The item's hourly rate, or ``None`` with a warning naming ``what`` is not priced."""
        ...


@dataclass(frozen=True)
class NetworkRules:
    """The network resources a cloud bills beside its machines (``fullserver.billables`` decides
    them once, the components build them, ``fullserver.cost`` prices them) and how it prices them."""

    load_balancer: str
    """The serving load balancer it builds (``Billables.load_balancer``)."""
    load_balancer_schemes: tuple[str, ...]
    """The schemes (internal, external) that load balancer is built with."""
    health_check_item: str
    """The network catalog's item for a serving health check."""
    spot_node_ip_item: str
    """The network catalog's item for a spot node's public address."""
    layout: Callable[[SpecReads], dict[str, Any]]
    """The cloud's own part of ``Billables`` (zones, load-balancer addresses, alarms, Tier_1)."""
    nat_line: Callable[[NetworkPricer, int, int], Line | None]
    """The NAT's line for (pricer, machines, zones), warnings added to the pricer's."""
    lb_line: Callable[[NetworkPricer, float, int], Line | None]
    """The load balancer's line for the GB a month it processes and its listeners: 1 (HTTP), or 2
    with TLS (``cost.network_lines``): the VM paths build HTTPS and an HTTP redirect (GCP bills each
    as a forwarding rule), GKE's Gateway one rule on 443, EKS one TLS listener."""


@dataclass(frozen=True)
class Leaning:
    """One way ``fullserver recommend``'s answers lean towards (``weight`` > 0) or away from the
    platform, with why (``recommend.Rule``'s fields: ``when`` names ``Needs`` fields and the
    values that match; ``never_first`` ranks it after every choice no such rule matches)."""

    when: Mapping[str, tuple[object, ...]]
    weight: int
    why: str
    never_first: int = 0


GroupMembers = Callable[[object, "NodeGroupAccess"], list["NodeAccess"]]
FabricRule = Callable[[int, int | None, int, str, bool], Refusal | None]


@dataclass(frozen=True)
class PlatformRules:
    """Everything fullserver needs to know about one platform; nothing else decides it."""

    platform: Platform
    provider: str
    """The catalog's provider key (storage, egress and commitment prices): aws, gcp or dedicated;
    the one source of it (``EnvironmentSpec.provider`` asks here)."""
    short: str
    """The platform's short name: ``fullserver catalog --provider``'s and the node-group kind
    (``NodeGroupAccess.provider``, for aws, gcp and tpu): aws, gcp, tpu, bare-metal, gke-gpu,
    gke-tpu, eks-gpu."""
    components: str
    """Its component package, as a module path (``components.registry`` imports it when a stack
    of the platform is built, and nothing else names it)."""
    order: int
    """Its place in the registry (``platforms.all_rules``, lowest first): questions asked across
    platforms answer in this order, and messages naming several platforms list them in it (a
    stack key's owners, the zone forms a zone fits none of)."""
    accelerator_kinds: frozenset[AcceleratorKind]
    """Accelerators the platform offers: sizing only tries it for these."""
    pricing: frozenset[PricingModel]
    """Pricing models a profile may use on it."""
    options: Mapping[str, str]
    """Stack keys only some platforms take, each with why it belongs here."""
    lacks: Mapping[str, str] = field(default_factory=dict)
    """Its own refusal of a key it does not take (else: "applies only to ...")."""
    core: str = ""
    """The core package its logic beyond this module lives in, as a module path, shared by a family
    of platforms (``fullserver.kube``: the node pools); "": its module holds it all. What is the
    platform's own code (``tests/project/test_platform_dispatch.py``, ``test_platform_footprint.py``)."""
    policy_reader: str = ""
    """Its policy reader, as a module path (``policy.stack_nodes`` reads the stack's nodes with
    each reader's ``NODE_READERS``); "": nothing of it is read by the policies (bare metal)."""
    supply: Supply = MACHINES
    """How its capacity comes (``fullserver.platforms.supply``): what an environment is built and
    billed as, what a stack names, where hardware is priced; asked, never branched on by name."""
    compact_placement: bool = False
    """Multi-node environments can be placed close together (placement group / policy)."""
    boot_image: Callable[[str | None], str | None] = lambda image: image
    """The boot image a spec carries for the stack's ``fullserver:image`` (``None``: the key names a
    runtime version, not an image to boot)."""
    hourly_gpus: bool = False
    """Rents GPU shapes by the hour: the same job is compared across these platforms."""
    # --- disks
    disk_kinds: Mapping[str, DiskKind] = field(default_factory=dict)
    family_disk_kinds: tuple[tuple[str, str], ...] = ()
    """(shape family regex, disk kind): the families that attach only that kind, first match wins."""
    default_disk_kind: str = ""
    """Boot and data disk kind for every other family ("": the platform has no cloud disks)."""
    boot_disk_sized: bool = True
    """The boot disk is a disk of its own, sized and priced (a TPU VM's is part of the TPU)."""
    default_boot_disk_gib: float | None = None
    """The boot disk a resource gets when it names no size."""
    local_ssd_gib: float | None = None
    """One local SSD's size where the platform fixes it."""
    local_ssd_price_kind: str | None = None
    """Local SSDs are billed apart from the machine, as this storage kind (else: in the price)."""
    project: CloudProject | None = None
    """Where its resources' cloud project is read (``project``); ``None``: its cloud has none."""
    # --- zones and regions
    zone_form: ZoneForm | None = None
    """How zones are named; ``None``: a zone is a free label (where the servers are)."""
    zone_from_catalog: bool = False
    """An unset zone is the first zone the catalog lists for the shape in the region."""
    unset_zone_warning: str = ""
    """What the plan says when no zone is set and none came from the catalog (``{accelerator}``)."""
    no_spot_fallback: str = ""
    """What the plan says when a spot-with-fallback profile runs on spot here and the platform
    builds no on-demand fallback: what happens when spot capacity is out ("": it builds one)."""
    spot_steps: Callable[[SpotQuestion], tuple[CapacityStep, ...]] | None = None
    """What its cloud tries for spot capacity, in order, and what each step bills (the plan's
    "spot capacity" table, ``fullserver.platforms.capacity``); ``None``: the plan shows none."""
    region_peers: Mapping[str, str] = field(default_factory=dict)
    """Another cloud's region -> this platform's nearest, so a comparison stays on one continent."""
    # --- refusals
    rules: tuple[Rule, ...] = ()
    """What it refuses of a ``Request``, checked in this order."""
    multi_node: Refusal | None = None
    """The refusal of more than one node, where an environment is one (a TPU slice)."""
    stack_rules: tuple[StackRule, ...] = ()
    """What it refuses of a stack's keys read together (``Workload``, read by attribute), checked
    by the model when the stack names this platform."""
    # --- quotas
    quotas: QuotaRule = no_quotas
    """The quotas an environment counts against (``fullserver.quotas`` asks; names from the data)."""
    # --- what it does
    default_region: str = ""
    """Where a question that names no region starts on this platform's cloud (``recommend``)."""
    leanings: tuple[Leaning, ...] = ()
    """What in the team's answers favours or disfavours it beyond its cloud (``recommend``)."""
    cloud_affinity: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    """The team's cloud (``recommend``'s ``cloud`` answer) -> (score, why) for this platform."""
    network: NetworkRules | None = None
    """The network it bills beside the machines; ``None``: none (bare metal's is the contract's)."""
    cluster_zones: int = 1
    """Node pools: the zones the network of a cluster fullserver creates spans (billed NAT and
    addresses are per network, not per zone; the plan's one-NAT warning counts these)."""
    group_members: GroupMembers | None = None
    """Reads the JSON its ``NodeGroupAccess.list_command`` prints into the running members."""
    host_keys_parser: Callable[[str, NodeAccess], list[str]] | None = None
    """Reads what a node's ``hostKeysCommand`` printed into its host key lines (``components.node_verify``)."""
    scratch: str = CLOUD_SCRATCH
    """Where ``fullserver verify`` measures scratch on its nodes unless told."""
    catalog_forms: tuple[str, ...] = ()
    """The catalog sections its offers are built from (``fullserver.catalog.loader``): ``shapes``,
    ``attachable_gpus``, ``tpu_types``; none: nothing of it is chosen from the catalog."""
    fabric_refusal: FabricRule | None = None
    """Its rule for the scale-out fabric's interfaces (EFA on AWS): (interfaces asked, the most the
    shape has, nodes, machine type, public address) -> a refusal or ``None``."""
    capacity_steps: Callable[[SpecReads, CapacitySet], CapacitySet] | None = None
    """How it hands the balanced set to its cloud's fallback: the set with ``used`` and the steps
    the cloud tries on a stockout, each priced (``fullserver.capacity``); ``None``: it says none."""
    autostop: Callable[[SpecReads], StopWay | str] = lambda _spec: (
        "its environments have no VM nodes of their own to stop"
    )
    """How an idle environment of a spec stops itself (``fullserver.autostop``), or why it does not."""
    machine_series: Callable[[str], str] | None = None
    """The series a machine type belongs to, where the catalog lists zones per series (GCP)."""

    def disk_kind(self, family: str) -> str:
        """The disk kind a shape of ``family`` boots from and attaches."""
        for pattern, kind in self.family_disk_kinds:
            if re.match(pattern, family):
                return kind
        return self.default_disk_kind

    def refusal(self, req: Request) -> Refusal | None:
        """The first rule ``req`` breaks on this platform, or ``None``."""
        for rule in self.rules:
            found = rule(req)
            if found is not None:
                return found
        return None

    def region_of_zone(self, zone: str) -> str | None:
        """The region a zone of this platform's form lies in, or ``None`` (not such a zone)."""
        return self.zone_form.region_of(zone) if self.zone_form is not None else None

    def zone_in_region(self, zone: str, region: str) -> bool:
        return self.zone_form is not None and self.zone_form.fits(zone, region)

    def nearest_region(self, region: str, priced: set[str]) -> str:
        """``region`` where the platform prices it (or names regions freely), else its nearest peer."""
        if region in priced or not self.supply.from_catalog:
            return region
        return self.region_peers.get(region, region)
