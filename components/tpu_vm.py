"""``TpuVmEnvironment``: a Cloud TPU VM or a multi-host TPU slice, with its network and identity.

Two resources can create TPU capacity, and the spec picks one:

* ``tpu.V2Vm`` for a single host: it carries everything (spot/reserved scheduling, a data disk,
  the dedicated service account, labels, a startup script).
* a queued resource whenever the spec asks for queued capacity (the core queues every multi-host
  slice: ``TpuSpec.queued``): Cloud TPU queues the request until the whole slice is free, which is
  how large slices are obtained. pulumi-gcp 10.2's ``tpu.V2QueuedResource`` (and the Terraform
  provider's ``google_tpu_v2_queued_resource`` it is built from, still in magic-modules of
  2026-08) gives the queued node only a runtime, a type, a description and a network: no service
  account (so the slice would run as the project's default compute service account, often
  ``roles/editor``), no labels, scheduling, data disks, metadata or tags. So the slice is a
  ``TpuQueuedResource`` instead: a dynamic resource whose inputs are the Cloud TPU API's
  ``QueuedResource`` body and which creates it with ``gcloud compute tpus queued-resources create``
  (GA; ``--service-account``, ``--scopes`` and ``--labels`` set the node's), so the slice runs as the
  environment's own least-privilege service account (``components.identity``, as a TPU VM does)
  and carries its labels. Spot, reservations, data disks and metadata stay refused at plan time
  (``fullserver.platforms.tpu``), as before.

Network: the environment's own VPC, whose firewall rules carry no target tags (a queued node
is given none), so they cover every host of the slice: SSH from the configured ranges or IAP,
and all node-to-node traffic from the subnet (JAX multi-host coordination, DCN).

Data disks: a multi-host slice can only attach disks read-only (Cloud TPU "Attach durable
block storage"), so a read-write data disk on one is refused.

Access (``connect``): a TPU VM takes ``fullserver:sshPublicKeys`` as ``ssh-keys`` metadata for the
user ``ubuntu`` (OS Login off on it; without keys OS Login decides, as on GCP GPU VMs). Reached
directly (external IP and SSH ranges): ``ssh ubuntu@<ip>`` with keys, else ``gcloud compute tpus
tpu-vm ssh``; otherwise through IAP, which only the *alpha* ``tpu-vm ssh`` takes
(``--tunnel-through-iap``), and the firewall admits IAP's range. A queued slice takes no metadata:
its hint is ``gcloud compute tpus queued-resources ssh`` (GA, IAP included), and keys come from OS
Login or the project's ``ssh-keys`` metadata.

The way into the workers (``fullserver.nodes``). Reached directly, each worker of a TPU VM is a
``nodes`` row ``<node>-w<i>`` (the API's ``networkEndpoints``, one per host, in worker order),
``via: ssh`` at its external address. Otherwise an IAP tunnel must target the worker's Compute
Engine instance, whose name the TPU API gives only as the worker's ``hostname`` guest attribute
(``nodes.getGuestAttributes``, which ``gcloud alpha compute tpus tpu-vm ssh --tunnel-through-iap``
reads at connect time), not in the node the provider returns; so ``pulumi up`` cannot know it, and
the TPU VM is exported as a ``nodeGroups`` row instead (provider ``tpu``): its ``listCommand`` is
``gcloud compute tpus tpu-vm get-guest-attributes``, which ``fullserver.platforms.tpu`` turns into
one IAP-tunnelled node per worker when ``fullserver verify`` runs, with the worker's internal
address from the row's ``privateIps``. A queued slice exports neither: its TPU node is created by
the queued resource when capacity arrives, after ``pulumi up`` (``connect`` reaches it).

Creating and destroying a queued slice (``TpuQueuedResourceProvider``): created with the
deployer's gcloud credentials; every input change replaces it, deleting first (the new request
names the same TPU node; the API has no update for a queued resource, and pulumi-gcp's replaced
it too). It is deleted with ``--force``, because Cloud TPU refuses to delete a queued resource
holding a running TPU (ACTIVE): "the queued resource will only be deleted if its nodes have
already been deleted or it is ACCEPTED, FAILED or SUSPENDED" (``queuedResources.delete``). Without
gcloud, ``up`` or ``destroy`` stops and names the command (also the ``cleanup`` output).
"""

import shutil
import subprocess
from typing import Any, ClassVar, Optional

