"""Named workload-maturity profiles: what a workload at a given stage needs from its server.

A profile is data (``profiles/<name>.yaml``). It states the stage, training or inference, the
platforms in order of preference, the pricing model, the lifecycle, the balance minimums per
accelerator (each with the reason it exists), the topology and the security defaults.
``extends:`` inherits another profile, every field (``description`` too) the file leaves out;
nested mappings merge, lists and scalars replace.

Design notes: docs/design/core.md.
"""

from __future__ import annotations

import difflib
import importlib.metadata
from collections.abc import Iterable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from fullserver.errors import InputError
from fullserver.platform import Platform
from fullserver.platform import PricingModel as PricingModel  # defined below profiles and platforms
from fullserver.platforms import rules_for
from fullserver.rules import HOURS_PER_MONTH, MAX_HOURS_PER_MONTH, check_ssh_ranges
from fullserver.yamlio import parse, read_yaml

PROFILES_DIR = Path(__file__).resolve().parent.parent / "profiles"
"""``profiles/`` of a source checkout; it does not exist when fullserver is installed from a wheel."""

INSTALLED_PROFILES = ("share", "fullserver", "profiles")
"""Where ``[tool.setuptools.data-files]`` installs the wheel's copy, relative to the install prefix."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Stage(StrEnum):
    """Workload maturity, from changing work to steady demand."""

    EXPERIMENTATION = "experimentation"
    FINE_TUNING = "fine-tuning"
    SCALE_TRAINING = "scale-training"
    PRODUCTION_INFERENCE = "production-inference"
    STEADY_DEDICATED = "steady-dedicated"


class Purpose(StrEnum):
    TRAINING = "training"
    INFERENCE = "inference"


class Fabric(StrEnum):
    """The scale-out fabric a multi-node profile requires."""

    NONE = "none"
    EFA = "efa"
    GPUDIRECT = "gpudirect"
    ICI = "ici"
    ANY = "any"


class Minimum(Strict):
    """One balance minimum and why it exists (with the reference it comes from)."""

    value: Annotated[float, Field(gt=0)]
    reason: Annotated[str, Field(min_length=10)]


class CpuMinimum(Minimum):
    """Per accelerator; ``core`` counts physical cores (cloud vCPUs are hyper-threads: 2 per core)."""

    unit: Literal["vcpu", "core"] = "vcpu"


class Balance(Strict):
    """Minimums per accelerator (per TPU chip, per GPU); ``None`` means not required.

    ``network_gbps_per_accelerator`` is the host network every node needs (datasets, checkpoints,
    model downloads); ``internode_network_gbps_per_accelerator`` is traffic between nodes (gradient
    all-reduce) and applies only when the environment has more than one node.
    """

    cpu_per_accelerator: CpuMinimum
    ram_per_accelerator_memory: Minimum
    ram_floor_gib: Minimum
    nvme_gib_per_accelerator: Minimum | None = None
    nvme_may_be_attached: bool = Field(
        default=False, description="block storage may make up local NVMe the shape lacks"
    )
    network_gbps_per_accelerator: Minimum | None = None
    internode_network_gbps_per_accelerator: Minimum | None = Field(
        default=None, description="host network between nodes; checked only with more than one node"
    )
    internode_network_gbps_floor: Minimum | None = Field(
        default=None, description="host network between nodes per node, whatever its accelerator count"
    )


WaivableMinimum = Literal[
    "cpu_per_accelerator",
    "ram_per_accelerator_memory",
    "ram_floor_gib",
    "nvme_gib_per_accelerator",
    "network_gbps_per_accelerator",
    "internode_network_gbps_per_accelerator",
    "internode_network_gbps_floor",
]


class BalanceOverride(Strict):
    """A platform's changes to the balance. ``waived`` drops a minimum there and says why (the
    reason its own rule gives does not apply on that platform); a field set to null drops it too."""

    cpu_per_accelerator: CpuMinimum | None = None
    ram_per_accelerator_memory: Minimum | None = None
    ram_floor_gib: Minimum | None = None
    nvme_gib_per_accelerator: Minimum | None = None
    nvme_may_be_attached: bool | None = None
    network_gbps_per_accelerator: Minimum | None = None
    internode_network_gbps_per_accelerator: Minimum | None = None
    internode_network_gbps_floor: Minimum | None = None
    waived: dict[WaivableMinimum, Annotated[str, Field(min_length=10)]] = Field(
        default={}, description="minimums this platform drops, each with the reason it does not apply there"
    )

    @model_validator(mode="after")
    def _waived_not_set(self) -> BalanceOverride:
        both = sorted(k for k in self.waived if getattr(self, k) is not None)
        if both:
            raise ValueError(f"{', '.join(both)} both set and waived: keep one")
        return self


class Lifecycle(Strict):
    mode: Literal["ephemeral", "persistent"]
    ttl_hours: Annotated[float, Field(gt=0)] | None = None
    protect: bool = False

    @model_validator(mode="after")
    def _ttl_iff_ephemeral(self) -> Lifecycle:
        if self.mode == "ephemeral" and self.ttl_hours is None:
            raise ValueError("an ephemeral lifecycle needs ttl_hours")
        if self.mode == "ephemeral" and self.protect:
            raise ValueError("an ephemeral environment cannot be protected")
        return self


class Topology(Strict):
    nodes: Literal["single", "multi"] = "single"
    fabric: Fabric = Fabric.NONE
    compact_placement: bool = False


class Security(Strict):
    public_ip: bool = False
    ssh_source_ranges: list[str] = []

    @field_validator("ssh_source_ranges")
    @classmethod
    def _narrow(cls, ranges: list[str]) -> list[str]:
        return check_ssh_ranges(ranges)


class Serving(Strict):
    """A managed group behind the balanced shape, for inference whose traffic varies."""

    min_replicas: Annotated[int, Field(ge=1)] = 1
    max_replicas: Annotated[int, Field(ge=1)] = 1
    target_utilisation: Annotated[float, Field(gt=0, le=1)] = 0.6
    """Share of a replica's request capacity (``replica_requests_per_second``) the autoscaler holds."""
    spread_zones: bool = False
    load_balancer: Literal["internal", "external"] = "internal"
    """Who reaches the endpoint: the environment's network and networks peered with it (internal),
    or the internet (external)."""
    replica_requests_per_second: Annotated[float, Field(gt=0, le=10_000)] = 4
    """Requests per second one replica serves at full load: the load balancer's capacity per
    replica and, times ``target_utilisation``, what the autoscaler holds. A request count works on
    any number of GPUs per replica, where a GPU-utilisation metric reports one series per GPU."""
    model_load_minutes: Annotated[int, Field(ge=1, le=120)] = 20
    """Boot to healthy: drivers, the server image, the weights from the model hub into GPU memory.
    Health checks leave a new replica alone this long (autohealing delay, ASG grace period)."""

    @model_validator(mode="after")
    def _min_le_max(self) -> Serving:
        if self.min_replicas > self.max_replicas:
            raise ValueError("min_replicas exceeds max_replicas")
        return self


