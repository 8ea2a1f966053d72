"""A workload: what one environment needs, as written in one stack's config.

Design notes: docs/design/core.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import (
    BeforeValidator,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from fullserver.baremetal.keys import HostKeyLine, PublicKeyLine
from fullserver.catalog.model import AcceleratorKind, Platform
from fullserver.errors import InputError
from fullserver.keys import MAX_IMAGE, MAX_NAME, MAX_PATH, Camel, Count
from fullserver.keys import finite as _finite
from fullserver.kube import access
from fullserver.kube.karpenter import Provisioner
from fullserver.platforms import option_refusal, rules_for, zone_problem
from fullserver.rules import (
    MAX_HOURS_PER_MONTH,
    check_ssh_ranges,
)
from fullserver.serving_keys import ServingConfig
from fullserver.text import display_changing
from fullserver.workload_keys import PLATFORM_SPECIFIC, declared_keys, set_keys

if TYPE_CHECKING:
    from fullserver.catalog import Catalog
    from fullserver.profiles import Lifecycle, Profile

CONFIG_NAMESPACE = "fullserver"

# --- upper bounds: every count and size has one, so nonsense fails in one line instead of
# running the sizing (or the program's per-node loops) out of time and memory. ----------------

# 512 nodes x 8 GPUs = 4,096 GPUs, the scale of the largest single training jobs run on one
# cluster placement group; the program registers resources per node, and `nodes: 100000` ran
# past 180 s and 6.5 GB before this bound existed.
MAX_NODES = 512
# A whole TPU v5p pod (8,960 chips) is the largest slice Google sells; GPU nodes carry at most 16.
# The catalog then checks the count really is a shape's or a TPU type's.
MAX_ACCELERATORS = 8_960
# HGX/DGX-2-class servers carry 16 GPUs, the most any server in a rack holds.
MAX_GPUS_PER_SERVER = 16
# 1 PiB: 16 times the largest block volume any platform here attaches (64 TiB); a larger dataset
# is streamed from object storage and is not a sizing input. Each disk kind's own maximum is
# checked on the sized disk (``fullserver.platforms``, ``DiskKind.max_gib``).
MAX_DATASET_GIB = 1_048_576
# 10 PB a month is ~30 Gbit/s to the internet around the clock, more than any one environment
# here sends; larger figures are unit mistakes (bytes for GB).
MAX_EGRESS_GB_MONTH = 10_000_000
# 100 M USD a month is about five times the dearest plan fullserver can make (512 p5.48xlarge
# nodes on demand, ~21 M USD a month).
MAX_BUDGET_USD = 100_000_000
# A year; each profile's own TTL is the real bound (``check_workload``).
MAX_TTL_HOURS = 8_760
MAX_AUTOSTOP_MINUTES = 10_080
"""A week: an idle limit longer than that is no limit (use 0, never)."""
# AWS security groups take 60 inbound rules by default; GCP firewall rules take more, but one
# list feeds both.
MAX_SSH_RANGES = 60
# People's public keys installed on the nodes: a team, not a directory (use OS Login for that).
MAX_SSH_PUBLIC_KEYS = 32
# Each alternative is a full sizing; four platforms times a few profiles is far below this.
MAX_ALTERNATIVES = 16
# A location names a few continents or metros, or a few regions of each cloud.
MAX_LOCATIONS = 32
# A host has one key per algorithm (ed25519, ecdsa, rsa) and rarely more than a few rotations.
MAX_HOST_KEYS = 16
# One server's monthly rent or setup fee: an 8 x H100 server rents for ~15,000 USD a month.
MAX_SERVER_USD = 1_000_000
# Cloud internet egress costs 0.05-0.23 USD/GB; 10 USD/GB is a unit mistake.
MAX_USD_PER_GB = 10
# Two 192-core EPYCs give 768 threads and eight 60-core Xeons 960: 1,024 is above any server.
MAX_VCPUS = 1_024
# 32 TiB: the largest single machine sold (AWS u7in-32tb, High Memory instances).
MAX_MEMORY_GIB = 32_768
# 24 x 61.44 TB NVMe drives, the largest drives in the densest server, are ~1.34 PiB.
MAX_LOCAL_NVME_GIB = 2_097_152
# 8 x 800 Gb/s NICs, twice the 3,200 Gb/s of the largest cloud GPU nodes (p5en, p6).
MAX_NETWORK_GBPS = 6_400
# AWS tag values take 256 characters; GCP labels are shortened to 63 by the components.
MAX_LABEL_TEXT = 256
# DNS names are at most 253 characters; a Linux user name 32.
MAX_HOSTNAME = 253
MAX_USER = 32

Name = Annotated[StrictStr, Field(min_length=1, max_length=MAX_NAME, pattern=r"^\S+$")]
Money = Annotated[float, Field(strict=True, ge=0, le=MAX_SERVER_USD, allow_inf_nan=False)]


@dataclass(frozen=True)
class Unset(BeforeValidator):
    """A key's "not set" validator, holding the value Pulumi.yaml declares for it (``config_keys``)."""

    empty: object = None


