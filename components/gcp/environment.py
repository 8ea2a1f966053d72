"""``GcpGpuEnvironment``: Compute Engine GPU VMs (A2/A3/A4/G2, or N1 with attached GPUs), per the spec.

Nodes are a regional group over the balanced set (``components.gcp.flexible``) or, where
``gcp_capacity.mig_reason`` says why not, one ``compute.Instance`` each: see the design notes.

Design notes: docs/design/components.md.
"""

from dataclasses import dataclass
from typing import Any, Optional

import pulumi
import pulumi_gcp as gcp

from components.autostop import autostop_boot_lines
from components.gcp.access import gcloud_ssh, group_ssh, mig_access, public_ips, vm_access
from components.gcp.args import GcpGpuArgs, validate_gcp
from components.gcp.autostop import grant_on_group, grant_on_vms, stop_role, stop_script
from components.gcp.boot import GCP_DATA, GCP_LOCAL_SSD, gcp_image, gcp_login_metadata, gcp_secret_command
from components.gcp.disks import gcp_data_disk, provisioned
from components.gcp.flexible import flexible_group
from components.gcp.gpu_nics import gpu_nic_plan, gpu_nics
from components.gcp.identity import GCP_SCOPES, gcp_service_account
from components.gcp.labels import gcp_labels
from components.gcp.network import GcpNetwork, gcp_network, gcp_project
from components.gcp.serving import GcpServing, gcp_serving_group
from components.names import field, logical, physical
from components.network import direct_ssh
from components.outputs import EnvironmentComponent
from components.serving import server_boot_lines
from components.startup import LOGIN_USER, DiskPlan, boot_script
from fullserver.autostop.way import running_nodes
from fullserver.nodes import Via
from fullserver.platforms import gcp as gce
from fullserver.platforms import gcp_autostop

TOKEN = "fullserver:index:GcpGpuEnvironment"


STOP_TO_UPDATE = (
    "machine_type",
    "min_cpu_platform",
    "service_account",
    "enable_display",
    "shielded_instance_config",
    "advanced_machine_features",
    "scheduling",
    "guest_accelerators",
    "network_performance_config",
)
"""The instance's inputs the Google provider changes by stopping it first (its update's
``needToStopInstanceBeforeUpdating``: machine type, minimum CPU platform, service account and
scopes, display, shielded VM, advanced machine features, boot-time scheduling), and the
accelerators and network tier that only a stopped VM takes."""


def _scheduling(spot: bool, grouped: bool = False) -> Any:
    """``grouped``: a spot VM of a managed group is deleted on preemption, and the group creates
    another to hold its target size when capacity returns (a stopped one would count as running)."""
    if spot:
        return {
            "on_host_maintenance": "TERMINATE",
            "provisioning_model": "SPOT",
            "preemptible": True,
            "automatic_restart": False,
            "instance_termination_action": "DELETE" if grouped else "STOP",
        }
    return {
        "on_host_maintenance": "TERMINATE",
        "provisioning_model": "STANDARD",
        "preemptible": False,
        "automatic_restart": True,
    }


def _reservation_affinity(args: GcpGpuArgs) -> Any:
    reservation = args.get("reservation")
    if reservation:
        return {
            "type": "SPECIFIC_RESERVATION",
            "specific_reservation": {"key": gce.RESERVATION_LABEL, "values": [reservation]},
        }
    return {"type": "NO_RESERVATION" if args["spot"] else "ANY_RESERVATION"}


@dataclass(frozen=True)
class _Vm:
    """What every node of the environment is, whether a VM or a serving group's template makes it."""

    nic: Any
    """The primary NIC (a serving template's only one)."""
    metadata: dict[str, Any]
    labels: dict[str, str]
    accelerators: Any
    shielded: Any
    image: str
    perf: Any
    service_account: Any


def _secret_readers(parent: pulumi.Resource, name: str, args: GcpGpuArgs, sa: gcp.serviceaccount.Account) -> None:
    """The nodes may read the secrets the model server needs, and no other (docs/deploying.md)."""
    serving = args.get("serving")
    for kind, secret in (serving["secrets"] if serving is not None else {}).items():
        gcp.secretmanager.SecretIamMember(
            f"{name}-model-{kind.replace('_', '-')}",
            project=args.get("project"),
            secret_id=secret,
            role="roles/secretmanager.secretAccessor",
            member=sa.email.apply(lambda email: f"serviceAccount:{email}"),
            opts=pulumi.ResourceOptions(parent=parent),
        )


