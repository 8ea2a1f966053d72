"""Applying a workload to its cluster (components.kube_workload): the endpoint read back from the
LoadBalancer Service only once the workload's group has been applied."""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi.runtime.rpc import UNKNOWN

from components.graph import evaluate
from components.kube_workload import apply_workload

SERVICE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "llm", "namespace": "default"},
    "spec": {"type": "LoadBalancer", "selector": {"app": "llm"}, "ports": [{"port": 80}]},
}
READ = ("kubernetes:core/v1:Service", "llm-endpoint")


def _program() -> None:
    parent = pulumi.ComponentResource("test:index:Parent", "llm")
    apply_workload("llm", [SERVICE], "apiVersion: v1\nkind: Config\n", parent, [])


def test_a_preview_never_reads_the_service_the_group_will_create() -> None:
    """Pulumi runs a read with a known id during previews too ("Read steps run during previews. The
    only time we can't run is if the ID we are given is unknown"): before the first up the Service
    does not exist, so the read's id must wait on the group's output."""
    preview = evaluate(_program, "workload-preview", preview=True)
    assert preview.read_ids[READ] == UNKNOWN


def test_an_up_reads_the_service_by_its_namespace_and_name() -> None:
    up = evaluate(_program, "workload-up")
    assert up.read_ids[READ] == "default/llm"
