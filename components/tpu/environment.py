"""``TpuVmEnvironment``: a Cloud TPU VM or a multi-host TPU slice, with its network and identity.

Two resources can create TPU capacity, and the spec picks one: see the design notes.

Design notes: docs/design/components.md.
"""

from typing import Any, Optional

import pulumi
import pulumi_gcp as gcp

from components.autostop import autostop_boot_lines
from components.gcp.autostop import grant_on_project, stop_role
from components.gcp.boot import gcp_login_metadata
from components.gcp.disks import gcp_data_disk
from components.gcp.identity import GCP_SCOPES, gcp_service_account
from components.gcp.labels import gcp_labels
from components.gcp.network import GcpNetwork, gcp_network, gcp_project
from components.names import physical
from components.network import direct_ssh
from components.outputs import EnvironmentComponent
from components.startup import LOGIN_USER, DiskPlan, boot_script
from components.tpu.access import private_ips, public_ips, queued_ssh, tpu_vm_ssh, tpu_worker_group, tpu_workers
from components.tpu.args import TpuVmArgs, validate_tpu
from components.tpu.autostop import tpu_stop_script
from components.tpu.queued import TpuQueuedResource, queued_delete_command, shell_line
from fullserver.autostop.way import running_nodes
from fullserver.platforms import tpu, tpu_autostop

TOKEN = "fullserver:index:TpuVmEnvironment"
TPU_DATA = tpu.DATA_DEVICE
"""The stable guest name of a TPU VM's first data disk (``fullserver.platforms.tpu``)."""


def _sa(email: pulumi.Output[str]) -> Any:
    return {"email": email, "scopes": GCP_SCOPES}


def _queued_body(name: str, args: TpuVmArgs, node_id: str, proj: pulumi.Output[str], net: GcpNetwork, sa: Any) -> Any:
    """The Cloud TPU API's QueuedResource body (queuedResources.create), field for field."""
    access = args["access"]
    return {
        "nodeSpecs": [
            {
                "parent": pulumi.Output.concat("projects/", proj, "/locations/", args.get("zone", "")),
                "nodeId": node_id,
                "node": {
                    "runtimeVersion": args["runtime_version"],
                    "acceleratorType": args["accelerator_type"],
                    "description": f"fullserver {name}: {args['accelerator_type']} ({args['topology']}), {args['hosts']} hosts",
                    "networkConfig": {
                        "network": net.network.id,
                        "subnetwork": net.subnet.id,
                        "enableExternalIps": access["public_ip"],
                    },
                    "serviceAccount": {"email": sa.email, "scope": GCP_SCOPES},
                    "labels": gcp_labels(args["labels"]),
                    "metadata": gcp_login_metadata(list(access.get("ssh_public_keys", [])), guest_attributes=False),
                },
            }
        ]
    }


def _data_disks(name: str, args: TpuVmArgs, labels: dict[str, str], stateful: pulumi.ResourceOptions) -> Any:
    disk = args.get("data_disk")
    if disk is None:
        return []
    data = gcp_data_disk(
        f"{name}-data", project=args.get("project"), zone=args.get("zone", ""), disk=disk, labels=labels, opts=stateful
    )
    return [{"source_disk": data.id, "mode": "READ_ONLY" if disk.get("read_only") else "READ_WRITE"}]


def _startup_script(args: TpuVmArgs, node_id: str) -> str:
    disk = args.get("data_disk")
    auto = args.get("autostop")
    stop = tpu_stop_script(auto["way"], node_id, args.get("zone", "")) if auto else ""
    return boot_script(
        DiskPlan(
            scratch_glob="",
            scratch_devices=0,
            data_glob=TPU_DATA,
            data_disk=disk is not None,
            data_read_only=bool(disk and disk.get("read_only")),
        ),
        extra=autostop_boot_lines(auto["minutes"], stop) if auto else "",
    )


