"""``TpuQueuedResource``: a Cloud TPU queued resource whose node has a service account and labels,
created and force-deleted with gcloud (``components.tpu.environment``, module docstring), on spot
when its body holds the API's ``spot`` tier (``--spot``, GA). A refresh reads the request's state:
one Cloud TPU has given up on (SUSPENDED after a Spot preemption, FAILED after its window) holds no
TPU and is never allocated again, so the read marks it and ``pulumi up --refresh`` replaces it."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from typing import Any, ClassVar, Optional

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, Resource, ResourceProvider, UpdateResult

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
        *(["--labels", labels] if labels else []), *_metadata_flag(node.get("metadata") or {}),
        *(["--spot"] if "spot" in props else []), "--quiet",
    ]  # fmt: skip


def _metadata_flag(metadata: dict[str, str], flag: str = "--metadata") -> list[str]:
    """``flag`` with a one-character delimiter no entry holds (gcloud's ``^DELIM^`` escaping, "gcloud
    topic escaping"): ``ssh-keys`` holds colons, spaces and one key per line."""
    if not metadata:
        return []
    entries = [f"{k}={v}" for k, v in sorted(metadata.items())]
    delimiter = next((d for d in ";|~#%" if not any(d in e for e in entries)), None)
    if delimiter is None:
        raise ValueError(f"{flag}: every delimiter gcloud could split on (;|~#%) appears in the metadata")
    return [flag, f"^{delimiter}^" + delimiter.join(entries)]


def metadata_update_command(olds: dict[str, Any], news: dict[str, Any]) -> list[str] | None:
    """``gcloud alpha compute tpus tpu-vm update`` giving the slice's node the new login metadata
    (the alpha track takes ``--update-metadata``/``--remove-metadata``); ``None``: none changed."""
    old, new = _node(olds).get("metadata") or {}, _node(news).get("metadata") or {}
    changed = {k: v for k, v in new.items() if old.get(k) != v}
    removed = sorted(set(old) - set(new))
    if not changed and not removed:
        return None
    return [
        "gcloud", "alpha", "compute", "tpus", "tpu-vm", "update", news["tpu"]["nodeSpecs"][0]["nodeId"],
        "--zone", str(news["zone"]), "--project", str(news["project"]),
        *_metadata_flag(changed, "--update-metadata"), *(["--remove-metadata", ",".join(removed)] if removed else []),
        "--quiet",
    ]  # fmt: skip


def _node(props: dict[str, Any]) -> dict[str, Any]:
    specs = (props.get("tpu") or {}).get("nodeSpecs") or [{}]
    node: dict[str, Any] = specs[0].get("node") or {}
    return node


def queued_describe_command(queued_resource: str, zone: str, project: str) -> list[str]:
    """The request's state (``state.state``, a ``QueuedResourceState.State`` name) as JSON."""
    return [
        "gcloud", "compute", "tpus", "queued-resources", "describe", queued_resource,
        "--zone", zone, "--project", project, "--format=json(state)",
    ]  # fmt: skip


def _without_metadata(body: Any) -> Any:
    """The request's body without its nodes' metadata (what a change of it alone does not replace)."""
    if not isinstance(body, dict):
        return body
    specs = [
        {**spec, "node": {k: v for k, v in (spec.get("node") or {}).items() if k != "metadata"}}
        for spec in body.get("nodeSpecs") or []
    ]
    return {**body, "nodeSpecs": specs}


def given_up(described: str) -> str | None:
    """The state of a request Cloud TPU holds no TPU for and will not allocate again (SUSPENDED,
    FAILED: ``tpu.GONE_STATES``), read from ``queued_describe_command``'s JSON; else ``None``."""
    state = (json.loads(described or "{}").get("state") or {}).get("state")
    return state if state in tpu.GONE_STATES else None


# How long gcloud may take: a create returns once the request is queued; a forced delete of a
# large slice is normally done in minutes.
GCLOUD_TIMEOUT_SECONDS = 3600


def shell_line(command: list[str]) -> str:
    """``command`` as one line a shell runs as is: quoted, and a value holding lines (the
    ``ssh-keys`` metadata) in bash's ``$'...'`` form, so a message stays one line."""

    def quoted(arg: str) -> str:
        if "\n" not in arg:
            return shlex.quote(arg)
        return "$'" + arg.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"

    return " ".join(quoted(a) for a in command)


def _gcloud(command: list[str], *, gone_is_done: bool) -> str | None:
    """Run gcloud, or stop with the command to run by hand; its output (``None``: already gone)."""
    shown = shell_line(command)
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
    return done.stdout if done.returncode == 0 else None


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
        """Any change replaces the request (the API cannot update one), deleting first; but the
        node's login metadata alone is kept for the next request (``_without_metadata``), so that a
        change of keys does not give up a slice that capacity was found for."""
        changed = sorted(k for k in set(olds) | set(news) if k != "__provider" and olds.get(k) != news.get(k))
        tpu_moved = _without_metadata(olds.get("tpu")) != _without_metadata(news.get("tpu"))
        replaces = [k for k in changed if k != "tpu" or tpu_moved]
        return DiffResult(changes=bool(changed), replaces=replaces, delete_before_replace=True)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        """The new login metadata onto the running node. A request still waiting has no node yet
        and keeps the metadata it was made with: the state says so, and the next ``up`` tries again."""
        command = metadata_update_command(olds, news)
        if command is None or _gcloud(command, gone_is_done=True) is not None:
            return UpdateResult(outs=news)
        spec = news["tpu"]["nodeSpecs"][0]
        waiting = {**spec, "node": {**spec["node"], "metadata": _node(olds).get("metadata") or {}}}
        return UpdateResult(outs={**news, "tpu": {**news["tpu"], "nodeSpecs": [waiting]}})

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
