"""A node's scale-out fabric as its pods see it (EKS's EFA): each pod takes every interface of its
node through the member's device plugin, and the huge pages the fabric's driver works in, which the
node pre-allocates and kubelet takes off its allocatable memory (``PoolRules.fabric_pod``). Without
the request a pod gets no interface and the job's collectives fall back to TCP."""

from __future__ import annotations

from fullserver.platforms.pool_rules import Allocatable, NodeResources, PoolRules


def fabric_reserved(rules: PoolRules, found: Allocatable, efa_interfaces: int) -> Allocatable:
    """``found`` with the fabric's pre-allocated huge pages held back from memory: the Kubernetes
    HugePages KEP's allocatable is capacity less kube- and system-reserved, "Pre-Allocated-HugePages
    * HugePageSize" and the eviction threshold. Nothing without interfaces."""
    fabric = rules.fabric_pod if rules.efa and efa_interfaces else None
    if fabric is None:
        return found
    kept = found.reserved
    held = NodeResources(kept.cpu_m, kept.memory_mib + fabric.preallocated_mib, kept.ephemeral_mib)
    return Allocatable(found.capacity, held)


def pod_devices(rules: PoolRules, efa_interfaces: int) -> dict[str, str]:
    """What a pod takes of its node's fabric besides its accelerators, requests equal to limits:
    every interface and the fabric's huge pages; nothing without interfaces."""
    fabric = rules.fabric_pod if rules.efa else None
    if fabric is None or not efa_interfaces:
        return {}
    return {fabric.resource: str(efa_interfaces), fabric.hugepages_resource: fabric.pod_hugepages}
