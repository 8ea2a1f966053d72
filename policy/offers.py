"""Which catalog offer a resource's shape is: an AWS instance type, a GCP machine type (plus the
GPUs attached to an N1 host), a TPU accelerator type, looked up in fullserver's own catalog
(``fullserver.catalog.load_catalog()``), the one the core sized the environment from.

One lookup serves every platform (``offer``): the shape's offer on the platform the resource
builds, or, for a host with accelerators attached, the offer of that host with that many of
that model. A shape the catalog does not list has no offer (``None``): the balance policy has
nothing to hold it to and the budget policy cannot price it.
"""

from __future__ import annotations

import functools

from fullserver.catalog import Catalog, Offer, load_catalog
from fullserver.platform import Platform


@functools.cache
def catalog() -> Catalog:
    """fullserver's sourced catalog, loaded once per policy-pack process."""
    return load_catalog()


def offer(platform: Platform, shape: str, attached: tuple[str, int] | None = None) -> Offer | None:
    """The offer of ``shape`` on ``platform``; with ``attached`` (accelerator model, count), the
    offer of that host with those accelerators attached (an N1 host and its GPUs)."""
    if attached is None:
        found = catalog().offer(shape)
        return found if found is not None and found.platform is platform else None
    model, count = attached
    for candidate in catalog().offers_on(platform):
        host = candidate.host
        if candidate.machine_type == shape and host.accelerator_count == count and host.accelerator == model:
            return candidate
    return None
