"""``EndpointGroupsGone``: destroy waits for the load balancer's endpoint groups of the workload's
Services to be deleted before the nodes and the cluster go.

On GKE the NEG controller makes a network endpoint group per zone for a Service a load balancer
reaches pod by pod, and deletes them only after the Service and the load balancer's backend service
have gone; a cluster deleted first leaves them behind (GKE "standalone NEGs", "Prevent leaking
NEGs"), and a NEG left behind blocks the subnet's deletion. Only a member whose rules name where its
controller records them (``PoolRules.endpoint_records``) gets this wait.
Design notes: docs/design/components.md (``components/kube_workload.py``).
"""

from __future__ import annotations

from typing import Any, ClassVar, Optional

import pulumi
from pulumi.dynamic import Resource

from components.kube_waits import CLUSTER_HINT, GIVE_UP, WaitOnDelete, waiting_inputs
from fullserver.platforms import pool_member

TYPE: str = "pulumi-python:dynamic/fullserver:EndpointGroupsGone"


def _gone_or_why(props: dict[str, Any], wait_seconds: float, poll_seconds: float) -> str:
    """ "" once no record of the Services' endpoint groups is left, else the line a person reads."""
    from fullserver.kube.api import ClusterUnreachable, connect_config, endpoint_groups_of, wait_gone

    records = pool_member(str(props["pool"])).endpoint_records
    if records is None:  # a member that stopped recording them: nothing left to ask about
        return ""
    namespace, services = str(props["namespace"]), [str(s) for s in props["services"]]
    try:
        cluster = connect_config(str(props["kubeconfig"]), str(props["cluster"]), CLUSTER_HINT)
        left = wait_gone(lambda: endpoint_groups_of(cluster, records, namespace, services), wait_seconds, poll_seconds)
    except ClusterUnreachable as exc:
        return (
            f"{exc.line()}; the load balancer's endpoint groups of Service(s) {', '.join(services)} may outlive "
            f"the cluster and block the network's deletion: find them in the cloud console (named k8s1-... or k8s2-...); {GIVE_UP}"
        )
    if not left:
        return ""
    named = ", ".join(f"{g.record} (Service {g.service})" for g in left)
    commands = "; ".join(records.delete(link) for g in left for link in g.self_links)
    return (
        f"{len(left)} endpoint group record(s) not deleted within {wait_seconds:.0f} s: {named}; run destroy again "
        "once the cluster's controller has deleted the groups, or delete them yourself"
        + (f" once no backend service uses them ({commands})" if commands else "")
        + f"; {GIVE_UP}"
    )


class EndpointGroupsGoneProvider(WaitOnDelete):
    """Waits for the endpoint groups (module docstring); keep this module and class name (``WaitOnDelete``)."""

    replaced_by: ClassVar[tuple[str, ...]] = ("cluster",)
    """Another cluster only: a replace deletes the old wait last, which would wait for the records of
    Services the workload still has (another set of Services is an update)."""

    def gone_or_why(self, props: dict[str, Any]) -> str:
        return _gone_or_why(props, self.wait_seconds, self.poll_seconds)


class EndpointGroupsGone(Resource, module="fullserver", name="EndpointGroupsGone"):
    """Destroy's wait for the endpoint groups of the workload's Services (module docstring).

    Args:
        kubeconfig: the kubeconfig the workload's Kubernetes provider uses (kept as a secret).
        namespace: the Services' namespace.
        services: the workload's Services, by name.
        pool: the node-pool member (``gke``), whose rules say where its controller records the groups.
        cluster: the cluster's name.
    """

    pulumi_type: ClassVar[str] = TYPE

    def __init__(
        self,
        resource_name: str,
        *,
        kubeconfig: pulumi.Input[str],
        namespace: str,
        services: list[str],
        pool: str,
        cluster: str,
        opts: Optional[pulumi.ResourceOptions] = None,
    ) -> None:
        props, merged = waiting_inputs(
            kubeconfig, opts, namespace=namespace, services=sorted(services), pool=pool, cluster=cluster
        )
        super().__init__(EndpointGroupsGoneProvider(), resource_name, props, merged)
