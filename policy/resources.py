"""What a resource says: the type tokens the policies know, and reading their props.

Resource policies see a resource's *inputs*, stack policies its *outputs*; both arrive as the
provider's wire names (camelCase), possibly wrapped as secrets, with booleans and numbers spelled
however the provider spells them (a launch template carries ``"true"``). These readers turn that
into plain values, and return ``None`` / ``[]`` for a missing or mistyped prop so a policy never
fails on a shape it did not expect. A value not known during preview raises ``UnknownValueError``
from the proxy; the readers let it propagate (see ``policy.stack_nodes``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pulumi_policy import PolicyResource
from pulumi_policy.secret import Secret

from fullserver.clouds import all_clouds, aws, gcp
from fullserver.tls import PLAIN_HTTP_LABEL

# Each cloud's resource types, as the policies name them (the clouds' own tables).
AWS_SECURITY_GROUP = aws.SECURITY_GROUP
AWS_SG_INGRESS_RULE = aws.SG_INGRESS_RULE
AWS_SG_RULE = aws.SG_RULE
AWS_LAUNCH_TEMPLATE = aws.LAUNCH_TEMPLATE
AWS_INSTANCE = aws.INSTANCE
AWS_SPOT_REQUEST = aws.SPOT_REQUEST
AWS_SPOT_FLEET = aws.SPOT_FLEET
AWS_VOLUME = aws.VOLUME
AWS_VOLUME_ATTACHMENT = aws.VOLUME_ATTACHMENT
AWS_SUBNET = aws.SUBNET
AWS_ASG = aws.ASG
GCP_FIREWALL = gcp.FIREWALL
GCP_INSTANCE = gcp.INSTANCE
GCP_TEMPLATE = gcp.TEMPLATE
GCP_DISK = gcp.DISK
GCP_MIG = gcp.MIG
GCP_REGION_MIG = gcp.REGION_MIG
GCP_AUTOSCALER = gcp.AUTOSCALER
GCP_REGION_AUTOSCALER = gcp.REGION_AUTOSCALER
TPU_VM = gcp.TPU_VM
TPU_QUEUED = gcp.TPU_QUEUED

GCP_TEMPLATES = gcp.TEMPLATES
GCP_DISKS = gcp.DISKS
COMPUTE_TYPES = tuple(t for cloud in all_clouds() for t in cloud.compute_types)
"""What runs (and bills) an environment's accelerators: the resources expiry and capacity rules
watch, every cloud's (``Cloud.compute_types``)."""


def plain(value: Any) -> Any:
    """A prop without its secret wrapper: guardrails judge shapes and flags, not secret contents."""
    return value.value if isinstance(value, Secret) else value


def prop(obj: Any, *path: str | int) -> Any:
    """A nested prop, or None when any step is missing or of the wrong kind."""
    cur = plain(obj)
    for step in path:
        if isinstance(step, int):
            if not isinstance(cur, Sequence) or isinstance(cur, str) or step >= len(cur):
                return None
            cur = plain(cur[step])
        else:
            if not isinstance(cur, Mapping):
                return None
            cur = plain(cur.get(step))
    return cur


def as_list(value: Any) -> list[Any]:
    """A list prop's plain items; ``[]`` for a missing prop or anything that is not a list (a string is not)."""
    value = plain(value)
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [plain(v) for v in value]
    return []


def truthy(value: Any) -> bool:
    """Booleans as providers spell them: launch templates carry "true"/"false" strings."""
    value = plain(value)
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def number(value: Any) -> float | None:
    """A numeric prop (the wire sends numbers as floats or strings); ``None`` for a missing or non-numeric one,
    and for a boolean, which is not a count."""
    value = plain(value)
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def last_segment(value: Any) -> str:
    """``zones/us-central1-a/machineTypes/a2-highgpu-1g`` -> ``a2-highgpu-1g``; names stay names."""
    text = str(plain(value) or "")
    return text.rstrip("/").rsplit("/", 1)[-1]


def on(r: PolicyResource, key: str, resource_type: str) -> list[PolicyResource]:
    """The resources of ``resource_type`` an input of ``r`` came from (the engine's property dependencies)."""
    return [d for d in (r.property_dependencies or {}).get(key, []) if d.resource_type == resource_type]


def marked(labels: object) -> bool:
    """The stack said ``plainHttp`` (``fullserver.tls.PLAIN_HTTP_LABEL`` on the resource's tags or labels)."""
    return bool(prop(labels, PLAIN_HTTP_LABEL) == "true")


def describe(resource_type: str, name: str) -> str:
    """``Instance 'node-0'``: how a message names a resource (the type's last part and the resource's name)."""
    return f"{resource_type.rsplit(':', 1)[-1]} '{name}'"
