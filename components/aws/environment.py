"""``AwsGpuEnvironment``: AWS accelerator instances from one launch template, balanced per the spec.

One launch template carries the whole node: the Deep Learning AMI, instance type, EFA interfaces,
placement group, encrypted gp3 volumes, IMDSv2, the instance profile, user data (NVMe RAID0
scratch, data volume) and capacity options. How nodes are launched from it depends on pricing:
see the design notes.

Design notes: docs/design/components.md.
"""

from typing import Any, Optional

import pulumi
import pulumi_aws as aws

from components.args import refuse
from components.autostop import autostop_boot_lines
from components.aws.access import asg_access, group_instance, instance_access, ssm_command
from components.aws.args import AwsGpuArgs, validate_aws
from components.aws.autostop import grant_stop, stop_script
from components.aws.boot import AWS_EBS, AWS_INSTANCE_STORE, aws_image_id, aws_secret_command, user_data_base64
from components.aws.identity import AwsIdentity, aws_instance_profile, secret_reader
from components.aws.labels import aws_tags
from components.aws.network import AwsNetwork, aws_direct_ssh, aws_network, one_subnet_per_zone
from components.aws.serving import aws_serving_group
from components.aws.spot import spot_with_fallback
from components.names import logical
from components.outputs import EnvironmentComponent
from components.serving import lb_ports, server_boot_lines
from components.startup import (
    LOGIN_USER,
    DiskPlan,
    authorized_keys_script,
    boot_script,
)
from fullserver.autostop.way import running_nodes
from fullserver.nodes import Via
from fullserver.platforms import aws as ec2
from fullserver.platforms import aws_autostop

TOKEN = "fullserver:index:AwsGpuEnvironment"

ROOT_DEVICE = ec2.ROOT_DEVICES[0]  # Ubuntu DLAMIs boot from /dev/sda1
DATA_DEVICE = "/dev/sdf"
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


def _placement(parent: pulumi.Resource, name: str, args: AwsGpuArgs) -> Any:
    """A cluster placement group for compact multi-node environments, where capacity is not
    already placed: a reservation or Capacity Block places its capacity (AWS: Capacity Blocks are
    colocated, "no need to use a cluster placement group"), and a new group's placement could
    refuse the reserved slots it lies outside of."""
    if not (args["compact_placement"] and args["nodes"] > 1 and not _reserved(args)):
        return None
    pg = aws.ec2.PlacementGroup(
        logical(aws.ec2.PlacementGroup, f"{name}-pg"),
        region=args["region"],
        strategy="cluster",
        tags=aws_tags(args["labels"], f"{name}-pg"),
        opts=pulumi.ResourceOptions(parent=parent),
    )
    return {"group_name": pg.name}


def _reserved(args: AwsGpuArgs) -> bool:
    return args.get("reservation") is not None or args["capacity_block"]


def _group_launched(args: AwsGpuArgs) -> bool:
    """Auto Scaling groups launch the nodes (serving, spot), not this component."""
    return args.get("serving") is not None or args["spot"]


def _block_devices(args: AwsGpuArgs) -> Any:
    """The root volume, and the data volume where groups launch the nodes (otherwise each node's
    own volume is attached after it runs)."""
    disk = args.get("data_disk")
    mappings: Any = [{"device_name": ROOT_DEVICE, "ebs": _ebs(args["boot_disk_gib"])}]
    if disk is not None and _group_launched(args):
        mappings.append(
            {
                "device_name": DATA_DEVICE,
                "ebs": _ebs(disk["size_gib"], disk.get("iops"), disk.get("throughput_mbps")),
            }
        )
    return mappings


def _capacity(args: AwsGpuArgs) -> tuple[Any, Any]:
    """The template's capacity reservation specification and market options."""
    capacity: Any = {"capacity_reservation_preference": "none" if args["spot"] else "open"}
    market: Any = None
    reservation = args.get("reservation")
    if reservation:
        capacity = {"capacity_reservation_target": {"capacity_reservation_id": reservation}}
        if args["capacity_block"]:
            market = {"market_type": "capacity-block"}
    return capacity, market


def _user_data(args: AwsGpuArgs) -> str:
    """The boot script: keys, disks, and the model server where serving; refused when too big."""
    serving = args.get("serving")
    region = args["region"]
    script = boot_script(
        DiskPlan(
            scratch_glob=AWS_INSTANCE_STORE,
            scratch_devices=args["local_ssd_count"],
            data_glob=AWS_EBS,
            data_disk=args.get("data_disk") is not None,
        ),
        extra=server_boot_lines(serving, lambda secret: aws_secret_command(region, secret)) + _autostop_lines(args),
        before=authorized_keys_script(list(args["access"].get("ssh_public_keys", []))),
    )
    too_big = ec2.user_data_problem(script)
    if too_big is not None:
        raise refuse(
            "network.ssh_public_keys",
            too_big,
            "install fewer keys (ed25519 keys are ~100 bytes, RSA-4096 ~740), or give people access through IAM",
        )
    return script


