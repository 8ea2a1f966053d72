"""``DataVolumesGone``: destroy waits for the pods' data volumes to be deleted before the nodes,
the CSI driver and the cluster go.

A pod's data volume (``fullserver.kube.volume``) is a disk its CSI driver makes and deletes. Deleting
the workload only starts that, and nothing waits for the driver (GKE only attempts to delete such
disks with the cluster; an EBS volume is no part of an EKS cluster). Without a wait, destroy went on
to the nodes and the driver, and the disks stayed, billed. The workload depends on this resource and
it on the nodes and the driver: destroy deletes the workload, waits here, then deletes the rest.
Design notes: docs/design/components.md (``components/kube_workload.py``).
"""

from __future__ import annotations

from typing import Any, ClassVar, Optional

import pulumi
from pulumi.dynamic import Resource

from components.kube_waits import CLUSTER_HINT, GIVE_UP, WaitOnDelete, waiting_inputs
from fullserver.platforms import pool_member

TYPE: str = "pulumi-python:dynamic/fullserver:DataVolumesGone"


def _gone_or_why(props: dict[str, Any], wait_seconds: float, poll_seconds: float) -> str:
    """ "" once no volume of the environment's StorageClass is left, else the line a person reads."""
    from fullserver.kube.api import ClusterUnreachable, connect_config, volumes_of_class, wait_gone

    storage_class, region = str(props["storage_class"]), str(props["region"])
    try:
        cluster = connect_config(str(props["kubeconfig"]), str(props["cluster"]), CLUSTER_HINT)
        left = wait_gone(lambda: volumes_of_class(cluster, storage_class), wait_seconds, poll_seconds)
    except ClusterUnreachable as exc:
        return (
            f"{exc.line()}; the pods' data volumes (StorageClass '{storage_class}') may outlive the cluster: "
            f"find them in the cloud console (disks named pvc-...); {GIVE_UP}"
        )
    if not left:
        return ""
    rules = pool_member(str(props["pool"]))
    named = ", ".join(f"{v.name} ({v.phase or 'no phase'})" for v in left)
    commands = "; ".join(rules.delete_volume(v.handle, region) for v in left if v.handle)
    return (
        f"{len(left)} data volume(s) of StorageClass '{storage_class}' not deleted within {wait_seconds:.0f} s: "
        f"{named}; run destroy again once the CSI driver has deleted them, or delete the disks yourself"
        + (f" once detached ({commands})" if commands else "")
        + f"; {GIVE_UP}"
    )


class DataVolumesGoneProvider(WaitOnDelete):
    """Waits for the volumes (module docstring); keep this module and class name (``WaitOnDelete``)."""

    replaced_by: ClassVar[tuple[str, ...]] = ("storage_class", "cluster")
    id_keys: ClassVar[tuple[str, ...]] = ("cluster", "storage_class")

    def gone_or_why(self, props: dict[str, Any]) -> str:
        return _gone_or_why(props, self.wait_seconds, self.poll_seconds)


class DataVolumesGone(Resource, module="fullserver", name="DataVolumesGone"):
    """Destroy's wait for the pods' data volumes of one StorageClass (module docstring).

    Args:
        kubeconfig: the kubeconfig the workload's Kubernetes provider uses (kept as a secret).
        storage_class: the environment's StorageClass (``DataVolume.storage_class``).
        pool: the node-pool member (``gke``, ``eks``), whose rules name the disk's delete command.
        region: the environment's region.
        cluster: the cluster's name.
    """

    pulumi_type: ClassVar[str] = TYPE

    def __init__(
        self,
        resource_name: str,
        *,
        kubeconfig: pulumi.Input[str],
        storage_class: str,
        pool: str,
        region: str,
        cluster: str,
        opts: Optional[pulumi.ResourceOptions] = None,
    ) -> None:
        props, merged = waiting_inputs(
            kubeconfig, opts, storage_class=storage_class, pool=pool, region=region, cluster=cluster
        )
        super().__init__(DataVolumesGoneProvider(), resource_name, props, merged)
