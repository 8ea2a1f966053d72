"""The AWS quotas an environment counts against (``aws-gpu``): EC2 vCPU quotas by instance family
and purchase option, gp3 storage, the NAT's Elastic IP and gateway, the VPC with its internet
gateway and the load balancer. Names, codes and the family table are data
(``catalog/data/quotas.yaml``).
"""

from __future__ import annotations

from fullserver.platforms.quota import AwsVcpuGroup, QuotaAsk, QuotaNeed, QuotaTable, need


def instance_family(instance_type: str) -> str:
    """``p5en.48xlarge`` -> ``p5en``: the family a Spot or Capacity Block quota may name."""
    return instance_type.split(".", 1)[0]


def vcpu_group(instance_type: str, table: QuotaTable) -> AwsVcpuGroup | None:
    """The vCPU quota group of an instance type: its letters before the generation digit, the
    longest known prefix first (``inf2`` is Inf, not Standard ``i``; ``dl1`` DL, not ``d``)."""
    family = instance_family(instance_type)
    known = table.aws_vcpu_group_by_family
    if family not in known:
        known[family] = next((g for k, g in table.aws_vcpu_prefixes if family.startswith(k)), None)
    return known[family]


def vcpu_quota_keys(ask: QuotaAsk, group: AwsVcpuGroup) -> list[tuple[str, str]]:
    """(quota key, why) of each vCPU quota the instances can hold at once. A Capacity Block counts
    against its own quota; a reserved or on-demand launch against On-Demand (a Capacity Reservation
    counts toward it too); spot against the family's Spot quota, and, because the Auto Scaling group
    falls back to On-Demand when Spot capacity is out, against On-Demand as well."""
    family = instance_family(ask.shape)
    if ask.capacity_block:
        block = group.capacity_block_by_family.get(family)
        return [(block, "a Capacity Block")] if block else []
    if not ask.spot:
        return [(group.on_demand, "on demand")]
    spot = group.spot_by_family.get(family, group.spot)
    return [*([(spot, "spot")] if spot else []), (group.on_demand, "the on-demand fallback of spot")]


def storage_and_network_quotas(ask: QuotaAsk, table: QuotaTable) -> list[QuotaNeed]:
    """gp3 storage in TiB, the NAT's Elastic IP and NAT gateway (per Availability Zone: the one
    gateway sits in the nodes' zone), the stack's VPC with its internet gateway, and its
    Application Load Balancer: per Region, at the most the stack reaches."""
    out: list[QuotaNeed] = []
    other = table.aws_other
    for kind, gib in ask.disk_gib.items():
        if kind in table.aws_storage and gib:
            why = f"{ask.machines} x {gib:g} GiB of {kind} volumes"
            out.append(need(table, table.aws_storage[kind], ask, round(ask.machines * gib / 1024, 2), why, "aws"))
    if ask.nat_public_ips:
        out.append(need(table, other["elastic_ips"], ask, ask.nat_public_ips, "the NAT gateway's Elastic IP", "aws"))
    if ask.nat_gateways:
        why = "the NAT gateway, in the nodes' Availability Zone"
        out.append(need(table, other["nat_gateways"], ask, ask.nat_gateways, why, "aws"))
    if ask.network:
        out.append(need(table, other["vpcs"], ask, 1, "the stack's own VPC", "aws"))
        out.append(need(table, other["internet_gateways"], ask, 1, "the stack's VPC's internet gateway", "aws"))
    if ask.load_balancer in table.aws_load_balancers:
        out.append(need(table, table.aws_load_balancers[ask.load_balancer], ask, 1, "the serving load balancer", "aws"))
    return out


def quotas(ask: QuotaAsk, table: QuotaTable) -> list[QuotaNeed]:
    """The EC2 vCPU quota(s) of the instances, then ``storage_and_network_quotas``."""
    out: list[QuotaNeed] = []
    group = vcpu_group(ask.shape, table)
    vcpus = ask.machines * ask.vcpus
    for key, why in vcpu_quota_keys(ask, group) if group else []:
        out.append(need(table, key, ask, vcpus, f"{ask.machines} x {ask.shape} x {ask.vcpus} vCPUs, {why}", "aws"))
    return out + storage_and_network_quotas(ask, table)
