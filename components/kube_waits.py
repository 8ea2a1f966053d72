"""What destroy's waits share: a dynamic resource that makes nothing and whose delete waits for
what the cluster's controllers delete after the workload (``components.kube_volumes``,
``components.kube_negs``), failing destroy with one line that names what is left and the way out.
"""

from __future__ import annotations

from typing import Any, ClassVar, Optional

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ResourceProvider, UpdateResult

GIVE_UP = (
    "to stop waiting (a cluster that is gone), `pulumi state delete` this resource "
    "(`pulumi stack --show-urns` names it), then destroy again"
)
"""The way out when the cluster can no longer be asked: without it, destroy would fail the same way
every time, and the nodes and the cluster, which wait on this resource, would never go."""
CLUSTER_HINT = "check the cluster is up and your credentials reach it, then run destroy again"


class WaitOnDelete(ResourceProvider):
    """Makes nothing; its delete waits up to ``wait_seconds`` (``gone_or_why``). Destroy unpickles a
    subclass by its module and class name from the state: keep both, or existing stacks cannot be
    destroyed."""

    wait_seconds: float = 900.0
    """How long destroy waits: a detach and a delete take seconds to minutes each."""
    poll_seconds: float = 5.0
    replaced_by: ClassVar[tuple[str, ...]] = ()
    """What names other things to wait for: a change waits for the old ones (a replace)."""
    id_keys: ClassVar[tuple[str, ...]] = ("cluster",)

    def gone_or_why(self, props: dict[str, Any]) -> str:
        """ "" once nothing is left, else the line a person reads."""
        raise NotImplementedError

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_="/".join(str(props[k]) for k in self.id_keys), outs=props)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = sorted(k for k in set(olds) | set(news) if k != "__provider" and olds.get(k) != news.get(k))
        return DiffResult(changes=bool(changed), replaces=[k for k in changed if k in self.replaced_by])

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=news)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        why = self.gone_or_why(props)
        if why:
            raise RuntimeError(why)


def waiting_inputs(
    kubeconfig: pulumi.Input[str], opts: Optional[pulumi.ResourceOptions], **props: Any
) -> tuple[dict[str, Any], pulumi.ResourceOptions]:
    """A wait's inputs, its way in (the workload's kubeconfig) kept as a secret in the state."""
    secret = pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"])
    return {"kubeconfig": pulumi.Output.secret(kubeconfig), **props}, pulumi.ResourceOptions.merge(opts, secret)
