"""The Compute Engine quotas a GKE TPU slice pool counts against (``gke-tpu``): its chips on the
generation's Compute Engine TPU metric (on demand or preemptible for Spot), not the Cloud TPU API's
quota the ``tpu-vm`` platform names ("Compute Engine API quota (compute.googleapis.com) is
different from Cloud TPU API quota (tpu.googleapis.com)", GKE "Troubleshoot TPUs in GKE"); a pool
on a reservation needs none. Plus the cluster's system pool's CPUs and the disks and addresses
(``gcp``). A GKE GPU pool's quotas are a GPU VM's (``gcp.quotas``).
"""

from __future__ import annotations

from fullserver.platforms.quota import QuotaAsk, QuotaNeed, QuotaTable, gcp, merged, need


def tpu_chip_quotas(ask: QuotaAsk, table: QuotaTable) -> list[QuotaNeed]:
    """Each pool's chips (its nodes x chips per node) on the generation's metric; none for a
    generation without a sourced Compute Engine metric (v5p, v6e), nor on a reservation."""
    gen = next((g for g in table.gke_tpu_generations.values() if ask.slice_type.startswith(g.prefix)), None)
    if gen is None or ask.reservation:
        return []
    out = []
    for pool in ask.accelerator_pools:
        why = f"{pool.machines} x {ask.shape} x {ask.accelerators} chips ({ask.slice_type})"
        key = gen.preemptible if pool.spot else gen.on_demand
        out.append(
            need(table, key, ask, pool.machines * ask.accelerators, why + (", spot" if pool.spot else ""), "gcp")
        )
    return out


def tpu_quotas(ask: QuotaAsk, table: QuotaTable) -> list[QuotaNeed]:
    """Every Compute Engine quota a GKE TPU slice pool and its cluster count against. The slice
    hosts' vCPUs are not counted: no source names a CPU quota for the ``ct*`` machine types."""
    return merged(
        [
            *tpu_chip_quotas(ask, table),
            *gcp.cpu_quotas(ask, table, accelerator_hosts=False),
            *gcp.storage_and_address_quotas(ask, table),
        ]
    )
