"""Labels (GCP) and tags (AWS) from the spec's labels, in each cloud's alphabet.

The core writes labels such as ``fullserver-owner: ml-research`` (``fullserver.rules``, which
also makes them GCP labels: ``gcp_labels``); AWS tags are free text, and the ``Name`` tag is what
the console shows.
"""

from __future__ import annotations

import re
from typing import Any

from fullserver import naming
from fullserver.rules import gcp_labels

__all__ = ["aws_tags", "field", "gcp_labels", "gcp_name", "logical", "physical"]


def logical(resource: Any, name: str) -> str:
    """The logical name to give a resource of class ``resource`` so that the name its provider
    makes of it (autonaming) is one its API accepts, for any stack name (``fullserver.naming``)."""
    return naming.fit(resource.pulumi_type, name)


def physical(resource: Any, text: str, field: str = "name") -> str:
    """A name the program sets itself (``field`` of ``resource``), made one its API accepts."""
    return naming.fit_name(resource.pulumi_type, text, field)


def aws_tags(labels: dict[str, str], name: str) -> dict[str, str]:
    return {**dict(sorted(labels.items())), "Name": name}


def gcp_name(text: str, limit: int = 63) -> str:
    """A resource name GCP accepts: ``[a-z]([-a-z0-9]*[a-z0-9])?`` within ``limit`` characters."""
    name = re.sub(r"[^a-z0-9-]", "-", text.lower()).strip("-")
    if not name[:1].isalpha():
        name = "fs-" + name
    return name[:limit].rstrip("-")


def field(obj: object, name: str) -> object:
    """A nested output field, whether the SDK gave a typed object or (under mocks) a plain dict."""
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)
