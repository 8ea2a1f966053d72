"""GCP labels and names in Google Cloud's alphabet (GPU VMs and TPUs alike).

The core writes labels such as ``fullserver-owner: ml-research`` and makes them GCP labels
(``fullserver.rules.gcp_labels``)."""

from __future__ import annotations

import re

from fullserver.rules import gcp_labels

__all__ = ["gcp_labels", "gcp_name"]


def gcp_name(text: str, limit: int = 63) -> str:
    """A resource name GCP accepts: ``[a-z]([-a-z0-9]*[a-z0-9])?`` within ``limit`` characters."""
    name = re.sub(r"[^a-z0-9-]", "-", text.lower()).strip("-")
    if not name[:1].isalpha():
        name = "fs-" + name
    return name[:limit].rstrip("-")
