"""``GcpGpuEnvironment``: Compute Engine GPU VMs (A2/A3/A4/G2, or N1 with attached GPUs), per the spec.

Each node is a ``compute.Instance``:

* ``on_host_maintenance: TERMINATE`` (GPU VMs cannot live-migrate); spot nodes use the ``SPOT``
  provisioning model and *stop* on preemption, so the boot and data disks survive and the VM can
  be started again when capacity returns.
* local NVMe SSDs, as many as the spec says, listed explicitly (A3/A2-ultra/G2 bundle theirs and
  the API expects the full set), assembled into RAID0 ``/scratch`` by the startup script.
* gVNIC on every node (required by A3/A4, supported by every DLVM image); per-VM Tier_1 egress only
  where the args ask for it (the core's ``billables.tier1``) and the machine type takes it
  (``fullserver.platforms.gcp.tier1_eligible``:
  N2/N2D/C2/C2D/C3 with 30+ vCPUs; never a GPU series, whose bandwidth comes with the machine type).
* multi-node A3/A4: the GPU NICs the shape's bandwidth comes from
  (``fullserver.platforms.gcp.GPU_NIC_PLANS``), each on the networks Google's A3/A4 guides describe.
  The sizing credits these shapes their full bandwidth (a3-megagpu-8g 1,800 Gbps), which only the
  GPU NICs carry: the primary gVNIC alone gives a fraction. NCCL needs the matching plugin in the image (GPUDirect-TCPX/TCPXO: Google's
  NCCL net plugins; RDMA: the gIB NCCL plugin); the NICs are what this component builds.
* a compact placement policy (``COLLOCATED``) for multi-node environments.
* the Deep Learning VM image family of the framework (``components.images``).
* Shielded VM with vTPM and integrity monitoring. Secure Boot stays off: the NVIDIA kernel modules
  the DLVM images build at first boot are not signed for it (Compute Engine "Shielded VM" /
  "Install GPU drivers": Secure Boot needs signed drivers).
* the project's SSH keys are blocked. Without ``fullserver:sshPublicKeys`` OS Login is on, so IAM
  decides who can SSH (``roles/compute.osAdminLogin``, ``roles/iam.serviceAccountUser`` on the
  nodes' service account, and ``roles/iap.tunnelResourceAccessor`` through IAP); with keys, they
  are the node's ``ssh-keys`` metadata for the user ``ubuntu`` and OS Login is off on the node
  (Compute Engine ignores ``ssh-keys`` under OS Login).
* ``connect``: ``ssh ubuntu@<ip>`` with keys and a public address SSH is open to from the
  configured ranges; else ``gcloud compute ssh`` (through IAP unless the nodes are reached directly:
  the firewall then admits IAP's range, ``components.network.gcp_ssh_ranges``).

Inference profiles with ``serving`` get a managed instance group behind Google's global external
Application Load Balancer instead, each replica running the model server (``components.serving``).
"""

from typing import Any, Optional

import pulumi
import pulumi_gcp as gcp

from components.args import (
    GcpGpuArgs,
    check_access,
    check_boot_disk,
    check_data_disk,
    check_local_ssds,
    check_serving,
    refuse,
)
from components.disks import gcp_data_disk
from components.identity import GCP_SCOPES, gcp_service_account
from components.images import gcp_image
from components.labels import field, gcp_labels, logical
from components.network import direct_ssh, gcp_network, gcp_project
from components.serving import GcpServing, gcp_serving_group, server_keep_alive
from components.startup import (
    GCP_DATA,
    GCP_LOCAL_SSD,
    LOGIN_USER,
    DiskPlan,
    boot_script,
    gcp_login_metadata,
    gcp_secret_command,
    model_server_script,
)
from fullserver.nodes import NodeAccess, NodeAccessOutput, NodeGroupAccess, NodeGroupAccessOutput, Via
from fullserver.platforms import Request
from fullserver.platforms import gcp as gce
from fullserver.platforms.gcp import GPU_NIC_PLANS, GpuNicPlan

__all__ = ["GPU_NIC_PLANS", "TOKEN", "GcpGpuEnvironment", "GpuNicPlan", "gpu_nic_plan", "validate_gcp"]

TOKEN = "fullserver:index:GcpGpuEnvironment"


GPU_SUBNET = "192.168.{}.0/24"
"""GPU NIC subnets (one per NIC, as in Google's guides); clear of the primary 10.64.0.0/20."""
HOST_SUBNET = "10.65.{}.0/20"
"""Subnets of the extra host gVNICs (A3 Ultra / A4)."""


