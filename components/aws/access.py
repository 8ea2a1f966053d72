"""The way into AWS nodes: Session Manager or direct SSH, per instance or per Auto Scaling group
(the ``connect``, ``nodes`` and ``nodeGroups`` outputs; ``fullserver.nodes``)."""

from __future__ import annotations

from components.startup import LOGIN_USER
from fullserver.nodes import NodeAccess, NodeGroupAccess, Via
from fullserver.platforms import aws as ec2


def ssm_command(region: str, target: str) -> str:
    """Session Manager: needs the AWS CLI with its Session Manager plugin, and
    ``ssm:StartSession`` on the instance (the nodes' role lets the agent register)."""
    return f"aws ssm start-session --region {region} --target {target}"


def group_instance(region: str, groups: list[str]) -> str:
    """A shell substitution that names one in-service instance of any of ``groups`` (the spot
    group or its on-demand fallback: whichever runs the nodes right now)."""
    return (
        f"$(aws autoscaling describe-auto-scaling-groups --region {region} --auto-scaling-group-names {' '.join(groups)} "
        "--query \"AutoScalingGroups[].Instances[?LifecycleState=='InService'][] | [0].InstanceId\" --output text)"
    )


def instance_access(
    instance_id: str, private_ip: str | None, public_ip: str | None, *, region: str, keys: bool, via: Via
) -> NodeAccess:
    """One instance's row of the ``nodes`` output: Session Manager carries SSH to it by its id
    unless it is reached directly (``fullserver.platforms.aws.ssm_proxy``)."""
    return NodeAccess(
        name=instance_id,
        private_ip=private_ip or "",
        public_ip=public_ip or "",
        user=LOGIN_USER,
        keys=keys,
        via=via,
        proxy_command=ec2.ssm_proxy(instance_id, region) if via == "ssm" else [],
        host_keys_command=ec2.host_keys_command(instance_id, region),
    )


def asg_access(groups: list[str], region: str, *, keys: bool, via: Via) -> NodeGroupAccess:
    """The groups' row of the ``nodeGroups`` output: one listing covers the spot group and its
    on-demand fallback, whichever runs the nodes now (``fullserver.platforms.aws.group_list_command``)."""
    return NodeGroupAccess(
        provider="aws",
        groups=groups,
        region=region,
        user=LOGIN_USER,
        keys=keys,
        via=via,
        list_command=ec2.group_list_command(groups, region),
    )
