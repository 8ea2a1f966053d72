"""The Kubernetes API calls fullserver makes, through the official ``kubernetes`` client: ``fullserver
verify``'s measuring Job, and destroy's waits for what the cluster's controllers delete after the
workload: the pods' data volumes (``components.kube_volumes``) and the load balancer's endpoint
groups (``components.kube_negs``).

Design notes: docs/design/kubernetes.md.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from urllib3.exceptions import HTTPError, MaxRetryError

from fullserver.baremetal.errors import HostUnreachable, ProbeError
from fullserver.errors import EXIT_UNREACHABLE, FullserverError
from fullserver.kube.verify_job import CONTAINER
from fullserver.kube.verify_lines import Node
from fullserver.platforms.pool_rules import EndpointRecords

POLL_SECONDS = 2.0
REQUEST_TIMEOUT = 30.0
"""Seconds one API call may take (connect and read)."""
PROPAGATION = "Background"
"""Deleting the Job deletes its pod too (the garbage collector, in the background)."""
T = TypeVar("T")


class ClusterUnreachable(FullserverError):
    """The cluster's API server could not be reached or refused us: nothing was measured."""

    exit_code = EXIT_UNREACHABLE


@dataclass(frozen=True)
class Cluster:
    """An API client for one cluster, and what the messages name it by."""

    api: Any
    cluster: str
    context: str
    hint: str


def pick_context(contexts: list[dict[str, Any]], current: str | None, cluster: str) -> str | None:
    """The context for ``cluster``: the one whose name or cluster is it (``...._<cluster>``,
    ``.../<cluster>``, or exactly it) when only one is, else the current one."""

    def matches(ctx: dict[str, Any]) -> bool:
        names = [str(ctx.get("name", "")), str((ctx.get("context") or {}).get("cluster", ""))]
        return any(n == cluster or n.endswith((f"_{cluster}", f"/{cluster}")) for n in names)

    found = [str(c["name"]) for c in contexts if matches(c)]
    return found[0] if len(found) == 1 else current


def connect(cluster: str, kubeconfig: Path | None, context: str | None, hint: str) -> Cluster:
    """An API client from the kubeconfig, on ``context`` or the one for ``cluster``."""
    path = str(kubeconfig.expanduser()) if kubeconfig is not None else None
    where = f"cluster '{cluster}'"
    try:
        contexts, current = config.list_kube_config_contexts(config_file=path)  # type: ignore[no-untyped-call]
        chosen = context or pick_context(contexts, (current or {}).get("name"), cluster)
        api = config.new_client_from_config(config_file=path, context=chosen)  # type: ignore[no-untyped-call]
    except (ConfigException, OSError) as exc:
        raise ClusterUnreachable(where, f"no usable kubeconfig: {_said(exc)}", hint) from None
    return Cluster(api=api, cluster=cluster, context=str(chosen or ""), hint=hint)


def connect_config(text: str, cluster: str, hint: str) -> Cluster:
    """An API client from a kubeconfig's text (the one the stack's Kubernetes provider uses)."""
    try:
        api = config.new_client_from_config_dict(yaml.safe_load(text))  # type: ignore[no-untyped-call]
    except (ConfigException, OSError, yaml.YAMLError) as exc:
        raise ClusterUnreachable(f"cluster '{cluster}'", f"no usable kubeconfig: {_said(exc)}", hint) from None
    return Cluster(api=api, cluster=cluster, context="", hint=hint)


def _said(exc: BaseException) -> str:
    """What went wrong, short: the HTTP status, or the connection's own failure (not urllib3's retry story)."""
    if isinstance(exc, ApiException):
        return f"HTTP {exc.status} {exc.reason}".strip()
    if isinstance(exc, MaxRetryError) and exc.reason is not None:
        text = str(exc.reason)
        return " ".join(text.split("): ", 1)[-1].split())[:200]
    return " ".join(str(exc).split())[:200] or type(exc).__name__


class CredentialsRefused(ClusterUnreachable):
    """The API server answered 401 or 403: asking again with the same credentials gets the same."""


def _unreachable(c: Cluster, exc: BaseException) -> ClusterUnreachable:
    context = f" (context '{c.context}')" if c.context else ""
    if isinstance(exc, ApiException) and exc.status in (401, 403):
        what = f"its API server{context} refused your credentials: {_said(exc)}"
        return CredentialsRefused(f"cluster '{c.cluster}'", what, c.hint)
    return ClusterUnreachable(f"cluster '{c.cluster}'", f"cannot reach its API server{context}: {_said(exc)}", c.hint)


@dataclass(frozen=True)
class Volume:
    """A PersistentVolume: its name, the disk it is (``spec.csi.volumeHandle``) and its phase."""

    name: str
    handle: str
    phase: str