def _unset(empty: object) -> Unset:
    """Read a key's declared "not set" value (``""``, ``0``, ``[]``, ``{}``) as not set.

    Pulumi.yaml has to give every optional key a default (a declared key without one is required
    in every stack), and Pulumi hands that default to the program as if the stack had set it; so
    the default of an optional key is the value that means "not set", in the plan as in the program.
    """

    def check(value: object) -> object:
        return None if type(value) is type(empty) and value == empty else value

    return Unset(check, empty=empty)


def check_region_name(region: str) -> str:
    """Region names are lowercase words and digits joined by '-' (us-east-1, us-central1), on
    every platform: zones, labels and catalog prices are keyed by them. (A stack's region and
    ``recommend --region`` are held to this one rule.)"""
    if not _LABEL.fullmatch(region):
        shown = region if len(region) <= 40 else region[:40] + "..."
        raise ValueError(f"{shown!r} is not a region name (lowercase letters, digits and '-', e.g. us-east-1)")
    return region


class DedicatedHost(Camel):
    """A dedicated server's hardware as rented or owned (an audit checks it against the real host)."""

    accelerator: Name | None = None
    accelerator_count: Annotated[StrictInt, Field(ge=0, le=MAX_GPUS_PER_SERVER)] = 0
    vcpus: Annotated[Count, Field(le=MAX_VCPUS)]
    physical_cores: Annotated[Count, Field(le=MAX_VCPUS)] | None = None
    memory_gib: Annotated[float, _finite(MAX_MEMORY_GIB, positive=True)]
    local_nvme_gib: Annotated[float, _finite(MAX_LOCAL_NVME_GIB)] = 0
    network_gbps: Annotated[float, _finite(MAX_NETWORK_GBPS, positive=True)]


class InventoryHost(Camel):
    """One bare-metal server reachable over SSH, with its pinned host keys."""

    name: Annotated[StrictStr, Field(min_length=1, max_length=MAX_HOSTNAME)]
    address: Annotated[StrictStr, Field(min_length=1, max_length=MAX_HOSTNAME)]
    port: Annotated[StrictInt, Field(gt=0, lt=65536)] = 22
    user: Annotated[StrictStr, Field(min_length=1, max_length=MAX_USER)] = "root"
    host_keys: Annotated[list[HostKeyLine], Field(max_length=MAX_HOST_KEYS)] = Field(default_factory=list)
    known_hosts_file: Annotated[StrictStr, Field(min_length=1, max_length=MAX_PATH)] | None = None


class Dedicated(Camel):
    """Bare-metal environments: the monthly price comes from the contract, not a catalog."""

    monthly_usd: Annotated[float, _finite(MAX_SERVER_USD, positive=True)]
    setup_usd: Money = 0
    provider: Annotated[StrictStr, Field(max_length=MAX_LABEL_TEXT)] = ""
    host: DedicatedHost
    hosts: Annotated[list[InventoryHost], Field(max_length=MAX_NODES)] = Field(default_factory=list)
    included_egress_gb_month: Annotated[float, _finite(MAX_EGRESS_GB_MONTH)] = 0
    egress_usd_per_gb: Annotated[float, _finite(MAX_USD_PER_GB)] = 0