class StoragePolicy(Strict):
    """The data disk: sized from the dataset, provisioned for throughput per accelerator."""

    boot_disk_gib: Annotated[int, Field(ge=10)] = 200
    dataset_headroom: Annotated[float, Field(ge=1)] = 1.25
    throughput_mbps_per_accelerator: Minimum | None = None
    iops_per_accelerator: Minimum | None = None


class CostAssumptions(Strict):
    """What the cost estimate assumes beyond the hourly price."""

    hours_per_month: Annotated[float, Field(gt=0, le=MAX_HOURS_PER_MONTH)] = HOURS_PER_MONTH
    idle_share: Annotated[float, Field(ge=0, lt=1)] = 0.0
    commitment_years: Annotated[int, Field(ge=0, le=3)] = 0
    idle_stretches_per_month: Annotated[float, Field(ge=0, le=MAX_HOURS_PER_MONTH)] = 0
    """How many times a month the machine falls idle while up (the end of each working session or
    run). Always on, the idle hours are ``idle_share`` of the paid hours; with autostop each
    stretch bills at most the autostop minutes (``fullserver.autostop.plan``)."""
    spot_share: Annotated[float, Field(ge=0, le=1)] = 0.8
    """Spot-with-fallback: the share of running hours expected on spot capacity; the rest runs on
    the on-demand fallback. Shapes are ranked and priced at this mix (the expected cost), so a
    shape is never preferred only because its spot price is known. The default assumes one hour in
    five falls back (spot capacity out at launch, or an interruption until capacity returns)."""
    capacity_band: Annotated[float, Field(ge=0, le=1)] = 0.15
    """The balanced set's price band (``fullserver.capacity``): other shapes that pass the profile
    join the chosen one in the cloud's fallback (more shapes and zones find capacity far more often)
    when their rate is at most this share over the chosen shape's; 0: the chosen shape alone."""


