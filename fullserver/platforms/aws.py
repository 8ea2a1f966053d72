"""AWS GPU, Trainium and Inferentia instances (``aws-gpu``): everything fullserver knows about them.

Sources: Amazon EBS "General Purpose SSD volumes" (gp3 limits), EC2 API ``VolumeSize`` (gp3
size), EC2 "Capacity Blocks for ML", EC2 "Maximize network bandwidth ... with multiple network
cards" (EFA), EC2 "Regions and Zones" (zone names)."""

from __future__ import annotations

import json
import re

from fullserver.baremetal.keys import KNOWN_KEY_TYPES, parse_key_line
from fullserver.errors import InputError
from fullserver.nodes import NodeAccess, NodeGroupAccess
from fullserver.platform import AcceleratorKind, Platform, PricingModel
from fullserver.platforms.aws_autostop import autostop
from fullserver.platforms.aws_capacity import capacity_steps
from fullserver.platforms.base import (
    CAPACITY_RULES,
    CLOUD_LOGIN,
    GPU_SERVING,
    DiskKind,
    DiskLimits,
    NameRule,
    PlatformRules,
    Refusal,
    Request,
    ZoneForm,
    disk_kind_refusal,
)
from fullserver.platforms.network.aws import LB_MIN_ZONES as LB_MIN_ZONES
from fullserver.platforms.network.aws import LOAD_BALANCER as LOAD_BALANCER
from fullserver.platforms.network.aws import LOAD_BALANCER_SCHEMES as LOAD_BALANCER_SCHEMES
from fullserver.platforms.network.aws import NETWORK
from fullserver.platforms.network.aws import SERVING_ZONES as SERVING_ZONES
from fullserver.platforms.quota import aws as quota

# gp3 provisions IOPS and throughput independently of size: 3,000-16,000 IOPS, at most 500 IOPS
# per GiB; 125-1,000 MiB/s, at most 0.25 MiB/s per IOPS; 1-16,384 GiB.
GP3 = DiskKind("gp3", 16_384, DiskLimits(3_000, 16_000, 500, 125, 1_000, 0.25))
DISKS = {GP3.name: GP3}

DATA_DISK_KINDS = ("gp3",)

# What EC2 creates when a volume names no kind (pulumi-aws 7.51 argument docs): an EBS volume and
# an instance's EBS block device get gp2; an instance's root device and a launch template's
# volumes get the AMI's own kind, which is unknown until launch, so the policy pack leaves them
# unpriced rather than guess.
UNSET_VOLUME_KIND = "gp2"
AMI_VOLUME_KIND = "the AMI's volume type"
BOOT_DISK_KINDS = ("gp3",)


ZONES = ZoneForm("[a-f]", "AWS zones are the region and a letter a-f, e.g. {region}a")
"""The letters in use: a region has at most six Availability Zones (us-east-1: use1-az1..az6,
us-east-1a..f), per https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-availability-zones.html;
``us-east-1z`` was accepted, then refused by EC2 at ``up``."""

REGION_PEERS = {
    # Google Cloud region -> the nearest AWS region, so a comparison does not cross continents.
    "us-central1": "us-east-1",
    "us-east5": "us-east-1",
    "us-east1": "us-east-1",
    "europe-west4": "eu-west-1",
    "asia-northeast1": "ap-northeast-1",
    "asia-southeast1": "ap-southeast-1",
}

ROOT_DEVICES = ("/dev/sda1", "/dev/xvda")
"""Root device names of the AMIs fullserver boots (Ubuntu DLAMIs: /dev/sda1; Amazon Linux: /dev/xvda)."""

# Stable device names in the guest (NVMe driver, /dev/disk/by-id).
INSTANCE_STORE_DEVICES = "/dev/disk/by-id/nvme-Amazon_EC2_NVMe_Instance_Storage_*"
EBS_DEVICES = "/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_*"


