"""Karpenter's objects for one environment (``fullserver:nodeProvisioner: karpenter`` on EKS): a
NodePool whose requirements are the balanced set (its instance types, its zones, spot before
on-demand) and the EC2NodeClass its nodes launch from, built from the ``KubePlan`` alone, so the
plan, ``components.eks.karpenter`` and the tests share one body; and what the plan says of them.

Design notes: docs/design/kubernetes.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from fullserver.capacity import CapacitySet, CapacityStep, on_demand_range, shapes_text, spot_range
from fullserver.kube.model import Provisioner as Provisioner  # re-exported: where callers look
from fullserver.naming import fit_name
from fullserver.platforms import eks_karpenter as k

if TYPE_CHECKING:
    from fullserver.kube.model import KubePlan

KARPENTER: Provisioner = "karpenter"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
ZONE = "topology.kubernetes.io/zone"
CONSOLIDATE_AFTER = "5m"
"""How long a node Karpenter may remove stays first: an ephemeral Job's next pod lands on it meanwhile."""
TRAINING_DISRUPTION: dict[str, Any] = {
    "consolidationPolicy": "WhenEmpty",
    "consolidateAfter": CONSOLIDATE_AFTER,
    "budgets": [{"nodes": "0", "reasons": ["Drifted", "Underutilized"]}, {"nodes": "100%", "reasons": ["Empty"]}],
}
"""Training: Karpenter removes a node only once no pod runs there (``WhenEmpty``) and never drains a
busy one for drift (a budget of ``0`` for ``Drifted``: a new AMI would otherwise restart the run);
``expireAfter: Never`` keeps it past Karpenter's 720 h default (NodePool v1: ``disruption``,
``budgets[].reasons`` Underutilized/Empty/Drifted, ``expireAfter``)."""
SERVING_DISRUPTION: dict[str, Any] = {
    "consolidationPolicy": "WhenEmptyOrUnderutilized",
    "consolidateAfter": CONSOLIDATE_AFTER,
    "budgets": [{"nodes": "1"}],
}
"""Serving: replicas move to cheaper nodes one node at a time (the Deployment keeps the others up)."""
SERVING_EXPIRY = "720h"


def object_name(environment: str) -> str:
    """The NodePool's and its EC2NodeClass's name (``fullserver-<environment>``, fitted)."""
    return fit_name(k.NODE_POOL_TYPE, f"fullserver-{environment}", "metadata.name")


def subnet_tags(plan: KubePlan) -> dict[str, str]:
    """What a created cluster's private subnets carry for the EC2NodeClass to find them ({}: no Karpenter)."""
    return {k.DISCOVERY_TAG: plan.cluster_name} if plan.provisioner == KARPENTER else {}


def capacity_types(spot: bool) -> list[str]:
    """Spot and on-demand (Karpenter prefers spot while an offering exists), or on-demand alone."""
    return ["spot", "on-demand"] if spot else ["on-demand"]


def is_spot(plan: KubePlan) -> bool:
    return any(p.spot for p in plan.pools)


def max_nodes(plan: KubePlan) -> int:
    """The most accelerator nodes the plan runs at once: its largest pool (spot and its on-demand
    fallback never run side by side under one NodePool)."""
    return max(p.max_nodes for p in plan.pools)


def requirements(plan: KubePlan) -> list[dict[str, Any]]:
    """The set's instance types, its zones (none listed: every zone of the subnets) and capacity types."""
    found = [
        {"key": INSTANCE_TYPE, "operator": "In", "values": list(plan.instance_types or [plan.machine_type])},
        {"key": k.CAPACITY_TYPE, "operator": "In", "values": capacity_types(is_spot(plan))},
    ]
    if plan.zones:
        found.insert(1, {"key": ZONE, "operator": "In", "values": list(plan.zones)})
    return found


def node_pool(plan: KubePlan, labels: Mapping[str, str]) -> dict[str, Any]:
    """The NodePool (``karpenter.sh/v1``): the nodes' ``labels`` and the plan's taints, the set as
    requirements, limits at the plan's node count and its accelerators, and the disruption rules of
    its purpose (``TRAINING_DISRUPTION``, ``SERVING_DISRUPTION``)."""
    name = object_name(plan.environment)
    serving = plan.purpose == "inference"
    nodes = max_nodes(plan)
    template: dict[str, Any] = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": name},
        "requirements": requirements(plan),
        "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in plan.taints],
        "expireAfter": SERVING_EXPIRY if serving else "Never",
    }
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {"metadata": {"labels": dict(labels)}, "spec": template},
            "limits": {"nodes": str(nodes), plan.accelerator_resource: str(nodes * plan.accelerators_per_node)},
            "disruption": SERVING_DISRUPTION if serving else TRAINING_DISRUPTION,
        },
    }