class Alternative(Camel):
    """Another platform to price the same job on, e.g. a TPU slice beside a GPU node."""

    platform: Platform
    profile: Name | None = None
    accelerator: Name | None = None
    accelerator_count: Annotated[Count, Field(le=MAX_ACCELERATORS)] | None = None
    nodes: Annotated[Count, Field(le=MAX_NODES)] | None = None
    region: Name | None = None
    dedicated: Dedicated | None = None


class KeyProblem(ValueError):
    """A check across keys that names the key at fault (a model validator has no field of its own)."""

    def __init__(self, key: str, what: str, hint: str) -> None:
        super().__init__(what)
        self.key = key
        self.what = what
        self.hint = hint


_LABEL = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")
DATASET_LOCATION = re.compile(
    r"(?:(?P<scheme>s3|gs)://(?P<bucket>[a-z0-9][a-z0-9._-]{1,221})(?:/\S*)?@)?(?P<region>[a-z0-9]([a-z0-9-]*[a-z0-9])?)"
)
"""``datasetLocation``: a region, or a bucket URL with its region after ``@`` (a bucket's URL does not
say where it is; S3 and GCS bucket names are lowercase letters, digits, '.', '-' and '_')."""


class Workload(Camel):
    """One stack's ``fullserver:`` config; each field is one key, described as Pulumi.yaml declares it."""

    profile: Name = Field(
        description="Workload-maturity profile (profiles/<name>.yaml), e.g. experimentation, fine-tuning, scale-training.",
    )
    platform: Annotated[Platform | None, _unset("")] = Field(
        default=None,
        description="tpu-vm, aws-gpu, gcp-gpu, bare-metal, gke-gpu, gke-tpu or eks-gpu; empty: the cheapest balanced option across the profile's platforms that offer the accelerator (the profile's order breaks ties, or is kept when it says platform_order: requirement).",
    )
    region: Annotated[StrictStr, Field(max_length=MAX_NAME)] = Field(
        default="",
        description="Cloud region, e.g. us-east-1 or us-central1 (bare metal: a label for where the servers are); empty: fullserver:location must be set, and the region is chosen (fullserver plan --pin writes it here).",
    )
    location: Annotated[Annotated[list[Name], Field(min_length=1, max_length=MAX_LOCATIONS)] | None, _unset([])] = (
        Field(
            default=None,
            description="Where the stack may land when wider than a region: named locations (us, europe, europe-west, asia, ...; fullserver/catalog/data/locations.yaml) and regions of either cloud; the plan ranks every platform x region x shape, and fullserver plan --pin writes the choice into region and platform.",
        )
    )
    zone: Annotated[Name | None, _unset("")] = Field(
        default=None,
        description="Zone inside the region (us-east-1a, us-central1-a); empty: the provider's or the catalog's choice.",
    )
    framework: Literal["pytorch", "jax", "tensorflow", "other"] = Field(
        default="pytorch", description="pytorch, jax, tensorflow or other; picks the image and runtime."
    )
    accelerator: Annotated[Name | None, _unset("")] = Field(
        default=None,
        description="GPU model (H100-80GB, L4, ...) or TPU type (v5litepod-8, ...); bare metal may leave it empty.",
    )
    accelerator_count: Annotated[Annotated[Count, Field(le=MAX_ACCELERATORS)] | None, _unset(0)] = Field(
        default=None, description="GPUs per node, or TPU chips of the slice; 0: one GPU, or the TPU type's chips."
    )
    nodes: Annotated[Count, Field(le=MAX_NODES)] = Field(
        default=1, description="Number of nodes for multi-node profiles (at most 512)."
    )
    owner: Annotated[StrictStr, Field(max_length=MAX_LABEL_TEXT)] = Field(
        default="unknown", description="Who owns the environment (label/tag)."
    )
    dataset_gib: Annotated[StrictInt, Field(ge=0, le=MAX_DATASET_GIB)] = Field(
        default=0, description="Dataset size in GiB; sizes the data disk."
    )
    dataset_location: Annotated[Annotated[StrictStr, Field(max_length=MAX_PATH)] | None, _unset("")] = Field(
        default=None,
        description="Where the dataset lives, for pricing its move to the chosen region: a region (us-east-1) or a bucket with its region (s3://bucket/path@us-east-1, gs://bucket@us-central1); empty: not priced.",
    )
    egress_gb_month: Annotated[StrictInt, Field(ge=0, le=MAX_EGRESS_GB_MONTH)] = Field(
        default=0, description="Expected internet egress in GB per month (priced)."
    )
    hours_per_month: Annotated[Annotated[Count, Field(le=MAX_HOURS_PER_MONTH)] | None, _unset(0)] = Field(
        default=None, description="Productive hours a month (at most 744); 0: the profile's."
    )
    budget_monthly_usd: Annotated[Annotated[Count, Field(le=MAX_BUDGET_USD)] | None, _unset(0)] = Field(
        default=None, description="Monthly budget in USD; plans and deployments over it fail. 0: no budget."
    )
    ssh_source_ranges: Annotated[Annotated[list[StrictStr], Field(max_length=MAX_SSH_RANGES)] | None, _unset([])] = (
        Field(
            json_schema_extra=PLATFORM_SPECIFIC,
            default=None,
            description="CIDR ranges SSH is open to (never wider than /8); empty: the profile's.",
        )
    )
    ssh_public_keys: Annotated[
        Annotated[list[PublicKeyLine], Field(max_length=MAX_SSH_PUBLIC_KEYS)] | None, _unset([])
    ] = Field(
        json_schema_extra=PLATFORM_SPECIFIC,
        default=None,
        description="OpenSSH public key lines (~/.ssh/id_*.pub) installed for the nodes' login user ubuntu; empty: none (AWS: Session Manager, GCP: OS Login).",
    )
    public_ip: Annotated[StrictBool | None, _unset("")] = Field(
        json_schema_extra=PLATFORM_SPECIFIC,
        default=None,
        description="false: no public IP even where the profile gives one; true only where the profile allows it; empty: the profile's.",
    )
    ttl_hours: Annotated[Annotated[Count, Field(le=MAX_TTL_HOURS)] | None, _unset(0)] = Field(
        default=None,
        description="Hours before an ephemeral environment is destroyed, at most the profile's TTL; 0: the profile's.",
    )
    unprotect: StrictBool = Field(
        default=False,
        description="true: nothing is protected (Pulumi's protect and the clusters' deletion protection off), so that up, then destroy, removes everything; false: the profile's.",
    )
    queued: StrictBool = Field(
        json_schema_extra=PLATFORM_SPECIFIC,
        default=False,
        description="Request TPU capacity through a queued resource (tpu-vm only).",
    )
    autostop_minutes: Annotated[Annotated[StrictInt, Field(ge=0, le=MAX_AUTOSTOP_MINUTES)] | None, _unset(-1)] = Field(
        json_schema_extra=PLATFORM_SPECIFIC,
        default=None,
        description="Minutes a VM node may sit idle (no accelerator use, no session, no keep marker) before it stops; 0: never; -1: the profile's.",
    )
    image: Annotated[Annotated[StrictStr, Field(min_length=1, max_length=MAX_IMAGE)] | None, _unset("")] = Field(
        json_schema_extra=PLATFORM_SPECIFIC,
        default=None,
        description="Boot image (AMI id, SSM path or GCP image) or TPU runtime version; empty: the framework's.",
    )
    reservation: Annotated[Name | None, _unset("")] = Field(
        json_schema_extra=PLATFORM_SPECIFIC,
        default=None,
        description="Capacity to consume: an AWS capacity reservation id (cr-...) or a GCP reservation name.",
    )
    capacity_block: StrictBool = Field(
        json_schema_extra=PLATFORM_SPECIFIC,
        default=False,
        description="The AWS reservation is an EC2 Capacity Block for ML (aws-gpu only).",
    )
    cluster: Annotated[Name | None, _unset("")] = Field(
        json_schema_extra=PLATFORM_SPECIFIC,
        default=None,
        description="gke-gpu, gke-tpu, eks-gpu: the existing Kubernetes cluster to add the node pools to; empty: a cluster is created.",
    )
    flex_start: StrictBool = Field(
        json_schema_extra=PLATFORM_SPECIFIC,
        default=False,
        description="gke-gpu, gke-tpu: flex-start node pools (Dynamic Workload Scheduler), without queued provisioning: pending pods get nodes as capacity allows.",
    )
    deploy_workload: StrictBool = Field(
        json_schema_extra=PLATFORM_SPECIFIC,
        default=False,
        description="gke-gpu, gke-tpu, eks-gpu: apply the workload's manifests (Job, or Deployment + Service + HPA) to the cluster.",
    )
    cluster_location: Annotated[Name | None, _unset("")] = Field(
        json_schema_extra=PLATFORM_SPECIFIC,
        default=None,
        description="gke-gpu, gke-tpu with fullserver:cluster: the existing cluster's location, the region or one of its zones (a zonal cluster); empty: the region.",
    )
    private_endpoint: StrictBool = Field(
        json_schema_extra=PLATFORM_SPECIFIC,
        default=False,
        description="gke-gpu, gke-tpu, eks-gpu, a created cluster: its control plane answers only on its private address (kubectl and pulumi up then run from inside its network).",
    )
    cluster_identity: Annotated[access.Identity | None, _unset("")] = Field(
        json_schema_extra=PLATFORM_SPECIFIC,
        default=None,
        description="eks-gpu, a created cluster: how pods get AWS credentials, pod-identity (the Pod Identity Agent add-on) or irsa (an IAM OIDC provider); empty: pod-identity.",
    )
    node_provisioner: Annotated[Provisioner | None, _unset("")] = Field(
        json_schema_extra=PLATFORM_SPECIFIC,
        default=None,
        description="eks-gpu: what grows the accelerator nodes, cluster-autoscaler (managed node groups, spot first by its priority expander) or karpenter (a NodePool over the balanced set, spot before on-demand); on an existing cluster, what the plan expects it to run; empty: cluster-autoscaler.",
    )
    subnets: Annotated[access.Subnets | None, _unset([])] = Field(
        json_schema_extra=PLATFORM_SPECIFIC,
        default=None,
        description="eks-gpu with fullserver:cluster: subnets of the cluster's VPC for the node groups (subnet-...); empty: the cluster's own.",
    )
    control_plane_source_ranges: Annotated[access.ApiRanges | None, _unset([])] = Field(
        json_schema_extra=PLATFORM_SPECIFIC,
        default=None,
        description="gke-gpu, gke-tpu, eks-gpu, a created cluster: the only CIDR ranges its Kubernetes API admits (EKS at most 40, GKE 50; kubectl and pulumi up run from them); empty: none (EKS: private only; GKE: its DNS endpoint with IAM).",
    )
    control_plane_open_to_internet: StrictBool = Field(
        json_schema_extra=PLATFORM_SPECIFIC,
        default=False,
        description="gke-gpu, gke-tpu, eks-gpu, a created cluster: open its Kubernetes API to the whole internet (0.0.0.0/0), on purpose; the plan warns.",
    )
    dedicated: Annotated[Dedicated | None, _unset({})] = Field(
        json_schema_extra=PLATFORM_SPECIFIC,
        default=None,
        description="Bare metal: the rented or owned servers (monthlyUsd, host hardware, hosts to reach over SSH).",
    )
    serving: Annotated[ServingConfig | None, _unset({})] = Field(
        json_schema_extra=PLATFORM_SPECIFIC,
        default=None,
        description="Serving profiles: the model server of each replica (model, image, args, port, healthPath, requestsPerSecond, loadMinutes, tokenSecret, apiKeySecret, certificateArn, domains, podMetrics, plainHttp); empty: vLLM's OpenAI server with a small default model.",
    )
    alternatives: Annotated[list[Alternative], Field(max_length=MAX_ALTERNATIVES)] = Field(
        default_factory=list,  # a factory: a default list is deep-copied for every stack read
        description="Other platforms to price the same job on (platform, and optionally profile, accelerator, region).",
    )
    ssh_private_key: bool = Field(
        json_schema_extra=PLATFORM_SPECIFIC,
        default=False,
        description="The SSH private key, set with `pulumi config set --secret fullserver:sshPrivateKey < key`: bare metal is configured with it; cloud nodes get its public half, and a profile with verify.on_up logs in with it; never read by the plan.",
    )

    @field_validator("ssh_source_ranges")
    @classmethod
    def _narrow(cls, v: list[str] | None) -> list[str] | None:
        return None if v is None else check_ssh_ranges(v)

    @field_validator("region")
    @classmethod
    def _region_name(cls, region: str) -> str:
        return region if region == "" else check_region_name(region)  # "": chosen from fullserver:location

    @field_validator("location")
    @classmethod
    def _location_names(cls, names: list[str] | None) -> list[str] | None:
        for name in names or []:
            check_region_name(name)  # a location's name is held to a region name's form
        return names

    @field_validator("dataset_location")
    @classmethod
    def _dataset_home(cls, text: str | None) -> str | None:
        if text is not None and not DATASET_LOCATION.fullmatch(text):
            raise ValueError(
                f"{text[:60]!r} is neither a region (us-east-1) nor a bucket with its region (s3://bucket/path@us-east-1)"
            )
        return text

    @field_validator("cluster_location")
    @classmethod
    def _location_in_region(cls, location: str | None, info: ValidationInfo) -> str | None:
        region = info.data.get("region")
        problem = None if location is None or not region else access.location_problem(location, region)
        if problem is not None:
            raise ValueError(problem)
        return location

    @field_validator("owner")
    @classmethod
    def _someone(cls, owner: str) -> str:
        """Every resource is labelled with its owner: an empty label says nobody owns it."""
        if not owner.strip():
            raise ValueError("must name who owns the environment (a team or a person)")
        changing = display_changing(owner)  # it would reach every tag and label, and every terminal
        if changing is not None:
            raise ValueError(f"holds {changing} (a name, without escapes, line breaks or bidi controls)")
        return owner

    @field_validator("ssh_private_key", mode="before")
    @classmethod
    def _encrypted(cls, v: object) -> bool:
        """Set only as Pulumi stores a secret (``{secure: ...}``): a private key in plain text in a
        stack file would be committed with it. The ciphertext itself is dropped here."""
        if v == "" or v is False:
            return False
        if isinstance(v, dict) and set(v) == {"secure"} and isinstance(v["secure"], str):
            return True
        raise ValueError(
            "is a secret and must be stored encrypted: pulumi config set --secret fullserver:sshPrivateKey < key"
        )

    @field_validator("zone")
    @classmethod
    def _zone_in_region(cls, zone: str | None, info: ValidationInfo) -> str | None:
        """A cloud zone in the form its platform names zones (``fullserver.platforms``; any cloud's
        when the platform is left to the profile), inside the region; elsewhere a label."""
        region, platform = info.data.get("region"), info.data.get("platform")
        if zone is None or not region:
            return zone  # without a region, _check_place refuses it
        if platform is not None and rules_for(platform).zone_form is None:
            if not _LABEL.fullmatch(zone):
                raise ValueError(f"'{zone}' is not a label (lowercase letters, digits and '-')")
            return zone
        problem = zone_problem(zone, region, platform)
        if problem is not None:
            raise ValueError(problem)
        return zone

    @model_validator(mode="after")
    def _coherent(self) -> Workload:
        """Keys that cannot apply to the stack's platform are refused, never silently ignored."""
        self._check_place()
        self._check_way_in()
        platform = self.platform
        if platform is None:
            return self
        rules = rules_for(platform)
        key = rules.supply.hardware_key
        if getattr(self, key) is None:
            raise KeyProblem(key, *rules.supply.hardware_missing(platform.value))
        for key in self.platform_keys():
            why = option_refusal(key, platform)
            if why is not None:
                raise KeyProblem(key, why, f"remove fullserver:{key}")
        for rule in rules.stack_rules:
            refused = rule(self)
            if refused is not None:
                raise KeyProblem(refused.key, refused.what, refused.hint)
        return self

    def _check_place(self) -> None:
        """A region, or a location to choose one from: the zone belongs to a region, so it waits for the pin."""
        if not self.region and self.location is None:
            raise KeyProblem(
                "region", "is not set", "set fullserver:region, or fullserver:location to let the plan choose"
            )
        if not self.region and self.zone is not None:
            raise KeyProblem(
                "zone",
                "is set, but the region is still to be chosen",
                "remove fullserver:zone until the stack is pinned",
            )

    def _check_way_in(self) -> None:
        """Keys of a created cluster with ``cluster`` set, or of an existing one without it."""
        found = access.cluster_keys_refusal(self)
        if found is not None:
            raise KeyProblem(*found)

    def platform_keys(self) -> list[str]:
        """The keys set here that only some platforms take (``PlatformRules.options``) or some
        refuse (``PlatformRules.lacks``): they narrow where the stack can land. The fields marked
        ``PLATFORM_SPECIFIC`` say which (``fullserver.workload_keys``)."""
        return set_keys(self)

    def takes_keys(self, platform: Platform) -> bool:
        """Whether ``platform`` takes every platform-specific key set here (``option_refusal``)."""
        return all(option_refusal(key, platform) is None for key in self.platform_keys())


