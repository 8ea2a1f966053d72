"""A Kubernetes API server in the test's own process, on 127.0.0.1: exactly the endpoints
``fullserver.kube.api`` calls, so the real ``kubernetes`` client runs its whole path (kubeconfig,
URL building, JSON (de)serialisation, errors).

* ``GET /api/v1/nodes?labelSelector=`` - the nodes carrying every label asked for;
* ``POST /apis/batch/v1/namespaces/{ns}/jobs`` - stores the Job (or answers ``refuse_create``);
* ``GET /api/v1/namespaces/{ns}/pods?labelSelector=job-name=`` - the Job's pod, whose phase
  follows the script its node is given (``phases``: one phase per read, the last one repeats);
* ``GET /api/v1/namespaces/{ns}/pods/{pod}/log?container=`` - the node's log;
* ``DELETE /apis/batch/v1/namespaces/{ns}/jobs/{name}`` - removes the Job, recording the options;
* ``GET /api/v1/persistentvolumes`` - the volumes ``volumes`` scripts (one list per read, the last repeats);
* ``GET /apis/networking.gke.io/v1beta1/namespaces/{ns}/servicenetworkendpointgroups?labelSelector=
  key in (a,b)`` - GKE's NEG records ``negs`` scripts, those of the Services asked for (404 where
  ``negs`` is ``None``: the kind is not served).

Every request is recorded (method, path, query, body) for the tests' assertions.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

PENDING = {
    "phase": "Pending",
    "conditions": [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/3 nodes are available: 1 Insufficient nvidia.com/gpu.",
        }
    ],
}
RUNNING = {"phase": "Running"}
SUCCEEDED = {"phase": "Succeeded"}
OOM_KILLED = {
    "phase": "Failed",
    "containerStatuses": [
        {
            "name": "measure",
            "image": "nvidia/cuda:12.4.1-base-ubuntu22.04",
            "imageID": "",
            "ready": False,
            "restartCount": 0,
            "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
        }
    ],
}


@dataclass
class FakeCluster:
    nodes: list[dict[str, Any]]
    logs: dict[str, str] = field(default_factory=dict)
    """The log each node's pod prints, by node name."""
    phases: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """The pod status each read returns, by node name (the last one repeats)."""
    refuse_create: int | None = None
    refuse_reads: int | None = None
    """A status every GET answers instead (401: the credentials refused)."""
    volumes: list[list[dict[str, Any]]] = field(default_factory=lambda: [[]])
    """The PersistentVolumes each read returns (the last list repeats)."""
    negs: list[list[dict[str, Any]]] | None = field(default_factory=lambda: [list[dict[str, Any]]()])
    """The ServiceNetworkEndpointGroups each read returns (the last list repeats; ``None``: no such kind)."""
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    deleted: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    requests: list[tuple[str, str, dict[str, list[str]]]] = field(default_factory=list)
    reads: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def node_of(self, job: dict[str, Any]) -> str:
        return str(job["spec"]["template"]["spec"]["nodeSelector"]["kubernetes.io/hostname"])


def node(name: str, labels: dict[str, str], allocatable: dict[str, str], ready: bool = True) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {
            "allocatable": allocatable,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "addresses": [{"type": "InternalIP", "address": "10.0.1.23"}, {"type": "Hostname", "address": name}],
        },
    }


def volume(name: str, storage_class: str, handle: str, phase: str = "Released") -> dict[str, Any]:
    """A PersistentVolume a CSI driver provisioned (``spec.csi.volumeHandle``: the disk)."""
    return {
        "metadata": {"name": name},
        "spec": {
            "storageClassName": storage_class,
            "capacity": {"storage": "100Gi"},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Delete",
            "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": handle},
        },
        "status": {"phase": phase},
    }


def svcneg(name: str, service: str, namespace: str = "default", *links: str) -> dict[str, Any]:
    """GKE's record of one Service port's NEGs (ingress-gce ``ServiceNetworkEndpointGroup``)."""
    return {
        "apiVersion": "networking.gke.io/v1beta1",
        "kind": "ServiceNetworkEndpointGroup",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"networking.gke.io/service-name": service, "networking.gke.io/managed-by": "neg-controller"},
            "finalizers": ["networking.gke.io/neg-finalizer"],
        },
        "spec": {},
        "status": {
            "networkEndpointGroups": [
                {"id": "1", "selfLink": x, "networkEndpointType": "GCE_VM_IP_PORT"} for x in links
            ]
        },
    }


def _set_selector(text: str) -> tuple[str, set[str]]:
    """``key in (a,b)`` -> (key, {a, b})."""
    key, _, values = text.partition(" in ")
    return key.strip(), {v.strip() for v in values.strip().removeprefix("(").removesuffix(")").split(",")}


def _status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