class VerifyPolicy(Strict):
    """``fullserver verify`` as the last step of ``pulumi up`` (opt-in: bare metal inside its
    provider, cloud nodes through ``components.node_verify`` where the stack holds
    ``fullserver:sshPrivateKey``): each host's
    delivered balance (GPU links, NVLink, memory health, scratch throughput) is measured after it is
    configured, and a host that does not deliver is reported while it is still cheap to replace."""

    on_up: bool = False
    fio_seconds: Annotated[int, Field(ge=1, le=600)] = 10
    """Seconds per fio run (three runs: sequential write, sequential read, 4 KiB random read)."""
    fio_size_mib: Annotated[int, Field(ge=1, le=65536)] = 1024
    """The size of fio's file in the scratch filesystem (removed afterwards)."""


class Profile(Strict):
    name: str
    description: str
    stage: Stage
    purpose: Purpose
    platforms: Annotated[list[Platform], Field(min_length=1)]
    platform_order: Literal["preference", "requirement"] = "preference"
    """With the stack's platform left open: ``preference`` sizes on every platform listed and takes
    the cheapest balanced option by expected hourly cost (the order breaks ties); ``requirement``
    takes the first platform where a shape fits, and the plan says what that costs over the
    cheapest."""
    pricing: PricingModel
    lifecycle: Lifecycle
    balance: Balance
    platform_balance: dict[Platform, BalanceOverride] = Field(
        default={}, description="per-platform overrides of balance minimums (null drops one)"
    )
    topology: Topology = Topology()
    security: Security = Security()
    serving: Serving | None = None
    storage: StoragePolicy = StoragePolicy()
    cost: CostAssumptions = CostAssumptions()
    verify: VerifyPolicy = VerifyPolicy()
    autostop_minutes: Annotated[int, Field(ge=0, le=10_080)] = 0
    """Minutes a VM node may sit idle (no accelerator use, no session, no keep marker) before it
    stops itself (``fullserver.autostop``); 0: never. A stack overrides it with
    ``fullserver:autostopMinutes``. Serving profiles never autostop: their floor is their minimum
    replicas."""

    @model_validator(mode="after")
    def _coherent(self) -> Profile:
        if len(set(self.platforms)) != len(self.platforms):
            raise ValueError("platforms lists a platform twice")
        refusing = [p for p in self.platforms if self.pricing not in rules_for(p).pricing]
        if refusing:
            takers = ", ".join(p.value for p in Platform if self.pricing in rules_for(p).pricing)
            raise ValueError(f"{self.pricing.value} pricing applies only to platforms: [{takers}]")
        if self.serving is not None and self.purpose is not Purpose.INFERENCE:
            raise ValueError("serving applies only to inference profiles")
        if self.serving is not None and self.autostop_minutes:
            raise ValueError(
                "autostop_minutes: a serving profile never stops (its floor is serving.min_replicas); set 0"
            )
        for platform in self.platform_balance:
            self.balance_for(platform)
        return self

    _merged: dict[Platform, tuple[Balance, BalanceOverride, Balance]] = PrivateAttr(default_factory=dict)
    """``balance_for``'s answers, each with the base and override it was merged from, kept when
    first asked (the validator asks every override): sizing asks it for every shape it weighs, and
    merging validates a new ``Balance`` each time. Safe to keep: both are frozen, an answer is used
    only while the profile still holds those very objects (a copy with another balance or override
    merges afresh), and nothing kept is ever replaced, so copies sharing it agree."""

    def balance_for(self, platform: Platform) -> Balance:
        """The balance minimums on one platform, after its overrides."""
        override = self.platform_balance.get(platform)
        if override is None:
            return self.balance
        kept = self._merged.get(platform)
        if kept is not None and kept[0] is self.balance and kept[1] is override:
            return kept[2]
        changes = {key: getattr(override, key) for key in override.model_fields_set if key != "waived"}
        changes.update(dict.fromkeys(override.waived))
        merged = Balance.model_validate({**dict(self.balance), **changes})
        self._merged.setdefault(platform, (self.balance, override, merged))
        return merged


