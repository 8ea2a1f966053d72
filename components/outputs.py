"""The outputs every environment component declares: the contract, declared once.

``Environment`` and each platform's component (``components.<platform>``) derive from
``EnvironmentComponent``, so the outputs a stack exports (and the schema other languages read)
are declared here and nowhere else. A platform sets the ones it has; ``register`` gives the rest
their empty value (an AWS environment has no service account, bare metal no ``nodes`` rows) and
registers them with the platform's own extra outputs.

Design notes: docs/design/components.md.
"""

from typing import Any

import pulumi

from fullserver.nodes import NodeAccessOutput, NodeGroupAccessOutput


class EnvironmentComponent(pulumi.ComponentResource):
    """A balanced environment's outputs (its component builds the resources)."""

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
    start_commands: pulumi.Output[list[list[str]]]
    """Nodes that stop themselves when idle and stay stopped until started: one argv per node,
    which ``fullserver start`` runs (empty where ``pulumi up --refresh`` brings them back)."""
    running_nodes: pulumi.Output[int]
    """Nodes that stop themselves: how many are not stopped, as the provider last read them (a VM's
    or TPU node's state, a group's target size; ``fullserver.autostop.way.running_nodes``); 0 where
    nothing stops itself."""

    def register(self, extra: dict[str, Any] | None = None) -> None:
        """Give every contract output this platform has not set its empty value, then register
        the contract and the platform's ``extra`` outputs (the end of a component's constructor)."""
        for name, empty in EMPTY.items():
            if not hasattr(self, name):
                setattr(self, name, pulumi.Output.from_input(empty))
        self.register_outputs({**{name: getattr(self, name) for name in OUTPUTS}, **(extra or {})})


EMPTY: dict[str, Any] = {
    "private_ips": [],
    "public_ips": [],
    "connect": "",
    "service_account": "",
    "instance_role": "",
    "instance_role_arn": "",
    "endpoint": "",
    "nodes": [],
    "node_groups": [],
    "start_commands": [],
    "running_nodes": 0,
}
"""Each contract output's value where a platform has none."""
OUTPUTS = tuple(EMPTY)
"""The contract's output names, in ``EnvironmentComponent``'s order."""
