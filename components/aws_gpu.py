"""``AwsGpuEnvironment``: AWS accelerator instances from one launch template, balanced per the spec.

One launch template carries the whole node: the Deep Learning AMI, instance type, EFA interfaces,
placement group, encrypted gp3 volumes, IMDSv2, the instance profile, user data (NVMe RAID0
scratch, data volume) and capacity options. How nodes are launched from it depends on pricing:

* on-demand / reserved: one ``ec2.Instance`` per node, each with its own encrypted gp3 data
  volume that survives instance replacement. Reserved pricing (Savings Plans, RIs) is billing;
  capacity is taken from a configured capacity reservation or capacity block, else from any
  matching open reservation (``capacity_reservation_preference: open``). The volume is attached
  after the instance runs (it must be in the instance's zone), so the boot script waits for it.

  Template edits and these nodes: the template keeps ``update_default_version``, so every edit is
  a new default version. An instance's ``launch_template`` is replace-only in the AWS provider
  (``ForceNew``), so following the new version would replace the node, and a persistent
  environment's nodes are protected. Each node therefore records the version it was launched
  from and ignores later ones (``ignore_changes: launch_template``): ``pulumi up`` after a
  template edit updates the template (new launches and the groups use it) and leaves running
  nodes alone. To move a node to the new version: ``pulumi state unprotect <urn>``, then
  ``pulumi up --replace <urn>`` (a new instance; its data volume is re-attached).
* spot with on-demand fallback: EC2 does not fall back by itself (an Auto Scaling group with a
  spot allocation keeps retrying spot). So a spot group (``MixedInstancesPolicy`` with 0 %
  on-demand, ``price-capacity-optimized``, capacity rebalancing, and the instance type plus the
  core's other balanced types of the same GPUs as ``overrides``: spot capacity is per type and
  zone, so several types find capacity far more often) runs the nodes, and an on-demand
  group from the same template waits at zero. A CloudWatch alarm on the spot group's
  ``GroupInServiceInstances`` below the node count for 10 minutes sets the on-demand group to the
  node count; when spot capacity is back (alarm OK) the on-demand group returns to zero. Data
  volumes of group-launched nodes live and die with the instance (stage data from S3).
  On-demand nodes are launched with scale-in protection, so the return to zero does *not* kill a
  running job: the group's desired capacity drops, its protected nodes keep running (and
  billing) until someone releases them (``aws autoscaling set-instance-protection
  --no-protected-from-scale-in``, or terminate the instance); the group then removes them.
  Meanwhile the spot group is back at full size too: for a while you pay for both.
* serving (inference with ``serving``): an Auto Scaling group across zones (the core's
  ``billables.zones``: an ALB needs two or more) behind an Application Load Balancer, each replica
  running the model server, target tracking on requests per replica (see ``components.serving``).

EFA rule (AWS "Maximize network bandwidth ... with multiple network cards"): one EFA per network
card, interface *i* on network card *i*. Card 0 carries the primary interface (device index 0,
type ``efa``: EFA with ENA, so it also carries the instance's IP traffic); cards 1..N-1 carry
``efa-only`` interfaces at device index 0, which use no IP addresses. A p5.48xlarge thus gets
32 EFA devices on its 32 network cards.
"""

import json
from typing import Any, Optional

import pulumi
import pulumi_aws as aws

from components.args import (
    AwsGpuArgs,
    check_access,
    check_boot_disk,
    check_data_disk,
    check_local_ssds,
    check_serving,
    refuse,
)
from components.identity import aws_instance_profile
from components.images import aws_image_id
from components.labels import aws_tags, logical
from components.network import aws_direct_ssh, aws_network, one_subnet_per_zone
from components.serving import aws_serving_group, server_keep_alive
from components.startup import (
    AWS_EBS,
    AWS_INSTANCE_STORE,
    LOGIN_USER,
    DiskPlan,
    authorized_keys_script,
    aws_secret_command,
    boot_script,
    model_server_script,
    user_data_base64,
)
from fullserver.nodes import NodeAccess, NodeAccessOutput, NodeGroupAccess, NodeGroupAccessOutput, Via
from fullserver.platforms import Request
from fullserver.platforms import aws as ec2

