"""``EksEnvironment``: EKS GPU managed node groups for a ``KubePlan``, on a named cluster or a new one.

Inputs follow pulumi-aws 7.51.1 ``eks.Cluster``/``eks.NodeGroup``/``ec2.LaunchTemplate`` (names
checked against ``sdk/python/pulumi_aws/eks/{cluster,node_group,_inputs}.py`` at that version):
see the design notes.

Design notes: docs/design/components.md.
"""

import base64
import json
from typing import Any, Optional

import pulumi
import pulumi_aws as aws

from components.args import check_workload_exposure
from components.aws.labels import aws_tags
from components.eks.args import EksArgs
from components.eks.autoscaler import chart_for, cluster_autoscaler, discovery_tags
from components.eks.controller import Site
from components.eks.device_plugins import GPU_PRESENT, device_plugin, efa_plugin
from components.eks.karpenter import karpenter
from components.eks.load_balancer import lb_controller, metrics_server
from components.eks.network import EksNetwork, eks_network
from components.eks.storage import ebs_csi_driver
from components.names import logical
from components.outputs import EnvironmentComponent
from fullserver.kube import KubePlan, Pool
from fullserver.kube.access import api_endpoint
from fullserver.kube.karpenter import KARPENTER
from fullserver.kube.kubeconfig import eks_kubeconfig
from fullserver.kube.serve import endpoint_of, lb_service_name, manual_endpoint
from fullserver.naming import fit_name
from fullserver.platforms import eks

TOKEN = "fullserver:index:EksEnvironment"
CLUSTER_POLICIES = ("arn:aws:iam::aws:policy/AmazonEKSClusterPolicy",)
NODE_POLICIES = (
    "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
    "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
)
POD_IDENTITY_ADDON = "eks-pod-identity-agent"
CA_TEMPLATE = "k8s.io/cluster-autoscaler/node-template"


def _trust(service: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": "sts:AssumeRole"}],
        }
    )


def _role(name: str, service: str, policies: tuple[str, ...], tags: dict[str, str], parent: pulumi.Resource) -> Any:
    opts = pulumi.ResourceOptions(parent=parent)
    role = aws.iam.Role(
        logical(aws.iam.Role, name), assume_role_policy=_trust(service), tags=aws_tags(tags, name), opts=opts
    )
    attachments = [
        aws.iam.RolePolicyAttachment(f"{name}-{arn.rsplit('/', 1)[-1]}", role=role.name, policy_arn=arn, opts=opts)
        for arn in policies
    ]
    return role, attachments


