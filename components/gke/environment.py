"""``GkeEnvironment``: GKE node pools for a ``KubePlan``, on a named cluster or a new one.

Inputs follow pulumi-gcp 10.2 ``container.Cluster``/``container.NodePool`` (names checked against
``sdk/python/pulumi_gcp/container/{cluster,node_pool,_inputs}.py`` at 10.2.0): see the design notes.

Design notes: docs/design/components.md.
"""

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional

import pulumi
import pulumi_gcp as gcp

from components.args import check_workload_exposure
from components.gke.args import GkeArgs
from components.gke.gateway import gateway_resources
from components.names import logical, physical
from components.outputs import EnvironmentComponent
from fullserver.kube import KubePlan, Pool
from fullserver.kube.access import api_endpoint, through_dns
from fullserver.kube.kubeconfig import connect_command, gke_kubeconfig
from fullserver.kube.serve import endpoint_of, lb_service_name, manual_endpoint
from fullserver.naming import fit_name
from fullserver.platforms import gke, gke_gateway
from fullserver.rules import gcp_labels

if TYPE_CHECKING:
    from components.kube_workload import SecretReader

TOKEN = "fullserver:index:GkeEnvironment"
NODE_ROLES = ("roles/container.defaultNodeServiceAccount", "roles/artifactregistry.reader")
"""The node service account's roles: "These node service accounts must have the Kubernetes Engine
Default Node Service Account (roles/container.defaultNodeServiceAccount) role on the project at
minimum" (GKE "Configure GKE node service accounts", docs.cloud.google.com/kubernetes-engine/
security/configure-node-service-accounts), plus ``roles/artifactregistry.reader`` for private
images (CIS GKE Benchmark v2.0.0, 5.2.1). The predefined role tracks what nodes need (logs,
metrics, resource metadata, autoscaling metrics), which a hand-picked list of older roles misses."""
SCOPES = ["https://www.googleapis.com/auth/cloud-platform"]
SUBNET_RANGE = "10.0.0.0/20"
PODS_RANGE = ("pods", "10.4.0.0/14")
SERVICES_RANGE = ("services", "10.8.0.0/20")
MASTER_RANGE = "172.16.0.32/28"
EFFECTS = {"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE", "PreferNoSchedule": "PREFER_NO_SCHEDULE"}