# --- names ---------------------------------------------------------------------------------------
# What each API accepts as a name (fullserver.naming fits names to these and checks the graph).
# pulumi-aws autonames every one of these (logical name, "-", seven hex characters), never
# shortened: over its own limit (target groups 32, IAM roles 64) it refuses at preview, and the
# API refuses the rest at create time, so a load balancer or target group named after a stack
# over about 20 characters, or one holding "_" or ".", never gets built.
_ELB = "A-Za-z0-9-", "A-Za-z0-9", "A-Za-z0-9"
_IAM = r"\w+=,.@-", r"\w+=,.@-", r"\w+=,.@-"
_ASCII = r"\x20-\x7e", r"\x21-\x7e", r"\x21-\x7e"
NAME_RULES: dict[str, tuple[NameRule, ...]] = {
    "aws:lb/loadBalancer:LoadBalancer": (
        NameRule("load balancer name", 32, *_ELB, "ELBv2 CreateLoadBalancer", reserved_prefix="internal-"),
    ),
    "aws:lb/targetGroup:TargetGroup": (NameRule("target group name", 32, *_ELB, "ELBv2 CreateTargetGroup"),),
    "aws:iam/role:Role": (NameRule("IAM role name", 64, *_IAM, "IAM CreateRole"),),
    "aws:iam/instanceProfile:InstanceProfile": (
        NameRule("IAM instance profile name", 128, *_IAM, "IAM CreateInstanceProfile"),
    ),
    "aws:iam/rolePolicy:RolePolicy": (NameRule("IAM inline policy name", 128, *_IAM, "IAM PutRolePolicy"),),
    "aws:ec2/launchTemplate:LaunchTemplate": (
        NameRule("launch template name", 128, *(r"A-Za-z0-9().\-/_",) * 3, "EC2 CreateLaunchTemplate", min_len=3),
    ),
    "aws:ec2/securityGroup:SecurityGroup": (
        NameRule(
            "security group name",
            255,
            *(r"A-Za-z0-9 ._\-:/()#,@\[\]+=&;{}!$*",) * 3,
            "EC2 CreateSecurityGroup",
            reserved_prefix="sg-",
        ),
    ),
    "aws:ec2/placementGroup:PlacementGroup": (
        NameRule("placement group name", 255, *_ASCII, "EC2 CreatePlacementGroup"),
    ),
    "aws:autoscaling/group:Group": (NameRule("Auto Scaling group name", 255, *_ASCII, "CreateAutoScalingGroup"),),
    "aws:autoscaling/policy:Policy": (NameRule("scaling policy name", 255, *_ASCII, "PutScalingPolicy"),),
    "aws:cloudwatch/metricAlarm:MetricAlarm": (NameRule("alarm name", 255, *_ASCII, "CloudWatch PutMetricAlarm"),),
}


SESSION_MANAGER_ACTIONS = (
    "ssm:UpdateInstanceInformation",
    "ssmmessages:CreateControlChannel",
    "ssmmessages:CreateDataChannel",
    "ssmmessages:OpenControlChannel",
    "ssmmessages:OpenDataChannel",
)
"""What a node's SSM Agent needs for Session Manager and nothing more (AWS Systems Manager
"Create a custom IAM role for Session Manager"; the AWS managed policy
AWSCloud9SSMInstanceProfile is exactly these). AmazonSSMManagedInstanceCore also grants
``ssm:GetParameter(s)`` on every parameter: with the ``aws/ssm`` key, any node would read every
SecureString in the region."""

USER_DATA_MAX = 16_384
"""EC2 takes at most 16 KB of user data, counted before base64 encoding (EC2 "Run commands when
you launch an EC2 instance with user data"); CreateLaunchTemplate(Version) and RunInstances
refuse more ("InvalidUserData.Malformed: User data is limited to 16384 bytes")."""


