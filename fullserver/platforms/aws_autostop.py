"""How an idle aws environment stops itself (``PlatformRules.autostop``, ``fullserver.autostop``):
the stop ways its nodes' agent takes and the permissions each needs, apart from the platform's
other rules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from fullserver.autostop.way import ENVIRONMENT_BILLS, StopWay

if TYPE_CHECKING:
    from fullserver.spec import EnvironmentSpec


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


def autostop(spec: EnvironmentSpec) -> StopWay:
    """Spot nodes are a group's (``components.aws.spot``): the group goes to zero, or it would
    launch a replacement; an instance of this component's stops itself."""
    return GROUP_TO_ZERO if spec.spot else INSTANCE_SHUTDOWN