TOKEN = "fullserver:index:AwsGpuEnvironment"

ROOT_DEVICE = ec2.ROOT_DEVICES[0]  # Ubuntu DLAMIs boot from /dev/sda1
DATA_DEVICE = "/dev/sdf"
FALLBACK_AFTER_MINUTES = 10
# Nodes keep the template version they were launched from (module docstring).
NODE_IGNORE_CHANGES = ["launch_template"]
IMDS_V2: Any = {
    "http_endpoint": "enabled",
    "http_tokens": "required",
    # 1 hop: the node itself reads its role; a container (one hop further, through Docker's
    # bridge) cannot, so the model server never holds the node's credentials.
    "http_put_response_hop_limit": 1,
    "instance_metadata_tags": "enabled",
}


def validate_aws(args: AwsGpuArgs) -> None:
    """Refuse, before any resource exists, what this shape or this cloud cannot do."""
    check_access(args["access"])
    check_serving(args.get("serving"))
    check_boot_disk(args)
    check_data_disk(args)  # gp3 IOPS/throughput limits: fullserver.platforms.aws
    check_local_ssds(args)
    disk = args.get("data_disk")
    request = Request(
        shape=args["machine_type"],
        spot=args["spot"],
        reservation=args.get("reservation"),
        zone=args.get("zone"),
        capacity_block=args["capacity_block"],
        data_disk=disk["kind"] if disk is not None else None,
        image=args.get("image"),
    )
    refusal = (
        ec2.efa_refusal(
            args["efa_interfaces"],
            args["shape"].get("max_efa_interfaces"),
            args["nodes"],
            args["machine_type"],
            args["access"]["public_ip"],
        )
        or ec2.RULES.refusal(request)
        or ec2.boot_disk_refusal(args["boot_disk_kind"])
    )
    if refusal is not None:
        raise refuse(refusal.field, refusal.what, refusal.hint)
    serving = args.get("serving")
    if serving is not None and args["nodes"] != 1:
        raise refuse("nodes", "a serving group scales replicas of one node; nodes must be 1")
    if serving is not None and args["spot"]:
        # the plan would price spot replicas the group never asks for (no spot market in its template)
        raise refuse(
            "spot",
            "an AWS serving group launches on-demand replicas from its launch template, not spot",
            "serve on AWS from an on-demand profile (realtime-inference)",
        )
    if serving is not None and args.get("zone") and args.get("zones", 1) > 1:
        raise refuse(
            "zone",
            f"the serving load balancer spans {args.get('zones')} zones, and a pinned zone gives its subnets one",
            "remove fullserver:zone: the group's subnets go to the zones offering the instance type",
        )
    if serving is not None and args.get("zones", 1) < ec2.LB_MIN_ZONES:
        raise refuse(
            "zones",
            f"an Application Load Balancer needs subnets in {ec2.LB_MIN_ZONES} zones or more, not {args.get('zones', 1)}",
            "re-plan with the core, which sets the zones",
        )


def secret_reader(name: str, parent: pulumi.Resource, region: str, role: aws.iam.Role, parameters: list[str]) -> None:
    """Let the nodes read the SSM parameters the model server needs (the Hugging Face token, the
    endpoint's API key), and no other.

    A SecureString under the AWS managed key ``aws/ssm`` needs no KMS grant: that key's policy lets
    the account's principals use it through Systems Manager. A customer managed key needs
    ``kms:Decrypt`` for the role, granted where the key is managed. The ARN's partition and
    account are the caller's own (``aws:`` in China and GovCloud differs).
    """
    partition = aws.get_partition_output().partition
    account = aws.get_caller_identity_output().account_id
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


def _ebs(size: int, iops: int | None = None, mbps: int | None = None) -> Any:
    ebs: Any = {"volume_type": "gp3", "volume_size": size, "encrypted": "true", "delete_on_termination": "true"}
    if iops is not None:
        ebs["iops"] = iops
    if mbps is not None:
        ebs["throughput"] = mbps
    return ebs