class TpuVmEnvironment(EnvironmentComponent):
    """A TPU VM (single host) or slice (multi-host) built exactly as the spec says.

    ``private_ips``: the internal address of each TPU host (always empty for a queued slice: its
    node is not read back). ``connect``: how to reach worker 0 (IAP when there is no external IP).
    ``service_account``: the nodes' (a TPU VM's and a queued slice's alike); grant it access to
    your buckets. ``nodes``: each worker reached directly (module docstring); empty behind IAP and
    for a queued slice. ``node_groups``: behind IAP, the TPU VM and the command that names its
    workers' instances (provider ``tpu``); empty when reached directly and for a queued slice.
    """

    node_name: pulumi.Output[str]
    """The TPU node's name (what ``gcloud compute tpus tpu-vm`` takes)."""
    cleanup: pulumi.Output[str]
    """What deletes a queued slice by hand if a destroy cannot (empty for a TPU VM)."""

    def __init__(self, name: str, args: TpuVmArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        validate_tpu(args)  # before super().__init__: a refused spec registers nothing
        super().__init__(TOKEN, name, {}, opts)
        project = args.get("project")
        net = gcp_network(name, self, region=args["region"], access=args["access"], project=project, tagged=False)
        node_id = physical(gcp.tpu.V2Vm, f"{name}-tpu")
        proj = gcp_project(self, project)
        sa = gcp_service_account(name, self, project)
        if args["queued"]:
            self._queued(name, args, node_id, proj, net, sa)
        else:
            self._vm(name, args, node_id, proj, net, sa)
        self.service_account = sa.email
        self.register({"node_name": self.node_name, "cleanup": self.cleanup})

    def _queued(
        self, name: str, args: TpuVmArgs, node_id: str, proj: pulumi.Output[str], net: GcpNetwork, sa: Any
    ) -> None:
        """A queued slice (module docstring): its node appears once capacity does, after ``up``."""
        zone = args.get("zone", "")
        direct = direct_ssh(args["access"])
        qr_name = physical(TpuQueuedResource, f"{name}-qr")
        # Protected like a TPU VM; replaced by deleting first (module docstring).
        qr = TpuQueuedResource(
            f"{name}-qr",
            project=proj,
            zone=zone,
            name=qr_name,
            tpu=_queued_body(name, args, node_id, proj, net, sa),
            spot=args["spot"],
            opts=pulumi.ResourceOptions(parent=self, protect=args["protect"], delete_before_replace=True),
        )
        self.node_name = qr.name.apply(lambda _: node_id)
        keys = bool(args["access"].get("ssh_public_keys"))
        self.connect = pulumi.Output.all(qr.name, proj).apply(
            lambda qp: queued_ssh(qp[0], zone, qp[1], iap=not direct, keys=keys)
        )
        self.cleanup = pulumi.Output.all(qr.name, proj).apply(
            lambda qp: shell_line(queued_delete_command(qp[0], zone, qp[1]))
        )

    def _vm(self, name: str, args: TpuVmArgs, node_id: str, proj: pulumi.Output[str], net: GcpNetwork, sa: Any) -> None:
        """A TPU VM carrying everything: scheduling, data disk, service account, labels, metadata."""
        zone = args.get("zone", "")
        access = args["access"]
        keys = list(access.get("ssh_public_keys", []))
        labels = gcp_labels(args["labels"])
        stateful = pulumi.ResourceOptions(parent=self, protect=args["protect"])
        data_disks = _data_disks(name, args, labels, stateful)
        vm = gcp.tpu.V2Vm(
            f"{name}-tpu",
            name=node_id,
            project=args.get("project"),
            zone=zone,
            accelerator_type=args["accelerator_type"],
            runtime_version=args["runtime_version"],
            description=f"fullserver {name}: {args['accelerator_type']} ({args['topology']})",
            network_config={
                "network": net.network.id,
                "subnetwork": net.subnet.id,
                "enable_external_ips": access["public_ip"],
                "can_ip_forward": False,
            },
            scheduling_config={"spot": args["spot"], "reserved": bool(args.get("reservation"))},
            service_account=_sa(sa.email),
            data_disks=data_disks,
            metadata={
                "startup-script": _startup_script(args, node_id),
                **gcp_login_metadata(keys, guest_attributes=False),
            },
            labels=labels,
            tags=net.tags or None,
            opts=stateful,
        )
        self.node_name = vm.name
        auto = args.get("autostop")
        if auto is not None:  # the node stops (or deletes) itself when idle: components.gcp.autostop
            permissions = tpu_autostop.STOP_PERMISSIONS[auto["way"]]
            role = stop_role(name, self, permissions, args["environment"], args.get("project"))
            grant_on_project(name, self, role, sa)
            self.running_nodes = vm.state.apply(lambda state: running_nodes([state], tpu_autostop.STOPPED_STATES))
            if auto["way"] == tpu_autostop.TPU_STOP.key:  # stopped, not deleted: it waits to be started
                self.start_commands = pulumi.Output.all(vm.name, vm.zone, proj).apply(
                    lambda nzp: [tpu_autostop.start_argv(str(nzp[0]), str(nzp[1] or zone), str(nzp[2]))]
                )
        self.private_ips = vm.network_endpoints.apply(private_ips)
        self.public_ips = vm.network_endpoints.apply(public_ips)
        self.cleanup = pulumi.Output.from_input("")
        self._workers(args, vm, proj, keys=bool(keys))

    def _workers(self, args: TpuVmArgs, vm: gcp.tpu.V2Vm, proj: pulumi.Output[str], *, keys: bool) -> None:
        """``nodes`` (workers reached directly) or ``node_groups`` (behind IAP), and ``connect``."""
        zone = args.get("zone", "")
        direct = direct_ssh(args["access"])
        if direct:
            self.nodes = pulumi.Output.all(vm.name, vm.network_endpoints, proj).apply(
                lambda nep: [
                    w.exported()
                    for w in tpu_workers(nep[0], nep[1], keys=keys, direct=True, zone=zone, project=str(nep[2] or ""))
                ]
            )
        else:
            self.node_groups = pulumi.Output.all(vm.name, vm.network_endpoints, proj).apply(
                lambda nep: [
                    tpu_worker_group(
                        nep[0], nep[1], region=args["region"], zone=zone, project=nep[2], keys=keys
                    ).exported()
                ]
            )
        if keys and direct:
            self.connect = self.public_ips.apply(lambda ips: f"ssh {LOGIN_USER}@{ips[0]}")
        else:
            self.connect = pulumi.Output.all(vm.name, proj).apply(
                lambda np: tpu_vm_ssh(np[0], zone, np[1], keys=keys, iap=not direct)
            )
