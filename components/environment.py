"""``Environment``: the one component stacks use; it builds the platform's component from the spec.

The args name the platform and carry that platform's args (mutually exclusive fields rather than
a ``Union``, which the component analyzer rejects). Bare metal is built by
``components.bare_metal.BareMetalEnvironment``, imported only when a stack asks for it.
"""

import importlib
from typing import Any, Optional

import pulumi

from components.args import EnvironmentArgs, refuse
from fullserver.nodes import NodeAccessOutput, NodeGroupAccessOutput

TOKEN = "fullserver:index:Environment"


def bare_metal_class() -> type[pulumi.ComponentResource]:
    """The bare-metal component, or a clear error while it does not exist yet."""
    try:
        module = importlib.import_module("components.bare_metal")
    except ModuleNotFoundError as exc:
        if exc.name != "components.bare_metal":
            raise
        raise refuse(
            "platform",
            "bare-metal environments are not available in this build (components/bare_metal.py is missing)",
            "plan a cloud platform, or update fullserver",
        ) from None
    cls: type[pulumi.ComponentResource] = module.BareMetalEnvironment
    return cls


class Environment(pulumi.ComponentResource):
    """A balanced environment on the spec's platform."""

    platform: pulumi.Output[str]
    private_ips: pulumi.Output[list[str]]
    public_ips: pulumi.Output[list[str]]
    connect: pulumi.Output[str]
    """How to reach the environment (SSH, IAP or Session Manager command)."""
    service_account: pulumi.Output[str]
    """GCP: the nodes' service account email (empty elsewhere)."""
    instance_role: pulumi.Output[str]
    """AWS: the nodes' IAM role name (empty elsewhere)."""
    instance_role_arn: pulumi.Output[str]
    """AWS: the nodes' IAM role ARN (empty elsewhere)."""
    endpoint: pulumi.Output[str]
    """Serving environments: the load balancer's URL (empty elsewhere)."""
    nodes: pulumi.Output[list[NodeAccessOutput]]
    """Cloud nodes and the way into each (``fullserver.nodes.NodeAccess``); empty for bare metal,
    whose hosts the stack file lists."""
    node_groups: pulumi.Output[list[NodeGroupAccessOutput]]
    """Groups that start and replace their nodes, with the command that lists them
    (``fullserver.nodes.NodeGroupAccess``)."""

    def __init__(self, name: str, args: EnvironmentArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__(TOKEN, name, {}, opts)
        platform = args["platform"]
        child = pulumi.ResourceOptions(parent=self)
        inner: pulumi.ComponentResource
        # Each platform's component is imported only when a stack uses it: a provider SDK costs
        # about a second to import, and an AWS stack has no use for Google's (or the reverse).
        if platform == "tpu-vm" and "tpu" in args:
            from components.tpu_vm import TpuVmEnvironment

            inner = TpuVmEnvironment(name, args["tpu"], child)
        elif platform == "aws-gpu" and "aws" in args:
            from components.aws_gpu import AwsGpuEnvironment

            inner = AwsGpuEnvironment(name, args["aws"], child)
        elif platform == "gcp-gpu" and "gcp" in args:
            from components.gcp_gpu import GcpGpuEnvironment

            inner = GcpGpuEnvironment(name, args["gcp"], child)
        elif platform == "bare-metal":
            factory: Any = bare_metal_class()
            inner = factory(name, opts=child, **args.get("bare_metal", {}))
        else:
            raise refuse(
                "platform", f"no args for platform '{platform}'", "pass exactly the args of the platform named"
            )
        self.inner = inner
        self.platform = pulumi.Output.from_input(platform)
        self.private_ips = getattr(inner, "private_ips", pulumi.Output.from_input([]))
        self.public_ips = getattr(inner, "public_ips", pulumi.Output.from_input([]))
        self.connect = getattr(inner, "connect", pulumi.Output.from_input(""))
        self.service_account = getattr(inner, "service_account", pulumi.Output.from_input(""))
        self.instance_role = getattr(inner, "instance_role", pulumi.Output.from_input(""))
        self.instance_role_arn = getattr(inner, "instance_role_arn", pulumi.Output.from_input(""))
        self.endpoint = getattr(inner, "endpoint", pulumi.Output.from_input(""))
        self.nodes = getattr(inner, "nodes", pulumi.Output.from_input([]))
        self.node_groups = getattr(inner, "node_groups", pulumi.Output.from_input([]))
        self.register_outputs(
            {
                "platform": self.platform,
                "private_ips": self.private_ips,
                "public_ips": self.public_ips,
                "connect": self.connect,
                "service_account": self.service_account,
                "instance_role": self.instance_role,
                "instance_role_arn": self.instance_role_arn,
                "endpoint": self.endpoint,
                "nodes": self.nodes,
                "node_groups": self.node_groups,
            }
        )
