"""The way into a TPU VM's workers and a queued slice (the ``connect``, ``nodes`` and ``nodeGroups``
outputs; ``components.tpu.environment``, module docstring)."""

from __future__ import annotations

from typing import Any

from components.names import field
from components.startup import LOGIN_USER
from fullserver.nodes import NodeAccess, NodeGroupAccess
from fullserver.platforms import tpu


def private_ips(endpoints: object) -> list[str]:
    return [str(field(e, "ip_address") or "") for e in (endpoints or [])]  # type: ignore[attr-defined]


def public_ips(endpoints: object) -> list[str]:
    out = []
    for e in endpoints or []:  # type: ignore[attr-defined]
        for ac in field(e, "access_configs") or []:  # type: ignore[attr-defined]
            if field(ac, "external_ip"):
                out.append(str(field(ac, "external_ip")))
    return out


def tpu_workers(
    node: str, endpoints: list[Any] | None, *, keys: bool, direct: bool, zone: str = "", project: str = ""
) -> list[NodeAccess]:
    """The ``nodes`` rows of a TPU VM's workers reached directly (module docstring: why a worker
    behind IAP is listed through ``tpu_worker_group`` instead). With the TPU's zone and project,
    each row carries the command that reads its host keys (the TPU's guest attributes)."""
    rows = []
    for i, endpoint in enumerate(endpoints or []):
        public = next(iter(public_ips([endpoint])), "")
        rows.append(
            NodeAccess(
                name=f"{node}-w{i}",
                private_ip=str(field(endpoint, "ip_address") or ""),
                public_ip=public,
                user=LOGIN_USER,
                keys=keys,
                via="ssh" if direct and public else "iap",
                host_keys_command=tpu.host_keys_command(node, zone, project) if zone and project else [],
            )
        )
    return rows


def tpu_worker_group(
    node: str, endpoints: list[Any] | None, *, region: str, zone: str, project: str, keys: bool
) -> NodeGroupAccess:
    """The ``nodeGroups`` row of a TPU VM whose workers are reached through IAP: listed with their
    guest attributes at connect time, addressed by ``privateIps`` in worker order."""
    return NodeGroupAccess(
        provider="tpu",
        groups=[node],
        region=region,
        zone=zone,
        project=project,
        user=LOGIN_USER,
        keys=keys,
        via="iap",
        list_command=tpu.group_list_command(node, zone, project),
        private_ips=private_ips(endpoints),
    )


def tpu_vm_ssh(node: str, zone: str, project: str, *, keys: bool, iap: bool) -> str:
    """SSH to worker 0 of a TPU VM; ``--tunnel-through-iap`` exists only in the alpha command."""
    user = f"{LOGIN_USER}@" if keys else ""
    if iap:
        return (
            f"gcloud alpha compute tpus tpu-vm ssh {user}{node} --zone {zone} --project {project} "
            "--worker=0 --tunnel-through-iap"
        )
    return f"gcloud compute tpus tpu-vm ssh {user}{node} --zone {zone} --project {project} --worker=0"


def queued_ssh(queued_resource: str, zone: str, project: str, *, iap: bool, keys: bool) -> str:
    """SSH to worker 0 of node 0 of a queued slice once it is ACTIVE; the comment says how keys reach
    it (``gcp_login_metadata`` on the request's node)."""
    user, how = (
        (f"{LOGIN_USER}@", "your sshPublicKeys (--ssh-key-file <its private key>; else gcloud adds its own)")
        if keys
        else ("", "OS Login (your IAM roles)")
    )
    return (
        f"gcloud compute tpus queued-resources ssh {user}{queued_resource} --zone {zone} --project {project} "
        "--node=0 --worker=0" + (" --tunnel-through-iap" if iap else "") + f"  # SSH keys: {how}"
    )
