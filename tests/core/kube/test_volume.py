"""The pods' data volume: the VM's data disk as a generic ephemeral volume on the environment's own class."""

from __future__ import annotations

import re

from fullserver.kube.volume import DataVolume, pod_volume, storage_class


def test_the_data_volume_class_provisions_the_disks_iops_and_throughput() -> None:
    gp3 = DataVolume(provider="eks", storage_class="c", kind="gp3", size_gib=800, iops=6000, throughput_mbps=500)
    assert gp3.parameters() == {"type": "gp3", "encrypted": "true", "iops": "6000", "throughput": "500"}
    hyperdisk = DataVolume(
        provider="gke", storage_class="c", kind="hyperdisk-balanced", size_gib=800, iops=6000, throughput_mbps=500
    )
    assert hyperdisk.provisioner == "pd.csi.storage.gke.io"
    assert hyperdisk.parameters() == {
        "type": "hyperdisk-balanced",
        "provisioned-iops-on-create": "6000",
        "provisioned-throughput-on-create": "500Mi",
    }


def test_the_class_binds_in_the_pods_zone_and_deletes_with_the_pod() -> None:
    volume = DataVolume(provider="gke", storage_class="fullserver-x-data", kind="pd-balanced", size_gib=673)
    sc = storage_class(volume, {"fullserver-environment": "x"})
    assert (sc["apiVersion"], sc["kind"], sc["metadata"]["name"]) == (
        "storage.k8s.io/v1",
        "StorageClass",
        "fullserver-x-data",
    )
    assert sc["parameters"] == {"type": "pd-balanced"}
    assert (sc["volumeBindingMode"], sc["reclaimPolicy"]) == ("WaitForFirstConsumer", "Delete")
    claim = pod_volume(volume, {"fullserver-environment": "x"})["ephemeral"]["volumeClaimTemplate"]
    assert claim["metadata"]["labels"] == {"fullserver-environment": "x"}
    assert claim["spec"]["resources"] == {"requests": {"storage": "673Gi"}}


def test_the_nodes_say_the_volume_s_size_kind_iops_and_throughput_as_label_values() -> None:
    """The policy pack prices the volume from these labels (it is no cloud resource of the stack)."""
    fast = DataVolume(provider="eks", storage_class="c", kind="gp3", size_gib=800, iops=6000, throughput_mbps=500)
    assert fast.node_labels() == {
        "fullserver-pod-data-gib": "800",
        "fullserver-pod-data-kind": "gp3",
        "fullserver-pod-data-iops": "6000",
        "fullserver-pod-data-mbps": "500",
    }
    baseline = DataVolume(provider="gke", storage_class="c", kind="pd-balanced", size_gib=673)
    assert baseline.node_labels() == {"fullserver-pod-data-gib": "673", "fullserver-pod-data-kind": "pd-balanced"}
    valid = re.compile(r"^([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$")  # a Kubernetes label value
    assert all(valid.match(v) for v in [*fast.node_labels().values(), *baseline.node_labels().values()])