def _autostop_lines(args: AwsGpuArgs) -> str:
    """The idle agent with the plan's way of stopping (``components.aws.autostop``); "" without."""
    auto = args.get("autostop")
    if auto is None:
        return ""
    return autostop_boot_lines(auto["minutes"], stop_script(auto["way"], args["region"], args["labels"]))


def _network(parent: pulumi.Resource, name: str, args: AwsGpuArgs) -> AwsNetwork:
    serving = args.get("serving")
    return aws_network(
        name,
        parent,
        region=args["region"],
        zone=args.get("zone"),
        zones=args.get("zones", 1),
        access=args["access"],
        tags=args["labels"],
        efa=args["efa_interfaces"] > 0,
        serving_port=serving["port"] if serving is not None else None,
        instance_type=args["machine_type"],
        lb_scheme=serving["load_balancer"] if serving is not None else None,
        lb_ports=tuple(lb_ports(serving)) if serving is not None else (80,),
        set_types=tuple(args.get("spot_instance_types", [])),
    )


def _launch_template(
    parent: pulumi.Resource, name: str, args: AwsGpuArgs, net: AwsNetwork, ident: AwsIdentity
) -> aws.ec2.LaunchTemplate:
    """The one launch template every node comes from (module docstring)."""
    tags = args["labels"]
    placement = _placement(parent, name, args)
    script = _user_data(args)
    capacity, market = _capacity(args)
    # Instances launched by this component sit in the first subnet (one zone: the placement
    # group's); groups choose among the subnets themselves, so the template names none.
    lt_subnet = None if _group_launched(args) else net.subnets[0].id
    assert net.security_group is not None, "aws_network makes the nodes' group unless told not to"
    tag_specs: Any = [
        {"resource_type": kind, "tags": aws_tags(tags, f"{name}-node")}
        for kind in ("instance", "volume", "network-interface")
    ]
    return aws.ec2.LaunchTemplate(
        logical(aws.ec2.LaunchTemplate, f"{name}-lt"),
        region=args["region"],
        description=f"fullserver {name}: {args['machine_type']}",
        image_id=aws_image_id(args.get("image"), args["accelerator_kind"]),
        instance_type=args["machine_type"],
        update_default_version=True,
        iam_instance_profile={"arn": ident.profile.arn},
        metadata_options=IMDS_V2,
        block_device_mappings=_block_devices(args),
        network_interfaces=network_interfaces(
            args["efa_interfaces"], lt_subnet, net.security_group.id, args["access"]["public_ip"]
        ),
        placement=placement,
        capacity_reservation_specification=capacity,
        instance_market_options=market,
        user_data=user_data_base64(script),
        # An idle node's shutdown stops it, keeping its volumes (components.aws.autostop).
        instance_initiated_shutdown_behavior="stop" if args.get("autostop") is not None else None,
        tag_specifications=tag_specs,
        tags=aws_tags(tags, f"{name}-lt"),
        opts=pulumi.ResourceOptions(parent=parent),
    )


def _instances(
    parent: pulumi.Resource,
    name: str,
    args: AwsGpuArgs,
    lt: aws.ec2.LaunchTemplate,
    egress: tuple[pulumi.Resource, ...] = (),
) -> list[aws.ec2.Instance]:
    """On-demand or reserved nodes: one instance per node, each with its own data volume.

    Each waits for its subnets' routes to the internet (``egress``: the route table associations,
    whose tables route through the internet or NAT gateway): a node that boots before its subnet
    is routed fails its first-boot downloads (the container toolkit, the server image)."""
    region = args["region"]
    tags = args["labels"]
    disk = args.get("data_disk")
    stateful = pulumi.ResourceOptions(parent=parent, protect=args["protect"])
    instances = []
    for i in range(args["nodes"]):
        inst = aws.ec2.Instance(
            f"{name}-node-{i}",
            region=region,
            # The version at launch; later versions are ignored (module docstring).
            launch_template={"id": lt.id, "version": lt.latest_version.apply(str)},
            tags=aws_tags(tags, f"{name}-node-{i}"),
            # A replacement in reserved capacity must free its slot first: the
            # reservation is sized to the nodes, so a new one beside the old is refused.
            opts=pulumi.ResourceOptions(
                parent=parent,
                protect=args["protect"],
                ignore_changes=NODE_IGNORE_CHANGES,
                delete_before_replace=_reserved(args),
                depends_on=list(egress),
            ),
        )
        instances.append(inst)
        if disk is None:
            continue
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
        # Detaching a volume mounted at /data hangs until the OS lets go of it (the provider
        # waits for "available"), so a destroy or a replaced attachment would stall: the
        # instance is stopped first, which unmounts it cleanly. A replaced attachment must let
        # go of the volume before the new one takes it (EC2 refuses a second attachment of an
        # in-use volume: VolumeInUse).
        aws.ec2.VolumeAttachment(
            f"{name}-data-{i}",
            region=region,
            device_name=DATA_DEVICE,
            instance_id=inst.id,
            volume_id=vol.id,
            stop_instance_before_detaching=True,
            opts=pulumi.ResourceOptions(parent=parent, delete_before_replace=True),
        )
    return instances