PLATFORM_KEYS = tuple(declared_keys(Workload))
"""Every platform-specific stack key, as the model's fields mark them."""


def key_refusal(key: str, platform: Platform) -> str | None:
    """Why ``platform`` refuses the stack key ``key``; ``None`` also for a key every platform takes."""
    return option_refusal(key, platform) if key in PLATFORM_KEYS else None


def lifecycle_for(profile: Profile, workload: Workload) -> Lifecycle:
    """The profile's lifecycle with the stack's ``ttlHours``: a TTL needs an ephemeral profile and
    stays within its TTL (the one place this rule is said; ``check_workload`` and sizing ask it);
    with ``unprotect``, nothing protected, so that a ``destroy`` after ``up`` goes through."""
    life = profile.lifecycle.model_copy(update={"protect": False}) if workload.unprotect else profile.lifecycle
    if workload.ttl_hours is None:
        return life
    if life.mode != "ephemeral" or life.ttl_hours is None:
        raise InputError(
            "fullserver:ttlHours",
            f"profile '{profile.name}' is persistent",
            "remove ttlHours or use an ephemeral profile",
        )
    if workload.ttl_hours > life.ttl_hours:
        raise InputError(
            "fullserver:ttlHours",
            f"{workload.ttl_hours} h is above the {life.ttl_hours:g} h TTL of profile '{profile.name}'",
            f"ask for at most {life.ttl_hours:g}",
        )
    return life.model_copy(update={"ttl_hours": workload.ttl_hours})


