"""Every graph the components can build, as a test sees it: each example stack, and each stack
varied along the axes that change what is built (platform, pricing model, serving on/off/HTTPS,
way in, ``deployWorkload``, a created or attached cluster).

A variant the plan refuses (a platform the profile does not allow, a reservation on spot) is left
out; ``MATRIX`` keeps only what ``pulumi up`` could be asked to build. Shared by the ledger and
the name tests, so a new axis reaches both.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.graph import Graph, graph_for_stack_plan
from fullserver.catalog import load_catalog
from fullserver.errors import FullserverError
from fullserver.plan import StackPlan, plan_stack
from fullserver.platforms import name_members
from fullserver.profiles import load_profiles
from fullserver.stacks import stack_from_config
from tests.components.conftest import STACKS
from tests.core.test_stack_config import ED25519_KEY, stack_config

EXAMPLES = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in STACKS.glob("Pulumi.*.yaml"))
OFFICE = "198.51.100.0/24"
PROJECT = "gcp:project"
CERTIFICATE = "arn:aws:acm:us-east-1:123456789012:certificate/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
PLATFORMS = {
    "aws-gpu": "us-east-1",
    "eks-gpu": "us-east-1",
    "gcp-gpu": "us-central1",
    "gke-gpu": "us-central1",
    "tpu-vm": "us-central1",
    "gke-tpu": "us-central1",
}
"""Each cloud platform, and a region of its cloud to move a stack of another cloud to."""
PROFILES = ("experimentation", "fine-tuning", "batch-inference", "realtime-inference", "scale-training")


def _serving(config: dict[str, Any], **keys: Any) -> dict[str, Any]:
    return {**(config.get("fullserver:serving") or {}), **keys}


def _axes(stack: str, config: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The single-axis changes of one example stack (``stack_config`` keys; None removes one)."""
    yield "as-is", {}
    yield "created-cluster", {"cluster": None, "clusterLocation": None}
    yield "attached-cluster", {"cluster": "ml-prod"}
    moved = {"cluster": None, "clusterLocation": None, "zone": None, "subnets": None}
    for platform, region in PLATFORMS.items():
        # a created EKS cluster's API is reached from stated ranges only (fullserver.kube.access)
        api: dict[str, Any] = {"controlPlaneSourceRanges": [OFFICE]} if platform == "eks-gpu" else {}
        api |= {PROJECT: "ml-project"} if region == "us-central1" else {}  # GCP needs its project
        yield f"platform={platform}", {"platform": platform, **moved, **api}
        yield f"platform={platform}@{region}", {"platform": platform, "region": region, **moved, **api}
    for profile in PROFILES:
        yield f"profile={profile}", {"profile": profile}  # batch-inference: multi-host TPU slices on spot
    # Cloud TPU's queue on spot, one host or a slice (issue 37), without the data disk a queued TPU
    # cannot attach; a platform without a queue refuses the key
    yield "queued-spot", {"queued": True, "profile": "batch-inference", "datasetGib": None}
    for profile in ("scale-training", "realtime-inference"):
        for reservation in ("cr-0123456789abcdef0", "ml-reservation"):
            yield f"reserved={reservation},{profile}", {"reservation": reservation, "profile": profile}
    h100s = {"profile": "scale-training", "nodes": 2, "accelerator": "H100-80GB", "acceleratorCount": 8}
    yield "2x8xH100", h100s
    yield "2x8xH100-created", {**h100s, **moved}
    yield "any-zone", {"zone": None}  # a spot set over every zone listing it (fullserver.capacity)
    yield "way-in", {"sshPublicKeys": [ED25519_KEY], "sshSourceRanges": [OFFICE]}
    yield "no-public-ip", {"publicIp": False}
    for deploy in (True, False):
        yield f"deployWorkload={deploy}", {"deployWorkload": deploy}
    yield "private-endpoint", {"privateEndpoint": True}
    yield "irsa", {"clusterIdentity": "irsa"}
    yield "karpenter", {"nodeProvisioner": "karpenter"}  # EKS: one NodePool, no node groups (issue 37)
    if config.get("fullserver:serving") is not None:
        yield "https-domains", {"serving": _serving(config, domains=["llm.example.com"])}
        yield "https-acm", {"serving": _serving(config, domains=["llm.example.com"], certificateArn=CERTIFICATE)}
        plain = {k: v for k, v in _serving(config).items() if k not in ("domains", "certificateArn")}
        yield "plain-http", {"serving": {**plain, "plainHttp": True}}


@dataclass(frozen=True)
class Variant:
    label: str
    plan: StackPlan
    graph: Graph


@functools.cache
def _context() -> tuple[dict[str, Any], Any]:
    return load_profiles(), load_catalog()


def plan_config(stack: str, config: dict[str, Any]) -> StackPlan:
    """The plan of one stack's config, as ``fullserver plan`` makes it."""
    profiles, catalog = _context()
    path = str(Path(STACKS) / f"Pulumi.{stack}.yaml")
    return plan_stack(stack_from_config(stack, path, config), profiles, catalog)


def variants(stack: str) -> Iterator[Variant]:
    """Every variant of ``stack`` the plan accepts, with its graph (a refused one is skipped)."""
    seen: set[str] = set()
    for label, changes in _axes(stack, stack_config(stack)):
        project = changes.pop(PROJECT, None)
        config = stack_config(stack, **changes)
        if project is not None:
            config.setdefault(PROJECT, project)
        try:
            plan = plan_config(stack, config)
            graph = graph_for_stack_plan(plan)
        except FullserverError:
            continue
        key = repr(sorted(config.items(), key=str))
        if key in seen:
            continue
        seen.add(key)
        yield Variant(f"{stack}[{label}]", plan, graph)


@functools.cache
def matrix() -> tuple[Variant, ...]:
    """Every example stack's accepted variants (computed once per test process)."""
    return tuple(v for stack in EXAMPLES for v in variants(stack))


def resource_types(graph: Graph) -> set[str]:
    """Every resource type a graph asks a provider to create: its custom resources, and the objects
    a component creates from its inputs (a ConfigGroup's manifests, ``platforms.name_members``)."""
    found = {r.type for r in graph.rows if r.custom}
    for row in graph.rows:
        members = name_members(row.type)
        if members is not None:
            found |= {token for token, _, _ in members(row.inputs)}
    return found
