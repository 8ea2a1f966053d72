"""Which catalog offer a resource's shape is: an AWS instance type, a GCP machine type (plus the
GPUs attached to an N1 host), a TPU accelerator type, looked up in fullserver's own catalog
(``fullserver.catalog.load_catalog()``), the one the core sized the environment from.

A shape the catalog does not list has no offer (``None``): the balance policy has nothing to hold
it to and the budget policy cannot price it.
"""

from __future__ import annotations

import functools
from typing import Any

from fullserver.catalog import Catalog, Offer, load_catalog
from fullserver.platform import Platform
from fullserver.platforms.gcp import ATTACHED_GPU_TYPES
from policy.resources import last_segment, number, prop


@functools.cache
def catalog() -> Catalog:
    """fullserver's sourced catalog, loaded once per policy-pack process."""
    return load_catalog()


def gcp_offer(machine_type: str, accelerators: list[Any]) -> Offer | None:
    """A GCP offer: the machine type itself (A2/A3/G2 bundle their GPUs), or an N1 host + N GPUs of
    a model the core attaches by that accelerator type (``fullserver.platforms.gcp.ATTACHED_GPU_TYPES``)."""
    cat = catalog()
    count = sum(int(number(prop(a, "count")) or 0) for a in accelerators)
    if not count:
        offer = cat.offer(machine_type)
        return offer if offer is not None and offer.platform is Platform.GCP_GPU else None
    gpu_type = last_segment(prop(accelerators[0], "type")).lower()
    model = next((m for m, t in ATTACHED_GPU_TYPES.items() if t == gpu_type), None)
    if model is None:
        return None
    for offer in cat.offers:
        if (
            offer.platform is Platform.GCP_GPU
            and offer.machine_type == machine_type
            and offer.host.accelerator_count == count
            and offer.host.accelerator == model
        ):
            return offer
    return None


def aws_offer(instance_type: str) -> Offer | None:
    """The AWS GPU offer for an instance type; ``None`` for a type the catalog does not list as one."""
    offer = catalog().offer(instance_type)
    return offer if offer is not None and offer.platform is Platform.AWS_GPU else None


def tpu_offer(accelerator_type: str) -> Offer | None:
    """The TPU offer for an accelerator type (``v5litepod-8``); ``None`` for one the catalog does not list."""
    offer = catalog().offer(accelerator_type)
    return offer if offer is not None and offer.platform is Platform.TPU_VM else None