def autostop_minutes_for(profile: Profile, workload: Workload) -> int:
    """The stack's idle minutes, ``autostopMinutes``, else its profile's ``autostop_minutes`` (0:
    never): carried in the spec (``EnvironmentSpec.autostop_minutes``) for the plan and the platforms."""
    return workload.autostop_minutes if workload.autostop_minutes is not None else profile.autostop_minutes


def resolve_accelerator(workload: Workload, catalog: Catalog) -> tuple[str | None, bool]:
    """The accelerator model named by the workload, and whether it names a TPU type (slice)."""
    assert workload.accelerator is not None
    if workload.accelerator in catalog.slice_types:
        return None, True
    return catalog.accelerator(workload.accelerator).name, False


def platforms_for(profile: Profile, workload: Workload, catalog: Catalog) -> list[Platform]:
    """The profile's platforms, in its order, that can serve the workload's accelerator (whether
    they take the stack's platform-specific keys is ``Workload.takes_keys``, asked by sizing)."""
    if workload.platform is not None:
        return [workload.platform]
    if workload.accelerator is None:
        return [p for p in profile.platforms if not rules_for(p).supply.from_catalog]
    acc_name, is_tpu_type = resolve_accelerator(workload, catalog)
    kind = AcceleratorKind.TPU if is_tpu_type else catalog.accelerators[str(acc_name)].kind
    return [
        p
        for p in profile.platforms
        if kind in rules_for(p).accelerator_kinds and (rules_for(p).supply.from_catalog or workload.dedicated)
    ]