def gpu_nic_plan(args: GcpGpuArgs) -> GpuNicPlan | None:
    """The GPU NICs this environment builds: its shape's plan, for multi-node environments only."""
    return gce.gpu_nic_plan(args["machine_type"], args["nodes"])


def validate_gcp(args: GcpGpuArgs) -> None:
    """Refuse, before any resource exists, what this shape or this cloud cannot do."""
    check_access(args["access"])
    check_serving(args.get("serving"))
    check_boot_disk(args)
    check_data_disk(args)
    check_local_ssds(args)
    serving = args.get("serving")
    disk = args.get("data_disk")
    request = Request(
        shape=args["machine_type"],
        spot=args["spot"],
        reservation=args.get("reservation"),
        zone=args.get("zone"),
        data_disk=disk["kind"] if disk is not None else None,
        image=args.get("image"),
    )
    refusal = gce.RULES.refusal(request) or gce.gpu_nic_refusal(args["machine_type"], args["nodes"], args.get("zone"))
    if refusal is not None:
        raise refuse(refusal.field, refusal.what, refusal.hint)
    if serving is not None and args["nodes"] != 1:
        raise refuse("nodes", "a serving group scales replicas of one node; nodes must be 1")
    if args.get("accelerator_type") and not args["accelerator_count"]:
        raise refuse("accelerator_count", "GPUs to attach but a count of 0")
    for z in serving.get("zones", []) if serving is not None else []:
        if not gce.RULES.zone_in_region(z, args["region"]):
            raise refuse("serving.zones", f"zone {z} is not in the region {args['region']}")