def _startup_script(args: GcpGpuArgs) -> str:
    serving = args.get("serving")
    return boot_script(
        DiskPlan(
            scratch_glob=GCP_LOCAL_SSD,
            scratch_devices=args["local_ssd_count"],
            data_glob=GCP_DATA,
            data_disk=args.get("data_disk") is not None,
        ),
        extra=server_boot_lines(serving, gcp_secret_command) + _autostop_lines(args),
    )


def _autostop_lines(args: GcpGpuArgs) -> str:
    """The idle agent, stopping its own VM or its group (``components.gcp.autostop``); "" without
    autostop."""
    auto = args.get("autostop")
    return autostop_boot_lines(auto["minutes"], stop_script(auto["way"], args["local_ssd_count"])) if auto else ""


def _vm(args: GcpGpuArgs, net: GcpNetwork, sa: gcp.serviceaccount.Account) -> _Vm:
    keys = list(args["access"].get("ssh_public_keys", []))
    nic: Any = {"network": net.network.id, "subnetwork": net.subnet.id, "nic_type": "GVNIC"}
    if args["access"]["public_ip"]:
        nic["access_configs"] = [{"network_tier": "PREMIUM"}]
    accelerators: Any = []
    if args.get("accelerator_type"):
        accelerators = [{"type": args["accelerator_type"], "count": args["accelerator_count"]}]
    # Tier_1 only where the machine type takes it: the API refuses it on every GPU series.
    tier1 = args["tier1_networking"] and gce.tier1_eligible(args["machine_type"])
    return _Vm(
        nic=nic,
        metadata={"startup-script": _startup_script(args), **gcp_login_metadata(keys)},
        labels=gcp_labels(args["labels"]),
        accelerators=accelerators,
        shielded={"enable_secure_boot": False, "enable_vtpm": True, "enable_integrity_monitoring": True},
        image=gcp_image(args.get("image"), args["framework"]),
        perf={"total_egress_bandwidth_tier": "TIER_1"} if tier1 else None,
        service_account={"email": sa.email, "scopes": GCP_SCOPES},
    )


def _serving_template(name: str, args: GcpGpuArgs, vm: _Vm, net: GcpNetwork) -> dict[str, Any]:
    """The serving group's instance template: the node, with its disks as template disks."""
    disk = args.get("data_disk")
    disks: Any = [
        {
            "boot": True,
            "auto_delete": True,
            "source_image": vm.image,
            "disk_size_gb": args["boot_disk_gib"],
            "disk_type": args["boot_disk_kind"],
        }
    ]
    disks += [
        {
            "type": "SCRATCH",
            "disk_type": "local-ssd",
            "interface": "NVME",
            "disk_size_gb": args["local_ssd_gib"],
        }
        for _ in range(args["local_ssd_count"])
    ]
    if disk is not None:
        disks.append(
            {
                "auto_delete": True,
                "device_name": "data",
                "disk_type": disk["kind"],
                "disk_size_gb": disk["size_gib"],
                **provisioned(disk),
            }
        )
    return {
        "machine_type": args["machine_type"],
        "description": f"fullserver {name}: {args['machine_type']}",
        "disks": disks,
        "network_interfaces": [vm.nic],
        "scheduling": _scheduling(args["spot"], grouped=args.get("serving") is None),
        "reservation_affinity": _reservation_affinity(args),
        "service_account": vm.service_account,
        "shielded_instance_config": vm.shielded,
        "guest_accelerators": vm.accelerators,
        "metadata": vm.metadata,
        "labels": vm.labels,
        "tags": net.tags,
        "network_performance_config": vm.perf,
    }


def _placement_policy(parent: pulumi.Resource, name: str, args: GcpGpuArgs) -> pulumi.Output[str] | None:
    """A compact placement policy for multi-node environments."""
    if not (args["compact_placement"] and args["nodes"] > 1):
        return None
    policy = gcp.compute.ResourcePolicy(
        logical(gcp.compute.ResourcePolicy, f"{name}-compact"),
        project=args.get("project"),
        region=args["region"],
        # No vm_count: with it the API takes exactly that many VMs, so adding a node
        # (or replacing one, which briefly needs one more) would replace the policy
        # and with it every node; Google does not recommend it.
        group_placement_policy={"collocation": "COLLOCATED"},
        opts=pulumi.ResourceOptions(parent=parent),
    )
    return policy.self_link