def network_interfaces(efa: int, subnet_id: pulumi.Input[str] | None, sg_id: pulumi.Input[str], public_ip: bool) -> Any:
    """The launch template's interfaces: the EFA rule in the module docstring, or one ENA interface."""
    base: Any = {"security_groups": [sg_id], "delete_on_termination": "true"}
    if subnet_id is not None:
        base["subnet_id"] = subnet_id
    primary = {
        **base,
        "device_index": 0,
        "network_card_index": 0,
        "associate_public_ip_address": "true" if public_ip else "false",
    }
    if not efa:
        return [primary]
    nics = [{**primary, "interface_type": "efa"}]
    nics += [
        {**base, "device_index": 0, "network_card_index": card, "interface_type": "efa-only"} for card in range(1, efa)
    ]
    return nics


class AwsGpuEnvironment(pulumi.ComponentResource):
    """AWS GPU/Trainium nodes (or a serving group) with network, identity and storage per the spec."""

    instance_ids: pulumi.Output[list[str]]
    """Instance ids (empty when groups launch the nodes: see ``group_names``)."""
    private_ips: pulumi.Output[list[str]]
    public_ips: pulumi.Output[list[str]]
    group_names: pulumi.Output[list[str]]
    """Auto Scaling groups that launch the nodes (spot + on-demand fallback, or serving)."""
    launch_template_id: pulumi.Output[str]
    instance_role: pulumi.Output[str]
    """The nodes' IAM role name: grant it access to your buckets."""
    instance_role_arn: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    """The serving load balancer's URL (empty without serving)."""
    connect: pulumi.Output[str]
    """``ssh ubuntu@<ip>`` where keys are installed and SSH is open to the configured ranges on a
    public address; else the Session Manager command (for groups, with the lookup of an in-service
    node of any of them)."""
    nodes: pulumi.Output[list[NodeAccessOutput]]
    """Each instance and the way into it (``fullserver.nodes.NodeAccess``); empty when groups launch the nodes."""
    node_groups: pulumi.Output[list[NodeGroupAccessOutput]]
    """The Auto Scaling groups and the command that lists their running instances
    (``fullserver.nodes.NodeGroupAccess``); empty when this component launches the nodes."""

    def __init__(self, name: str, args: AwsGpuArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        validate_aws(args)  # before super().__init__: a refused spec registers nothing
        super().__init__(TOKEN, name, {}, opts)
        region = args["region"]
        nodes = args["nodes"]
        efa = args["efa_interfaces"]
        access = args["access"]
        serving = args.get("serving")
        tags = args["labels"]
        group_launched = serving is not None or args["spot"]
        self.endpoint = pulumi.Output.from_input("")
        zones = args.get("zones", 1)
        port = serving["port"] if serving is not None else None
        net = aws_network(
            name,
            self,
            region=region,
            zone=args.get("zone"),
            zones=zones,
            access=access,
            tags=tags,
            efa=efa > 0,
            serving_port=port,
            instance_type=args["machine_type"],
            lb_scheme=serving["load_balancer"] if serving is not None else None,
            lb_port=serving["lb_port"] if serving is not None else 80,
        )
        ident = aws_instance_profile(name, self, tags, cloudwatch_agent=False)
        if serving is not None and serving["secrets"]:
            secret_reader(name, self, region, ident.role, list(serving["secrets"].values()))
        opts_child = pulumi.ResourceOptions(parent=self)

        placement: Any = None
        # A reservation or Capacity Block already places its capacity (AWS: Capacity Blocks are
        # colocated, "no need to use a cluster placement group"), and a new group's placement
        # could refuse the reserved slots it lies outside of.
        reserved = args.get("reservation") is not None or args["capacity_block"]
        if args["compact_placement"] and nodes > 1 and not reserved:
            pg = aws.ec2.PlacementGroup(
                logical(aws.ec2.PlacementGroup, f"{name}-pg"),
                region=region,
                strategy="cluster",
                tags=aws_tags(tags, f"{name}-pg"),
                opts=opts_child,
            )
            placement = {"group_name": pg.name}

        disk = args.get("data_disk")
        mappings: Any = [{"device_name": ROOT_DEVICE, "ebs": _ebs(args["boot_disk_gib"])}]
        if disk is not None and group_launched:
            mappings.append(
                {
                    "device_name": DATA_DEVICE,
                    "ebs": _ebs(disk["size_gib"], disk.get("iops"), disk.get("throughput_mbps")),
                }
            )

        capacity: Any = {"capacity_reservation_preference": "none" if args["spot"] else "open"}
        market: Any = None
        reservation = args.get("reservation")
        if reservation:
            capacity = {"capacity_reservation_target": {"capacity_reservation_id": reservation}}
            if args["capacity_block"]:
                market = {"market_type": "capacity-block"}

        script = boot_script(
            DiskPlan(
                scratch_glob=AWS_INSTANCE_STORE,
                scratch_devices=args["local_ssd_count"],
                data_glob=AWS_EBS,
                data_disk=disk is not None,
            ),
            extra=model_server_script(
                serving["image"],
                serving["server_args"],
                serving["port"],
                {kind: aws_secret_command(region, secret) for kind, secret in serving["secrets"].items()},
                server_keep_alive(serving["request_timeout_seconds"]),
            )
            if serving is not None
            else "",
            before=authorized_keys_script(list(access.get("ssh_public_keys", []))),
        )
        too_big = ec2.user_data_problem(script)
        if too_big is not None:
            raise refuse(
                "network.ssh_public_keys",
                too_big,
                "install fewer keys (ed25519 keys are ~100 bytes, RSA-4096 ~740), or give people access through IAM",
            )
        # Instances launched by this component sit in the first subnet (one zone: the placement
        # group's); groups choose among the subnets themselves, so the template names none.
        lt_subnet = None if group_launched else net.subnets[0].id
        tag_specs: Any = [
            {"resource_type": kind, "tags": aws_tags(tags, f"{name}-node")}
            for kind in ("instance", "volume", "network-interface")
        ]
        lt = aws.ec2.LaunchTemplate(
            logical(aws.ec2.LaunchTemplate, f"{name}-lt"),
            region=region,
            description=f"fullserver {name}: {args['machine_type']}",
            image_id=aws_image_id(args.get("image"), args["accelerator_kind"]),
            instance_type=args["machine_type"],
            update_default_version=True,
            iam_instance_profile={"arn": ident.profile.arn},
            metadata_options=IMDS_V2,
            block_device_mappings=mappings,
            network_interfaces=network_interfaces(efa, lt_subnet, net.security_group.id, access["public_ip"]),
            placement=placement,
            capacity_reservation_specification=capacity,
            instance_market_options=market,
            user_data=user_data_base64(script),
            tag_specifications=tag_specs,
            tags=aws_tags(tags, f"{name}-lt"),
            opts=opts_child,
        )
        self.launch_template_id = lt.id
        subnet_ids = [s.id for s in net.subnets]
        stateful = pulumi.ResourceOptions(parent=self, protect=args["protect"])

        if serving is not None:
            assert net.lb_security_group is not None
            lb_subnets = one_subnet_per_zone(
                net.subnets if serving["load_balancer"] == "internal" else net.public_subnets
            )
            served = aws_serving_group(
                name,
                self,
                region=region,
                launch_template=lt,
                vpc_id=net.vpc.id,
                subnet_ids=subnet_ids,
                lb_subnet_ids=lb_subnets,
                lb_security_group_id=net.lb_security_group.id,
                serving=serving,
                tags=tags,
                internet_gateway=net.internet_gateway,
                egress=net.egress,
            )
            self.endpoint = served.endpoint
            groups = [served.group.name]
            instances: list[aws.ec2.Instance] = []
        elif args["spot"]:
            overrides = [args["machine_type"], *args.get("spot_instance_types", [])]
            groups = self._spot_with_fallback(name, region, lt, subnet_ids, nodes, tags, overrides)
            instances = []
        else:
            groups = []
            instances = []
            for i in range(nodes):
                inst = aws.ec2.Instance(
                    f"{name}-node-{i}",
                    region=region,
                    # The version at launch; later versions are ignored (module docstring).
                    launch_template={"id": lt.id, "version": lt.latest_version.apply(str)},
                    tags=aws_tags(tags, f"{name}-node-{i}"),
                    # A replacement in reserved capacity must free its slot first: the
                    # reservation is sized to the nodes, so a new one beside the old is refused.
                    opts=pulumi.ResourceOptions(
                        parent=self,
                        protect=args["protect"],
                        ignore_changes=NODE_IGNORE_CHANGES,
                        delete_before_replace=reserved,
                    ),
                )
                instances.append(inst)
                if disk is not None:
                    vol = aws.ebs.Volume(
                        f"{name}-data-{i}",
                        region=region,
                        availability_zone=inst.availability_zone,
                        type="gp3",
                        size=disk["size_gib"],
                        iops=disk.get("iops"),
                        throughput=disk.get("throughput_mbps"),
                        encrypted=True,
                        tags=aws_tags(tags, f"{name}-data-{i}"),
                        opts=stateful,
                    )
                    # Detaching a volume mounted at /data hangs until the OS lets go of it (the
                    # provider waits for "available"), so a destroy or a replaced attachment would
                    # stall: the instance is stopped first, which unmounts it cleanly. A replaced
                    # attachment must let go of the volume before the new one takes it (EC2
                    # refuses a second attachment of an in-use volume: VolumeInUse).
                    aws.ec2.VolumeAttachment(
                        f"{name}-data-{i}",
                        region=region,
                        device_name=DATA_DEVICE,
                        instance_id=inst.id,
                        volume_id=vol.id,
                        stop_instance_before_detaching=True,
                        opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True),
                    )

        self.instance_ids = pulumi.Output.all(*[i.id for i in instances]).apply(list)
        self.private_ips = pulumi.Output.all(*[i.private_ip for i in instances]).apply(
            lambda ips: [str(ip) for ip in ips]
        )
        self.public_ips = pulumi.Output.all(*[i.public_ip for i in instances]).apply(
            lambda ips: [str(ip) for ip in ips if ip]
        )
        self.group_names = pulumi.Output.all(*groups).apply(lambda names: [str(n) for n in names])
        self.instance_role = ident.role.name
        self.instance_role_arn = ident.role.arn
        keys = bool(access.get("ssh_public_keys"))
        if instances and aws_direct_ssh(access):
            self.connect = instances[0].public_ip.apply(lambda ip: f"ssh {LOGIN_USER}@{ip}")
        elif instances:
            self.connect = instances[0].id.apply(lambda iid: ssm_command(region, iid))
        else:
            self.connect = self.group_names.apply(lambda names: ssm_command(region, group_instance(region, names)))
        via: Via = "ssh" if aws_direct_ssh(access) else "ssm"
        self.nodes = pulumi.Output.all(*[pulumi.Output.all(i.id, i.private_ip, i.public_ip) for i in instances]).apply(
            lambda rows: [instance_access(*row, region=region, keys=keys, via=via).exported() for row in rows]
        )
        self.node_groups = self.group_names.apply(
            lambda names: [asg_access(names, region, keys=keys, via=via).exported()] if names else []
        )
        self.register_outputs(
            {
                "instance_ids": self.instance_ids,
                "private_ips": self.private_ips,
                "public_ips": self.public_ips,
                "group_names": self.group_names,
                "launch_template_id": self.launch_template_id,
                "instance_role": self.instance_role,
                "instance_role_arn": self.instance_role_arn,
                "connect": self.connect,
                "endpoint": self.endpoint,
                "nodes": self.nodes,
                "node_groups": self.node_groups,
            }
        )

    def _spot_with_fallback(
        self,
        name: str,
        region: str,
        lt: aws.ec2.LaunchTemplate,
        subnet_ids: list[pulumi.Output[str]],
        nodes: int,
        tags: dict[str, str],
        instance_types: list[str],
    ) -> list[pulumi.Output[str]]:
        """Spot group at the node count, on-demand group at zero, an alarm that swaps them (module docstring).

        The spot group may launch any of ``instance_types`` (the template's own type first, then
        the core's balanced alternatives); ``price-capacity-optimized`` picks the pools least
        likely to be interrupted among the cheapest, and capacity rebalancing replaces a node
        that receives a rebalance recommendation before it is interrupted.
        """
        opts = pulumi.ResourceOptions(parent=self)
        version = lt.latest_version.apply(str)
        group_tags: Any = [{"key": k, "value": v, "propagate_at_launch": True} for k, v in sorted(tags.items())]
        mixed: Any = {
            "instances_distribution": {
                "on_demand_base_capacity": 0,
                "on_demand_percentage_above_base_capacity": 0,
                "spot_allocation_strategy": "price-capacity-optimized",
            },
            "launch_template": {
                "launch_template_specification": {"launch_template_id": lt.id, "version": version},
                "overrides": [{"instance_type": t} for t in dict.fromkeys(instance_types)],
            },
        }
        template_ref: Any = {"id": lt.id, "version": version}
        spot = aws.autoscaling.Group(
            logical(aws.autoscaling.Group, f"{name}-spot"),
            region=region,
            min_size=nodes,
            max_size=nodes,
            desired_capacity=nodes,
            vpc_zone_identifiers=subnet_ids,
            capacity_rebalance=True,
            # `up` never waits for accelerator capacity (the default waits 10 minutes, then fails
            # the update before the fallback below exists): a shortage is the alarm's to handle.
            wait_for_capacity_timeout="0",
            enabled_metrics=[
                aws.autoscaling.Metric.GROUP_IN_SERVICE_INSTANCES,
                aws.autoscaling.Metric.GROUP_DESIRED_CAPACITY,
            ],
            metrics_granularity="1Minute",
            mixed_instances_policy=mixed,
            tags=group_tags,
            opts=opts,
        )
        fallback = aws.autoscaling.Group(
            logical(aws.autoscaling.Group, f"{name}-ondemand"),
            region=region,
            min_size=0,
            max_size=nodes,
            desired_capacity=0,
            vpc_zone_identifiers=subnet_ids,
            launch_template=template_ref,
            wait_for_capacity_timeout="0",
            # A return to zero must not kill running jobs (module docstring).
            protect_from_scale_in=True,
            tags=group_tags,
            # The alarm's policies own the desired capacity once created.
            opts=pulumi.ResourceOptions(parent=self, ignore_changes=["desired_capacity"]),
        )
        scale_out = aws.autoscaling.Policy(
            logical(aws.autoscaling.Policy, f"{name}-fallback-on"),
            region=region,
            autoscaling_group_name=fallback.name,
            policy_type="SimpleScaling",
            adjustment_type="ExactCapacity",
            scaling_adjustment=nodes,
            cooldown=300,
            opts=opts,
        )
        scale_in = aws.autoscaling.Policy(
            logical(aws.autoscaling.Policy, f"{name}-fallback-off"),
            region=region,
            autoscaling_group_name=fallback.name,
            policy_type="SimpleScaling",
            adjustment_type="ExactCapacity",
            scaling_adjustment=0,
            cooldown=300,
            opts=opts,
        )
        aws.cloudwatch.MetricAlarm(
            logical(aws.cloudwatch.MetricAlarm, f"{name}-spot-short"),
            region=region,
            alarm_description=f"spot nodes of {name} below {nodes} for {FALLBACK_AFTER_MINUTES} minutes: run them on-demand",
            namespace="AWS/AutoScaling",
            metric_name="GroupInServiceInstances",
            dimensions={"AutoScalingGroupName": spot.name},
            statistic="Minimum",
            period=60,
            evaluation_periods=FALLBACK_AFTER_MINUTES,
            comparison_operator="LessThanThreshold",
            threshold=nodes,
            treat_missing_data="missing",
            alarm_actions=[scale_out.arn],
            ok_actions=[scale_in.arn],
            tags=aws_tags(tags, f"{name}-spot-short"),
            opts=opts,
        )
        return [spot.name, fallback.name]