def _scheduling(spot: bool) -> Any:
    if spot:
        return {
            "on_host_maintenance": "TERMINATE",
            "provisioning_model": "SPOT",
            "preemptible": True,
            "automatic_restart": False,
            "instance_termination_action": "STOP",
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


class GcpGpuEnvironment(pulumi.ComponentResource):
    """GCP GPU VMs (or a managed serving group) with network, identity and storage per the spec."""

    instance_names: pulumi.Output[list[str]]
    private_ips: pulumi.Output[list[str]]
    public_ips: pulumi.Output[list[str]]
    instance_group: pulumi.Output[str]
    """The serving group's instance group URL (empty without serving)."""
    service_account: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    """The serving load balancer's URL (empty without serving)."""
    connect: pulumi.Output[str]
    """SSH through IAP (or directly to a public IP when SSH ranges are configured)."""
    nodes: pulumi.Output[list[NodeAccessOutput]]
    """Each VM and the way into it (``fullserver.nodes.NodeAccess``); empty for a serving group."""
    node_groups: pulumi.Output[list[NodeGroupAccessOutput]]
    """The serving group and the command that lists its replicas (``fullserver.nodes.NodeGroupAccess``)."""

    def __init__(self, name: str, args: GcpGpuArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        validate_gcp(args)  # before super().__init__: a refused spec registers nothing
        super().__init__(TOKEN, name, {}, opts)
        project = args.get("project")
        region = args["region"]
        zone = args.get("zone")
        access = args["access"]
        serving = args.get("serving")
        port = serving["port"] if serving is not None else None
        net = gcp_network(name, self, region=region, access=access, project=project, serving_port=port)
        sa = gcp_service_account(name, self, project)
        for kind, secret in (serving["secrets"] if serving is not None else {}).items():
            # the nodes may read the secrets the model server needs, and no other (docs/deploying.md)
            gcp.secretmanager.SecretIamMember(
                f"{name}-model-{kind.replace('_', '-')}",
                project=project,
                secret_id=secret,
                role="roles/secretmanager.secretAccessor",
                member=sa.email.apply(lambda email: f"serviceAccount:{email}"),
                opts=pulumi.ResourceOptions(parent=self),
            )
        labels = gcp_labels(args["labels"])
        disk = args.get("data_disk")
        script = boot_script(
            DiskPlan(
                scratch_glob=GCP_LOCAL_SSD,
                scratch_devices=args["local_ssd_count"],
                data_glob=GCP_DATA,
                data_disk=disk is not None,
            ),
            extra=model_server_script(
                serving["image"],
                serving["server_args"],
                serving["port"],
                {kind: gcp_secret_command(secret) for kind, secret in serving["secrets"].items()},
                server_keep_alive(serving["request_timeout_seconds"]),
            )
            if serving is not None
            else "",
        )
        keys = list(access.get("ssh_public_keys", []))
        metadata = {"startup-script": script, **gcp_login_metadata(keys)}
        nic: Any = {"network": net.network.id, "subnetwork": net.subnet.id, "nic_type": "GVNIC"}
        if access["public_ip"]:
            nic["access_configs"] = [{"network_tier": "PREMIUM"}]
        nic_plan = gpu_nic_plan(args)
        nics: Any = [nic] + (
            self._gpu_nics(name, nic_plan, region=region, zone=zone or "", project=project) if nic_plan else []
        )
        accelerators: Any = []
        if args.get("accelerator_type"):
            accelerators = [{"type": args["accelerator_type"], "count": args["accelerator_count"]}]
        shielded: Any = {"enable_secure_boot": False, "enable_vtpm": True, "enable_integrity_monitoring": True}
        image = gcp_image(args.get("image"), args["framework"])
        # Tier_1 only where the machine type takes it: the API refuses it on every GPU series.
        tier1 = args["tier1_networking"] and gce.tier1_eligible(args["machine_type"])
        perf: Any = {"total_egress_bandwidth_tier": "TIER_1"} if tier1 else None
        service_account: Any = {"email": sa.email, "scopes": GCP_SCOPES}
        stateful = pulumi.ResourceOptions(parent=self, protect=args["protect"])

        if serving is not None:
            disks: Any = [
                {
                    "boot": True,
                    "auto_delete": True,
                    "source_image": image,
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
                        "provisioned_iops": disk.get("iops"),
                        "provisioned_throughput": disk.get("throughput_mbps"),
                    }
                )
            template: Any = {
                "machine_type": args["machine_type"],
                "description": f"fullserver {name}: {args['machine_type']}",
                "disks": disks,
                "network_interfaces": [nic],
                "scheduling": _scheduling(args["spot"]),
                "reservation_affinity": _reservation_affinity(args),
                "service_account": service_account,
                "shielded_instance_config": shielded,
                "guest_accelerators": accelerators,
                "metadata": metadata,
                "labels": labels,
                "tags": net.tags,
                "network_performance_config": perf,
            }
            served = gcp_serving_group(
                name,
                self,
                project=project,
                region=region,
                zone=zone,
                template=template,
                serving=serving,
                egress=net.egress,
            )
            self.instance_group = served.instance_group
            self.endpoint = served.endpoint
            instances: list[gcp.compute.Instance] = []
            group: GcpServing | None = served
        else:
            # Without a zone the provider's default zone (gcp:zone) takes the disks and the VM alike.
            placement_policy: pulumi.Output[str] | None = None
            if args["compact_placement"] and args["nodes"] > 1:
                policy = gcp.compute.ResourcePolicy(
                    logical(gcp.compute.ResourcePolicy, f"{name}-compact"),
                    project=project,
                    region=region,
                    # No vm_count: with it the API takes exactly that many VMs, so adding a node
                    # (or replacing one, which briefly needs one more) would replace the policy
                    # and with it every node; Google does not recommend it.
                    group_placement_policy={"collocation": "COLLOCATED"},
                    opts=pulumi.ResourceOptions(parent=self),
                )
                placement_policy = policy.self_link
            instances = []
            for i in range(args["nodes"]):
                attached: Any = []
                if disk is not None:
                    data = gcp_data_disk(
                        f"{name}-data-{i}", project=project, zone=zone, disk=disk, labels=labels, opts=stateful
                    )
                    attached = [{"source": data.id, "device_name": "data", "mode": "READ_WRITE"}]
                boot_disk: Any = {
                    "auto_delete": True,
                    "initialize_params": {
                        "image": image,
                        "size": args["boot_disk_gib"],
                        "type": args["boot_disk_kind"],
                    },
                }
                scratch: Any = [
                    {"interface": "NVME", "size": args["local_ssd_gib"]} for _ in range(args["local_ssd_count"])
                ]
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
                    network_performance_config=perf,
                    guest_accelerators=accelerators,
                    scheduling=_scheduling(args["spot"]),
                    reservation_affinity=_reservation_affinity(args),
                    resource_policies=placement_policy,
                    service_account=service_account,
                    shielded_instance_config=shielded,
                    metadata=metadata,
                    labels=labels,
                    tags=net.tags,
                    allow_stopping_for_update=True,
                    # Its data disk is attached read-write, to one VM at a time: a replacement
                    # can start only once the old VM has let the disk go.
                    opts=pulumi.ResourceOptions.merge(stateful, pulumi.ResourceOptions(delete_before_replace=True)),
                )
                instances.append(inst)
            self.instance_group = pulumi.Output.from_input("")
            self.endpoint = pulumi.Output.from_input("")
            group = None

        self.instance_names = pulumi.Output.all(*[i.name for i in instances]).apply(
            lambda names: [str(n) for n in names]
        )
        self.private_ips = pulumi.Output.all(*[i.network_interfaces for i in instances]).apply(
            lambda nics: [str(field(n[0], "network_ip") or "") for n in nics if n]
        )
        self.public_ips = pulumi.Output.all(*[i.network_interfaces for i in instances]).apply(_public_ips)
        self.service_account = sa.email
        proj = gcp_project(self, project)
        direct = direct_ssh(access)
        if instances and keys and direct:
            self.connect = self.public_ips.apply(lambda ips: f"ssh {LOGIN_USER}@{ips[0]}")
        elif instances:
            self.connect = pulumi.Output.all(instances[0].name, instances[0].zone, proj).apply(
                lambda nzp: gcloud_ssh(nzp[0], nzp[1] or zone or "", nzp[2], keys=bool(keys), iap=not direct)
            )
        else:
            assert group is not None
            # The group is regional unless it stays in one configured zone (components.serving).
            where = f"--zone {group.zone}" if group.zone else f"--region {region}"
            self.connect = pulumi.Output.all(self.instance_group, proj).apply(
                lambda gp: group_ssh(gp[0].rsplit("/", 1)[-1], where, gp[1], keys=bool(keys), iap=not direct)
            )
        via: Via = "ssh" if direct else "iap"
        # An instance's zone output is the configured one, or the provider's default zone.
        self.nodes = pulumi.Output.all(
            proj, *[pulumi.Output.all(i.name, i.zone, i.network_interfaces) for i in instances]
        ).apply(
            lambda pv: [
                vm_access(str(n), str(z or zone or ""), str(pv[0]), nics, keys=bool(keys), via=via).exported()
                for n, z, nics in pv[1:]
            ]
        )
        if group is not None:
            served_group = group
            self.node_groups = pulumi.Output.all(self.instance_group, proj).apply(
                lambda gp: [mig_access(gp[0], served_group, region, gp[1], keys=bool(keys), via=via).exported()]
            )
        else:
            self.node_groups = pulumi.Output.from_input([])
        self.register_outputs(
            {
                "instance_names": self.instance_names,
                "private_ips": self.private_ips,
                "public_ips": self.public_ips,
                "instance_group": self.instance_group,
                "service_account": self.service_account,
                "connect": self.connect,
                "endpoint": self.endpoint,
                "nodes": self.nodes,
                "node_groups": self.node_groups,
            }
        )

    def _gpu_nics(
        self, name: str, plan: GpuNicPlan, *, region: str, zone: str, project: pulumi.Input[str] | None
    ) -> list[Any]:
        """The networks of ``plan`` (module table) and the NICs every node adds on them, after its primary.

        GPUDirect-TCPX/TCPXO: one VPC network per GPU NIC, each with its subnet and a firewall rule
        that opens it to itself (the nodes' NICs on that rail). RDMA: extra host gVNICs on regular
        networks like the TCPX ones, and ONE RoCE network with a subnet per MRDMA NIC; RoCE networks
        allow all ingress implicitly and take no firewall rules.
        """
        opts = pulumi.ResourceOptions(parent=self)
        nics: list[Any] = []

        def subnetted(prefix: str, cidr: str, network: gcp.compute.Network) -> gcp.compute.Subnetwork:
            return gcp.compute.Subnetwork(
                logical(gcp.compute.Subnetwork, f"{prefix}-subnet"),
                project=project,
                network=network.id,
                region=region,
                ip_cidr_range=cidr,
                opts=opts,
            )

        def own_network(prefix: str, cidr: str, nic_type: str, mtu: int) -> None:
            network = gcp.compute.Network(
                logical(gcp.compute.Network, f"{prefix}-net"),
                project=project,
                auto_create_subnetworks=False,
                mtu=mtu,
                description=f"fullserver environment {name}: {plan.fabric}",
                opts=opts,
            )
            subnet = subnetted(prefix, cidr, network)
            gcp.compute.Firewall(
                logical(gcp.compute.Firewall, f"{prefix}-internal"),
                project=project,
                network=network.id,
                direction="INGRESS",
                source_ranges=[cidr],
                allows=[{"protocol": "tcp"}, {"protocol": "udp"}, {"protocol": "icmp"}],
                description=f"node-to-node {plan.fabric} traffic inside the environment",
                opts=opts,
            )
            nics.append({"network": network.id, "subnetwork": subnet.id, "nic_type": nic_type})

        for i in range(1, plan.host_nics):
            own_network(f"{name}-host{i}", HOST_SUBNET.format(16 * i), "GVNIC", gce.MAX_MTU)
        if not plan.rdma:
            for i in range(plan.gpu_nics):
                own_network(f"{name}-gpu{i}", GPU_SUBNET.format(i), plan.nic_type, plan.mtu)
            return nics
        proj = gcp_project(self, project)
        roce = gcp.compute.Network(
            logical(gcp.compute.Network, f"{name}-roce-net"),
            project=project,
            auto_create_subnetworks=False,
            mtu=plan.mtu,
            network_profile=pulumi.Output.concat("projects/", proj, "/global/networkProfiles/", zone, "-vpc-roce"),
            description=f"fullserver environment {name}: {plan.fabric}",
            opts=opts,
        )
        for i in range(plan.gpu_nics):
            subnet = subnetted(f"{name}-roce{i}", GPU_SUBNET.format(i), roce)
            nics.append({"network": roce.id, "subnetwork": subnet.id, "nic_type": plan.nic_type})
        return nics


def gcloud_ssh(instance: str, zone: str, project: str, *, keys: bool, iap: bool) -> str:
    """``gcloud compute ssh`` to one VM: as ``ubuntu`` where keys are installed (else OS Login
    names the user), through IAP where the VM is not reached directly."""
    user = f"{LOGIN_USER}@" if keys else ""
    return f"gcloud compute ssh {user}{instance} --zone {zone} --project {project}" + (
        " --tunnel-through-iap" if iap else ""
    )


def group_ssh(group: str, where: str, project: str, *, keys: bool, iap: bool) -> str:
    """``gcloud compute ssh`` to the first instance of a managed group (``where``: ``--region R``
    or ``--zone Z``), looked up by the command itself (the group creates and replaces its
    instances; no name is known here): its name and its zone, the last segments of its URL."""
    listing = (
        f"gcloud compute instance-groups managed list-instances {group} {where} --project {project} --limit 1 --format="
    )
    instance = f'$({listing}"value(instance.basename())")'
    zone = f'$({listing}"value(instance.scope(zones).segment(0))")'
    return gcloud_ssh(instance, zone, project, keys=keys, iap=iap)


def vm_access(name: str, zone: str, project: str, nics: list[Any], *, keys: bool, via: Via) -> NodeAccess:
    """One VM's row of the ``nodes`` output: its primary NIC's addresses, and the IAP tunnel to it
    by name when it is not reached directly (``fullserver.platforms.gcp.iap_proxy``)."""
    nic = nics[0] if nics else None
    configs: Any = (field(nic, "access_configs") or []) if nic is not None else []
    return NodeAccess(
        name=name,
        private_ip=str(field(nic, "network_ip") or "") if nic is not None else "",
        public_ip=next((str(field(ac, "nat_ip")) for ac in configs if field(ac, "nat_ip")), ""),
        user=LOGIN_USER,
        keys=keys,
        via=via,
        proxy_command=gce.iap_proxy(name, zone, project) if via == "iap" else [],
        host_keys_command=gce.host_keys_command(name, zone, project),
    )


def mig_access(
    instance_group: str, group: GcpServing, region: str, project: str, *, keys: bool, via: Via
) -> NodeGroupAccess:
    """The serving group's row of the ``nodeGroups`` output: its replicas are listed when needed,
    by the name the group gives them (``fullserver.platforms.gcp.group_list_command``). The group is
    named by the last segment of its URL."""
    return NodeGroupAccess(
        provider="gcp",
        groups=[instance_group.rsplit("/", 1)[-1]],
        region=region,
        zone=group.zone or "",
        project=project,
        user=LOGIN_USER,
        keys=keys,
        via=via,
        list_command=gce.group_list_command(group.base_instance_name, region, project),
    )


def _public_ips(nics: list[Any]) -> list[str]:
    out = []
    for n in nics:
        for ac in (field(n[0], "access_configs") or []) if n else []:  # type: ignore[attr-defined]
            if field(ac, "nat_ip"):
                out.append(str(field(ac, "nat_ip")))
    return out
