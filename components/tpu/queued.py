"""``TpuQueuedResource``: a Cloud TPU queued resource whose node has a service account and labels,
created and force-deleted with gcloud (``components.tpu.environment``, module docstring), on spot
when its body holds the API's ``spot`` tier (``--spot``, GA). A refresh reads the request's state:
one Cloud TPU has given up on (SUSPENDED after a Spot preemption, FAILED after its window) holds no
TPU and is never allocated again, so the read marks it and ``pulumi up --refresh`` replaces it."""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any, ClassVar, Optional

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, Resource, ResourceProvider

from fullserver.platforms import tpu


def queued_delete_command(queued_resource: str, zone: str, project: str) -> list[str]:
    """The documented way to delete a queued resource together with its running TPU."""
    return [
        "gcloud", "compute", "tpus", "queued-resources", "delete", queued_resource,
        "--zone", zone, "--project", project, "--force", "--quiet",
    ]  # fmt: skip


def queued_create_command(props: dict[str, Any]) -> list[str]:
    """``gcloud compute tpus queued-resources create`` for a ``TpuQueuedResource``'s inputs (the
    API's ``QueuedResource`` body): the node's service account, scopes and labels included."""
    spec = props["tpu"]["nodeSpecs"][0]
    node = spec["node"]
    net = node["networkConfig"]
    labels = ",".join(f"{k}={v}" for k, v in sorted(node["labels"].items()))
    return [
        "gcloud", "compute", "tpus", "queued-resources", "create", props["name"],
        "--zone", props["zone"], "--project", props["project"], "--node-id", spec["nodeId"],
        "--accelerator-type", node["acceleratorType"], "--runtime-version", node["runtimeVersion"],
        "--description", node["description"], "--network", net["network"], "--subnetwork", net["subnetwork"],
        *([] if net["enableExternalIps"] else ["--internal-ips"]),
        "--service-account", node["serviceAccount"]["email"], "--scopes", ",".join(node["serviceAccount"]["scope"]),
        *(["--labels", labels] if labels else []), *(["--spot"] if "spot" in props else []), "--quiet",
    ]  # fmt: skip


def queued_describe_command(queued_resource: str, zone: str, project: str) -> list[str]:
    """The request's state (``state.state``, a ``QueuedResourceState.State`` name) as JSON."""
    return [
        "gcloud", "compute", "tpus", "queued-resources", "describe", queued_resource,
        "--zone", zone, "--project", project, "--format=json(state)",
    ]  # fmt: skip


def given_up(described: str) -> str | None:
    """The state of a request Cloud TPU holds no TPU for and will not allocate again (SUSPENDED,
    FAILED: ``tpu.GONE_STATES``), read from ``queued_describe_command``'s JSON; else ``None``."""
    state = (json.loads(described or "{}").get("state") or {}).get("state")
    return state if state in tpu.GONE_STATES else None


# How long gcloud may take: a create returns once the request is queued; a forced delete of a
# large slice is normally done in minutes.
GCLOUD_TIMEOUT_SECONDS = 3600


def _gcloud(command: list[str], *, gone_is_done: bool) -> str:
    """Run gcloud, or stop with the command to run by hand; its output."""
    shown = " ".join(command)
    if shutil.which("gcloud") is None:
        raise RuntimeError(
            f"a queued TPU slice is created and deleted with gcloud (pulumi-gcp 10.2 cannot give it a service "
            f"account, labels or a forced delete), which is not on this machine: run `{shown}`"
        )
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=GCLOUD_TIMEOUT_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"`{shown}` did not finish in {GCLOUD_TIMEOUT_SECONDS} s; run it again") from None
    gone = "NOT_FOUND" in done.stderr or "not found" in done.stderr.lower()
    if done.returncode != 0 and not (gone_is_done and gone):
        raise RuntimeError(f"`{shown}` failed: {done.stderr.strip()[-500:]}")
    return done.stdout if done.returncode == 0 else ""


class TpuQueuedResourceProvider(ResourceProvider):
    """Creates a queued resource with gcloud; force-deletes it and its TPU (module docstring)."""

    def create(self, props: dict[str, Any]) -> CreateResult:
        _gcloud(queued_create_command(props), gone_is_done=False)
        return CreateResult(id_=f"{props['project']}/{props['zone']}/{props['name']}", outs=props)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """The request as it stands: marked with its state when Cloud TPU has given up on it, so the
        next ``diff`` replaces it (a forced delete, then a new request); gone: gone. Without gcloud
        nothing can be read, and the request is kept as it was (``up`` then names the command)."""
        if shutil.which("gcloud") is None:
            return ReadResult(id_=id_, outs=props)
        described = _gcloud(
            queued_describe_command(str(props["name"]), str(props["zone"]), str(props["project"])), gone_is_done=True
        )
        if not described:
            return ReadResult(id_="", outs={})
        state = given_up(described)
        return ReadResult(id_=id_, outs={**props, "state": state} if state else props)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = sorted(k for k in set(olds) | set(news) if k != "__provider" and olds.get(k) != news.get(k))
        return DiffResult(changes=bool(changed), replaces=changed, delete_before_replace=True)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        _gcloud(queued_delete_command(str(props["name"]), str(props["zone"]), str(props["project"])), gone_is_done=True)


class TpuQueuedResource(Resource, module="fullserver", name="TpuQueuedResource"):
    """A Cloud TPU queued resource whose node has a service account and labels (module docstring)."""

    pulumi_type: ClassVar[str] = tpu.QUEUED_RESOURCE_TYPE
    name: pulumi.Output[str]

    def __init__(
        self,
        resource_name: str,
        *,
        project: pulumi.Input[str],
        zone: str,
        name: str,
        tpu: pulumi.Input[dict[str, Any]],
        spot: bool = False,
        opts: Optional[pulumi.ResourceOptions] = None,
    ) -> None:
        # The API's tier union (``spot: {}``), present only on spot: an on-demand request's inputs
        # stay what they were, so existing stacks see no change.
        tier: dict[str, Any] = {"spot": {}} if spot else {}
        props = {"project": project, "zone": zone, "name": name, "tpu": tpu, **tier}
        super().__init__(TpuQueuedResourceProvider(), resource_name, props, opts)
