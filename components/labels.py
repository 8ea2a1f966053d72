"""Labels (GCP) and tags (AWS) from the spec's labels, in each cloud's alphabet.

The core writes labels such as ``fullserver-owner: ml-research``. GCP label keys and values allow
only lowercase letters, digits, ``_`` and ``-``, at most 63 characters, and a key must start
with a letter (Compute Engine "Labels" requirements); AWS tags are free text, and the ``Name``
tag is what the console shows.
"""

from __future__ import annotations

import re

_GCP_BAD = re.compile(r"[^a-z0-9_-]")


def _gcp_text(text: str) -> str:
    return _GCP_BAD.sub("-", text.lower())[:63]


def gcp_labels(labels: dict[str, str]) -> dict[str, str]:
    """Labels valid on every GCP resource; keys that cannot start with a letter get a prefix."""
    out: dict[str, str] = {}
    for key, value in sorted(labels.items()):
        k = _gcp_text(key)
        if not k[:1].isalpha():
            k = ("l-" + k)[:63]
        out[k] = _gcp_text(value)
    return out


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
