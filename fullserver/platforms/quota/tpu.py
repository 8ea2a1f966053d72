"""The Cloud TPU quotas a TPU environment counts against (``tpu-vm``), per generation, zone,
region and pricing model, and the Compute Engine quotas of its data disk and Cloud NAT. Quota IDs
are data (``catalog/data/quotas.yaml``).
"""

from __future__ import annotations

from fullserver.platforms.quota import QuotaAsk, QuotaNeed, QuotaTable, gcp, need


def type_size(accelerator_type: str) -> int:
    """The number an accelerator type ends in: chips for v5e/v6e (``v5litepod-8``), TensorCores
    for v4/v5p (``v5p-128``), the unit each generation's quota counts in."""
    return int(accelerator_type.rsplit("-", 1)[1])


def quotas(ask: QuotaAsk, table: QuotaTable) -> list[QuotaNeed]:
    """The generation's Cloud TPU quota in the zone and in the region (both bind), on demand or
    preemptible (spot), sized by the type; plus the Compute Engine disk and address quotas the
    TPU's data disk and Cloud NAT count against. A generation without sourced quota IDs (or
    without a preemptible one, for spot) names none rather than a guess."""
    gen = next((g for g in table.tpu_generations.values() if ask.shape.startswith(g.prefix)), None)
    keys = [] if gen is None else [gen.preemptible_zone, gen.preemptible_region] if ask.spot else [gen.zone, gen.region]
    size = type_size(ask.shape)
    why = f"one {ask.shape}" + (", spot" if ask.spot else "")
    return [
        *(need(table, key, ask, size, why, "gcp") for key in keys if key is not None),
        *gcp.storage_and_address_quotas(ask, table),
    ]
