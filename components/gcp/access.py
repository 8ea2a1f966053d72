"""The way into Compute Engine VMs: ``gcloud compute ssh`` (through IAP unless reached directly), per
VM or per managed group (the ``connect``, ``nodes`` and ``nodeGroups`` outputs; ``fullserver.nodes``)."""

from __future__ import annotations

from typing import Any

from components.gcp.serving import GcpServing
from components.names import field
from components.startup import LOGIN_USER
from fullserver.nodes import NodeAccess, NodeGroupAccess, Via
from fullserver.platforms import gcp as gce


def gcloud_ssh(instance: str, zone: str, project: str, *, keys: bool, iap: bool) -> str:
    """``gcloud compute ssh`` to one VM: as ``ubuntu`` where keys are installed (else OS Login
    names the user), through IAP where the VM is not reached directly."""
    user = f"{LOGIN_USER}@" if keys else ""
    return f"gcloud compute ssh {user}{instance} --zone {zone} --project {project}" + (
        " --tunnel-through-iap" if iap else ""
    )


def group_ssh(group: str, where: str, project: str, *, keys: bool, iap: bool) -> str:
    """``gcloud compute ssh`` to the first instance of a managed group (``where``: ``--region R``
    or ``--zone Z``), looked up by the command itself (the group creates and replaces its
    instances; no name is known here): its name and its zone, the last segments of its URL."""
    listing = (
        f"gcloud compute instance-groups managed list-instances {group} {where} --project {project} --limit 1 --format="
    )
    instance = f'$({listing}"value(instance.basename())")'
    zone = f'$({listing}"value(instance.scope(zones).segment(0))")'
    return gcloud_ssh(instance, zone, project, keys=keys, iap=iap)


def vm_access(name: str, zone: str, project: str, nics: list[Any], *, keys: bool, via: Via) -> NodeAccess:
    """One VM's row of the ``nodes`` output: its primary NIC's addresses, and the IAP tunnel to it
    by name when it is not reached directly (``fullserver.platforms.gcp.iap_proxy``)."""
    nic = nics[0] if nics else None
    configs: Any = (field(nic, "access_configs") or []) if nic is not None else []
    return NodeAccess(
        name=name,
        private_ip=str(field(nic, "network_ip") or "") if nic is not None else "",
        public_ip=next((str(field(ac, "nat_ip")) for ac in configs if field(ac, "nat_ip")), ""),
        user=LOGIN_USER,
        keys=keys,
        via=via,
        proxy_command=gce.iap_proxy(name, zone, project) if via == "iap" else [],
        host_keys_command=gce.host_keys_command(name, zone, project),
    )


def mig_access(
    instance_group: str, group: GcpServing, region: str, project: str, *, keys: bool, via: Via
) -> NodeGroupAccess:
    """The serving or regional group's row of the ``nodeGroups`` output: its replicas are listed when needed,
    by the name the group gives them (``fullserver.platforms.gcp.group_list_command``). The group is
    named by the last segment of its URL."""
    return NodeGroupAccess(
        provider="gcp",
        groups=[instance_group.rsplit("/", 1)[-1]],
        region=region,
        zone=group.zone or "",
        project=project,
        user=LOGIN_USER,
        keys=keys,
        via=via,
        list_command=gce.group_list_command(group.base_instance_name, region, project),
    )


def public_ips(nics: list[Any]) -> list[str]:
    out = []
    for n in nics:
        for ac in (field(n[0], "access_configs") or []) if n else []:  # type: ignore[attr-defined]
            if field(ac, "nat_ip"):
                out.append(str(field(ac, "nat_ip")))
    return out
