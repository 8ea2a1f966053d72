"""EKS GPU managed node groups (``eks-gpu``): the cluster when one is created, the node groups.

``EksEnvironment`` builds a ``fullserver.kube.KubePlan`` and decides nothing: ``EksCluster``
(created only when the plan names no cluster) and ``EksNodeGroups`` (node role, launch template
with the nodeadm NodeConfig, EFA and placement, one managed node group per pool). Registered as
``components.registry``'s ``eks`` once the platform refactor lands.
"""

from components.eks.environment import (
    EksArgs,
    EksCluster,
    EksEnvironment,
    EksNodeGroups,
    autoscaler_tags,
    eks_args,
    launch_template_inputs,
)

__all__ = [
    "EksArgs",
    "EksCluster",
    "EksEnvironment",
    "EksNodeGroups",
    "autoscaler_tags",
    "eks_args",
    "launch_template_inputs",
]