def volumes_of_class(c: Cluster, storage_class: str) -> list[Volume]:
    """The PersistentVolumes provisioned from ``storage_class``, by name: each is a disk the cloud
    bills until its CSI driver deletes it (reclaim policy ``Delete``)."""
    try:
        found = client.CoreV1Api(c.api).list_persistent_volume(_request_timeout=REQUEST_TIMEOUT)
    except (ApiException, HTTPError, OSError) as exc:
        raise _unreachable(c, exc) from None
    volumes = []
    for pv in found.items or []:
        spec = pv.spec
        if spec is None or spec.storage_class_name != storage_class:
            continue
        handle = spec.csi.volume_handle if spec.csi is not None else ""
        phase = pv.status.phase if pv.status is not None else ""
        volumes.append(Volume(str(pv.metadata.name if pv.metadata else ""), str(handle or ""), str(phase or "")))
    return sorted(volumes, key=lambda v: v.name)


@dataclass(frozen=True)
class EndpointGroups:
    """A controller's record of one Service's endpoint groups: the record, its Service and the
    groups' self links (empty before the controller has made any)."""

    record: str
    service: str
    self_links: tuple[str, ...]


def endpoint_groups_of(
    c: Cluster, records: EndpointRecords, namespace: str, services: Sequence[str]
) -> list[EndpointGroups]:
    """The records ``records`` names for ``services`` in ``namespace``, by name: each stays until
    the cloud's groups it lists are deleted. A cluster without the record's kind made none."""
    selector = f"{records.service_label} in ({','.join(sorted(services))})"
    try:
        found: Any = client.CustomObjectsApi(c.api).list_namespaced_custom_object(
            records.group,
            records.version,
            namespace,
            records.plural,
            label_selector=selector,
            _request_timeout=REQUEST_TIMEOUT,
        )
    except ApiException as exc:
        if exc.status == 404:  # the kind is not served: no controller records groups here
            return []
        raise _unreachable(c, exc) from None
    except (HTTPError, OSError) as exc:
        raise _unreachable(c, exc) from None
    groups = []
    for item in found.get("items") or []:
        meta, status = item.get("metadata") or {}, item.get("status") or {}
        links = tuple(str(g.get("selfLink", "")) for g in status.get("networkEndpointGroups") or [])
        service = str((meta.get("labels") or {}).get(records.service_label, ""))
        groups.append(EndpointGroups(str(meta.get("name", "")), service, tuple(x for x in links if x)))
    return sorted(groups, key=lambda g: g.record)


