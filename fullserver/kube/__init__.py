"""Kubernetes accelerator node pools from the same sizing (issue 24): GKE GPU, GKE TPU slices, EKS GPU.

The core sizes a workload for the VM platform whose machines a pool's nodes are (``gke-gpu`` as
``gcp-gpu``, ``gke-tpu`` as ``tpu-vm``, ``eks-gpu`` as ``aws-gpu``: ``SIZED_AS`` in
``fullserver.platforms.gke``/``eks``); this package turns that ``EnvironmentSpec`` into:
see the design notes.

Design notes: docs/design/kubernetes.md.
"""

from fullserver.kube.model import KubePlan, PodShare, Pool, Resources, Taint
from fullserver.kube.pool import SIZED_AS, kube_plan

__all__ = ["SIZED_AS", "KubePlan", "PodShare", "Pool", "Resources", "Taint", "kube_plan"]
