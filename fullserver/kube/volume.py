"""The pod's data volume: the node-pool twin of a VM's data disk.

A VM gets a persistent data disk that counts toward the profile's NVMe balance (block storage may
make up local NVMe the shape lacks, ``Balance.nvme_may_be_attached``). A GKE node pool cannot attach
a data disk to its nodes (a node's disks are its boot disk, local SSDs and read-only secondary boot
disks), and an EKS node's extra EBS volume would reach a pod only through a hostPath. So the
Kubernetes-native equivalent is used on both: every workload pod mounts a *generic ephemeral
volume* (``spec.volumes[].ephemeral.volumeClaimTemplate``) of the data disk's size, kind, IOPS and
throughput, on a ``StorageClass`` of the environment's own that the workload manifests carry:

* GKE: provisioner ``pd.csi.storage.gke.io`` (the Compute Engine persistent disk CSI driver),
  ``type`` the disk kind (``pd-balanced``; Hyperdisk kinds take
  ``provisioned-iops-on-create``/``provisioned-throughput-on-create``). GKE "Using the Compute
  Engine persistent disk CSI Driver": "In Standard clusters, you must enable" the driver
  (https://cloud.google.com/kubernetes-engine/docs/how-to/gce-pd-csi-driver): a created cluster
  enables it (``addons_config.gce_persistent_disk_csi_driver_config``), an attached one must have it.
* EKS: provisioner ``ebs.csi.aws.com`` (the Amazon EBS CSI driver), ``type: gp3`` with ``iops``,
  ``throughput`` and ``encrypted`` (kubernetes-sigs/aws-ebs-csi-driver ``docs/parameters.md``). The
  driver is not on a new EKS cluster: a created cluster gets the ``aws-ebs-csi-driver`` EKS add-on
  with an IAM role holding ``AmazonEBSCSIDriverPolicy`` (EKS user guide, "Amazon EBS CSI driver",
  https://docs.aws.amazon.com/eks/latest/userguide/add-ons-aws-ebs-csi-driver.html); an attached
  cluster must already run it, and the plan says so.

``WaitForFirstConsumer`` binds each volume in its pod's zone; ``reclaimPolicy: Delete`` and the
ephemeral volume's lifecycle (created with the pod, deleted with it: Kubernetes "Ephemeral
Volumes", generic ephemeral volumes) mean a volume exists exactly while its pod does - one per
pod, and one pod per node, so the plan bills one volume per node at the pools' floor and ceiling.

Each member's provisioner and StorageClass parameters are its ``PoolRules``' (``volume_provisioner``,
``volume_parameters``).
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
