"""``fullserver verify`` on a Kubernetes pool (``gke-gpu``, ``gke-tpu``, ``eks-gpu``): every node
measured by a Job pinned to it (``fullserver.kube.verify_job``), its log read by the SSH path's
parsers and set beside the plan (``fullserver.kube.verify_lines``), through the API calls of
``fullserver.kube.api``.

Nodes are measured at once, each in its own thread with its own Job; one failing never stops
the others (its verdict says why). ``cancel`` (Ctrl-C) ends every wait and so deletes every Job.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait

from fullserver.baremetal.verify import HostVerify, failed_host
from fullserver.catalog import Catalog
from fullserver.errors import FullserverError
from fullserver.kube.api import Cluster, run_job
from fullserver.kube.pool import KubePlan
from fullserver.kube.verify_job import PULL_SECONDS, JobOptions, deadline_seconds, default_image, job_name, verify_job
from fullserver.kube.verify_lines import Node, node_verdict, parse_log
from fullserver.profiles import Profile


def measure_node(
    c: Cluster,
    plan: KubePlan,
    node: Node,
    profile: Profile,
    catalog: Catalog,
    opts: JobOptions,
    cancel: threading.Event | None = None,
) -> HostVerify:
    """One node: its Job created, waited for, read and deleted; its verdict, or why there is none."""
    if not node.ready:  # its pod would only wait out the deadline
        return HostVerify(
            name=node.name,
            address=node.address,
            status="unverified",
            problems=[f"node {node.name} is not Ready: not measured (`kubectl describe node {node.name}` says why)"],
        )
    start = time.monotonic()
    timeout = opts.timeout or deadline_seconds(opts.caps, PULL_SECONDS)
    manifest = verify_job(
        plan,
        node.name,
        name=job_name(node.name),
        namespace=opts.namespace,
        image=opts.image or default_image(plan),
        caps=opts.caps,
        deadline=timeout,
    )
    try:
        run = run_job(c, node.name, manifest, timeout, cancel, poll=opts.poll_seconds)
        verdict = node_verdict(plan, node, parse_log(node.name, run.log), profile, catalog, time.monotonic() - start)
    except FullserverError as exc:
        return failed_host(node.name, node.address, exc)
    if run.left_behind:
        problems = [*verdict.problems, run.left_behind]
        status = "short" if verdict.status == "short" else "unverified"
        return verdict.model_copy(update={"problems": problems, "status": status})
    return verdict


def measure_pool(
    c: Cluster,
    plan: KubePlan,
    nodes: list[Node],
    profile: Profile,
    catalog: Catalog,
    opts: JobOptions,
    *,
    max_workers: int = 16,
    on_done: Callable[[str, object], None] | None = None,
) -> list[HostVerify]:
    """Every node at once (at most ``max_workers``), in ``nodes``' order. An interrupt sets every
    worker's cancel, waits for each to delete its Job, then goes on up."""
    cancel = threading.Event()
    results: dict[str, HostVerify] = {}
    pool = ThreadPoolExecutor(max_workers=max(1, min(max_workers, len(nodes))))
    futures: dict[Future[HostVerify], str] = {
        pool.submit(measure_node, c, plan, n, profile, catalog, opts, cancel): n.name for n in nodes
    }
    try:
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.5, return_when="FIRST_COMPLETED")
            for f in done:
                results[futures[f]] = f.result()
                if on_done is not None:
                    on_done(futures[f], results[futures[f]])
    except BaseException:
        cancel.set()
        raise
    finally:
        pool.shutdown(wait=True)
    return [results[n.name] for n in nodes]