import pulumi
import pulumi_gcp as gcp
from pulumi.dynamic import CreateResult, DiffResult, Resource, ResourceProvider

from components.args import TpuVmArgs, check_access, check_data_disk, refuse
from components.disks import gcp_data_disk
from components.identity import GCP_SCOPES, gcp_service_account
from components.labels import field, gcp_labels, physical
from components.network import direct_ssh, gcp_network, gcp_project
from components.startup import LOGIN_USER, TPU_DATA, DiskPlan, boot_script, gcp_login_metadata
from fullserver.nodes import NodeAccess, NodeAccessOutput, NodeGroupAccess, NodeGroupAccessOutput
from fullserver.platforms import Request, tpu

TOKEN = "fullserver:index:TpuVmEnvironment"


def validate_tpu(args: TpuVmArgs) -> None:
    """Refuse, before any resource exists, what a TPU environment cannot be."""
    check_access(args["access"])
    check_data_disk(args)
    disk = args.get("data_disk")
    request = Request(
        shape=args["accelerator_type"],
        hosts=args["hosts"],
        spot=args["spot"],
        reservation=args.get("reservation"),
        zone=args.get("zone"),
        queued=args["queued"],
        queued_asked=args["queued"],
        data_disk=disk["kind"] if disk is not None else None,
        data_disk_read_only=bool(disk and disk.get("read_only", False)),
        local_ssds=args["local_ssd_count"],
    )
    refusal = tpu.RULES.refusal(request)
    if refusal is not None:
        raise refuse(refusal.field, refusal.what, refusal.hint)


def _private_ips(endpoints: object) -> list[str]:
    return [str(field(e, "ip_address") or "") for e in (endpoints or [])]  # type: ignore[attr-defined]


def _public_ips(endpoints: object) -> list[str]:
    out = []
    for e in endpoints or []:  # type: ignore[attr-defined]
        for ac in field(e, "access_configs") or []:  # type: ignore[attr-defined]
            if field(ac, "external_ip"):
                out.append(str(field(ac, "external_ip")))
    return out


def tpu_workers(
    node: str, endpoints: list[Any] | None, *, keys: bool, direct: bool, zone: str = "", project: str = ""
) -> list[NodeAccess]:
    """The ``nodes`` rows of a TPU VM's workers reached directly (module docstring: why a worker
    behind IAP is listed through ``tpu_worker_group`` instead). With the TPU's zone and project,
    each row carries the command that reads its host keys (the TPU's guest attributes)."""
    rows = []
    for i, endpoint in enumerate(endpoints or []):
        public = next(iter(_public_ips([endpoint])), "")
        rows.append(
            NodeAccess(
                name=f"{node}-w{i}",
                private_ip=str(field(endpoint, "ip_address") or ""),
                public_ip=public,
                user=LOGIN_USER,
                keys=keys,
                via="ssh" if direct and public else "iap",
                host_keys_command=tpu.host_keys_command(node, zone, project) if zone and project else [],
            )
        )
    return rows


def tpu_worker_group(
    node: str, endpoints: list[Any] | None, *, region: str, zone: str, project: str, keys: bool
) -> NodeGroupAccess:
    """The ``nodeGroups`` row of a TPU VM whose workers are reached through IAP: listed with their
    guest attributes at connect time, addressed by ``privateIps`` in worker order."""
    return NodeGroupAccess(
        provider="tpu",
        groups=[node],
        region=region,
        zone=zone,
        project=project,
        user=LOGIN_USER,
        keys=keys,
        via="iap",
        list_command=tpu.group_list_command(node, zone, project),
        private_ips=_private_ips(endpoints),
    )


def _sa(email: pulumi.Output[str]) -> Any:
    return {"email": email, "scopes": GCP_SCOPES}


def queued_delete_command(queued_resource: str, zone: str, project: str) -> list[str]:
    """The documented way to delete a queued resource together with its running TPU."""
    return [
        "gcloud", "compute", "tpus", "queued-resources", "delete", queued_resource,
        "--zone", zone, "--project", project, "--force", "--quiet",
    ]  # fmt: skip