class _GkeCluster(pulumi.ComponentResource):
    """A minimal private regional GKE Standard cluster with Workload Identity, on its own VPC."""

    def __init__(
        self,
        name: str,
        plan: KubePlan,
        args: GkeArgs,
        nodes: "_GkeNodePools",
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("fullserver:index:GkeCluster", name, {}, opts)
        child = pulumi.ResourceOptions(parent=self)
        project = args["project"]
        labels = gcp_labels(plan.cloud_labels)
        network = gcp.compute.Network(
            logical(gcp.compute.Network, f"{name}-net"), project=project, auto_create_subnetworks=False, opts=child
        )
        subnet = gcp.compute.Subnetwork(
            logical(gcp.compute.Subnetwork, f"{name}-subnet"),
            project=project,
            region=plan.region,
            network=network.id,
            ip_cidr_range=SUBNET_RANGE,
            private_ip_google_access=True,
            secondary_ip_ranges=[
                {"range_name": PODS_RANGE[0], "ip_cidr_range": PODS_RANGE[1]},
                {"range_name": SERVICES_RANGE[0], "ip_cidr_range": SERVICES_RANGE[1]},
            ],
            opts=child,
        )
        router = gcp.compute.Router(
            logical(gcp.compute.Router, f"{name}-router"),
            project=project,
            region=plan.region,
            network=network.id,
            opts=child,
        )
        gcp.compute.RouterNat(
            logical(gcp.compute.RouterNat, f"{name}-nat"),
            project=project,
            region=plan.region,
            router=router.name,
            nat_ip_allocate_option="AUTO_ONLY",
            source_subnetwork_ip_ranges_to_nat="ALL_SUBNETWORKS_ALL_IP_RANGES",
            opts=child,
        )
        self.cluster = gcp.container.Cluster(
            f"{name}-cluster",
            name=plan.cluster_name,
            project=project,
            location=args["cluster_location"],
            network=network.id,
            subnetwork=subnet.id,
            remove_default_node_pool=True,
            initial_node_count=1,
            node_config=default_pool_config(nodes.service_account.email),
            deletion_protection=plan.protect,
            release_channel={"channel": "REGULAR"},
            workload_identity_config={"workload_pool": f"{project}.svc.id.goog"},
            networking_mode="VPC_NATIVE",
            ip_allocation_policy={
                "cluster_secondary_range_name": PODS_RANGE[0],
                "services_secondary_range_name": SERVICES_RANGE[0],
            },
            **control_plane_inputs(plan, args["private_endpoint"]),
            resource_labels=labels,
            # The pods' data volumes (fullserver.kube.volume): GKE "Using the Compute Engine persistent
            # disk CSI Driver" says a Standard cluster must enable it.
            addons_config=(
                {"gce_persistent_disk_csi_driver_config": {"enabled": True}} if plan.data_volume is not None else None
            ),
            monitoring_config=_monitoring_config(json.loads(args["workload"])),
            gateway_api_config=_gateway_api_config(json.loads(args["workload"])),
            opts=pulumi.ResourceOptions(
                parent=self,
                protect=plan.protect,
                depends_on=nodes.grants,  # the default pool's nodes log and pull images as their account
                ignore_changes=["nodeConfig"],  # see default_pool_config
            ),
        )
        self.register_outputs({"cluster": self.cluster.name})


def default_pool_config(service_account: pulumi.Input[str]) -> Any:
    """The temporary default pool's ``node_config`` (``remove_default_node_pool`` deletes the pool once
    the cluster is up). Without it those nodes run as the Compute Engine default service account,
    often an Editor, and creation fails where that account is deleted or disabled
    (hashicorp/terraform-provider-google#4435). Ignored after creation: the provider's
    ``node_config`` forces a new cluster on change (clusters made before it would be replaced), and
    GKE reports the first remaining pool's config there (Container API ``Cluster.nodeConfig``)."""
    return {"service_account": service_account, "oauth_scopes": SCOPES}


def control_plane_inputs(plan: KubePlan, private_endpoint: bool) -> dict[str, Any]:
    """Who reaches the cluster's API (``fullserver.kube.access.api_endpoint``), as pulumi-gcp 10.2.0
    ``container.Cluster`` takes it: private nodes always; the public IP endpoint only for the stack's
    ranges, as authorized networks (``master_authorized_networks_config.cidr_blocks``, at most 50:
    CIS GKE 5.6.3), or, asked for, to everyone; else ``enable_private_endpoint`` and the DNS
    endpoint open to external traffic, IAM-guarded (``control_plane_endpoints_config.
    dns_endpoint_config.allow_external_traffic``), set false explicitly where unused so a later
    change is a diff. GKE "About network isolation"
    (https://cloud.google.com/kubernetes-engine/docs/concepts/network-isolation)."""
    reach = api_endpoint(plan, private_endpoint)
    inputs: dict[str, Any] = {
        "private_cluster_config": {
            "enable_private_nodes": True,
            "enable_private_endpoint": not reach.public_cidrs,
            "master_ipv4_cidr_block": MASTER_RANGE,
        },
        "control_plane_endpoints_config": {"dns_endpoint_config": {"allow_external_traffic": reach.dns}},
    }
    if reach.public_cidrs and not reach.open_to_internet:
        inputs["master_authorized_networks_config"] = {
            "cidr_blocks": [
                {"cidr_block": cidr, "display_name": f"controlPlaneSourceRanges {i}"}
                for i, cidr in enumerate(reach.public_cidrs)
            ]
        }
    return inputs


def _monitoring_config(manifests: list[dict[str, Any]]) -> Any:
    """Managed Service for Prometheus' managed collection, said explicitly where the workload has a
    ``PodMonitoring`` (``serving.podMetrics``): its CRD and collectors come with it, and whether an
    API-created Standard cluster has it by default is not written where the Terraform provider's
    ``monitoring_config.managed_prometheus`` is documented; unset, GKE's default stands."""
    if not any(m.get("kind") == "PodMonitoring" for m in manifests):
        return None
    return {"managed_prometheus": {"enabled": True}}


def _gateway_api_config(manifests: list[dict[str, Any]]) -> Any:
    """The Gateway API's standard channel where the workload has a Gateway (HTTPS on GKE,
    ``fullserver.platforms.gke_gateway``): pulumi-gcp ``Cluster.gateway_api_config.channel``
    (``CHANNEL_STANDARD``; ``CHANNEL_DISABLED`` and the deprecated ``CHANNEL_EXPERIMENTAL`` besides).
    Unset elsewhere, as GKE's default stands."""
    if not any(m.get("kind") == "Gateway" for m in manifests):
        return None
    return {"channel": gke_gateway.GATEWAY_CHANNEL}


def _autoscaling(plan: KubePlan, pool: Pool) -> Any:
    if plan.tpu_topology is not None or plan.zone:
        # One zone: per-zone counts are the totals. A multi-host slice must see its whole size per
        # zone (ci-infra#545), so never only total_* there.
        return {"min_node_count": pool.min_nodes, "max_node_count": pool.max_nodes, "location_policy": "ANY"}
    return {"total_min_node_count": pool.min_nodes, "total_max_node_count": pool.max_nodes, "location_policy": "ANY"}


def node_config(
    plan: KubePlan, pool: Pool, service_account: pulumi.Input[str], metadata: pulumi.Input[str] = "GKE_METADATA"
) -> Any:
    """The pool's ``node_config`` (Python input names); ``metadata``: ``metadata_mode``."""
    config: dict[str, Any] = {
        "machine_type": plan.machine_type,
        "image_type": gke.IMAGE_TYPE,
        "disk_size_gb": plan.boot_disk_gib,
        "spot": pool.spot,
        "labels": plan.node_labels,
        "resource_labels": gcp_labels(plan.cloud_labels),
        "taints": [{"key": t.key, "value": t.value, "effect": EFFECTS[t.effect]} for t in plan.taints],
        "service_account": service_account,
        "oauth_scopes": SCOPES,
        "workload_metadata_config": {"mode": metadata},
        "shielded_instance_config": {"enable_secure_boot": True, "enable_integrity_monitoring": True},
    }
    if plan.boot_disk_kind:
        config["disk_type"] = plan.boot_disk_kind
    if plan.accelerator_type is not None:
        config["guest_accelerators"] = [
            {
                "type": plan.accelerator_type,
                "count": plan.accelerators_per_node,
                "gpu_driver_installation_config": {"gpu_driver_version": plan.driver},
            }
        ]
    if plan.local_ssd_count:
        config["ephemeral_storage_local_ssd_config"] = {"local_ssd_count": plan.local_ssd_count}
    if plan.flex_start:
        config["flex_start"] = True
        config["reservation_affinity"] = {"consume_reservation_type": "NO_RESERVATION"}
        if plan.max_run_hours:
            config["max_run_duration"] = f"{round(plan.max_run_hours * 3600)}s"
    return config


def system_pool(
    name: str,
    plan: KubePlan,
    args: GkeArgs,
    cluster: Any,
    service_account: pulumi.Input[str],
    parent: pulumi.Resource,
    grants: Sequence[pulumi.Resource] = (),
) -> Any:
    """A created cluster's untainted pool for GKE's own Deployments (``gke.SYSTEM_POOL_MACHINE_TYPE``):
    fixed, in the accelerator pools' zone when the plan has one, no taints; started once its
    account's ``grants`` are."""
    node_pool: Any = gcp.container.NodePool
    return node_pool(
        f"{name}-system",
        name=fit_name(gke.NODE_POOL_TYPE, f"{plan.environment}-system"),
        project=args["project"],
        cluster=cluster,
        location=args["cluster_location"],
        node_locations=[plan.zone] if plan.zone else None,
        node_count=gke.SYSTEM_POOL_NODES_PER_ZONE,
        management={"auto_repair": True, "auto_upgrade": True},
        node_config={
            "machine_type": gke.SYSTEM_POOL_MACHINE_TYPE,
            "image_type": gke.IMAGE_TYPE,
            "disk_size_gb": gke.SYSTEM_POOL_DISK_GIB,
            "disk_type": gke.SYSTEM_POOL_DISK_KIND,  # as priced: fullserver.kube.cost.system_disk_usd_hour
            "labels": dict(plan.labels),
            "resource_labels": gcp_labels(plan.cloud_labels),
            "service_account": service_account,
            "oauth_scopes": SCOPES,
            "workload_metadata_config": {"mode": "GKE_METADATA"},
            "shielded_instance_config": {"enable_secure_boot": True, "enable_integrity_monitoring": True},
        },
        opts=pulumi.ResourceOptions(parent=parent, depends_on=list(grants)),
    )


class _GkeNodePools(pulumi.ComponentResource):
    """The plan's node pools and their identity: the account and its grants first (a created
    cluster's temporary default pool runs as it too), the pools once the cluster is known (``add``)."""

    def __init__(self, name: str, plan: KubePlan, args: GkeArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("fullserver:index:GkeNodePools", name, {}, opts)
        self._name, self._plan, self._args = name, plan, args
        child = pulumi.ResourceOptions(parent=self)
        project = args["project"]
        account_id = gcp_account_id(name)
        self.service_account = gcp.serviceaccount.Account(
            f"{name}-nodes",
            project=project,
            account_id=account_id,
            display_name=f"fullserver {name} GKE nodes"[:100],
            description="GKE nodes: logs, metrics, resource metadata and image pulls only",
            opts=child,
        )
        # The nodes start with their account's roles granted (logging, metrics, image pulls).
        self.grants: list[pulumi.Resource] = [
            gcp.projects.IAMMember(
                f"{name}-{role.split('/')[-1].replace('.', '-').lower()}",
                project=project,
                role=role,
                member=self.service_account.email.apply(lambda email: f"serviceAccount:{email}"),
                opts=child,
            )
            for role in NODE_ROLES
        ]
        self.pools: list[gcp.container.NodePool] = []

    def add(self, cluster: pulumi.Input[str], metadata: pulumi.Input[str] = "GKE_METADATA") -> None:
        """The pools on ``cluster`` (an id or a name in the args' location)."""
        name, plan, args, grants = self._name, self._plan, self._args, self.grants
        project = args["project"]
        target: Any = cluster  # an id Output or a name: pulumi-gcp's Input[str | None] is invariant
        # mypy gives up on NodePool's overloads ("too many unions") for optional nested inputs.
        node_pool: Any = gcp.container.NodePool
        if plan.create_cluster:
            self.system_pool = system_pool(name, plan, args, target, self.service_account.email, self, grants)
        for pool in plan.pools:
            placement: dict[str, Any] | None = None
            if plan.compact_placement:
                placement = {"type": "COMPACT"}
                if plan.tpu_topology is not None:
                    placement["tpu_topology"] = plan.tpu_topology
            self.pools.append(
                node_pool(
                    f"{name}-{pool.role}",
                    name=pool.name,
                    project=project,
                    cluster=target,
                    location=args["cluster_location"],
                    node_locations=[plan.zone] if plan.zone else None,
                    initial_node_count=(
                        gke.initial_nodes_per_zone(pool.min_nodes, 1 if plan.zone else None)
                        if pool.autoscaled
                        else None
                    ),
                    autoscaling=_autoscaling(plan, pool) if pool.autoscaled else None,
                    node_count=None
                    if pool.autoscaled
                    else gke.fixed_pool_nodes(pool.max_nodes, 1 if plan.zone else None)[0],
                    placement_policy=placement,
                    max_pods_per_node=plan.max_pods,
                    management={"auto_repair": not plan.flex_start, "auto_upgrade": True},
                    node_config=node_config(plan, pool, self.service_account.email, metadata),
                    opts=pulumi.ResourceOptions(
                        parent=self,
                        depends_on=grants,
                        ignore_changes=["initialNodeCount"] if pool.autoscaled else None,
                    ),
                )
            )
        self.register_outputs({"pools": [p.name for p in self.pools]})


def metadata_mode(configs: Any) -> str:
    """An attached cluster's pools: ``GKE_METADATA`` (Workload Identity's metadata server) where the
    cluster has a workload pool, else ``GCE_METADATA``: GKE_METADATA "can only be enabled if
    workload identity is enabled at the cluster level" (Google provider docs for
    ``workload_metadata_config.mode``, quoted in GoogleCloudPlatform/cloud-foundation-fabric#2236),
    and "nothing of the cluster is touched" rules out enabling it there."""
    for config in configs or []:
        pool = config.get("workload_pool") if isinstance(config, dict) else getattr(config, "workload_pool", None)
        if pool:
            return "GKE_METADATA"
    return "GCE_METADATA"


def _ca(auth: Any) -> str:
    """``master_auth.cluster_ca_certificate`` (a dict or an output type; empty before it exists)."""
    if auth is None:
        return ""
    if isinstance(auth, dict):
        return str(auth.get("cluster_ca_certificate") or auth.get("clusterCaCertificate") or "")
    return str(getattr(auth, "cluster_ca_certificate", "") or "")


def _dns_endpoint(config: Any) -> str:
    """``control_plane_endpoints_config.dns_endpoint_config.endpoint`` (a dict or an output type;
    empty before the cluster exists): "uid.<region>.gke.goog", Container API ``DNSEndpointConfig``."""
    dns = (
        config.get("dns_endpoint_config") if isinstance(config, dict) else getattr(config, "dns_endpoint_config", None)
    )
    if dns is None:
        return ""
    return str((dns.get("endpoint") if isinstance(dns, dict) else getattr(dns, "endpoint", "")) or "")


def gcp_account_id(name: str) -> str:
    """A 6-30 character service account id for ``name`` (``fullserver.naming``)."""
    return physical(gcp.serviceaccount.Account, f"fs-{name}-gke", "accountId")


def read_secret(project: str, parent: pulumi.Resource) -> "SecretReader":
    """A Secret Manager secret's latest version, read with the deployer's credentials at ``pulumi up``
    (``secretmanager.get_secret_version_access_output``: it needs only the Secret Accessor role),
    kept a Pulumi secret."""

    def read(secret: str) -> pulumi.Output[str]:
        found = gcp.secretmanager.get_secret_version_access_output(
            secret=secret, project=project, opts=pulumi.InvokeOutputOptions(parent=parent)
        )
        return pulumi.Output.secret(found.secret_data.apply(lambda v: v or ""))

    return read


class GkeEnvironment(EnvironmentComponent):
    """The node pools of a ``KubePlan`` on GKE; the cluster too when the plan names none."""

    cluster_name: pulumi.Output[str]
    node_pools: pulumi.Output[list[str]]
    workload: pulumi.Output[str]
    """The workload's manifests as a JSON list (``kubectl apply -f``)."""

    def __init__(self, name: str, args: GkeArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        plan = KubePlan.model_validate_json(args["plan"])
        if plan.provider != "gke":
            raise ValueError(f"spec.platform: {plan.platform.value} is not built by GkeEnvironment")
        super().__init__(TOKEN, name, {}, opts)
        # the nodes' account before the cluster, whose temporary default pool runs as it
        pools = _GkeNodePools(f"{name}", plan, args, pulumi.ResourceOptions(parent=self))
        if plan.create_cluster:
            created = _GkeCluster(f"{name}", plan, args, pools, opts=pulumi.ResourceOptions(parent=self))
            cluster: pulumi.Input[str] = created.cluster.id
            self.cluster_name = created.cluster.name
        else:
            cluster = plan.cluster_name  # attached: nothing of the cluster is touched, only read
            self.cluster_name = pulumi.Output.from_input(plan.cluster_name)
            found = gcp.container.get_cluster_output(
                name=plan.cluster_name, location=args["cluster_location"], project=args["project"]
            )
        metadata = "GKE_METADATA" if plan.create_cluster else found.workload_identity_configs.apply(metadata_mode)
        pools.add(cluster, metadata)  # on a created cluster: after it, through its id
        manifests = json.loads(args["workload"])
        check_workload_exposure(manifests)
        front = gke_gateway.front_of(manifests, plan.environment)
        gateway: list[pulumi.Resource] = []
        if front is not None:  # HTTPS: the Gateway's address and certificate, before the Gateway
            reserved, gateway = gateway_resources(name, front, args["project"], gcp_labels(plan.cloud_labels), self)
            self.lb_address = reserved.address  # where serving.domains must point (the program's dnsTarget)
        if args["deploy_workload"] and manifests:
            from components.kube_workload import apply_workload  # pulumi_kubernetes: only when applying

            dns = through_dns(plan)  # a created cluster without ranges: its DNS endpoint, with IAM
            endpoint: pulumi.Input[str]
            ca: pulumi.Input[str]
            if dns:
                endpoint, ca = created.cluster.control_plane_endpoints_config.apply(_dns_endpoint), ""
            elif plan.create_cluster:
                endpoint, ca = created.cluster.endpoint, created.cluster.master_auth.apply(_ca)
            else:
                endpoint, ca = found.endpoint, found.master_auths.apply(lambda auths: _ca((auths or [None])[0]))
            config = pulumi.Output.all(endpoint, ca).apply(
                lambda v: gke_kubeconfig(plan.cluster_name, str(v[0] or ""), str(v[1] or ""), dns=dns)
            )
            secrets = args.get("serving_secrets") or {}
            reader = read_secret(args["project"], self)
            address = apply_workload(name, manifests, config, self, [pools, *gateway], secrets, reader, plan=plan)
            if lb_service_name(manifests):
                self.endpoint = address.apply(lambda a: endpoint_of(manifests, a))
                self.lb_address = address  # where serving.domains must point (the program's dnsTarget)
        self.node_pools = pulumi.Output.all(*[p.name for p in pools.pools]).apply(list)
        self.service_account = pools.service_account.email
        self.connect = pulumi.Output.from_input(connect_command(plan, args["cluster_location"], args["project"]))
        self.workload = pulumi.Output.from_input(args["workload"])
        if not hasattr(self, "endpoint"):
            self.endpoint = pulumi.Output.from_input(manual_endpoint(manifests))
        if not hasattr(self, "lb_address"):
            self.lb_address = pulumi.Output.from_input("")  # applied by hand: the Service's, not known here
        self.register({"cluster_name": self.cluster_name, "node_pools": self.node_pools, "workload": self.workload})