MAX_EXTENDS = 32
"""The longest ``extends`` chain: the shipped profiles use one link, a team's a few more."""

Layer = dict[str, tuple[Path, dict[str, Any]]]
"""One profiles directory: each profile's name, file and raw data."""


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _known(name: str, known: Iterable[str]) -> str:
    """A hint for a name that is not a profile: the close matches first, then every name."""
    names = sorted(set(known))
    close = difflib.get_close_matches(name, names, n=3)
    listed = f"known profiles: {', '.join(names)}"
    return f"did you mean {' or '.join(close)}? {listed}" if close else listed


def _top(name: str, layers: list[Layer]) -> int | None:
    """The index of the last (highest) layer defining ``name``."""
    return next((i for i in range(len(layers) - 1, -1, -1) if name in layers[i]), None)


def _resolve(name: str, layers: list[Layer]) -> dict[str, Any]:
    """A profile's data after its ``extends`` chain, walked without recursion and at most
    ``MAX_EXTENDS`` links long (a chain 1,200 long once ended in a RecursionError).

    A parent name means the highest layer's profile of that name, so a project's copy of a
    shipped profile serves every profile extending it; except that a profile extending its own
    name extends the one a layer below: a project's ``fine-tuning`` may ``extends: fine-tuning``
    to change the shipped one rather than copy it. Nested mappings merge, lists and scalars
    replace, and every field (``description`` too) is inherited unless the child sets it.
    """
    level = _top(name, layers)
    assert level is not None, name
    chain: list[tuple[str, int]] = [(name, level)]
    path, data = layers[level][name]
    parts = [data]
    while (parent := data.get("extends")) is not None:
        where = f"{path}: field 'extends'"
        if not isinstance(parent, str):
            raise InputError(where, "must be a profile name", "write extends: <profile-name>")
        own_name = parent == chain[-1][0]
        found = _top(parent, layers[:level] if own_name else layers)
        names = " -> ".join([n for n, _ in chain] + [parent])
        if found is None and own_name:
            raise InputError(
                where,
                f"circular extends: {names}",
                "only a project's profile may extend the shipped profile of its own name; extend another one",
            )
        if found is None:
            raise InputError(where, f"unknown profile '{parent}'", _known(parent, (n for lay in layers for n in lay)))
        if (parent, found) in chain:
            raise InputError(where, f"circular extends: {names}", "remove one extends from the cycle")
        if len(chain) > MAX_EXTENDS:
            raise InputError(
                f"{layers[chain[0][1]][name][0]}: field 'extends'",
                f"the extends chain from '{name}' is longer than {MAX_EXTENDS} profiles",
                "extend a profile nearer the root, or copy the fields",
            )
        level = found
        chain.append((parent, level))
        path, data = layers[level][parent]
        parts.append(data)
    merged: dict[str, Any] = {}
    for part in reversed(parts):
        merged = _merge(merged, {k: v for k, v in part.items() if k != "extends"})
    return merged


def shipped_profiles_dir() -> Path:
    """The checkout's ``profiles/`` when this module runs from a checkout (the files being edited
    win over any installed copy), else the copy installed with the ``fullserver`` distribution."""
    if PROFILES_DIR.is_dir() and (PROFILES_DIR.parent / "pyproject.toml").is_file():
        return PROFILES_DIR
    try:
        dist = importlib.metadata.distribution("fullserver")
    except importlib.metadata.PackageNotFoundError:
        return PROFILES_DIR
    for file in dist.files or ():
        if file.suffix == ".yaml" and file.parts[-4:-1] == INSTALLED_PROFILES:
            return Path(str(dist.locate_file(file))).resolve().parent
    return PROFILES_DIR