class _EksCluster(pulumi.ComponentResource):
    """A minimal EKS cluster for managed node groups, with Pod Identity or IRSA."""

    def __init__(
        self,
        name: str,
        plan: KubePlan,
        args: EksArgs,
        network: EksNetwork,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("fullserver:index:EksCluster", name, {}, opts)
        tags = dict(plan.cloud_labels)
        role, attachments = _role(f"{name}-cluster", "eks.amazonaws.com", CLUSTER_POLICIES, tags, self)
        # pinned, not EKS's default: the Cluster Autoscaler's release must match it (components.eks.autoscaler)
        self.version = args.get("kubernetes_version") or eks.KUBERNETES_VERSION
        chart_for(self.version)  # an unpinned version stops here, before the cluster exists
        self.oidc: aws.iam.OpenIdConnectProvider | None = None
        self.identity: pulumi.Resource
        self.cluster = aws.eks.Cluster(
            f"{name}-cluster",
            name=plan.cluster_name,
            role_arn=role.arn,
            version=self.version,
            vpc_config=vpc_config(
                plan,
                network.subnet_ids if network.cluster_subnet_ids is None else network.cluster_subnet_ids,
                args["private_endpoint"],
            ),
            access_config={"authentication_mode": "API", "bootstrap_cluster_creator_admin_permissions": True},
            upgrade_policy={"support_type": "STANDARD"},
            deletion_protection=plan.protect,
            tags=aws_tags(tags, plan.cluster_name),
            opts=pulumi.ResourceOptions(parent=self, depends_on=attachments, protect=plan.protect),
        )
        child = pulumi.ResourceOptions(parent=self)
        self.pod_identity: aws.eks.Addon | None = None
        if args["identity"] == "pod-identity":
            self.pod_identity = self.identity = aws.eks.Addon(
                f"{name}-pod-identity",
                cluster_name=self.cluster.name,
                addon_name=POD_IDENTITY_ADDON,
                tags=aws_tags(tags, POD_IDENTITY_ADDON),
                opts=child,
            )
        else:
            self.oidc = self.identity = aws.iam.OpenIdConnectProvider(
                f"{name}-oidc",
                url=self.cluster.identities.apply(_issuer),
                client_id_lists=["sts.amazonaws.com"],
                tags=aws_tags(tags, f"{name}-oidc"),
                opts=child,
            )
        self.register_outputs({"cluster": self.cluster.name})


def vpc_config(plan: KubePlan, subnet_ids: Any, private_endpoint: bool) -> aws.eks.ClusterVpcConfigArgsDict:
    """The cluster's ``vpc_config`` (pulumi-aws 7.51.1 ``eks.ClusterVpcConfigArgs``): the private
    endpoint always on, so nodes reach the API inside the VPC; the public one only for the stack's
    ranges (``public_access_cidrs``, else EKS admits ``0.0.0.0/0``: EKS user guide, "Cluster API
    server endpoint"), or none (``fullserver.kube.access.api_endpoint``)."""
    reach = api_endpoint(plan, private_endpoint)
    config: aws.eks.ClusterVpcConfigArgsDict = {
        "subnet_ids": subnet_ids,
        "endpoint_private_access": True,
        "endpoint_public_access": bool(reach.public_cidrs),
    }
    if reach.public_cidrs:
        config["public_access_cidrs"] = list(reach.public_cidrs)
    return config


def _issuer(identities: Any) -> str:
    """The cluster's OIDC issuer URL (``identities[0].oidcs[0].issuer``; empty before it exists)."""
    try:
        return str(identities[0]["oidcs"][0]["issuer"])
    except (TypeError, IndexError, KeyError):
        try:
            return str(identities[0].oidcs[0].issuer)
        except (TypeError, IndexError, AttributeError):
            return ""


def _ca(authority: Any) -> str:
    """``certificate_authority.data`` (a dict or an output type; empty before it exists)."""
    if authority is None:
        return ""
    if isinstance(authority, dict):
        return str(authority.get("data") or "")
    return str(getattr(authority, "data", "") or "")


def _first_asg(resources: Any) -> str:
    """The node group's Auto Scaling group name (``resources[0].autoscaling_groups[0].name``)."""
    try:
        return str(resources[0]["autoscaling_groups"][0]["name"])
    except (TypeError, IndexError, KeyError):
        try:
            return str(resources[0].autoscaling_groups[0].name)
        except (TypeError, IndexError, AttributeError):
            return ""


def autoscaler_tags(plan: KubePlan) -> dict[str, str]:
    """The Cluster Autoscaler's node-template tags for a group at zero nodes (autoscaler AWS README):
    every label the group's nodes get (``GPU_PRESENT`` too), its taints, and every resource the
    workload pod requests beyond CPU and memory (which the autoscaler reads from the instance type):
    its GPUs, the node's allocatable ephemeral storage and, with EFA, the interfaces and huge pages.
    A resource missing from the template leaves the pod "Insufficient" there, so a group at zero
    (a fallback group, always) would never grow (kubernetes/autoscaler#1869)."""
    tags = {f"{CA_TEMPLATE}/label/{k}": v for k, v in {**plan.node_labels, **GPU_PRESENT}.items()}
    tags |= {f"{CA_TEMPLATE}/taint/{t.key}": f"{t.value}:{t.effect}" for t in plan.taints}
    tags[f"{CA_TEMPLATE}/resources/{plan.accelerator_resource}"] = str(plan.accelerators_per_node)
    tags[f"{CA_TEMPLATE}/resources/ephemeral-storage"] = f"{plan.node_allocatable.ephemeral_mib}Mi"
    tags |= {f"{CA_TEMPLATE}/resources/{name}": value for name, value in plan.pod.devices.items()}
    return tags


def asg_tags(plan: KubePlan, pool: Pool) -> dict[str, str]:
    """What fullserver writes on a GPU group's Auto Scaling group: the autoscaler's discovery tags
    where the group has a range to scale in, and its node-template tags where it may be at zero."""
    tags = discovery_tags(plan.cluster_name) if pool.min_nodes < pool.max_nodes else {}
    return tags | (autoscaler_tags(plan) if pool.min_nodes == 0 else {})


def launch_template_inputs(
    plan: KubePlan, security_groups: list[pulumi.Input[str]], placement_group: pulumi.Input[str] | None
) -> dict[str, Any]:
    """The launch template's inputs (Python names): see the module doc."""
    config = eks.node_config(
        raid0=plan.instance_store_raid0, max_pods=plan.max_pods or eks.MAX_PODS, kube_reserved=plan.kube_reserved
    )
    inputs: dict[str, Any] = {
        "user_data": base64.b64encode(eks.user_data(config).encode()).decode(),
        "block_device_mappings": [
            {
                "device_name": eks.ROOT_DEVICE,
                "ebs": {"volume_size": plan.boot_disk_gib, "volume_type": "gp3", "encrypted": "true"},
            }
        ],
        # IMDSv2 with hop limit 1, the managed node groups' own default: pods (not on the host
        # network) cannot reach the node role's credentials; they get theirs from Pod Identity or
        # IRSA (awsdocs/amazon-eks-user-guide: latest/ug/nodes/al2023.adoc, "the default hop count
        # for managed node groups is set to 1 ... Alternatively, you can use Amazon EKS Pod Identity").
        "metadata_options": {"http_endpoint": "enabled", "http_tokens": "required", "http_put_response_hop_limit": 1},
        "tag_specifications": [{"resource_type": "instance", "tags": aws_tags(plan.cloud_labels, plan.environment)}],
        "update_default_version": True,
    }
    if plan.efa_interfaces:
        inputs["network_interfaces"] = [
            {
                "device_index": 0 if card == 0 else 1,
                "network_card_index": card,
                "interface_type": "efa" if card == 0 else "efa-only",
                "delete_on_termination": "true",
                "security_groups": security_groups,
            }
            for card in range(plan.efa_interfaces)
        ]
    if placement_group is not None:
        inputs["placement"] = {"group_name": placement_group}
    return inputs


def system_template_inputs(plan: KubePlan) -> dict[str, Any]:
    """The system group's launch template: its root volume as the plan prices it
    (``eks.SYSTEM_DISK_GIB`` GiB ``eks.SYSTEM_DISK_KIND``, encrypted; EKS's own template would make
    it gp2, aws/containers-roadmap#1417) and IMDSv2 at one hop as on the GPU groups; no AMI and no
    user data, so EKS picks the AMI of ``ami_type`` and bootstraps the node itself (EKS user guide,
    "Customize managed nodes with launch templates"). ``disk_size`` is then left unset: EKS refuses
    it beside a launch template (EKS API ``CreateNodegroup.diskSize``)."""
    return {
        "block_device_mappings": [
            {
                "device_name": eks.ROOT_DEVICE,
                "ebs": {"volume_size": eks.SYSTEM_DISK_GIB, "volume_type": eks.SYSTEM_DISK_KIND, "encrypted": "true"},
            }
        ],
        "metadata_options": {"http_endpoint": "enabled", "http_tokens": "required", "http_put_response_hop_limit": 1},
        "tag_specifications": [{"resource_type": "instance", "tags": aws_tags(plan.cloud_labels, plan.environment)}],
        "update_default_version": True,
    }


class _EksNodeGroups(pulumi.ComponentResource):
    """The plan's managed node groups on ``cluster_name``, their role and launch template."""

    def __init__(
        self,
        name: str,
        plan: KubePlan,
        args: EksArgs,
        cluster_name: pulumi.Input[str],
        network: EksNetwork,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("fullserver:index:EksNodeGroups", name, {}, opts)
        cluster_security_group = network.security_group
        child = pulumi.ResourceOptions(parent=self)
        tags = dict(plan.cloud_labels)
        self.role, attachments = _role(f"{name}-nodes", "ec2.amazonaws.com", NODE_POLICIES, tags, self)
        security_groups: list[pulumi.Input[str]] = []
        placement: pulumi.Input[str] | None = None
        if plan.efa_interfaces:
            efa = aws.ec2.SecurityGroup(
                logical(aws.ec2.SecurityGroup, f"{name}-efa"),
                vpc_id=network.vpc_id,
                description="EFA: all traffic between the node group's interfaces",
                ingress=[{"protocol": "-1", "from_port": 0, "to_port": 0, "self": True}],
                egress=[
                    {"protocol": "-1", "from_port": 0, "to_port": 0, "self": True},
                    {"protocol": "-1", "from_port": 0, "to_port": 0, "cidr_blocks": ["0.0.0.0/0"]},
                ],
                tags=aws_tags(tags, f"{name}-efa"),
                opts=child,
            )
            security_groups.append(efa.id)
            if cluster_security_group is not None:
                security_groups.append(cluster_security_group)
        if plan.compact_placement:
            group = aws.ec2.PlacementGroup(
                logical(aws.ec2.PlacementGroup, f"{name}-pg"),
                strategy="cluster",
                tags=aws_tags(tags, f"{name}-pg"),
                opts=child,
            )
            placement = group.name
        self.groups: list[aws.eks.NodeGroup] = []
        if plan.provisioner != KARPENTER:  # Karpenter's NodePool launches them (components.eks.karpenter)
            template = aws.ec2.LaunchTemplate(
                logical(aws.ec2.LaunchTemplate, f"{name}-lt"),
                description=f"fullserver {plan.environment}: EKS GPU nodes",
                tags=aws_tags(tags, f"{name}-lt"),
                opts=child,
                **launch_template_inputs(plan, security_groups, placement),
            )
            for pool in plan.pools:
                self.groups.append(self._group(name, plan, pool, network, cluster_name, template, attachments))
        if plan.create_cluster:
            self.system_group = self._system_group(name, plan, network, cluster_name, attachments)
        self.register_outputs({"groups": [g.node_group_name for g in self.groups]})

    def _system_group(
        self, name: str, plan: KubePlan, network: EksNetwork, cluster_name: pulumi.Input[str], attachments: list[Any]
    ) -> aws.eks.NodeGroup:
        """A created cluster's untainted group for CoreDNS and other system pods (``eks.SYSTEM_AMI_TYPE``):
        the cluster's subnets, fixed size, and a launch template of its own (``system_template_inputs``)."""
        group_name = fit_name(eks.NODE_GROUP_TYPE, f"{plan.environment}-system", "nodeGroupName")
        template = aws.ec2.LaunchTemplate(
            logical(aws.ec2.LaunchTemplate, f"{name}-system-lt"),
            description=f"fullserver {plan.environment}: EKS system nodes",
            tags=aws_tags(plan.cloud_labels, f"{name}-system-lt"),
            opts=pulumi.ResourceOptions(parent=self),
            **system_template_inputs(plan),
        )
        return aws.eks.NodeGroup(
            f"{name}-system",
            cluster_name=cluster_name,
            node_group_name=group_name,
            node_role_arn=self.role.arn,
            subnet_ids=network.subnet_ids,
            ami_type=eks.SYSTEM_AMI_TYPE,
            capacity_type="ON_DEMAND",
            instance_types=[eks.SYSTEM_INSTANCE_TYPE],
            scaling_config={
                "min_size": eks.SYSTEM_NODES,
                "max_size": eks.SYSTEM_NODES,
                "desired_size": eks.SYSTEM_NODES,
            },
            labels=dict(plan.labels),
            launch_template={"id": template.id, "version": template.latest_version.apply(str)},
            update_config={"max_unavailable": 1},
            tags=aws_tags(plan.cloud_labels, group_name),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[*attachments, *network.egress]),
        )

    def _group(
        self,
        name: str,
        plan: KubePlan,
        pool: Pool,
        network: EksNetwork,
        cluster_name: pulumi.Input[str],
        template: aws.ec2.LaunchTemplate,
        attachments: list[Any],
    ) -> aws.eks.NodeGroup:
        group = aws.eks.NodeGroup(
            f"{name}-{pool.role}",
            cluster_name=cluster_name,
            node_group_name=pool.name,
            node_role_arn=self.role.arn,
            subnet_ids=network.subnet_ids if network.node_subnet_ids is None else network.node_subnet_ids,
            ami_type=plan.driver,
            capacity_type="SPOT" if pool.spot else "ON_DEMAND",
            instance_types=plan.instance_types if pool.spot else [plan.machine_type],
            scaling_config={"min_size": pool.min_nodes, "max_size": pool.max_nodes, "desired_size": pool.min_nodes},
            labels={**plan.node_labels, **GPU_PRESENT},
            taints=[{"key": t.key, "value": t.value, "effect": eks.TAINT_EFFECTS[t.effect]} for t in plan.taints],
            launch_template={"id": template.id, "version": template.latest_version.apply(str)},
            update_config={"max_unavailable": 1},
            tags={**aws_tags(plan.cloud_labels, pool.name), **(autoscaler_tags(plan) if pool.min_nodes == 0 else {})},
            opts=pulumi.ResourceOptions(
                parent=self,
                depends_on=[*attachments, *network.egress],  # first boot pulls images through the NAT
                ignore_changes=["scalingConfig.desiredSize"],
            ),
        )
        tags = asg_tags(plan, pool)
        if tags:
            asg = group.resources.apply(_first_asg)
            for key, value in tags.items():
                slug = key.removeprefix(f"{CA_TEMPLATE}/").replace("/", "-").replace(".", "-")
                aws.autoscaling.Tag(
                    f"{name}-{pool.role}-{slug}",
                    autoscaling_group_name=asg,
                    tag={"key": key, "value": value, "propagate_at_launch": False},
                    opts=pulumi.ResourceOptions(parent=self),
                )
        return group


def _created_cluster_charts(
    name: str,
    plan: KubePlan,
    created: _EksCluster,
    groups: _EksNodeGroups,
    config: Any,
    parent: pulumi.Resource,
    serving_vpc: pulumi.Input[str] | None = None,
) -> list[pulumi.Resource]:
    """A created cluster's NVIDIA device plugin and Cluster Autoscaler (or Karpenter), through one provider, and
    where it serves (``serving_vpc``: its VPC), the AWS Load Balancer Controller and the Metrics
    Server add-on (``components.eks.load_balancer``), and on EFA nodes AWS's EFA device plugin; the
    EFA plugin, the load balancer controller, the Metrics Server and Karpenter are returned for the
    workload to wait on."""
    import pulumi_kubernetes as k8s  # only for created EKS clusters and applied workloads

    provider = k8s.Provider(f"{name}-plugin-k8s", kubeconfig=config, opts=pulumi.ResourceOptions(parent=parent))
    device_plugin(name, plan, provider, parent, [groups])
    system = groups.system_group.node_group_name
    site = Site(name, plan, created.cluster, created.oidc, system, provider, parent, (groups, created.identity))
    controllers = [efa_plugin(name, plan, provider, parent, [groups])] if plan.efa_interfaces else []
    if serving_vpc is not None:
        controllers.append(lb_controller(site, serving_vpc))
        controllers.append(metrics_server(name, plan, created.cluster, parent, [groups]))
    if plan.provisioner == KARPENTER:  # the NodePool: the workload waits for it, destroy removes it first
        controllers.append(karpenter(site))
        return controllers
    cluster_autoscaler(site, created.version)
    return controllers


def read_parameter(region: str, parent: pulumi.Resource) -> Any:
    """An SSM SecureString parameter's value (the VM path's ``serving.apiKeySecret`` store), read
    decrypted with the deployer's credentials at ``pulumi up`` (``ssm.get_parameter_output``,
    ``with_decryption``), kept a Pulumi secret. A name in a hierarchy is fully qualified with a
    leading ``/`` as ``components.aws.boot.aws_secret_command`` reads it."""

    def read(parameter: str) -> pulumi.Output[str]:
        name = parameter if parameter.startswith("/") or "/" not in parameter else f"/{parameter}"
        found = aws.ssm.get_parameter_output(
            name=name, with_decryption=True, region=region, opts=pulumi.InvokeOutputOptions(parent=parent)
        )
        return pulumi.Output.secret(found.value)

    return read


class EksEnvironment(EnvironmentComponent):
    """The node groups of a ``KubePlan`` on EKS; the cluster too when the plan names none."""

    cluster_name: pulumi.Output[str]
    node_group_names: pulumi.Output[list[str]]
    workload: pulumi.Output[str]
    """The workload's manifests as a JSON list (``kubectl apply -f``)."""

    def __init__(self, name: str, args: EksArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        plan = KubePlan.model_validate_json(args["plan"])
        if plan.provider != "eks":
            raise ValueError(f"spec.platform: {plan.platform.value} is not built by EksEnvironment")
        super().__init__(TOKEN, name, {}, opts)
        network = eks_network(plan, args, name, self)
        if plan.create_cluster:
            created = _EksCluster(name, plan, args, network, opts=pulumi.ResourceOptions(parent=self))
            cluster: pulumi.Input[str] = created.cluster.name
            network.security_group = created.cluster.vpc_config.apply(
                lambda c: str(getattr(c, "cluster_security_group_id", None) or "")
            )
            self.cluster_name = created.cluster.name
            endpoint, ca = created.cluster.endpoint, created.cluster.certificate_authority.apply(_ca)
        else:
            cluster = plan.cluster_name  # attached: nothing of the cluster is touched
            self.cluster_name = pulumi.Output.from_input(plan.cluster_name)
        groups = _EksNodeGroups(name, plan, args, cluster, network, opts=pulumi.ResourceOptions(parent=self))
        manifests = json.loads(args["workload"])
        check_workload_exposure(manifests)
        controllers: list[pulumi.Resource] = []
        if plan.create_cluster or (args["deploy_workload"] and manifests):
            if not plan.create_cluster:
                found = aws.eks.get_cluster_output(name=plan.cluster_name, opts=pulumi.InvokeOptions(parent=self))
                endpoint, ca = found.endpoint, found.certificate_authorities.apply(lambda c: _ca((c or [None])[0]))
            config = pulumi.Output.all(endpoint, ca).apply(
                lambda v: eks_kubeconfig(
                    plan.cluster_name, str(v[0] or ""), str(v[1] or ""), plan.region, args.get("aws_profile")
                )
            )
            if plan.create_cluster:
                serving_vpc = network.vpc_id if lb_service_name(manifests) else None
                controllers = _created_cluster_charts(name, plan, created, groups, config, self, serving_vpc)
                if plan.data_volume is not None:  # the pods' data volumes: components.eks.storage
                    # after the untainted system group, where the controller runs (components.eks.storage)
                    after: list[pulumi.Resource] = [groups, groups.system_group]
                    after += [created.pod_identity] if created.pod_identity else []
                    # the workload's volumes wait on it: destroy deletes them before the driver (kube_volumes)
                    controllers.append(ebs_csi_driver(name, plan, created.cluster.name, created.oidc, after, self))
            if args["deploy_workload"] and manifests:
                from components.kube_workload import apply_workload  # pulumi_kubernetes: only when applying

                secrets = args.get("serving_secrets") or {}
                reader = read_parameter(plan.region, self)
                address = apply_workload(
                    name, manifests, config, self, [groups, *controllers], secrets, reader, plan=plan
                )
                if lb_service_name(manifests):
                    self.endpoint = address.apply(lambda a: endpoint_of(manifests, a))
                    self.lb_address = address  # where serving.domains must point (the program's dnsTarget)
        self.node_group_names = pulumi.Output.all(*[g.node_group_name for g in groups.groups]).apply(list)
        self.instance_role = groups.role.name
        self.instance_role_arn = groups.role.arn
        self.connect = pulumi.Output.from_input(
            f"aws eks update-kubeconfig --name {plan.cluster_name} --region {plan.region}"
        )
        self.workload = pulumi.Output.from_input(args["workload"])
        if not hasattr(self, "endpoint"):
            self.endpoint = pulumi.Output.from_input(manual_endpoint(manifests))
            self.lb_address = pulumi.Output.from_input("")  # applied by hand: the Service's, not known here
        self.register(
            {"cluster_name": self.cluster_name, "node_group_names": self.node_group_names, "workload": self.workload}
        )