def queued_create_command(props: dict[str, Any]) -> list[str]:
    """``gcloud compute tpus queued-resources create`` for a ``TpuQueuedResource``'s inputs (the
    API's ``QueuedResource`` body): the node's service account, scopes and labels included."""
    spec = props["tpu"]["nodeSpecs"][0]
    node = spec["node"]
    net = node["networkConfig"]
    labels = ",".join(f"{k}={v}" for k, v in sorted(node["labels"].items()))
    return [
        "gcloud", "compute", "tpus", "queued-resources", "create", props["name"],
        "--zone", props["zone"], "--project", props["project"], "--node-id", spec["nodeId"],
        "--accelerator-type", node["acceleratorType"], "--runtime-version", node["runtimeVersion"],
        "--description", node["description"], "--network", net["network"], "--subnetwork", net["subnetwork"],
        *([] if net["enableExternalIps"] else ["--internal-ips"]),
        "--service-account", node["serviceAccount"]["email"], "--scopes", ",".join(node["serviceAccount"]["scope"]),
        *(["--labels", labels] if labels else []), "--quiet",
    ]  # fmt: skip


# How long gcloud may take: a create returns once the request is queued; a forced delete of a
# large slice is normally done in minutes.
GCLOUD_TIMEOUT_SECONDS = 3600


def _gcloud(command: list[str], *, gone_is_done: bool) -> None:
    """Run gcloud, or stop with the command to run by hand."""
    shown = " ".join(command)
    if shutil.which("gcloud") is None:
        raise RuntimeError(
            f"a queued TPU slice is created and deleted with gcloud (pulumi-gcp 10.2 cannot give it a service "
            f"account, labels or a forced delete), which is not on this machine: run `{shown}`"
        )
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=GCLOUD_TIMEOUT_SECONDS, check=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"`{shown}` did not finish in {GCLOUD_TIMEOUT_SECONDS} s; run it again") from None
    gone = "NOT_FOUND" in done.stderr or "not found" in done.stderr.lower()
    if done.returncode != 0 and not (gone_is_done and gone):
        raise RuntimeError(f"`{shown}` failed: {done.stderr.strip()[-500:]}")


class TpuQueuedResourceProvider(ResourceProvider):
    """Creates a queued resource with gcloud; force-deletes it and its TPU (module docstring)."""

    def create(self, props: dict[str, Any]) -> CreateResult:
        _gcloud(queued_create_command(props), gone_is_done=False)
        return CreateResult(id_=f"{props['project']}/{props['zone']}/{props['name']}", outs=props)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = sorted(k for k in set(olds) | set(news) if k != "__provider" and olds.get(k) != news.get(k))
        return DiffResult(changes=bool(changed), replaces=changed, delete_before_replace=True)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        _gcloud(queued_delete_command(str(props["name"]), str(props["zone"]), str(props["project"])), gone_is_done=True)


class TpuQueuedResource(Resource, module="fullserver", name="TpuQueuedResource"):
    """A Cloud TPU queued resource whose node has a service account and labels (module docstring)."""

    pulumi_type: ClassVar[str] = tpu.QUEUED_RESOURCE_TYPE
    name: pulumi.Output[str]

    def __init__(
        self,
        resource_name: str,
        *,
        project: pulumi.Input[str],
        zone: str,
        name: str,
        tpu: pulumi.Input[dict[str, Any]],
        opts: Optional[pulumi.ResourceOptions] = None,
    ) -> None:
        props = {"project": project, "zone": zone, "name": name, "tpu": tpu}
        super().__init__(TpuQueuedResourceProvider(), resource_name, props, opts)


def tpu_vm_ssh(node: str, zone: str, project: str, *, keys: bool, iap: bool) -> str:
    """SSH to worker 0 of a TPU VM; ``--tunnel-through-iap`` exists only in the alpha command."""
    user = f"{LOGIN_USER}@" if keys else ""
    if iap:
        return (
            f"gcloud alpha compute tpus tpu-vm ssh {user}{node} --zone {zone} --project {project} "
            "--worker=0 --tunnel-through-iap"
        )
    return f"gcloud compute tpus tpu-vm ssh {user}{node} --zone {zone} --project {project} --worker=0"


