"""Every compute node of a stack, as the stack policies (balance, budget) judge them.

During ``pulumi preview`` a value that is not known yet raises ``UnknownValueError``: an unknown
value skips only the resource it belongs to, and the skip is reported, so one resource still to be
created does not blind the policies to the rest of the stack.
"""

from __future__ import annotations

from collections.abc import Sequence

from pulumi_policy import PolicyResource
from pulumi_policy.proxy import UnknownValueError

from policy.aws_nodes import aws_node, aws_region, launch_template_of, spot_fleet_node
from policy.gcp_nodes import gcp_instance_node, gcp_template_node, tpu_nodes
from policy.kube_nodes import EKS_NODE_GROUP, GKE_NODE_POOL, eks_group_node, gke_pool_node
from policy.nodes import Node
from policy.resources import (
    AWS_ASG,
    AWS_INSTANCE,
    AWS_LAUNCH_TEMPLATE,
    AWS_SPOT_FLEET,
    AWS_SPOT_REQUEST,
    GCP_INSTANCE,
    GCP_TEMPLATES,
    TPU_QUEUED,
    TPU_VM,
    describe,
)


def _nodes_of(r: PolicyResource, resources: Sequence[PolicyResource], used_templates: set[str]) -> list[Node]:
    """The nodes one resource runs; a launch template something launches is read with what launches it."""
    t = r.resource_type
    found: Node | None = None
    if t in (AWS_INSTANCE, AWS_SPOT_REQUEST, AWS_ASG) or (t == AWS_LAUNCH_TEMPLATE and r.urn not in used_templates):
        found = aws_node(r, resources)
    elif t == AWS_SPOT_FLEET:
        found = spot_fleet_node(r)
    elif t == GCP_INSTANCE:
        found = gcp_instance_node(r, resources)
    elif t in GCP_TEMPLATES:
        found = gcp_template_node(r, resources)
    elif t in (TPU_VM, TPU_QUEUED):
        return tpu_nodes(r, resources)
    elif t == GKE_NODE_POOL:
        found = gke_pool_node(r)
    elif t == EKS_NODE_GROUP:
        found = eks_group_node(r, aws_region(r))
    return [found] if found is not None else []


def accelerator_nodes(resources: Sequence[PolicyResource]) -> tuple[list[Node], list[str]]:
    """Every compute node in the stack (``offer`` is ``None`` for a shape the catalog does not
    list), and what was skipped because a value is not known yet (during preview); an unknown
    value skips only the resource it belongs to."""
    nodes: list[Node] = []
    skipped: list[str] = []
    used: set[str] = set()
    for r in resources:
        if r.resource_type in (AWS_INSTANCE, AWS_SPOT_REQUEST, AWS_ASG, EKS_NODE_GROUP):
            try:
                lt = launch_template_of(r, resources)
            except UnknownValueError:
                continue
            if lt is not None:
                used.add(lt.urn)
    for r in resources:
        try:
            nodes.extend(_nodes_of(r, resources, used))
        except UnknownValueError as exc:
            skipped.append(f"{describe(r.resource_type, r.name)}: {exc.message}")
    return nodes, skipped
