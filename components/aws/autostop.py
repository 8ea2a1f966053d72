"""The idle agent's stop on AWS (``fullserver.platforms.aws_autostop`` ``GROUP_TO_ZERO``, ``INSTANCE_SHUTDOWN``).

Design notes: docs/design/components.md.
"""

from __future__ import annotations

import json
import shlex

import pulumi
import pulumi_aws as aws

from components.names import logical
from fullserver.platforms import aws_autostop as ec2
from fullserver.rules import LABEL_ENVIRONMENT

SHUTDOWN = """#!/bin/sh
# fullserver: stop this instance (instance-initiated shutdown behaviour: stop)
exec shutdown -h now "fullserver-autostop: idle"
"""

_GROUPS = """#!/bin/sh
# fullserver: set this environment's Auto Scaling groups to 0 (its role allows only that). A group's
# members protected from scale-in (the on-demand fallback's, components.aws.spot) would keep running
# at desired 0, so their protection is lifted first.
set -eu
groups="$(aws autoscaling describe-auto-scaling-groups --region __REGION__ \\
  --filters Name=tag:__KEY__,Values=__VALUE__ --query 'AutoScalingGroups[].AutoScalingGroupName' --output text)"
[ -n "$groups" ] || { echo "no Auto Scaling group tagged __KEY__=__VALUE__" >&2; exit 1; }
for group in $groups; do
  protected="$(aws autoscaling describe-auto-scaling-groups --region __REGION__ --auto-scaling-group-names "$group" \\
    --query 'AutoScalingGroups[0].Instances[?ProtectedFromScaleIn].InstanceId' --output text)"
  if [ -n "$protected" ]; then
    # shellcheck disable=SC2086  # one argument per instance id
    aws autoscaling set-instance-protection --region __REGION__ --auto-scaling-group-name "$group" \\
      --instance-ids $protected --no-protected-from-scale-in
  fi
  aws autoscaling update-auto-scaling-group --region __REGION__ --auto-scaling-group-name "$group" \\
    --min-size 0 --max-size 0 --desired-capacity 0
done
"""


def stop_script(way: str, region: str, labels: dict[str, str]) -> str:
    """The stop command the agent runs, for the plan's way."""
    if way == ec2.INSTANCE_SHUTDOWN.key:
        return SHUTDOWN
    if way != ec2.GROUP_TO_ZERO.key:
        raise ValueError(f"no AWS stop for autostop way '{way}'")
    values = {
        "__REGION__": shlex.quote(region),
        "__KEY__": LABEL_ENVIRONMENT,
        "__VALUE__": shlex.quote(labels[LABEL_ENVIRONMENT]),
    }
    text = _GROUPS
    for key, value in values.items():
        text = text.replace(key, value)
    return text


def grant_stop(name: str, parent: pulumi.Resource, way: str, role: aws.iam.Role, labels: dict[str, str]) -> None:
    """The role's grant for the way: none for an instance's shutdown."""
    if way != ec2.GROUP_TO_ZERO.key:
        return
    aws.iam.RolePolicy(
        logical(aws.iam.RolePolicy, f"{name}{ec2.GRANT_SUFFIX}"),
        role=role.id,
        policy=json.dumps(ec2.group_stop_policy(labels[LABEL_ENVIRONMENT])),
        opts=pulumi.ResourceOptions(parent=parent),
    )
