"""The AWS nodes' least-privilege identity: an IAM role and its instance profile.

Nodes get only what running and observing them needs; access to datasets (a bucket) is granted
by its owner to the role this exports, never by a broad policy here: Session Manager's own
actions (``fullserver.platforms.aws.SESSION_MANAGER_ACTIONS``), so it replaces inbound SSH, and
not ``AmazonSSMManagedInstanceCore``, which lets a node read every SSM parameter; a serving node
reads its model server's parameters (``secret_reader``). Serving groups scale on the
ALB's request count, which needs nothing from the nodes, so no metrics policy is attached.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.aws.labels import aws_tags
from components.names import logical
from fullserver.platforms import aws as ec2


@dataclass(frozen=True)
class AwsIdentity:
    role: aws.iam.Role
    profile: aws.iam.InstanceProfile


def aws_instance_profile(name: str, parent: pulumi.Resource, tags: dict[str, str]) -> AwsIdentity:
    opts = pulumi.ResourceOptions(parent=parent)
    role = aws.iam.Role(
        logical(aws.iam.Role, f"{name}-role"),
        assume_role_policy=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
                ],
            }
        ),
        description=f"fullserver {name} nodes: Session Manager",
        tags=aws_tags(tags, f"{name}-role"),
        opts=opts,
    )
    session_manager = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": list(ec2.SESSION_MANAGER_ACTIONS), "Resource": "*"}],
    }
    aws.iam.RolePolicy(
        logical(aws.iam.RolePolicy, f"{name}-session-manager"),
        role=role.id,
        policy=json.dumps(session_manager),
        opts=opts,
    )
    profile = aws.iam.InstanceProfile(
        logical(aws.iam.InstanceProfile, f"{name}-profile"),
        role=role.name,
        tags=aws_tags(tags, f"{name}-profile"),
        opts=opts,
    )
    return AwsIdentity(role=role, profile=profile)


def secret_reader(name: str, parent: pulumi.Resource, region: str, role: aws.iam.Role, parameters: list[str]) -> None:
    """Let the nodes read the SSM parameters the model server needs (the Hugging Face token, the
    endpoint's API key), and no other.

    A SecureString under the AWS managed key ``aws/ssm`` needs no KMS grant: that key's policy lets
    the account's principals use it through Systems Manager. A customer managed key needs
    ``kms:Decrypt`` for the role, granted where the key is managed. The ARN's partition and
    account are the caller's own (``aws:`` in China and GovCloud differs).
    """
    # through ``parent``, the stack's explicit provider (its region): the default provider has none
    invoke = pulumi.InvokeOutputOptions(parent=parent)
    partition = aws.get_partition_output(opts=invoke).partition
    account = aws.get_caller_identity_output(opts=invoke).account_id
    paths = [p if p.startswith("/") else f"/{p}" for p in parameters]
    policy = pulumi.Output.all(partition, account).apply(
        lambda pa: json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Action": "ssm:GetParameter",
                        "Resource": [f"arn:{pa[0]}:ssm:{region}:{pa[1]}:parameter{path}" for path in paths],
                    }
                ],
            }
        )
    )
    aws.iam.RolePolicy(
        logical(aws.iam.RolePolicy, f"{name}-model-secrets"),
        role=role.id,
        policy=policy,
        opts=pulumi.ResourceOptions(parent=parent),
    )
