"""Google Cloud's policy reader (``fullserver.clouds.gcp``'s ``policy_reader``): its load
balancers, as the budget bills them and the clear-text policy judges them; its nodes' autostop
grants."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping

from pulumi_policy import PolicyResource

from fullserver.autostop import grants
from fullserver.catalog.network import Item
from fullserver.clouds import gcp
from fullserver.platforms import gcp_autostop
from fullserver.tls import ClearText, clear_text
from policy.resources import as_list, marked, on, plain, prop

KEY = gcp.KEY
GLOBAL_RULE = "gcp:compute/globalForwardingRule:GlobalForwardingRule"
HTTP_PROXY = "gcp:compute/targetHttpProxy:TargetHttpProxy"
URL_MAP = "gcp:compute/uRLMap:URLMap"
FORWARDING_RULES_BILLED_TOGETHER = 5
"""A project's first five forwarding rules are billed at one rate (network catalog ``gcp-lb-pricing``)."""
SERVICE_ANNOTATION = ""
"""A LoadBalancer Service no other cloud's annotation claims is GKE's passthrough NLB (one regional
forwarding rule)."""
SERVICE_ITEM: Item = "forwarding-rule"
GATEWAY_ITEM: Item | None = "forwarding-rule"
"""GKE's HTTPS Gateway (``fullserver.platforms.gke_gateway``): one global forwarding rule."""


def _forwarding_rule(r: PolicyResource, seen: Counter[str]) -> Item | None:
    """Billed once for the first five, then each (they are billed together)."""
    seen[GLOBAL_RULE] += 1
    n = seen[GLOBAL_RULE]
    return "forwarding-rule" if n == 1 or n > FORWARDING_RULES_BILLED_TOGETHER else None


LOAD_BALANCERS: Mapping[str, Callable[[PolicyResource, Counter[str]], Item | None]] = {GLOBAL_RULE: _forwarding_rule}
"""The network item each load balancer type bills (the resource, how many of each type came before)."""


def _forwarding(r: PolicyResource) -> Iterator[ClearText | None]:
    """An ``EXTERNAL*`` forwarding rule to a target HTTP proxy whose URL map forwards (no redirect)."""
    if not str(plain(r.props.get("loadBalancingScheme")) or "").startswith("EXTERNAL"):
        return
    for proxy in on(r, "target", HTTP_PROXY):
        for url_map in on(proxy, "urlMap", URL_MAP):
            if not prop(url_map.props, "defaultUrlRedirect"):
                yield clear_text(KEY, "external", False, marked(r.props.get("labels")))


CLEAR_TEXT: Mapping[str, Callable[[PolicyResource], Iterator[ClearText | None]]] = {GLOBAL_RULE: _forwarding}


CUSTOM_ROLE = "gcp:projects/iAMCustomRole:IAMCustomRole"
VM_MEMBER = "gcp:compute/instanceIAMMember:InstanceIAMMember"
PROJECT_MEMBER = "gcp:projects/iAMMember:IAMMember"


def autostop_grants(resources: list[PolicyResource]) -> Iterator[tuple[PolicyResource, str]]:
    """Each stop role that holds more than one stop way needs, and each binding of one that reaches
    beyond the stack's own VMs and groups (``fullserver.autostop.grants``)."""
    roles: dict[str, list[str]] = {}
    for r in resources:
        role_id = str(plain(r.props.get("roleId")) or "") if r.resource_type == CUSTOM_ROLE else ""
        if role_id.startswith(gcp_autostop.STOP_ROLE_PREFIX):
            roles[role_id] = [str(plain(p)) for p in as_list(plain(r.props.get("permissions")))]
            problem = grants.role_problem(roles[role_id])
            if problem:
                yield r, problem
    vms = {str(plain(r.props.get("name"))) for r in resources if r.resource_type == gcp.INSTANCE}
    groups = {str(plain(r.props.get("name"))) for r in resources if r.resource_type in (gcp.MIG, gcp.REGION_MIG)}
    for r in resources:
        if r.resource_type not in (VM_MEMBER, PROJECT_MEMBER):
            continue
        role_id = str(plain(r.props.get("role")) or "").rpartition("/roles/")[2]
        if role_id not in roles:
            continue
        instance = str(plain(r.props.get("instanceName"))) if r.resource_type == VM_MEMBER else None
        expression = prop(r.props, "condition", "expression")
        problem = grants.binding_problem(
            roles[role_id],
            instance=instance,
            vms=vms,
            condition=str(expression) if expression else None,
            groups=groups,
        )
        if problem:
            yield r, problem