def wait_gone(
    ask: Callable[[], list[T]], timeout: float, poll: float = POLL_SECONDS, sleep: Any = time.sleep
) -> list[T]:
    """Ask until the answer is empty or ``timeout`` seconds have passed; the last answer. A failed
    read is no answer: only one at the deadline raises, or a refusal of the credentials at once."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            left = ask()
        except CredentialsRefused:
            raise
        except ClusterUnreachable:
            if time.monotonic() >= deadline:
                raise
        else:
            if not left or time.monotonic() >= deadline:
                return left
        sleep(poll)


def list_nodes(c: Cluster, selector: dict[str, str]) -> list[Node]:
    """The nodes carrying every label of ``selector`` (the pool's), by name."""
    text = ",".join(f"{k}={v}" for k, v in selector.items())
    try:
        found = client.CoreV1Api(c.api).list_node(label_selector=text, _request_timeout=REQUEST_TIMEOUT)
    except (ApiException, HTTPError, OSError) as exc:
        raise _unreachable(c, exc) from None
    nodes = []
    for item in found.items or []:
        status = item.status
        ready = any(x.type == "Ready" and x.status == "True" for x in (status.conditions or [])) if status else False
        addresses = {a.type: a.address for a in (status.addresses or [])} if status else {}
        nodes.append(
            Node(
                name=str(item.metadata.name if item.metadata else ""),
                allocatable=dict(status.allocatable or {}) if status else {},
                ready=ready,
                address=addresses.get("InternalIP", ""),
            )
        )
    return sorted(nodes, key=lambda n: n.name)


@dataclass(frozen=True)
class JobRun:
    """The measuring pod's log, and a Job that could not be deleted (named, or empty)."""

    log: str
    left_behind: str = ""


def _pod(core: Any, namespace: str, job: str) -> Any | None:
    pods = core.list_namespaced_pod(namespace, label_selector=f"job-name={job}", _request_timeout=REQUEST_TIMEOUT)
    items = list(pods.items or [])
    return items[0] if items else None


def _waiting(pod: Any | None) -> str:
    """Why a pod has not finished: its container's waiting reason, or its scheduling condition."""
    if pod is None:
        return "no pod was created (check the namespace's quotas and admission policies)"
    status = pod.status
    for cs in (status.container_statuses or []) if status else []:
        if cs.state is not None and cs.state.waiting is not None:
            w = cs.state.waiting
            return f"container {w.reason or 'waiting'}" + (f": {w.message}" if w.message else "")
    for cond in (status.conditions or []) if status else []:
        if cond.type == "PodScheduled" and cond.status != "True":
            return f"not scheduled: {cond.message or cond.reason or 'no reason given'}"
    return f"pod {status.phase if status else 'unknown'}"


def run_job(
    c: Cluster,
    node: str,
    manifest: dict[str, Any],
    timeout: float,
    cancel: threading.Event | None = None,
    poll: float = POLL_SECONDS,
) -> JobRun:
    """Create the Job, wait up to ``timeout`` for its pod to finish, return the pod's log; the
    Job is deleted on every way out."""
    cancel = cancel or threading.Event()
    core, batch = client.CoreV1Api(c.api), client.BatchV1Api(c.api)
    name, namespace = manifest["metadata"]["name"], manifest["metadata"]["namespace"]
    job = client.V1Job.from_dict(manifest)
    assert job is not None, "a Job manifest is a dict"
    try:
        batch.create_namespaced_job(namespace, job, _request_timeout=REQUEST_TIMEOUT)
    except (ApiException, HTTPError, OSError) as exc:
        raise HostUnreachable(
            node, f"cannot create the measuring Job in namespace '{namespace}': {_said(exc)}", _create_hint(exc)
        ) from None
    log = ""
    try:
        log = _wait_and_read(core, node, namespace, name, timeout, cancel, poll)
    finally:
        left = _delete(batch, namespace, name)
    return JobRun(log=log, left_behind=left)


def _create_hint(exc: BaseException) -> str:
    if isinstance(exc, ApiException) and exc.status == 403:
        return "your identity may create Jobs there, and the namespace's Pod Security level must allow hostPath (privileged)"
    return "check the cluster is up and the namespace exists"


def _wait_and_read(
    core: Any, node: str, namespace: str, name: str, timeout: float, cancel: threading.Event, poll: float
) -> str:
    deadline = time.monotonic() + timeout
    pod = None
    while True:
        try:
            pod = _pod(core, namespace, name)
        except (ApiException, HTTPError, OSError) as exc:
            raise HostUnreachable(node, f"lost the API server while measuring: {_said(exc)}") from None
        phase = pod.status.phase if pod is not None and pod.status is not None else None
        if phase in ("Succeeded", "Failed"):
            break
        if time.monotonic() >= deadline:
            raise ProbeError(
                node,
                f"the measuring pod did not finish within {timeout:.0f}s ({_waiting(pod)})",
                "a workload pod holding the node's accelerators keeps it Pending; raise --timeout for a slow image pull",
            )
        if cancel.wait(poll):
            raise ProbeError(node, "interrupted before the measuring pod finished")
    assert pod is not None  # it finished
    try:
        text = core.read_namespaced_pod_log(
            pod.metadata.name, namespace, container=CONTAINER, _request_timeout=REQUEST_TIMEOUT
        )
    except (ApiException, HTTPError, OSError) as exc:
        raise ProbeError(node, f"cannot read the measuring pod's log: {_said(exc)}") from None
    if phase == "Failed":
        raise ProbeError(
            node,
            f"the measuring pod failed ({_terminated(pod)}): {' '.join(str(text).split())[-160:]}",
            "`kubectl describe node` shows why",
        )
    return str(text)


def _terminated(pod: Any) -> str:
    for cs in pod.status.container_statuses or []:
        if cs.state is not None and cs.state.terminated is not None:
            t = cs.state.terminated
            return f"{t.reason or 'exited'} {t.exit_code}"
    return pod.status.reason or "no reason given"


def _delete(batch: Any, namespace: str, name: str) -> str:
    """Delete the Job and, through the propagation policy, its pod; '' when done, else why not."""
    try:
        batch.delete_namespaced_job(
            name,
            namespace,
            body=client.V1DeleteOptions(propagation_policy=PROPAGATION),
            _request_timeout=REQUEST_TIMEOUT,
        )
    except ApiException as exc:
        if exc.status == 404:  # already gone (its TTL, or someone else)
            return ""
        return f"Job {namespace}/{name} was not deleted ({_said(exc)}): kubectl delete job -n {namespace} {name}"
    except (HTTPError, OSError) as exc:
        return f"Job {namespace}/{name} was not deleted ({_said(exc)}): kubectl delete job -n {namespace} {name}"
    return ""
