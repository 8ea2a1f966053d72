"""Names every platform's resources share the rules of: logical names that autonaming turns into
names each provider's API accepts, names the program sets itself (``fullserver.naming``), and
nested output fields read alike from typed objects and mocks. Each cloud's labels are its own
(``components.aws.labels``, ``components.gcp.labels``).

Design notes: docs/design/components.md.
"""

from __future__ import annotations

from typing import Any

from fullserver import naming

__all__ = ["field", "logical", "physical"]


def logical(resource: Any, name: str) -> str:
    """The logical name to give a resource of class ``resource`` so that the name its provider
    makes of it (autonaming) is one its API accepts, for any stack name (``fullserver.naming``)."""
    return naming.fit(resource.pulumi_type, name)


def physical(resource: Any, text: str, field: str = "name") -> str:
    """A name the program sets itself (``field`` of ``resource``), made one its API accepts."""
    return naming.fit_name(resource.pulumi_type, text, field)


def field(obj: object, name: str) -> object:
    """A nested output field, whether the SDK gave a typed object or (under mocks) a plain dict."""
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)