def _instances(
    parent: pulumi.Resource, name: str, args: GcpGpuArgs, vm: _Vm, net: GcpNetwork
) -> list[gcp.compute.Instance]:
    """One VM per node, each with its data disk. Without a zone the provider's default zone
    (gcp:zone) takes the disks and the VM alike."""
    project = args.get("project")
    zone = args.get("zone")
    disk = args.get("data_disk")
    stateful = pulumi.ResourceOptions(parent=parent, protect=args["protect"])
    nic_plan = gpu_nic_plan(args)
    nics: Any = [vm.nic] + (
        gpu_nics(parent, name, nic_plan, region=args["region"], zone=zone or "", project=project) if nic_plan else []
    )
    placement_policy = _placement_policy(parent, name, args)
    # The provider stops a VM to change these without saying whether its local SSDs may be
    # discarded, which Compute Engine refuses ("You cannot stop an instance that uses a local
    # SSD"; hashicorp/terraform-provider-google#13519, #26173). With local SSDs, then, such a
    # change replaces the VM, and the plan says so, instead of failing half-way through an up.
    stoppable = args["local_ssd_count"] == 0
    instances = []
    for i in range(args["nodes"]):
        attached: Any = []
        if disk is not None:
            data = gcp_data_disk(
                f"{name}-data-{i}", project=project, zone=zone, disk=disk, labels=vm.labels, opts=stateful
            )
            attached = [{"source": data.id, "device_name": "data", "mode": "READ_WRITE"}]
        boot_disk: Any = {
            "auto_delete": True,
            "initialize_params": {"image": vm.image, "size": args["boot_disk_gib"], "type": args["boot_disk_kind"]},
        }
        scratch: Any = [{"interface": "NVME", "size": args["local_ssd_gib"]} for _ in range(args["local_ssd_count"])]
        inst = gcp.compute.Instance(
            logical(gcp.compute.Instance, f"{name}-node-{i}"),
            project=project,
            zone=zone,
            machine_type=args["machine_type"],
            description=f"fullserver {name}: {args['machine_type']}",
            boot_disk=boot_disk,
            scratch_disks=scratch,
            attached_disks=attached,
            network_interfaces=nics,
            network_performance_config=vm.perf,
            guest_accelerators=vm.accelerators,
            scheduling=_scheduling(args["spot"]),
            reservation_affinity=_reservation_affinity(args),
            resource_policies=placement_policy,
            service_account=vm.service_account,
            shielded_instance_config=vm.shielded,
            metadata=vm.metadata,
            labels=vm.labels,
            tags=net.tags,
            allow_stopping_for_update=stoppable,
            # Its data disk is attached read-write, to one VM at a time: a replacement
            # can start only once the old VM has let the disk go.
            opts=pulumi.ResourceOptions.merge(
                stateful,
                pulumi.ResourceOptions(
                    delete_before_replace=True,
                    replace_on_changes=[] if stoppable else list(STOP_TO_UPDATE),
                    # Without an external address its way out is Cloud NAT: its first boot
                    # installs what it lacks (mdadm for several local SSDs), as a serving group's does.
                    depends_on=list(net.egress),
                ),
            ),
        )
        instances.append(inst)
    return instances