def queued_ssh(queued_resource: str, zone: str, project: str, *, iap: bool) -> str:
    """SSH to worker 0 of node 0 of a queued slice; the comment says where keys come from."""
    return (
        f"gcloud compute tpus queued-resources ssh {queued_resource} --zone {zone} --project {project} "
        "--node=0 --worker=0" + (" --tunnel-through-iap" if iap else "") + "  # SSH keys: OS Login or the "
        "project's ssh-keys metadata (a queued slice takes no node metadata)"
    )


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
    """The nodes' service account email (a TPU VM's and a queued slice's alike); grant it access to
    your buckets."""
    cleanup: pulumi.Output[str]
    """What deletes a queued slice by hand if a destroy cannot (empty for a TPU VM)."""
    nodes: pulumi.Output[list[NodeAccessOutput]]
    """Each worker reached directly and the way into it (``fullserver.nodes.NodeAccess``; module
    docstring); empty behind IAP and for a queued slice."""
    node_groups: pulumi.Output[list[NodeGroupAccessOutput]]
    """Behind IAP, the TPU VM and the command that names its workers' instances
    (``fullserver.nodes.NodeGroupAccess``, provider ``tpu``); empty when reached directly and for a
    queued slice."""

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
        node_id = physical(gcp.tpu.V2Vm, f"{name}-tpu")
        keys = list(access.get("ssh_public_keys", []))
        direct = direct_ssh(access)
        proj = gcp_project(self, project)
        sa = gcp_service_account(name, self, project)
        if args["queued"]:
            if keys:
                pulumi.log.warn(
                    f"{name}: fullserver:sshPublicKeys is not installed on a queued TPU slice (no metadata on a "
                    "queued node here): keys come from OS Login or the project's ssh-keys metadata",
                    resource=self,
                )
            qr_name = physical(TpuQueuedResource, f"{name}-qr")
            # The Cloud TPU API's QueuedResource body (queuedResources.create), field for field.
            tpu_spec: Any = {
                "nodeSpecs": [
                    {
                        "parent": pulumi.Output.concat("projects/", proj, "/locations/", zone),
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
                            "labels": labels,
                        },
                    }
                ]
            }
            # Protected like a TPU VM; replaced by deleting first (module docstring).
            qr = TpuQueuedResource(
                f"{name}-qr",
                project=proj,
                zone=zone,
                name=qr_name,
                tpu=tpu_spec,
                opts=pulumi.ResourceOptions(parent=self, protect=args["protect"], delete_before_replace=True),
            )
            self.node_name = qr.name.apply(lambda _: node_id)
            self.private_ips = pulumi.Output.from_input([])
            self.public_ips = pulumi.Output.from_input([])
            self.nodes = pulumi.Output.from_input([])
            self.node_groups = pulumi.Output.from_input([])
            self.connect = pulumi.Output.all(qr.name, proj).apply(
                lambda qp: queued_ssh(qp[0], zone, qp[1], iap=not direct)
            )
            self.cleanup = pulumi.Output.all(qr.name, proj).apply(
                lambda qp: " ".join(queued_delete_command(qp[0], zone, qp[1]))
            )
        else:
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
                metadata={"startup-script": script, **gcp_login_metadata(keys, guest_attributes=False)},
                labels=labels,
                tags=net.tags or None,
                opts=stateful,
            )
            self.node_name = vm.name
            self.private_ips = vm.network_endpoints.apply(_private_ips)
            self.public_ips = vm.network_endpoints.apply(_public_ips)
            if direct:
                self.nodes = pulumi.Output.all(vm.name, vm.network_endpoints, proj).apply(
                    lambda nep: [
                        w.exported()
                        for w in tpu_workers(
                            nep[0], nep[1], keys=bool(keys), direct=True, zone=zone, project=str(nep[2] or "")
                        )
                    ]
                )
                self.node_groups = pulumi.Output.from_input([])
            else:
                self.nodes = pulumi.Output.from_input([])
                self.node_groups = pulumi.Output.all(vm.name, vm.network_endpoints, proj).apply(
                    lambda nep: [
                        tpu_worker_group(
                            nep[0], nep[1], region=args["region"], zone=zone, project=nep[2], keys=bool(keys)
                        ).exported()
                    ]
                )
            self.cleanup = pulumi.Output.from_input("")
            if keys and direct:
                self.connect = self.public_ips.apply(lambda ips: f"ssh {LOGIN_USER}@{ips[0]}")
            else:
                self.connect = pulumi.Output.all(vm.name, proj).apply(
                    lambda np: tpu_vm_ssh(np[0], zone, np[1], keys=bool(keys), iap=not direct)
                )
        self.service_account = sa.email
        self.register_outputs(
            {
                "nodes": self.nodes,
                "node_groups": self.node_groups,
                "node_name": self.node_name,
                "private_ips": self.private_ips,
                "public_ips": self.public_ips,
                "connect": self.connect,
                "service_account": self.service_account,
                "cleanup": self.cleanup,
            }
        )
