"""The stack view's vocabulary: a compute node (what runs machines, of which shape, how many) and
the disks it carries, and how one resource refers to another.

Stack policies see *outputs* and follow references between resources (an instance to its launch
template, a VM to its data disk) through the engine's property dependencies, falling back to
matching ids and self links. ``policy.aws_nodes`` and ``policy.gcp_nodes`` read nodes from
resources; ``policy.stack_nodes`` finds every node of a stack.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pulumi_policy import PolicyResource
from pulumi_policy.proxy import UnknownValueError

from fullserver.catalog import Offer
from fullserver.platform import Platform
from fullserver.platforms import rules_for
from policy.resources import last_segment, number, plain


def _ids(resource: PolicyResource) -> set[str]:
    """What other resources may write when they refer to this one (id, self links, ARN)."""
    out: set[str] = set()
    for key in ("id", "selfLink", "selfLinkUnique", "arn"):
        try:
            value = plain(resource.props.get(key))
        except UnknownValueError:  # not known until the resource exists: nothing can refer to it by value yet
            continue
        if isinstance(value, str) and value:
            out.add(value)
    return out


def _strings(value: Any) -> set[str]:
    """Every string inside a prop: where a reference by id or self link may be written."""
    value = plain(value)
    if isinstance(value, str):
        return {value}
    if isinstance(value, Mapping):
        return {s for v in value.values() for s in _strings(v)}
    if isinstance(value, Sequence):
        return {s for v in value for s in _strings(v)}
    return set()


def referenced(
    resource: PolicyResource, prop: str, types: Sequence[str], resources: Sequence[PolicyResource]
) -> list[PolicyResource]:
    """Resources of ``types`` that ``resource.props[prop]`` refers to: the engine's property
    dependencies first (known even during preview), else ids / self links written in the prop."""
    deps = [r for r in (resource.property_dependencies or {}).get(prop, []) if r.resource_type in types]
    if deps:
        return deps
    wanted = _strings(resource.props.get(prop))
    if not wanted:
        return []
    return [r for r in resources if r.resource_type in types and _ids(r) & wanted]


@dataclass
class Disk:
    """A disk that bills per GiB-month (and per provisioned IOPS/throughput above the free baseline)."""

    provider: str
    kind: str
    gib: float
    iops: float = 0.0
    mbps: float = 0.0
    count: float = 1.0
    """How many of it each node carries: a TPU slice pool is one node (its slice, priced whole) whose
    every host's pod has its own data volume (``policy.kube_nodes``)."""


@dataclass
class Node:
    """Something that runs machines: ``count`` of one shape, the catalog offer when it has one.

    ``offer`` is ``None`` when the shape is not in the catalog (a CPU box, a GPU type fullserver
    does not list, a spot fleet's mix): the balance policy has nothing to hold it to, and the
    budget policy cannot price it, so it fails closed unless told ``allowUnpriced``."""

    resource: PolicyResource
    platform: Platform
    shape: str
    offer: Offer | None
    region: str | None
    labels: dict[str, str]
    count: float = 1.0
    spot_count: float = 0.0
    local_nvme_gib: float | None = None
    """Local NVMe actually attached, when the resource chooses it (GCP local SSDs); else the offer's."""
    attached_gib: float = 0.0
    """Block storage attached to each machine besides its boot disk."""
    disks: list[Disk] = field(default_factory=list)
    """Disks each machine carries inline (boot, template data disks, local SSDs)."""
    why_unpriced: str = ""
    """Why a node without an offer cannot be priced, when it is not simply a type missing from the catalog."""


def zone_region(zone: Any, platform: Platform) -> str | None:
    """The region of a zone (or its URL) as ``platform`` names zones (``us-central1-a`` ->
    ``us-central1`` on Google Cloud): clouds price by region, resources name a zone; how a zone is
    named is the platform's own rule (``PlatformRules.region_of_zone``)."""
    return rules_for(platform).region_of_zone(last_segment(zone))


def disks_gib(disks: Sequence[PolicyResource]) -> float:
    """The GiB of some disk resources together (what a machine has attached besides its boot disk)."""
    return sum(number(d.props.get("size")) or 0.0 for d in disks)
