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

from pulumi_policy.secret import Secret

from fullserver.platforms import QUEUED_TPU_TYPE

AWS_SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"
AWS_SG_INGRESS_RULE = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
AWS_SG_RULE = "aws:ec2/securityGroupRule:SecurityGroupRule"
AWS_LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
AWS_INSTANCE = "aws:ec2/instance:Instance"
AWS_SPOT_REQUEST = "aws:ec2/spotInstanceRequest:SpotInstanceRequest"
AWS_SPOT_FLEET = "aws:ec2/spotFleetRequest:SpotFleetRequest"
AWS_VOLUME = "aws:ebs/volume:Volume"
AWS_VOLUME_ATTACHMENT = "aws:ec2/volumeAttachment:VolumeAttachment"
AWS_SUBNET = "aws:ec2/subnet:Subnet"
AWS_ASG = "aws:autoscaling/group:Group"
GCP_FIREWALL = "gcp:compute/firewall:Firewall"
GCP_INSTANCE = "gcp:compute/instance:Instance"
GCP_TEMPLATE = "gcp:compute/instanceTemplate:InstanceTemplate"
GCP_REGION_TEMPLATE = "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate"
GCP_DISK = "gcp:compute/disk:Disk"
GCP_REGION_DISK = "gcp:compute/regionDisk:RegionDisk"
GCP_MIG = "gcp:compute/instanceGroupManager:InstanceGroupManager"
GCP_REGION_MIG = "gcp:compute/regionInstanceGroupManager:RegionInstanceGroupManager"
GCP_AUTOSCALER = "gcp:compute/autoscaler:Autoscaler"
GCP_REGION_AUTOSCALER = "gcp:compute/regionAutoscaler:RegionAutoscaler"
TPU_VM = "gcp:tpu/v2Vm:V2Vm"
TPU_QUEUED = QUEUED_TPU_TYPE  # a dynamic resource: pulumi-gcp 10.2's queued node takes no service account

GCP_TEMPLATES = (GCP_TEMPLATE, GCP_REGION_TEMPLATE)
GCP_DISKS = (GCP_DISK, GCP_REGION_DISK)
# What runs (and bills) an environment's accelerators: the resources expiry and capacity rules watch.
COMPUTE_TYPES = (
    AWS_LAUNCH_TEMPLATE,
    AWS_INSTANCE,
    AWS_SPOT_REQUEST,
    AWS_SPOT_FLEET,
    AWS_ASG,
    GCP_INSTANCE,
    *GCP_TEMPLATES,
    TPU_VM,
    TPU_QUEUED,
)


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


def describe(resource_type: str, name: str) -> str:
    """``Instance 'node-0'``: how a message names a resource (the type's last part and the resource's name)."""
    return f"{resource_type.rsplit(':', 1)[-1]} '{name}'"
