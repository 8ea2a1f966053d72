"""GKE accelerator node pools (``gke-gpu``, ``gke-tpu``): the cluster when one is created, the pools.

``GkeEnvironment`` builds a ``fullserver.kube.KubePlan`` and decides nothing: ``GkeCluster`` (a
minimal private regional Standard cluster with Workload Identity, on its own VPC with Cloud NAT,
or nothing when the plan attaches to a named cluster) and ``GkeNodePools`` (the plan's pools and
their least-privilege node service account). Registered as ``components.registry``'s ``gke``
once the platform refactor lands.
"""

from components.gke.environment import GkeArgs, GkeCluster, GkeEnvironment, GkeNodePools, gke_args

__all__ = ["GkeArgs", "GkeCluster", "GkeEnvironment", "GkeNodePools", "gke_args"]