def node_class(plan: KubePlan, role: str, tags: Mapping[str, str]) -> dict[str, Any]:
    """The EC2NodeClass (``karpenter.k8s.aws/v1``): EKS's AL2023 AMIs (``k.AMI_ALIAS``), the node
    ``role`` (Karpenter makes its instance profile), the subnets and security group by their tags,
    the root volume as the plan sizes it (encrypted gp3), the instance store as one RAID0 array
    where the shape has one, the kubelet reservations the plan's allocatable assumes, and IMDSv2 at
    one hop (pods take their credentials from Pod Identity or IRSA, not the node's role)."""
    spec: dict[str, Any] = {
        "amiSelectorTerms": [{"alias": k.AMI_ALIAS}],
        "role": role,
        "subnetSelectorTerms": [{"tags": {k.DISCOVERY_TAG: plan.cluster_name}}],
        "securityGroupSelectorTerms": [{"tags": {k.CLUSTER_SG_TAG: plan.cluster_name}}],
        "blockDeviceMappings": [
            {
                "deviceName": k.ROOT_DEVICE,
                "rootVolume": True,
                "ebs": {
                    "volumeSize": f"{plan.boot_disk_gib}Gi",
                    "volumeType": "gp3",
                    "encrypted": True,
                    "deleteOnTermination": True,
                },
            }
        ],
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "disabled",
            "httpPutResponseHopLimit": 1,
            "httpTokens": "required",
        },
        "tags": dict(tags),
    }
    if plan.max_pods or plan.kube_reserved:
        spec["kubelet"] = {
            **({"maxPods": plan.max_pods} if plan.max_pods else {}),
            **({"kubeReserved": dict(plan.kube_reserved)} if plan.kube_reserved else {}),
        }
    if plan.instance_store_raid0:
        spec["instanceStorePolicy"] = "RAID0"
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": object_name(plan.environment)},
        "spec": spec,
    }


def _where(zones: list[str]) -> str:
    return ", ".join(zones) if zones else "every zone of the cluster's subnets"


def order_line(plan: KubePlan) -> str:
    """The plan's fallback line: what Karpenter tries, in order, from one NodePool."""
    types, where, name = ", ".join(plan.instance_types), _where(plan.zones), object_name(plan.environment)
    first = (
        f"1. spot: any of {types} in {where}; 2. on-demand: the cheapest of them with capacity; "
        if is_spot(plan)
        else f"1. on-demand: the cheapest of {types} in {where} with capacity; "
    )
    return (
        f"on a stockout Karpenter's NodePool {name} tries, in order: {first}then nothing (the pods wait, "
        f"at most {max_nodes(plan)} node(s)): {k.CAPACITY_TYPE} {' and '.join(capacity_types(is_spot(plan)))} "
        "in one NodePool, spot preferred while EC2 Fleet (price-capacity-optimized) finds an offering"
    )


def attached_needs(plan: KubePlan) -> str:
    """What an existing cluster must run when the stack asks for Karpenter: fullserver creates no
    node group there, so the pods wait for the NodePool it names."""
    req = "; ".join(f"{r['key']} In {','.join(r['values'])}" for r in requirements(plan))
    labels = ", ".join(f"{key}={value}" for key, value in sorted(plan.node_labels.items()))
    taints = ", ".join(f"{t.key}={t.value}:{t.effect}" for t in plan.taints)
    return (
        f"the existing EKS cluster must run Karpenter (fullserver pins chart {k.CHART_VERSION} on clusters it "
        f"creates) with a NodePool named {object_name(plan.environment)} requiring {req}, labelling its nodes "
        f"{labels} and tainting them {taints}: fullserver creates no node group on it and the pods wait for that NodePool"
    )


def capacity(found: CapacitySet, spot: bool, pool: str) -> CapacitySet:
    """The plan's "capacity: on a stockout" steps under Karpenter: one NodePool over the whole set
    in every zone, spot while an offering exists, then on-demand (Karpenter "falls back ... generally
    within milliseconds"; EC2 Fleet ``price-capacity-optimized``, effectively ``lowest-price`` for
    on-demand: Karpenter FAQ). A node is spot or on-demand, never both: the peak is the dearest
    member's on-demand hour."""
    types, where = shapes_text(found.members), _where(found.zones)
    od_low, od_high = on_demand_range(found.members)
    on_demand = CapacityStep(
        what=f"on-demand (NodePool {pool}): the cheapest of {types} with capacity in {where}",
        usd_hour_low=od_low,
        usd_hour_high=od_high,
    )
    steps = [on_demand]
    if spot:
        spot_low, spot_high = spot_range(found.members)
        first = CapacityStep(
            what=f"spot (NodePool {pool}): any of {types} in {where} (EC2 Fleet, price-capacity-optimized; "
            "the interruption queue drains a node on its 2-minute warning and launches a replacement)",
            usd_hour_low=spot_low,
            usd_hour_high=spot_high,
        )
        steps = [first, on_demand.model_copy(update={"what": f"no spot offering left: {on_demand.what}"})]
    return found.model_copy(update={"steps": steps, "used": True, "peak_usd_hour": found.dearest.on_demand_usd_hour})
