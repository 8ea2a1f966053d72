"""``TpuVmEnvironment``: a Cloud TPU VM or a multi-host TPU slice, with its network and identity.

Two resources can create TPU capacity, and the spec picks one:

* ``tpu.V2Vm`` for a single host: it carries everything (spot/reserved scheduling, a data disk,
  the dedicated service account, labels, a startup script).
* ``tpu.V2QueuedResource`` whenever the spec asks for queued capacity (the core queues every
  multi-host slice: ``TpuSpec.queued``): Cloud TPU queues the request until the whole slice is
  free, which is how large slices are obtained. In pulumi-gcp 10.2 the queued node has *no*
  scheduling, data disks, service account, labels, metadata or network tags, so those requests are
  refused at plan time rather than silently dropped.

Network: the environment's own VPC, whose firewall rules carry no target tags (a queued node
cannot carry tags), so they cover every host of the slice: SSH from the configured ranges or IAP,
and all node-to-node traffic from the subnet (JAX multi-host coordination, DCN).

Data disks: a multi-host slice can only attach disks read-only (Cloud TPU "Attach durable
block storage"), so a read-write data disk on one is refused.
"""

from typing import Any, Optional

import pulumi
import pulumi_gcp as gcp

from components.args import TpuVmArgs, check_access, check_data_disk, refuse
from components.disks import gcp_data_disk
from components.identity import GCP_SCOPES, gcp_service_account
from components.labels import field, gcp_labels, gcp_name
from components.network import gcp_network
from components.startup import TPU_DATA, DiskPlan, boot_script

TOKEN = "fullserver:index:TpuVmEnvironment"


def validate_tpu(args: TpuVmArgs) -> None:
    """Refuse, before any resource exists, what a TPU environment cannot be."""
    check_access(args["access"])
    check_data_disk(args)
    if not args.get("zone"):
        raise refuse(
            "zone", "Cloud TPUs are zonal and no zone is set", "set fullserver:zone to a zone offering the type"
        )
    if args["local_ssd_count"]:
        raise refuse("local_nvme_disks", f"TPU VMs have no local SSDs ({args['local_ssd_count']} requested)")
    disk = args.get("data_disk")
    multi_host = args["hosts"] > 1
    if disk is not None and multi_host and not disk.get("read_only", False):
        raise refuse(
            "data_disk",
            f"a read-write data disk cannot attach to the multi-host slice {args['accelerator_type']} ({args['hosts']} hosts)",
            "stream the dataset from Cloud Storage, or attach the disk read-only",
        )
    if disk is not None and disk["kind"] not in ("pd-balanced", "hyperdisk-balanced"):
        raise refuse("data_disk.kind", f"TPU VMs attach pd-balanced or hyperdisk-balanced, not {disk['kind']}")
    if args["queued"]:
        why = "pulumi-gcp 10.2's V2QueuedResource cannot express it"
        if args["spot"]:
            raise refuse(
                "spot",
                f"spot capacity for a queued TPU request: {why}",
                "use on-demand or reserved pricing for this slice",
            )
        if args.get("reservation"):
            raise refuse(
                "reservation",
                f"a reservation for a queued TPU request: {why}",
                "create the slice without fullserver:reservation",
            )
        if disk is not None:
            raise refuse("data_disk", f"a data disk on a queued TPU request: {why}", "stream data from Cloud Storage")


def _private_ips(endpoints: object) -> list[str]:
    return [str(field(e, "ip_address") or "") for e in (endpoints or [])]  # type: ignore[attr-defined]


def _public_ips(endpoints: object) -> list[str]:
    out = []
    for e in endpoints or []:  # type: ignore[attr-defined]
        for ac in field(e, "access_configs") or []:  # type: ignore[attr-defined]
            if field(ac, "external_ip"):
                out.append(str(field(ac, "external_ip")))
    return out


def _sa(email: pulumi.Output[str]) -> Any:
    return {"email": email, "scopes": GCP_SCOPES}


