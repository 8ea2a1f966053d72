"""How an idle aws environment stops itself (``PlatformRules.autostop``, ``fullserver.autostop``):
the stop ways its nodes' agent takes and the permissions each needs, apart from the platform's
other rules."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

from fullserver.autostop.way import ENVIRONMENT_BILLS, StopWay
from fullserver.platform import AcceleratorKind
from fullserver.rules import LABEL_ENVIRONMENT

if TYPE_CHECKING:
    from fullserver.platforms.reads import SpecReads


GROUP_TO_ZERO = StopWay(
    "aws-group-to-zero",
    "the node sets its environment's Auto Scaling groups to 0 (minimum, maximum and desired): "
    "the on-demand fallback cannot take over either",
    "the instances and their volumes (deleted with the instances): /scratch, /data and the root disk",
    "pulumi up --refresh restores each group's sizes",
    ENVIRONMENT_BILLS,
    restored_by_up=True,
)
INSTANCE_SHUTDOWN = StopWay(
    "aws-instance-shutdown",
    "the node shuts itself down and the instance stops (the launch template's instance-initiated "
    "shutdown behaviour is stop)",
    "the instance store (/scratch comes back blank) and memory; the EBS root and data volumes stay",
    "aws ec2 start-instances for each node",
    ENVIRONMENT_BILLS | {"boot disk", "data disk"},
    restored_by_up=False,
)

STOPPED_STATES = frozenset({"stopping", "stopped", "shutting-down", "terminated"})
"""An instance's ``instance_state`` (pulumi-aws ``ec2.Instance``; EC2 ``InstanceState``: pending,
running, shutting-down, terminated, stopping, stopped) that is not running, nor about to."""


def start_argv(instance_id: str, region: str) -> list[str]:
    """How ``fullserver start`` starts one stopped instance, argv (AWS CLI ``aws ec2 start-instances
    --instance-ids``, the EC2 API's ``StartInstances``: an EBS-backed instance stopped before)."""
    return ["aws", "ec2", "start-instances", "--instance-ids", instance_id, "--region", region]


NEURON = frozenset({AcceleratorKind.TRAINIUM, AcceleratorKind.INFERENTIA})
"""Accelerators the idle agent cannot see at work (``components.autostop_agent`` reads NVIDIA GPUs
and TPU devices): their nodes would look idle with a job running."""


def autostop(spec: SpecReads) -> StopWay | str:
    """Spot nodes are a group's (``components.aws.spot``): the group goes to zero, or it would
    launch a replacement; an instance of this component's stops itself. Neuron nodes get no agent:
    it would stop them mid-job."""
    if spec.accelerator_kind in NEURON:
        return "the idle agent sees NVIDIA GPUs and TPUs at work, not Neuron devices, so it would stop a running job"
    return GROUP_TO_ZERO if spec.spot else INSTANCE_SHUTDOWN


GRANT_SUFFIX = "-autostop"
"""The node role's autostop policy is named ``<environment>-autostop``: what the policy pack judges
as an autostop grant (the EKS cluster autoscaler's Auto Scaling grant is another matter)."""


RESIZE = "autoscaling:UpdateAutoScalingGroup"
"""What sets a group's sizes (held to 0/0 by the grant's conditions)."""
UNPROTECT = "autoscaling:SetInstanceProtection"
"""What lifts a group member's scale-in protection; it cannot grow a group."""


def group_stop_policy(environment: str) -> dict[str, object]:
    """The node's grant for ``GROUP_TO_ZERO``: find the groups (``DescribeAutoScalingGroups`` has no
    resource-level permission), lift their members' scale-in protection (the on-demand fallback's
    would otherwise keep running at desired 0) and update them only to 0/0, both only on groups
    tagged with ``environment`` (IAM "Actions, resources and condition keys for Amazon EC2 Auto
    Scaling": ``autoscaling:ResourceTag/${TagKey}``, ``autoscaling:MinSize``, ``autoscaling:MaxSize``)."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "FindGroups",
                "Effect": "Allow",
                "Action": "autoscaling:DescribeAutoScalingGroups",
                "Resource": "*",
            },
            {
                "Sid": "OwnGroupsToZero",
                "Effect": "Allow",
                "Action": RESIZE,
                "Resource": "*",
                "Condition": {
                    "StringEquals": {f"autoscaling:ResourceTag/{LABEL_ENVIRONMENT}": environment},
                    "NumericEquals": {"autoscaling:MinSize": 0, "autoscaling:MaxSize": 0},
                },
            },
            {
                "Sid": "OwnGroupsUnprotected",
                "Effect": "Allow",
                "Action": UNPROTECT,
                "Resource": "*",
                "Condition": {"StringEquals": {f"autoscaling:ResourceTag/{LABEL_ENVIRONMENT}": environment}},
            },
        ],
    }


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _words(value: object) -> list[str]:
    return [value] if isinstance(value, str) else [str(v) for v in value] if isinstance(value, list) else []


def group_stop_problems(document: Mapping[str, Any], environments: Collection[str]) -> list[str]:
    """Where an IAM policy document lets a node change Auto Scaling groups beyond its own
    environment's (``environments``: the stack's groups' environment tags), or to anything but
    0/0 (a statement that resizes), or to anything but that and lifting scale-in protection: the
    rule ``group_stop_policy`` is built to, and the policy pack judges every role by."""
    out = []
    statements = document.get("Statement")
    for i, st in enumerate(statements if isinstance(statements, list) else [statements]):
        if not isinstance(st, Mapping) or st.get("Effect") != "Allow":
            continue
        writes = [a for a in _words(st.get("Action")) if _writes_groups(a)]
        if not writes:
            continue
        where = f"statement {st.get('Sid') or i}"
        if not set(writes) <= {RESIZE, UNPROTECT}:
            out.append(f"{where} allows {', '.join(writes)}: allow only {RESIZE} and {UNPROTECT}")
        cond = _mapping(st.get("Condition"))
        tag = _mapping(cond.get("StringEquals")).get(f"autoscaling:ResourceTag/{LABEL_ENVIRONMENT}")
        if tag not in environments:
            out.append(
                f"{where} is not conditioned on autoscaling:ResourceTag/{LABEL_ENVIRONMENT} naming this stack's groups"
                f" ({', '.join(sorted(environments)) or 'none'}), but {tag!r}: scope it to the stack's own groups"
            )
        sizes = _mapping(cond.get("NumericEquals"))
        if writes != [UNPROTECT] and any(
            str(sizes.get(k)) != "0" for k in ("autoscaling:MinSize", "autoscaling:MaxSize")
        ):
            out.append(f"{where} does not hold autoscaling:MinSize and autoscaling:MaxSize to 0: it could grow a group")
    return out


def _writes_groups(action: str) -> bool:
    """An action that can change a group: any of ``autoscaling:`` but the read-only ``Describe*``,
    and wildcards (``*``, ``autoscaling:*``, ``autoscaling:Update*``)."""
    service, _, name = action.partition(":")
    if action == "*":
        return True
    return service.lower() == "autoscaling" and not (name.startswith("Describe") and "*" not in name)