class AwsGpuEnvironment(EnvironmentComponent):
    """AWS GPU/Trainium nodes (or a serving group) with network, identity and storage per the spec.

    ``connect``: ``ssh ubuntu@<ip>`` where keys are installed and SSH is open to the configured
    ranges on a public address; else the Session Manager command (for groups, with the lookup of
    an in-service node of any of them). ``nodes`` is empty when groups launch the nodes, and
    ``node_groups`` when this component launches them. ``instance_role``: grant it access to your
    buckets.
    """

    instance_ids: pulumi.Output[list[str]]
    """Instance ids (empty when groups launch the nodes: see ``group_names``)."""
    group_names: pulumi.Output[list[str]]
    """Auto Scaling groups that launch the nodes (spot + on-demand fallback, or serving)."""
    launch_template_id: pulumi.Output[str]

    def __init__(self, name: str, args: AwsGpuArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        validate_aws(args)  # before super().__init__: a refused spec registers nothing
        super().__init__(TOKEN, name, {}, opts)
        serving = args.get("serving")
        net = _network(self, name, args)
        ident = aws_instance_profile(name, self, args["labels"])
        if serving is not None and serving["secrets"]:
            secret_reader(name, self, args["region"], ident.role, list(serving["secrets"].values()))
        auto = args.get("autostop")
        if auto is not None:
            grant_stop(name, self, auto["way"], ident.role, args["labels"])
        lt = _launch_template(self, name, args, net, ident)
        self.launch_template_id = lt.id
        instances, groups = self._nodes(name, args, net, lt)
        self._access(args, instances, groups)
        self.instance_role = ident.role.name
        self.instance_role_arn = ident.role.arn
        self.register(
            {
                "instance_ids": self.instance_ids,
                "group_names": self.group_names,
                "launch_template_id": self.launch_template_id,
            }
        )

    def _nodes(
        self, name: str, args: AwsGpuArgs, net: AwsNetwork, lt: aws.ec2.LaunchTemplate
    ) -> tuple[list[aws.ec2.Instance], list[aws.autoscaling.Group]]:
        """Who launches the nodes (module docstring): a serving group, spot with its fallback, or
        this component; the instances it launched and the groups."""
        serving = args.get("serving")
        subnet_ids = [s.id for s in net.subnets]
        self.endpoint = pulumi.Output.from_input("")
        self.lb_address = pulumi.Output.from_input("")
        if serving is not None:
            assert net.lb_security_group is not None
            lb_subnets = one_subnet_per_zone(
                net.subnets if serving["load_balancer"] == "internal" else net.public_subnets
            )
            served = aws_serving_group(
                name,
                self,
                region=args["region"],
                launch_template=lt,
                vpc_id=net.vpc.id,
                subnet_ids=subnet_ids,
                lb_subnet_ids=lb_subnets,
                lb_security_group_id=net.lb_security_group.id,
                serving=serving,
                tags=args["labels"],
                internet_gateway=net.internet_gateway,
                egress=net.egress,
            )
            self.endpoint = served.endpoint
            self.lb_address = served.load_balancer.dns_name
            return [], [served.group]
        if args["spot"]:
            overrides = [args["machine_type"], *args.get("spot_instance_types", [])]
            fallback = args.get("fallback_instance_types", [args["machine_type"]])
            return [], spot_with_fallback(
                self,
                name,
                args["region"],
                lt,
                subnet_ids,
                args["nodes"],
                args["labels"],
                (overrides, fallback),
                net.egress,
            )
        return _instances(self, name, args, lt, net.egress), []

    def _access(self, args: AwsGpuArgs, instances: list[aws.ec2.Instance], groups: list[aws.autoscaling.Group]) -> None:
        """The addresses, ``connect``, ``nodes`` and ``node_groups`` outputs, and how many nodes run."""
        region = args["region"]
        access = args["access"]
        self.instance_ids = pulumi.Output.all(*[i.id for i in instances]).apply(list)
        self.private_ips = pulumi.Output.all(*[i.private_ip for i in instances]).apply(
            lambda ips: [str(ip) for ip in ips]
        )
        self.public_ips = pulumi.Output.all(*[i.public_ip for i in instances]).apply(
            lambda ips: [str(ip) for ip in ips if ip]
        )
        self.group_names = pulumi.Output.all(*[g.name for g in groups]).apply(lambda names: [str(n) for n in names])
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
        auto = args.get("autostop")
        if (
            auto is not None and auto["way"] == aws_autostop.INSTANCE_SHUTDOWN.key and instances
        ):  # an idle instance stops itself: start it again
            self.start_commands = self.instance_ids.apply(lambda ids: [aws_autostop.start_argv(i, region) for i in ids])
        if auto is not None:  # read from the cloud: each instance's state, each group's desired capacity
            self.running_nodes = pulumi.Output.all(
                pulumi.Output.all(*[i.instance_state for i in instances]),
                pulumi.Output.all(*[g.desired_capacity for g in groups]),
            ).apply(lambda sg: running_nodes(sg[0], aws_autostop.STOPPED_STATES, sg[1]))