def user_data_problem(script: str) -> str | None:
    """Why EC2 refuses ``script`` as user data, or ``None`` (the component and the plan ask this)."""
    size = len(script.encode())
    if size <= USER_DATA_MAX:
        return None
    return f"the boot script is {size:,} bytes of user data; EC2 takes at most {USER_DATA_MAX:,}"


def ssm_proxy(instance_id: str, region: str, port: int = 22) -> list[str]:
    """Session Manager as an SSH ``ProxyCommand`` (AWS Systems Manager, "Allow and control
    permissions for SSH connections through Session Manager"): the ``AWS-StartSSHSession``
    document forwards the node's sshd over the agent's channel, so no inbound port is open. Needs
    the AWS CLI with the Session Manager plugin and ``ssm:StartSession`` on the instance and the
    document."""
    return [
        "aws",
        "ssm",
        "start-session",
        "--target",
        instance_id,
        "--document-name",
        "AWS-StartSSHSession",
        "--parameters",
        f"portNumber={port}",
        f"--region={region}",
    ]


HOST_KEYS_BEGIN = "-----BEGIN SSH HOST KEY KEYS-----"
HOST_KEYS_END = "-----END SSH HOST KEY KEYS-----"
"""cloud-init prints the host keys to the console between these lines at first boot (its
``write-ssh-key-fingerprints`` helper, on Ubuntu AMIs)."""


def host_keys_command(instance_id: str, region: str) -> list[str]:
    """The instance's console output, where cloud-init printed its SSH host keys (EC2 keeps the
    last 64 KB; ``--latest``: the output now, on Nitro instances). Needs ``ec2:GetConsoleOutput``."""
    return [
        "aws",
        "ec2",
        "get-console-output",
        "--instance-id",
        instance_id,
        "--latest",
        f"--region={region}",
        "--output=json",
    ]


