"""The pod's data volume: the node-pool twin of a VM's data disk.

Design notes: docs/design/kubernetes.md.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from fullserver.platforms import pool_member
from fullserver.platforms.pool_rules import PoolKey

MOUNT_PATH = "/data"
VOLUME_NAME = "data"
LABEL_GIB = "fullserver-pod-data-gib"
LABEL_KIND = "fullserver-pod-data-kind"
LABEL_IOPS = "fullserver-pod-data-iops"
LABEL_MBPS = "fullserver-pod-data-mbps"
"""Node labels of a pool whose pods each get a data volume (``DataVolume.node_labels``): its size,
disk kind and provisioned IOPS and throughput. The volume is built by the workload manifests, not by
a cloud resource of the stack, so the policy pack reads these labels to count it (the balance, as
attached block storage) and to price it (the budget, as ``fullserver plan`` prices it: the kind's
storage price with ``disk_usd_month``). Label values are plain words and digits (``pd-balanced``,
``gp3``, ``3000``), valid Kubernetes label values."""


class DataVolume(BaseModel):
    """Each workload pod's data volume (a generic ephemeral volume): sizes in GiB."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: PoolKey
    storage_class: str
    """The environment's own StorageClass (in the workload manifests)."""
    kind: str
    size_gib: int
    iops: int | None = None
    throughput_mbps: int | None = None
    mount_path: str = MOUNT_PATH

    @property
    def provisioner(self) -> str:
        return pool_member(self.provider).volume_provisioner

    def node_labels(self) -> dict[str, str]:
        """What the pools' nodes say of their pods' volume (``LABEL_GIB`` and the rest)."""
        labels = {LABEL_GIB: str(self.size_gib), LABEL_KIND: self.kind}
        if self.iops:
            labels[LABEL_IOPS] = str(self.iops)
        if self.throughput_mbps:
            labels[LABEL_MBPS] = str(self.throughput_mbps)
        return labels

    def parameters(self) -> dict[str, str]:
        """The StorageClass parameters: the disk kind and what it provisions (strings, as Kubernetes takes them)."""
        return pool_member(self.provider).volume_parameters(self.kind, self.iops, self.throughput_mbps)


def storage_class(volume: DataVolume, labels: dict[str, str]) -> dict[str, Any]:
    """The StorageClass the pods' volumes are provisioned from (cluster-scoped, named for the environment)."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": volume.storage_class, "labels": dict(labels)},
        "provisioner": volume.provisioner,
        "parameters": volume.parameters(),
        "volumeBindingMode": "WaitForFirstConsumer",
        "reclaimPolicy": "Delete",
        "allowVolumeExpansion": True,
    }


def pod_volume(volume: DataVolume, labels: dict[str, str]) -> dict[str, Any]:
    """The pod's ``volumes`` entry: a generic ephemeral volume of ``volume``'s size and class."""
    return {
        "name": VOLUME_NAME,
        "ephemeral": {
            "volumeClaimTemplate": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": volume.storage_class,
                    "resources": {"requests": {"storage": f"{volume.size_gib}Gi"}},
                },
            }
        },
    }


def mount(volume: DataVolume) -> dict[str, str]:
    return {"name": VOLUME_NAME, "mountPath": volume.mount_path}
