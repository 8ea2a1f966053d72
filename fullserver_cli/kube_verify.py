"""``fullserver verify STACK`` for a Kubernetes pool stack (gke-gpu, gke-tpu, eks-gpu).

Thin: the plan says which nodes (the pool's labels) and what they promise; ``fullserver.kube.api``
reaches the cluster with the user's kubeconfig; ``fullserver.kube.verify`` measures every node
through a Job pinned to it; the fleet is shown as the SSH path shows it (same table, JSON and
exit codes). Without access it is one line: why, and the command that gets credentials.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console

from fullserver.baremetal.verify import HostVerify
from fullserver.catalog import load_catalog
from fullserver.errors import EXIT_SHORT, FullserverError, InputError
from fullserver.kube.kubeconfig import credentials_hint
from fullserver.kube.pool import KubePlan
from fullserver.kube.verify_job import JobOptions
from fullserver.kube.verify_lines import Node
from fullserver.plan import StackPlan
from fullserver.profiles import Profile, get_profile
from fullserver_cli.fleet_view import exit_code, fleet_progress, show_fleet
from fullserver_cli.quota import gcp_project
from fullserver_cli.tables import FitTable


@dataclass(frozen=True)
class KubeAccess:
    """How verify reaches a Kubernetes stack's cluster, and which of its nodes it measures."""

    kubeconfig: Path | None
    context: str | None
    nodes: list[str]
    jobs: JobOptions


class NotVerified(FullserverError):
    """Nothing to measure (no node of the pool is up): the stack could not be verified."""

    exit_code = EXIT_SHORT


def verify_kube(
    stack: StackPlan,
    profiles: dict[str, Profile],
    access: KubeAccess,
    *,
    workers: int,
    as_json: bool,
    err: Console,
    to_json: Callable[[HostVerify], dict[str, object]],
    table: Callable[[HostVerify], FitTable],
) -> NoReturn:
    """Measure the stack's pool nodes and exit with the fleet's verdict (or one line why not)."""
    plan = stack.spec.kube
    assert plan is not None
    from fullserver.kube import api  # the kubernetes client loads only here (slow to import)
    from fullserver.kube.verify import measure_pool

    try:
        cluster = api.connect(
            plan.cluster_name,
            access.kubeconfig,
            access.context,
            credentials_hint(plan, gcp_project(Path(stack.path), stack.spec.platform)),
        )
        nodes = api.list_nodes(cluster, plan.node_selector)
        nodes = _chosen(stack.stack, plan, nodes, access.nodes, cluster.context)
    except FullserverError as exc:
        sys.stderr.write(f"error: {exc.line()}\n")
        raise typer.Exit(exc.exit_code) from None
    profile = get_profile(stack.spec.profile, profiles)
    with fleet_progress(err, "measuring", len(nodes)) as done:
        results = measure_pool(
            cluster, plan, nodes, profile, load_catalog(), access.jobs, max_workers=workers, on_done=done
        )
    show_fleet(results, err, as_json=as_json, to_json=to_json, table=table)
    raise typer.Exit(exit_code(results))


def _chosen(stack: str, plan: KubePlan, nodes: list[Node], wanted: list[str], context: str) -> list[Node]:
    selector = ",".join(f"{k}={v}" for k, v in plan.node_selector.items())
    if not nodes:
        raise NotVerified(
            f"stack '{stack}'",
            f"no node of its pool is up in cluster '{plan.cluster_name}' (context '{context}', labels {selector})",
            "a pool that scales from zero has nodes only while a pod asks for them: run its workload, then verify",
        )
    if not wanted:
        return nodes
    names = {n.name for n in nodes}
    unknown = [w for w in wanted if w not in names]
    if unknown:
        raise InputError(
            "--node " + ", ".join(unknown),
            f"not a node of the pool of stack '{stack}'",
            "its nodes: " + ", ".join(sorted(names)),
        )
    return [n for n in nodes if n.name in wanted]