class GcpGpuEnvironment(EnvironmentComponent):
    """GCP GPU VMs (or a managed serving group) with network, identity and storage per the spec.

    ``connect``: SSH through IAP (or directly to a public IP when SSH ranges are configured).
    ``nodes``: each VM and the way into it, empty for a group; ``node_groups``: the serving or
    regional group (spot or on demand) and the command that lists its members.
    """

    instance_names: pulumi.Output[list[str]]
    instance_group: pulumi.Output[str]
    """The serving or regional group's instance group URL (empty for single VMs)."""

    def __init__(self, name: str, args: GcpGpuArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        validate_gcp(args)  # before super().__init__: a refused spec registers nothing
        super().__init__(TOKEN, name, {}, opts)
        project = args.get("project")
        serving = args.get("serving")
        port = serving["port"] if serving is not None else None
        net = gcp_network(name, self, region=args["region"], access=args["access"], project=project, serving_port=port)
        sa = gcp_service_account(name, self, project)
        _secret_readers(self, name, args, sa)
        vm = _vm(args, net, sa)
        group: GcpServing | None = None
        if serving is not None:
            group = gcp_serving_group(
                name,
                self,
                project=project,
                region=args["region"],
                zone=args.get("zone"),
                template=_serving_template(name, args, vm, net),
                serving=serving,
                egress=net.egress,
            )
            self.instance_group = group.instance_group
            self.endpoint = group.endpoint
            self.lb_address = group.address
            instances: list[gcp.compute.Instance] = []
        elif "capacity_machine_types" in args:
            group = self._flexible(name, args, vm, net, sa)
            instances = []
        else:
            instances = _instances(self, name, args, vm, net)
            auto = args.get("autostop")
            if auto is not None:
                role = stop_role(name, self, gcp_autostop.STOP_PERMISSIONS[auto["way"]], args["environment"], project)
                grant_on_vms(name, self, role, sa, instances)
            self.running_nodes = pulumi.Output.all(*[i.current_status for i in instances]).apply(
                lambda states: running_nodes(states, gcp_autostop.STOPPED_STATES)
            )
            self.instance_group = pulumi.Output.from_input("")
            self.endpoint = pulumi.Output.from_input("")
            self.lb_address = pulumi.Output.from_input("")
        self.service_account = sa.email
        self._access(args, instances, group)
        self.register({"instance_names": self.instance_names, "instance_group": self.instance_group})

    def _flexible(
        self, name: str, args: GcpGpuArgs, vm: _Vm, net: GcpNetwork, sa: gcp.serviceaccount.Account
    ) -> GcpServing:
        """Spot or on-demand nodes as a regional group over the balanced set
        (``components.gcp.flexible``), whose members may resize it to 0 when idle."""
        project = args.get("project")
        mig = flexible_group(
            self,
            name,
            kind="spot" if args["spot"] else "ondemand",
            project=project,
            region=args["region"],
            nodes=args["nodes"],
            template=_serving_template(name, args, vm, net),
            machine_types=args["capacity_machine_types"],
            zones=args.get("capacity_zones", []),
            stateful_disks=args.get("capacity_stateful_disks", []),
            protect=args["protect"],
            egress=net.egress,
        )
        auto = args.get("autostop")
        if auto is not None:  # a member resizes its own group to 0 (components.gcp.autostop)
            role = stop_role(name, self, gcp_autostop.STOP_PERMISSIONS[auto["way"]], args["environment"], project)
            grant_on_group(name, self, role, sa, mig, args["region"])
            self.running_nodes = mig.target_size.apply(lambda n: running_nodes([], frozenset(), [n]))
        self.instance_group = mig.instance_group
        self.endpoint = pulumi.Output.from_input("")
        self.lb_address = pulumi.Output.from_input("")
        base = physical(gcp.compute.RegionInstanceGroupManager, name, "baseInstanceName")
        return GcpServing(self.instance_group, self.endpoint, self.lb_address, base_instance_name=base, zone=None)

    def _access(self, args: GcpGpuArgs, instances: list[gcp.compute.Instance], group: GcpServing | None) -> None:
        """The addresses, ``connect``, ``nodes`` and ``node_groups`` outputs."""
        zone = args.get("zone")
        region = args["region"]
        keys = bool(args["access"].get("ssh_public_keys"))
        self.instance_names = pulumi.Output.all(*[i.name for i in instances]).apply(
            lambda names: [str(n) for n in names]
        )
        self.private_ips = pulumi.Output.all(*[i.network_interfaces for i in instances]).apply(
            lambda nics: [str(field(n[0], "network_ip") or "") for n in nics if n]
        )
        self.public_ips = pulumi.Output.all(*[i.network_interfaces for i in instances]).apply(public_ips)
        proj = gcp_project(self, args.get("project"))
        direct = direct_ssh(args["access"])
        if instances and keys and direct:
            self.connect = self.public_ips.apply(lambda ips: f"ssh {LOGIN_USER}@{ips[0]}")
        elif instances:
            self.connect = pulumi.Output.all(instances[0].name, instances[0].zone, proj).apply(
                lambda nzp: gcloud_ssh(nzp[0], nzp[1] or zone or "", nzp[2], keys=keys, iap=not direct)
            )
        else:
            assert group is not None
            # The group is regional unless it stays in one configured zone (components.gcp.serving).
            where = f"--zone {group.zone}" if group.zone else f"--region {region}"
            self.connect = pulumi.Output.all(self.instance_group, proj).apply(
                lambda gp: group_ssh(gp[0].rsplit("/", 1)[-1], where, gp[1], keys=keys, iap=not direct)
            )
        via: Via = "ssh" if direct else "iap"
        # An instance's zone output is the configured one, or the provider's default zone.
        self.nodes = pulumi.Output.all(
            proj, *[pulumi.Output.all(i.name, i.zone, i.network_interfaces) for i in instances]
        ).apply(
            lambda pv: [
                vm_access(str(n), str(z or zone or ""), str(pv[0]), nics, keys=keys, via=via).exported()
                for n, z, nics in pv[1:]
            ]
        )
        if args.get("autostop") is not None and instances:  # an idle VM stops itself: start it again
            self.start_commands = pulumi.Output.all(
                proj, *[pulumi.Output.all(i.name, i.zone) for i in instances]
            ).apply(lambda pv: [gcp_autostop.start_argv(str(n), str(z or zone or ""), str(pv[0])) for n, z in pv[1:]])
        if group is not None:
            served_group = group
            self.node_groups = pulumi.Output.all(self.instance_group, proj).apply(
                lambda gp: [mig_access(gp[0], served_group, region, gp[1], keys=keys, via=via).exported()]
            )
        else:
            self.node_groups = pulumi.Output.from_input([])
