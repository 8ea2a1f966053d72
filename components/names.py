"""Names every platform's resources share the rules of: logical names that autonaming turns into
names each provider's API accepts, names the program sets itself (``fullserver.naming``), and
nested output fields read alike from typed objects and mocks. Each cloud's labels are its own
(``components.aws.labels``, ``components.gcp.labels``).

Helm releases: a release on a cluster the stack created is named after its chart
(``nvidia-device-plugin``, ``cluster-autoscaler``, ``aws-load-balancer-controller``) through
``physical``: one of each per cluster, a name that does not depend on the stack's
(pulumi-kubernetes' autoname, ``<logical>-<8 hex>``, passed Helm's 53 characters once the stack's
name passed 15 to 25, and kept its upper case, ``_`` and ``.``), and the chart's objects named as
its documentation shows them. Such a release is deleted before it is replaced: a second copy
beside it would claim the same ServiceAccount and run a second controller."""

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