class _Handler(BaseHTTPRequestHandler):
    cluster: FakeCluster

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(self, code: int, body: Any, content: str = "application/json") -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", content)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length)) if length else {}

    def _record(self) -> tuple[list[str], dict[str, list[str]]]:
        url = urlparse(self.path)
        query = parse_qs(url.query)
        with self.cluster.lock:
            self.cluster.requests.append((self.command, url.path, query))
        return url.path.strip("/").split("/"), query

    def do_GET(self) -> None:
        parts, query = self._record()
        c = self.cluster
        if c.refuse_reads is not None:
            return self._send(c.refuse_reads, _status(c.refuse_reads, "Unauthorized", "Unauthorized"))
        if parts == ["api", "v1", "nodes"]:
            wanted = dict(kv.split("=", 1) for kv in query.get("labelSelector", [""])[0].split(",") if kv)
            items = [n for n in c.nodes if wanted.items() <= n["metadata"]["labels"].items()]
            return self._send(200, {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": items})
        if parts == ["api", "v1", "persistentvolumes"]:
            with c.lock:
                seen = c.reads.get("persistentvolumes", 0)
                c.reads["persistentvolumes"] = seen + 1
            items = c.volumes[min(seen, len(c.volumes) - 1)]
            return self._send(200, {"kind": "PersistentVolumeList", "apiVersion": "v1", "metadata": {}, "items": items})
        if parts[:3] == ["apis", "networking.gke.io", "v1beta1"] and parts[5:] == ["servicenetworkendpointgroups"]:
            if c.negs is None:
                return self._send(404, _status(404, "NotFound", "the server could not find the requested resource"))
            with c.lock:
                seen = c.reads.get("servicenetworkendpointgroups", 0)
                c.reads["servicenetworkendpointgroups"] = seen + 1
            key, services = _set_selector(query.get("labelSelector", [""])[0])
            items = [
                n
                for n in c.negs[min(seen, len(c.negs) - 1)]
                if n["metadata"]["namespace"] == parts[4] and n["metadata"]["labels"].get(key) in services
            ]
            return self._send(
                200,
                {
                    "apiVersion": "networking.gke.io/v1beta1",
                    "kind": "ServiceNetworkEndpointGroupList",
                    "metadata": {},
                    "items": items,
                },
            )
        if parts[:3] == ["api", "v1", "namespaces"] and parts[4:] == ["pods"]:
            job = query.get("labelSelector", [""])[0].removeprefix("job-name=")
            items = []
            if job in c.jobs:
                name = c.node_of(c.jobs[job])
                with c.lock:
                    seen = c.reads.get(job, 0)
                    c.reads[job] = seen + 1
                script = c.phases.get(name, [SUCCEEDED])
                items.append(
                    {
                        "metadata": {"name": f"{job}-x7k2p", "namespace": parts[3], "labels": {"job-name": job}},
                        "spec": c.jobs[job]["spec"]["template"]["spec"],
                        "status": script[min(seen, len(script) - 1)],
                    }
                )
            return self._send(200, {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items})
        if parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "pods" and parts[6:] == ["log"]:
            job = parts[5].rsplit("-", 1)[0]
            if job not in c.jobs or query.get("container") != ["measure"]:
                return self._send(404, _status(404, "NotFound", f"pod {parts[5]} not found"))
            return self._send(200, c.logs.get(c.node_of(c.jobs[job]), ""), "text/plain")
        return self._send(404, _status(404, "NotFound", self.path))

    def do_POST(self) -> None:
        parts, _ = self._record()
        c = self.cluster
        body = self._body()
        if parts[:3] == ["apis", "batch", "v1"] and parts[5:] == ["jobs"]:
            if c.refuse_create is not None:
                return self._send(
                    c.refuse_create,
                    _status(c.refuse_create, "Forbidden", 'pods "x" is forbidden: violates PodSecurity "baseline"'),
                )
            body["metadata"]["uid"] = "7d4c-0001"
            with c.lock:
                c.jobs[body["metadata"]["name"]] = body
            return self._send(201, body)
        return self._send(404, _status(404, "NotFound", self.path))

    def do_DELETE(self) -> None:
        parts, _ = self._record()
        c = self.cluster
        body = self._body()
        if parts[:3] == ["apis", "batch", "v1"] and parts[5] == "jobs":
            name = parts[6]
            with c.lock:
                found = c.jobs.pop(name, None)
                c.deleted.append((name, body))
            if found is None:
                return self._send(404, _status(404, "NotFound", f'jobs.batch "{name}" not found'))
            return self._send(200, {"kind": "Status", "apiVersion": "v1", "status": "Success"})
        return self._send(404, _status(404, "NotFound", self.path))


@contextmanager
def serve(cluster: FakeCluster) -> Iterator[str]:
    """The fake API server's URL while the block runs."""
    handler = type("Handler", (_Handler,), {"cluster": cluster})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def kubeconfig(path: Path, url: str, context: str = "arn:aws:eks:us-east-1:111122223333:cluster/ml-prod") -> Path:
    """A kubeconfig with one context on the fake server (a bearer token, as a CI identity has)."""
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fake", "cluster": {"server": url}}],
                "users": [{"name": "ci", "user": {"token": "test-token"}}],
                "contexts": [{"name": context, "context": {"cluster": "fake", "user": "ci"}}],
                "current-context": context,
            }
        )
    )
    return path


def kubeconfig_text(url: str) -> str:
    """A kubeconfig's text for ``url`` with a token, as a stack's Kubernetes provider holds it."""
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": url}}],
            "users": [{"name": "u", "user": {"token": "test-token"}}],
            "contexts": [{"name": "ml-prod", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "ml-prod",
        }
    )