class TpuVmEnvironment(pulumi.ComponentResource):
    """A TPU VM (single host) or slice (multi-host) built exactly as the spec says."""

    node_name: pulumi.Output[str]
    """The TPU node's name (what ``gcloud compute tpus tpu-vm`` takes)."""
    private_ips: pulumi.Output[list[str]]
    """Internal address of each TPU host (empty for a queued slice until it is provisioned)."""
    public_ips: pulumi.Output[list[str]]
    connect: pulumi.Output[str]
    """How to reach worker 0 (IAP when there is no external IP)."""
    service_account: pulumi.Output[str]
    """The nodes' service account email; grant it access to your buckets (empty for queued slices)."""

    def __init__(self, name: str, args: TpuVmArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        validate_tpu(args)  # before super().__init__: a refused spec registers nothing
        super().__init__(TOKEN, name, {}, opts)
        project = args.get("project")
        zone = args.get("zone", "")
        access = args["access"]
        net = gcp_network(name, self, region=args["region"], access=access, project=project, tagged=False)
        network_config: Any = {
            "network": net.network.id,
            "subnetwork": net.subnet.id,
            "enable_external_ips": access["public_ip"],
            "can_ip_forward": False,
        }
        labels = gcp_labels(args["labels"])
        stateful = pulumi.ResourceOptions(parent=self, protect=args["protect"])
        node_id = gcp_name(f"{name}-tpu")
        if args["queued"]:
            pulumi.log.warn(
                f"{name}: a queued TPU slice runs as the project's default compute service account and carries no labels "
                "(pulumi-gcp 10.2's V2QueuedResource has neither)",
                resource=self,
            )
            proj: pulumi.Input[str] = (
                project
                if project is not None
                else gcp.organizations.get_client_config_output(opts=pulumi.InvokeOutputOptions(parent=self)).project
            )
            tpu_spec: Any = {
                "node_specs": [
                    {
                        "parent": pulumi.Output.concat("projects/", proj, "/locations/", zone),
                        "node_id": node_id,
                        "node": {
                            "runtime_version": args["runtime_version"],
                            "accelerator_type": args["accelerator_type"],
                            "description": f"fullserver {name}: {args['accelerator_type']} ({args['topology']}), {args['hosts']} hosts",
                            "network_config": network_config,
                        },
                    }
                ]
            }
            qr = gcp.tpu.V2QueuedResource(f"{name}-qr", project=project, zone=zone, tpu=tpu_spec, opts=stateful)
            self.node_name = qr.name.apply(lambda _: node_id)
            self.private_ips = pulumi.Output.from_input([])
            self.public_ips = pulumi.Output.from_input([])
            self.service_account = pulumi.Output.from_input("")
        else:
            sa = gcp_service_account(name, self, project)
            data_disks: Any = []
            disk = args.get("data_disk")
            if disk is not None:
                data = gcp_data_disk(
                    f"{name}-data", project=project, zone=zone, disk=disk, labels=labels, opts=stateful
                )
                data_disks.append(
                    {"source_disk": data.id, "mode": "READ_ONLY" if disk.get("read_only") else "READ_WRITE"}
                )
            script = boot_script(
                DiskPlan(
                    scratch_glob="",
                    scratch_devices=0,
                    data_glob=TPU_DATA,
                    data_disk=disk is not None,
                    data_read_only=bool(disk and disk.get("read_only")),
                )
            )
            vm = gcp.tpu.V2Vm(
                f"{name}-tpu",
                name=node_id,
                project=project,
                zone=zone,
                accelerator_type=args["accelerator_type"],
                runtime_version=args["runtime_version"],
                description=f"fullserver {name}: {args['accelerator_type']} ({args['topology']})",
                network_config=network_config,
                scheduling_config={"spot": args["spot"], "reserved": bool(args.get("reservation"))},
                service_account=_sa(sa.email),
                data_disks=data_disks,
                metadata={"startup-script": script, "enable-oslogin": "TRUE"},
                labels=labels,
                tags=net.tags or None,
                opts=stateful,
            )
            self.node_name = vm.name
            self.private_ips = vm.network_endpoints.apply(_private_ips)
            self.public_ips = vm.network_endpoints.apply(_public_ips)
            self.service_account = sa.email
        iap = "" if access["public_ip"] else " --tunnel-through-iap"
        self.connect = self.node_name.apply(
            lambda node: f"gcloud compute tpus tpu-vm ssh {node} --zone {zone} --worker=0{iap}"
        )
        self.register_outputs(
            {
                "node_name": self.node_name,
                "private_ips": self.private_ips,
                "public_ips": self.public_ips,
                "connect": self.connect,
                "service_account": self.service_account,
            }
        )