def console_host_keys(text: str) -> list[str]:
    """``"<type> <base64>"`` lines of the last host-key block in console text (the node's latest
    boot; comments such as ``root@ip-10-0-1-4`` dropped). A marker or key line may carry a prefix
    (an image that sends the block through ``logger`` prints ``ec2: ``); lines between the markers
    that are not whole keys (a kernel message that interleaved or cut one) are skipped: a key left
    out is never pinned, so it can only make the connection refuse, never trust a wrong key."""
    block: list[str] | None = None
    current: list[str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.endswith(HOST_KEYS_BEGIN):
            current = []
        elif line.endswith(HOST_KEYS_END) and current is not None:
            block, current = current, None
        elif current is not None:
            current.append(line)
    keys = []
    for line in block or []:
        words = line.split()
        start = next((i for i, w in enumerate(words) if w in KNOWN_KEY_TYPES), None)
        if start is None or len(words) < start + 2:
            continue
        try:
            keys.append(parse_key_line(" ".join(words[start : start + 2]), "console output").line())
        except InputError:
            continue
    return keys


def parse_host_keys(stdout: str, node: NodeAccess) -> list[str]:
    """``host_keys_command``'s JSON (``{InstanceId, Output, Timestamp}``; no ``Output`` while the
    instance has printed nothing yet) -> the node's host key lines."""
    data = json.loads(stdout or "{}")
    if not isinstance(data, dict):
        raise ValueError(f"{node.name}: expected a JSON object with Output")
    output = data.get("Output") or ""
    if not isinstance(output, str):
        raise ValueError(f"{node.name}: Output is not text")
    return console_host_keys(output)


def group_list_command(groups: list[str], region: str) -> list[str]:
    """The running members of the auto scaling groups, with their addresses, in one call: EC2
    tags every instance a group launches ``aws:autoscaling:groupName`` (Amazon EC2 Auto Scaling,
    "Tag Auto Scaling groups and instances")."""
    return [
        "aws",
        "ec2",
        "describe-instances",
        f"--region={region}",
        "--filters",
        f"Name=tag:aws:autoscaling:groupName,Values={','.join(groups)}",
        "Name=instance-state-name,Values=running",
        "--output=json",
    ]


def group_members(data: object, group: NodeGroupAccess) -> list[NodeAccess]:
    """``aws ec2 describe-instances --output json`` -> one ``NodeAccess`` per instance
    (``Reservations[].Instances[]``: ``InstanceId``, ``PrivateIpAddress``, ``PublicIpAddress``)."""
    if not isinstance(data, dict) or not isinstance(data.get("Reservations"), list):
        raise ValueError("expected a JSON object with Reservations")
    nodes = []
    for reservation in data["Reservations"]:
        for item in reservation.get("Instances", []) if isinstance(reservation, dict) else []:
            if not isinstance(item, dict) or not item.get("InstanceId"):
                raise ValueError("an instance without an InstanceId")
            iid = str(item["InstanceId"])
            nodes.append(
                NodeAccess(
                    name=iid,
                    private_ip=str(item.get("PrivateIpAddress", "")),
                    public_ip=str(item.get("PublicIpAddress", "")),
                    user=group.user,
                    keys=group.keys,
                    via=group.via,
                    proxy_command=ssm_proxy(iid, group.region) if group.via == "ssm" else [],
                )
            )
    return nodes


def capacity_block_needs_reservation(req: Request) -> Refusal | None:
    """A Capacity Block for ML is an EC2 capacity reservation: it is consumed by its cr-... id."""
    if not req.capacity_block or req.reservation:
        return None
    return Refusal(
        "capacityBlock",
        "capacity_block",
        "a capacity block is an AWS capacity reservation and needs its id",
        "set fullserver:reservation to the capacity block's cr-... id",
    )


def data_disk_kind(req: Request) -> Refusal | None:
    if req.data_disk is None:
        return None
    return disk_kind_refusal(req.data_disk, DATA_DISK_KINDS, "AWS data volumes are gp3, not {kind}")


def boot_disk_refusal(kind: str) -> Refusal | None:
    """The boot volume's kind (a launch template carries one for every node)."""
    return disk_kind_refusal(kind, BOOT_DISK_KINDS, "AWS boot volumes are gp3, not {kind}", "boot_disk_kind")


def efa_refusal(efa: int, most: int | None, nodes: int, machine_type: str, public_ip: bool = False) -> Refusal | None:
    """One EFA device per network card, and only between nodes: one node gains nothing from it.

    EC2 refuses a launch that asks for a public address with more than one network interface
    ("The associatePublicIPAddress parameter cannot be specified when launching with multiple
    network interfaces"), so several EFA cards and a public address never go together.
    """
    if efa > 1 and public_ip:
        return Refusal(
            "publicIp",
            "security.public_ip",
            f"EC2 gives no public address at launch to a node with {efa} network interfaces (EFA cards)",
            "keep the nodes private (reach them through Session Manager) or use one EFA interface",
        )
    if efa and most is not None and efa > most:
        has = f"has {most}" if most else "has none"
        return Refusal(
            "platform",
            "network.efa_interfaces",
            f"{efa} EFA interfaces requested but {machine_type} {has}",
            "pick a shape with EFA (p4d, p5, trn1) or a profile without the EFA fabric",
        )
    if efa and nodes < 2:
        return Refusal(
            "nodes",
            "network.efa_interfaces",
            "EFA only pays off between nodes; this environment has one",
            "drop the fabric for one node",
        )
    return None


# --- images --------------------------------------------------------------------------------------
# An AMI id is "ami-" and 8 or 17 hexadecimal digits (EC2 API ImageId; 17 since 2016). Instead of an
# id, a launch template's ImageId takes "resolve:ssm:" and a Systems Manager parameter, resolved at
# launch (EC2 "Use a Systems Manager parameter instead of an AMI ID"): a parameter name (letters,
# digits, "_.-", "/" between the levels of a hierarchy, which starts with "/", at most 15 levels
# and 1,011 characters: SSM PutParameter "Naming Constraints") or its ARN, optionally followed by
# ":version" or ":label" (letters, digits, "_.-", at most 100 characters). A bare hierarchical
# path ("/aws/service/...") is taken as that parameter.
_AMI_ID = r"ami-(?:[0-9a-f]{8}|[0-9a-f]{17})"
_SSM_PARAMETER = (
    r"(?:arn:aws[a-z-]*:ssm:[a-z0-9-]+:[0-9]{12}:parameter)?"  # a parameter shared from another account
    r"(?P<name>/?[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*)"
    r"(?::[A-Za-z0-9_.-]{1,100})?"  # :version or :label
)
_SSM_MAX_NAME = 1_011
_SSM_MAX_LEVELS = 15
SSM_PREFIX = "resolve:ssm:"
IMAGE_FORMS = "an AMI id (ami- and 8 or 17 hex digits), resolve:ssm:<parameter>[:version] or an SSM path /..."


def image_form(req: Request) -> Refusal | None:
    """``fullserver:image`` is an AMI id or a Systems Manager parameter, by form.

    Why: the value becomes the launch template's ``ImageId`` as it is, so a typo (``not-an-ami``)
    or anything else (``ami-123; rm -rf /``) would otherwise surface only when EC2 refuses the
    launch, long after the plan said yes."""
    image = req.image
    if image is None or re.fullmatch(_AMI_ID, image):
        return None
    parameter = image.removeprefix(SSM_PREFIX)
    found = re.fullmatch(_SSM_PARAMETER, parameter) if parameter != image or image.startswith("/") else None
    if found and len(found["name"]) <= _SSM_MAX_NAME and found["name"].strip("/").count("/") < _SSM_MAX_LEVELS:
        return None
    return Refusal("image", "image", f"'{image}' is not an AMI id or a Systems Manager parameter", f"use {IMAGE_FORMS}")


RULES = PlatformRules(
    platform=Platform.AWS_GPU,
    provider="aws",
    short="aws",
    components="components.aws",
    order=10,
    policy_reader="policy.aws_nodes",
    accelerator_kinds=frozenset({AcceleratorKind.GPU, AcceleratorKind.TRAINIUM, AcceleratorKind.INFERENTIA}),
    pricing=frozenset({PricingModel.SPOT_WITH_FALLBACK, PricingModel.ON_DEMAND, PricingModel.RESERVED}),
    options={
        "reservation": "an EC2 capacity reservation (cr-...)",
        "capacityBlock": "a Capacity Block is an AWS reservation",
        "image": "an AMI id or SSM parameter path",
        "autostopMinutes": "its nodes run the idle agent and stop themselves",
        **CLOUD_LOGIN,
        **GPU_SERVING,
        "serving.certificateArn": "an ACM certificate for the Application Load Balancer's HTTPS listener",
    },
    compact_placement=True,  # a cluster placement group
    hourly_gpus=True,
    disk_kinds=DISKS,
    default_disk_kind="gp3",
    zone_form=ZONES,  # an unset zone is left to AWS (the subnet's zone): nothing to warn about
    region_peers=REGION_PEERS,
    rules=(*CAPACITY_RULES, capacity_block_needs_reservation, data_disk_kind, image_form),
    quotas=quota.quotas,
    default_region="us-east-1",
    cloud_affinity={"aws": (3, "the team's cloud is AWS"), "gcp": (-3, "the team's cloud is Google Cloud")},
    network=NETWORK,
    group_members=group_members,
    catalog_forms=("shapes",),
    fabric_refusal=efa_refusal,
    capacity_steps=capacity_steps,
    autostop=autostop,
    host_keys_parser=parse_host_keys,
)

PLATFORMS = (RULES,)
"""What this module registers (``fullserver.platforms`` finds every module's)."""
