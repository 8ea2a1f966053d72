"""The Compute Engine quotas a GPU environment counts against (``gcp-gpu``): the GPU model's
regional metric and GPUS_ALL_REGIONS, the machine series' CPU quota, disk and local SSD GB and
external addresses. Names and metrics are data (``catalog/data/quotas.yaml``).
"""

from __future__ import annotations

import math

from fullserver.platforms.quota import QuotaAsk, QuotaNeed, QuotaTable, need

GB_PER_GIB = 1.073741824


def gpu_quotas(ask: QuotaAsk, table: QuotaTable) -> list[QuotaNeed]:
    """The GPU model's regional metric (its preemptible twin for Spot VMs) and the project-wide
    GPUS_ALL_REGIONS; nothing where the model has no sourced metric."""
    metrics = table.gcp_gpus.get(ask.accelerator or "")
    if metrics is None or not ask.accelerators:
        return []
    gpus = ask.machines * ask.accelerators
    why = f"{ask.machines} x {ask.shape} x {ask.accelerators} {ask.accelerator}"
    key = metrics.preemptible if ask.spot else metrics.on_demand
    return [
        need(table, key, ask, gpus, why + (", spot" if ask.spot else ""), "gcp"),
        need(table, table.gcp_other["gpus_all_regions"], ask, gpus, why, "gcp"),
    ]


def cpu_quota(ask: QuotaAsk, table: QuotaTable) -> list[QuotaNeed]:
    """The CPU quota the machine series counts against, where a source names one (N1: CPUS,
    A2: A2_CPUS; G2, A3 and A4 have no series metric to check)."""
    key = table.gcp_cpus.get(ask.shape.split("-", 1)[0])
    if key is None:
        return []
    why = f"{ask.machines} x {ask.shape} x {ask.vcpus} vCPUs"
    return [need(table, key, ask, ask.machines * ask.vcpus, why, "gcp")]


def storage_and_address_quotas(ask: QuotaAsk, table: QuotaTable) -> list[QuotaNeed]:
    """Persistent Disk SSD and local SSD in GB (quotas count decimal GB of the disks' GiB sizes),
    and in-use external addresses (the nodes' own and Cloud NAT's): Compute Engine's regional
    quotas that TPU VMs' data disks and NAT count against as well."""
    out: list[QuotaNeed] = []
    other = table.gcp_other
    by_quota: dict[str, list[str]] = {}
    for kind in ask.disk_gib:
        if kind in table.gcp_disks:  # Hyperdisk has quotas of its own, not sourced here
            by_quota.setdefault(table.gcp_disks[kind], []).append(kind)
    for key, kinds in by_quota.items():
        gib = sum(ask.disk_gib[k] for k in kinds)
        why = f"{ask.machines} x {gib:g} GiB of {'/'.join(kinds)} disks"
        out.append(need(table, key, ask, math.ceil(ask.machines * gib * GB_PER_GIB), why, "gcp"))
    if ask.local_ssds:
        key = other["local_ssd_preemptible" if ask.spot else "local_ssd"]
        why = f"{ask.machines} x {ask.local_ssds} x {ask.local_ssd_gib:g} GiB local SSDs"
        amount = math.ceil(ask.machines * ask.local_ssds * ask.local_ssd_gib * GB_PER_GIB)
        out.append(need(table, key, ask, amount, why, "gcp"))
    addresses = ask.node_public_ips + ask.nat_public_ips
    if addresses:
        why = f"{ask.node_public_ips} node address(es), {ask.nat_public_ips} Cloud NAT address(es)"
        out.append(need(table, other["addresses"], ask, addresses, why, "gcp"))
    return out


def quotas(ask: QuotaAsk, table: QuotaTable) -> list[QuotaNeed]:
    """Every Compute Engine quota a GPU environment counts against, at the most it reaches."""
    return [*gpu_quotas(ask, table), *cpu_quota(ask, table), *storage_and_address_quotas(ask, table)]
