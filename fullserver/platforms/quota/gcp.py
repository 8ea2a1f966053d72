"""The Compute Engine quotas a GPU environment counts against (``gcp-gpu``, and GKE's GPU pools):
the GPU model's regional metric and GPUS_ALL_REGIONS, the machine series' CPU quota and
CPUS_ALL_REGIONS, disk and local SSD GB and external addresses. Names and metrics are data
(``catalog/data/quotas.yaml``).
"""

from __future__ import annotations

import math

from fullserver.platforms.quota import GcpGpu, QuotaAsk, QuotaNeed, QuotaTable, merged, need

GB_PER_GIB = 1.073741824


def machine_series(shape: str) -> str:
    """``a3-megagpu-8g`` -> ``a3-megagpu``: the series a metric may name apart from its model."""
    return "-".join(shape.split("-")[:2])


def gpu_metrics(ask: QuotaAsk, table: QuotaTable) -> GcpGpu | None:
    """The GPU metrics of the machine: its series' own where it has them (A3 Mega), else its model's."""
    key = table.gcp_gpu_series.get(machine_series(ask.shape), ask.accelerator or "")
    return table.gcp_gpus.get(key)


def gpu_quotas(ask: QuotaAsk, table: QuotaTable) -> list[QuotaNeed]:
    """Each pool's GPUs on the model's regional metric (its preemptible twin for Spot VMs), and
    all of them on the project-wide GPUS_ALL_REGIONS; nothing where the model has no sourced metric."""
    metrics = gpu_metrics(ask, table)
    if metrics is None or not ask.accelerators:
        return []
    out = []
    for pool in ask.accelerator_pools:
        why = f"{pool.machines} x {ask.shape} x {ask.accelerators} {ask.accelerator}"
        key = metrics.preemptible if pool.spot else metrics.on_demand
        gpus = pool.machines * ask.accelerators
        out.append(need(table, key, ask, gpus, why + (", spot" if pool.spot else ""), "gcp"))
    total = ask.machines * ask.accelerators
    why = f"{ask.machines} x {ask.shape} x {ask.accelerators} {ask.accelerator}"
    return [*out, need(table, table.gcp_other["gpus_all_regions"], ask, total, why, "gcp")]


def series_cpus(shape: str, machines: int, vcpus: int, ask: QuotaAsk, table: QuotaTable) -> list[QuotaNeed]:
    """The CPU quota a machine series counts against, where a source names one (N1 and E2: CPUS,
    A2: A2_CPUS; G2, A3 and A4 have no series metric to check)."""
    key = table.gcp_cpus.get(shape.split("-", 1)[0])
    if key is None or not vcpus:
        return []
    return [need(table, key, ask, machines * vcpus, f"{machines} x {shape} x {vcpus} vCPUs", "gcp")]


def cpu_quotas(ask: QuotaAsk, table: QuotaTable, accelerator_hosts: bool = True) -> list[QuotaNeed]:
    """The series' CPU quota of the machines and of a created cluster's system pool, and every
    vCPU of them on the project-wide CPUS_ALL_REGIONS. ``accelerator_hosts``: the accelerator
    machines' vCPUs count (a GPU VM's do; a TPU slice's hosts have no series quota of their own)."""
    groups = [(ask.shape, ask.machines, ask.vcpus)] if accelerator_hosts else []
    if ask.system is not None:
        groups.append((ask.system.shape, ask.system.machines, ask.system.vcpus))
    out = [n for shape, machines, vcpus in groups for n in series_cpus(shape, machines, vcpus, ask, table)]
    total = sum(machines * vcpus for _, machines, vcpus in groups)
    if total:
        why = "; ".join(f"{m} x {s} x {v} vCPUs" for s, m, v in groups if v)
        out.append(need(table, table.gcp_other["cpus_all_regions"], ask, total, why, "gcp"))
    return out


def storage_and_address_quotas(ask: QuotaAsk, table: QuotaTable) -> list[QuotaNeed]:
    """Persistent Disk SSD and local SSD in GB (quotas count decimal GB of the disks' GiB sizes),
    and in-use external addresses (the nodes' own and Cloud NAT's): Compute Engine's regional
    quotas that TPU VMs' data disks and NAT count against as well. A created cluster's system
    pool's boot disks count with the nodes'."""
    out: list[QuotaNeed] = []
    other = table.gcp_other
    disks = [(ask.machines, kind, gib) for kind, gib in ask.disk_gib.items()]
    if ask.system is not None and ask.system.disk_gib:
        disks.append((ask.system.machines, ask.system.disk_kind, ask.system.disk_gib))
    for machines, kind, gib in disks:
        if kind in table.gcp_disks and gib:  # a kind with no sourced metric is left out (the ledger test names it)
            why = f"{machines} x {gib:g} GiB of {kind} disks"
            out.append(need(table, table.gcp_disks[kind], ask, math.ceil(machines * gib * GB_PER_GIB), why, "gcp"))
    for pool in ask.accelerator_pools if ask.local_ssds else ():
        key = other["local_ssd_preemptible" if pool.spot else "local_ssd"]
        why = f"{pool.machines} x {ask.local_ssds} x {ask.local_ssd_gib:g} GiB local SSDs"
        amount = math.ceil(pool.machines * ask.local_ssds * ask.local_ssd_gib * GB_PER_GIB)
        out.append(need(table, key, ask, amount, why, "gcp"))
    addresses = ask.node_public_ips + ask.nat_public_ips
    if addresses:
        why = f"{ask.node_public_ips} node address(es), {ask.nat_public_ips} Cloud NAT address(es)"
        out.append(need(table, other["addresses"], ask, addresses, why, "gcp"))
    return merged(out)


def quotas(ask: QuotaAsk, table: QuotaTable) -> list[QuotaNeed]:
    """Every Compute Engine quota a GPU environment counts against, at the most it reaches: a
    ``gcp-gpu`` VM's, and a GKE GPU pool's with its cluster's system pool (the same quotas: a GKE
    node is a Compute Engine VM)."""
    return merged([*gpu_quotas(ask, table), *cpu_quotas(ask, table), *storage_and_address_quotas(ask, table)])
