"""Kubernetes accelerator node pools from the same sizing (issue 24): GKE GPU, GKE TPU slices, EKS GPU.

The core sizes a workload for the VM platform whose machines a pool's nodes are (``gke-gpu`` as
``gcp-gpu``, ``gke-tpu`` as ``tpu-vm``, ``eks-gpu`` as ``aws-gpu``: ``SIZED_AS`` in
``fullserver.platforms.gke``/``eks``); this package turns that ``EnvironmentSpec`` into:

* ``pool`` - ``KubePlan``: the cluster (attached or created), the node pools (spot plus on-demand
  fallback, autoscaled from zero or fixed), taints, labels, the driver path, local NVMe as
  ephemeral storage, TPU placement, EFA, and each node's allocatable and each pod's share of it;
* ``manifest`` - the workload: an (indexed) Job for training, Deployment + Service + HPA for serving;
* ``volume`` - each pod's data volume (the VM's data disk as a generic ephemeral volume) and its StorageClass;
* ``fees`` - the cluster fee as sourced data (``fullserver/catalog/data/kubernetes.yaml``);
* ``cost`` - the cluster fee plus the pools at their floor and ceiling.

Pure Python: no Pulumi, nothing printed. ``components.gke``/``components.eks`` build a ``KubePlan``.
"""

from fullserver.kube.pool import SIZED_AS, KubePlan, PodShare, Pool, Resources, Taint, kube_plan

__all__ = ["SIZED_AS", "KubePlan", "PodShare", "Pool", "Resources", "Taint", "kube_plan"]