def project_profiles_dir(start: Path | None = None) -> Path | None:
    """``profiles/`` beside the nearest ``Pulumi.yaml`` at or above ``start`` (default: the
    working directory), or None: a team's own profiles live in its Pulumi project."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "Pulumi.yaml").is_file() or (folder / "Pulumi.yml").is_file():
            found = folder / "profiles"
            return found if found.is_dir() else None
    return None


def profile_dirs() -> list[Path]:
    """Directories ``load_profiles()`` reads, later ones overriding earlier ones by profile name."""
    shipped = shipped_profiles_dir()
    project = project_profiles_dir()
    if project is None or project.resolve() == shipped.resolve():
        return [shipped]
    return [shipped, project]


def load_profiles(directory: Path | None = None) -> dict[str, Profile]:
    """Every ``*.yaml`` under ``directory`` (only there), or under ``profile_dirs()`` when no
    directory is given; resolved and validated; the file stem is the name.

    Each directory is a layer kept apart (not flattened by name), so a profile can extend the
    one it replaces in the layer below.
    """
    directories = [directory] if directory is not None else profile_dirs()
    layers: list[Layer] = []
    for folder in directories:
        layer: Layer = {}
        for path in sorted(folder.glob("*.yaml")):
            name = path.stem
            data = read_yaml(path)
            if "name" in data and data["name"] != name:
                raise InputError(f"{path}: field 'name'", f"'{data['name']}' differs from the file name", "rename one")
            layer[name] = (path, {**data, "name": name})
        layers.append(layer)
    names = list(dict.fromkeys(name for layer in layers for name in layer))
    if not names:
        raise InputError(str(directories[-1]), "no profiles found", "add profiles/<name>.yaml files")
    top = {name: layers[_top(name, layers) or 0][name][0] for name in names}
    return {name: parse(Profile, _resolve(name, layers), str(top[name])) for name in names}


def get_profile(name: str, profiles: dict[str, Profile], where: str = "fullserver:profile") -> Profile:
    """The named profile, or one line naming it with the close matches and every known name."""
    try:
        return profiles[name]
    except KeyError:
        raise InputError(where, f"unknown profile '{name}'", _known(name, profiles)) from None


def profile_file_schema() -> dict[str, Any]:
    """The JSON Schema of a profile *file* (``profiles/<name>.yaml``), for editors and CI.

    It differs from ``Profile``'s schema where the file differs from the resolved profile: the
    name is the file's stem, so not required; and a file with ``extends:`` inherits what it
    omits, nested mappings included, so under ``extends`` no field (at any depth) is required,
    while every other check (types, enums, bounds, unknown keys) still applies.
    """
    full = Profile.model_json_schema()
    defs: dict[str, Any] = full.pop("$defs", {})
    full["properties"]["extends"] = {
        "type": "string",
        "minLength": 1,
        "description": "the profile this one inherits: nested mappings merge, lists and scalars replace",
    }
    full["required"] = [r for r in full.get("required", []) if r != "name"]
    partial = _partial(full)
    partial["required"] = ["extends"]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "fullserver profile file",
        "description": "profiles/<name>.yaml: a workload-maturity profile (the file name is its name)",
        "type": "object",
        # Every key at the top as well, so editors complete them whichever branch applies.
        "properties": partial["properties"],
        "$defs": {**defs, **{f"{key}{_PARTIAL}": _partial(value) for key, value in defs.items()}},
        "if": {"required": ["extends"]},
        "then": partial,
        "else": full,
    }


_PARTIAL = "Partial"


def _partial(schema: Any) -> Any:
    """A copy of a schema with no ``required`` list anywhere, its references to partial copies."""
    if isinstance(schema, list):
        return [_partial(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "required" and isinstance(value, list):
            continue
        if key in ("default", "const", "enum", "examples"):
            out[key] = value  # data, not schema
            continue
        if key == "$ref" and isinstance(value, str) and value.startswith("#/$defs/"):
            out[key] = value + _PARTIAL
        elif key in ("properties", "$defs", "patternProperties") and isinstance(value, dict):
            out[key] = {name: _partial(sub) for name, sub in value.items()}  # names, not keywords
        else:
            out[key] = _partial(value)
    return out
