"""The AWS quotas an EKS GPU stack counts against (``eks-gpu``): a managed node group's nodes are EC2
instances, so each group draws on the EC2 vCPU quota of its instance family and purchase option
(the Spot group on the family's Spot quota, the on-demand fallback group on On-Demand), the system
node group on Standard On-Demand, and a created cluster on EKS's clusters quota and the VPC, NAT
and address quotas its network builds (``aws.storage_and_network_quotas``).
"""

from __future__ import annotations

from fullserver.platforms.quota import AwsVcpuGroup, Pool, QuotaAsk, QuotaNeed, QuotaTable, merged, need
from fullserver.platforms.quota.aws import instance_family, storage_and_network_quotas, vcpu_group


def pool_vcpu_key(ask: QuotaAsk, pool: Pool, group: AwsVcpuGroup) -> str | None:
    """A group's vCPU quota: its family's Spot quota for a Spot group (none where no source names
    one: p6), On-Demand otherwise (a reserved profile's Capacity Reservation counts there too)."""
    if not pool.spot:
        return group.on_demand
    return group.spot_by_family.get(instance_family(ask.shape), group.spot)


def vcpu_quotas(ask: QuotaAsk, table: QuotaTable) -> list[QuotaNeed]:
    """Each accelerator node group's vCPUs at its maximum, and the system node group's."""
    out = []
    group = vcpu_group(ask.shape, table)
    for pool in ask.accelerator_pools if group else ():
        assert group is not None
        key = pool_vcpu_key(ask, pool, group)
        if key is not None:
            why = f"{pool.machines} x {ask.shape} x {ask.vcpus} vCPUs, " + ("spot" if pool.spot else "on demand")
            out.append(need(table, key, ask, pool.machines * ask.vcpus, why, "aws"))
    system = ask.system
    sys_group = vcpu_group(system.shape, table) if system is not None else None
    if system is not None and sys_group is not None and system.vcpus:
        why = f"{system.machines} x {system.shape} x {system.vcpus} vCPUs, the system node group"
        out.append(need(table, sys_group.on_demand, ask, system.machines * system.vcpus, why, "aws"))
    return out


def quotas(ask: QuotaAsk, table: QuotaTable) -> list[QuotaNeed]:
    """Every AWS quota the node groups and a created cluster count against, at the most."""
    cluster = [need(table, table.eks_other["clusters"], ask, 1, "the EKS cluster", "aws")] if ask.cluster else []
    return merged([*vcpu_quotas(ask, table), *cluster, *storage_and_network_quotas(ask, table)])
