"""Least-privilege identities for the nodes: a GCP service account, an AWS instance profile.

Nodes get only what running and observing them needs; access to datasets (a bucket) is granted
by its owner to the identity this exports, never by a broad project role here.

* GCP: ``roles/logging.logWriter`` and ``roles/monitoring.metricWriter`` (what the Ops Agent and
  the TPU runtime write), with the ``cloud-platform`` scope so IAM alone decides access (Compute
  Engine "Service accounts" best practice: scopes are legacy, use IAM).
* AWS: Session Manager's own actions (``fullserver.platforms.aws.SESSION_MANAGER_ACTIONS``), so
  it replaces inbound SSH, and not ``AmazonSSMManagedInstanceCore``, which lets a node read every
  SSM parameter; a serving node reads its model server's parameters (``secret_reader``). Serving groups
  scale on the ALB's request count, which needs nothing from the nodes; ``cloudwatch_agent`` adds
  ``CloudWatchAgentServerPolicy`` where an agent publishes metrics.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_gcp as gcp

from components.labels import aws_tags, logical, physical
from fullserver.platforms import aws as ec2

GCP_NODE_ROLES = ("roles/logging.logWriter", "roles/monitoring.metricWriter")
GCP_SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]


def gcp_service_account(
    name: str, parent: pulumi.Resource, project: pulumi.Input[str] | None
) -> gcp.serviceaccount.Account:
    # account_id: 6-30 characters, [a-z]([-a-z0-9]*[a-z0-9]), unique in the project (IAM
    # "Creating service accounts"): a long stack name is cut and a hash of it added, so two
    # stacks sharing their first 27 characters never ask for the same id.
    account_id = physical(gcp.serviceaccount.Account, f"fs-{name}", "accountId")
    opts = pulumi.ResourceOptions(parent=parent)
    sa = gcp.serviceaccount.Account(
        f"{name}-sa",
        project=project,
        account_id=account_id,
        display_name=f"fullserver {name} nodes"[:100],  # at most 100 characters
        description="least privilege: write logs and metrics; data access is granted per bucket",
        opts=opts,
    )
    for role in GCP_NODE_ROLES:
        gcp.projects.IAMMember(
            f"{name}-{role.split('/')[-1].replace('.', '-').lower()}",
            project=project if project is not None else sa.project,
            role=role,
            member=sa.email.apply(lambda email: f"serviceAccount:{email}"),
            opts=opts,
        )
    return sa


@dataclass(frozen=True)
class AwsIdentity:
    role: aws.iam.Role
    profile: aws.iam.InstanceProfile


def aws_instance_profile(
    name: str, parent: pulumi.Resource, tags: dict[str, str], cloudwatch_agent: bool
) -> AwsIdentity:
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
        description=f"fullserver {name} nodes: Session Manager (and GPU metrics for serving groups)",
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
    if cloudwatch_agent:
        arn = "arn:aws:iam::aws:policy/CloudWatchAgentServerPolicy"
        aws.iam.RolePolicyAttachment(f"{name}-cloudwatchagentserverpolicy", role=role.name, policy_arn=arn, opts=opts)
    profile = aws.iam.InstanceProfile(
        logical(aws.iam.InstanceProfile, f"{name}-profile"),
        role=role.name,
        tags=aws_tags(tags, f"{name}-profile"),
        opts=opts,
    )
    return AwsIdentity(role=role, profile=profile)
