"""A workload: what one environment needs, as written in one stack's config.

Stack files are Pulumi's own (``stacks/Pulumi.<env>.yaml``, keys ``fullserver:<key>``), so the
same file drives ``pulumi up`` and the offline ``fullserver plan``. Keys are camelCase as Pulumi
config keys usually are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from fullserver.catalog.model import Platform
from fullserver.errors import InputError
from fullserver.netcheck import check_ssh_ranges
from fullserver.yamlio import parse, read_yaml

CONFIG_NAMESPACE = "fullserver"


class Camel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True)


class DedicatedHost(Camel):
    """A dedicated server's hardware as rented or owned (an audit checks it against the real host)."""

    accelerator: str | None = None
    accelerator_count: Annotated[int, Field(ge=0)] = 0
    vcpus: Annotated[int, Field(gt=0)]
    physical_cores: Annotated[int, Field(gt=0)] | None = None
    memory_gib: Annotated[float, Field(gt=0)]
    local_nvme_gib: Annotated[float, Field(ge=0)] = 0
    network_gbps: Annotated[float, Field(gt=0)]


class InventoryHost(Camel):
    """One bare-metal server reachable over SSH, with its pinned host keys."""

    name: str
    address: str
    port: Annotated[int, Field(gt=0, lt=65536)] = 22
    user: str = "root"
    host_keys: list[str] = []
    known_hosts_file: str | None = None


class Dedicated(Camel):
    """Bare-metal environments: the monthly price comes from the contract, not a catalog."""

    monthly_usd: Annotated[float, Field(gt=0)]
    setup_usd: Annotated[float, Field(ge=0)] = 0
    provider: str = ""
    host: DedicatedHost
    hosts: list[InventoryHost] = []
    included_egress_gb_month: Annotated[float, Field(ge=0)] = 0
    egress_usd_per_gb: Annotated[float, Field(ge=0)] = 0


class Alternative(Camel):
    """Another platform to price the same job on, e.g. a TPU slice beside a GPU node."""

    platform: Platform
    profile: str | None = None
    accelerator: str | None = None
    accelerator_count: Annotated[int, Field(gt=0)] | None = None
    nodes: Annotated[int, Field(gt=0)] | None = None
    region: str | None = None
    dedicated: Dedicated | None = None


class Workload(Camel):
    profile: str
    platform: Platform | None = None
    region: str
    zone: str | None = None
    framework: Literal["pytorch", "jax", "tensorflow", "other"] = "pytorch"
    accelerator: str | None = None
    accelerator_count: Annotated[int, Field(gt=0)] | None = None
    nodes: Annotated[int, Field(gt=0)] = 1
    owner: str = "unknown"
    dataset_gib: Annotated[float, Field(ge=0)] = 0
    egress_gb_month: Annotated[float, Field(ge=0)] = 0
    hours_per_month: Annotated[float, Field(gt=0, le=744)] | None = None
    budget_monthly_usd: Annotated[float, Field(gt=0)] | None = None
    ssh_source_ranges: list[str] | None = None
    public_ip: bool | None = None
    ttl_hours: Annotated[float, Field(gt=0)] | None = None
    queued: bool = False
    image: str | None = None
    reservation: str | None = Field(
        default=None,
        description="capacity to consume: an AWS capacity reservation id (cr-...) or a GCP reservation name",
    )
    capacity_block: bool = Field(default=False, description="the AWS reservation is an EC2 Capacity Block for ML")
    dedicated: Dedicated | None = None
    alternatives: list[Alternative] = []

    @field_validator("ssh_source_ranges")
    @classmethod
    def _narrow(cls, v: list[str] | None) -> list[str] | None:
        return None if v is None else check_ssh_ranges(v)

    @model_validator(mode="after")
    def _coherent(self) -> Workload:
        if self.platform is Platform.BARE_METAL and self.dedicated is None:
            raise ValueError("platform bare-metal needs a 'dedicated' section (monthlyUsd and host)")
        if self.platform not in (None, Platform.BARE_METAL) and self.accelerator is None:
            raise ValueError("an accelerator is needed (a GPU model like H100-80GB, or a TPU type like v5litepod-8)")
        return self


class Stack(BaseModel):
    """A stack config file: its environment name, path and validated workload."""

    model_config = ConfigDict(frozen=True)

    name: str
    path: str
    workload: Workload


def workload_from_config(config: dict[str, Any], where: str) -> Workload:
    """Strip the ``fullserver:`` namespace and validate; other namespaces (``gcp:project``...) pass by."""
    ours: dict[str, Any] = {}
    for key, value in config.items():
        ns, _, name = str(key).rpartition(":")
        if ns == CONFIG_NAMESPACE:
            ours[name] = value
    return parse(Workload, ours, where, prefix=f"{CONFIG_NAMESPACE}:")


def stack_name(path: Path) -> str:
    name = path.name
    if not (name.startswith("Pulumi.") and name.endswith(".yaml")):
        raise InputError(str(path), "not a stack config file", "name it stacks/Pulumi.<env>.yaml")
    return name[len("Pulumi.") : -len(".yaml")]


def load_stack(path: Path) -> Stack:
    data = read_yaml(path)
    config = data.get("config", {})
    if not isinstance(config, dict):
        raise InputError(f"{path}: field 'config'", "expected a mapping of keys to values", "see stacks/ examples")
    return Stack(name=stack_name(path), path=str(path), workload=workload_from_config(config, str(path)))


def find_stacks(directory: Path, names: list[str]) -> list[Path]:
    """The named stacks (all of them when none is named), in name order."""
    if not names:
        found = sorted(directory.glob("Pulumi.*.yaml"))
        if not found:
            raise InputError(str(directory), "no stack configs found", "add stacks/Pulumi.<env>.yaml")
        return found
    paths = []
    for name in names:
        path = Path(name) if name.endswith(".yaml") else directory / f"Pulumi.{name}.yaml"
        if not path.is_file():
            known = ", ".join(stack_name(p) for p in sorted(directory.glob("Pulumi.*.yaml")))
            raise InputError(f"stack '{name}'", f"no file {path}", f"known stacks: {known}")
        paths.append(path)
    return paths
