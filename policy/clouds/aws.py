"""AWS's policy reader (``fullserver.clouds.aws``'s ``policy_reader``): its load balancers, as the
budget bills them and the clear-text policy judges them; its nodes' autostop grants."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator, Mapping

from pulumi_policy import PolicyResource

from fullserver.catalog.network import Item
from fullserver.clouds import aws
from fullserver.platforms import aws_autostop
from fullserver.rules import LABEL_ENVIRONMENT
from fullserver.tls import ClearText, clear_text
from policy.labels import labels_of
from policy.resources import as_list, marked, on, plain, prop, truthy

KEY = aws.KEY
LB = "aws:lb/loadBalancer:LoadBalancer"
LISTENER = "aws:lb/listener:Listener"
SERVICE_ANNOTATION = "service.beta.kubernetes.io/aws-load-balancer-"
"""A LoadBalancer Service annotated so is the AWS Load Balancer Controller's NLB (``fullserver.kube.serve``)."""
SERVICE_ITEM: Item = "nlb"
GATEWAY_ITEM: Item | None = None


def _load_balancer(r: PolicyResource, seen: Counter[str]) -> Item | None:
    kind = plain(r.props.get("loadBalancerType")) or "application"
    return "nlb" if kind == "network" else "alb"


LOAD_BALANCERS: Mapping[str, Callable[[PolicyResource, Counter[str]], Item | None]] = {LB: _load_balancer}
"""The network item each load balancer type bills (the resource, how many of each type came before)."""


def _listener(r: PolicyResource) -> Iterator[ClearText | None]:
    """An ``HTTP`` listener that forwards (not the redirect to HTTPS) on its load balancer."""
    if str(plain(r.props.get("protocol")) or "").upper() != "HTTP":
        return
    if not any(prop(a, "type") == "forward" for a in as_list(r.props.get("defaultActions"))):
        return  # the redirect to HTTPS
    for lb in on(r, "loadBalancerArn", LB):
        scheme = "internal" if truthy(lb.props.get("internal")) else "external"
        yield clear_text(KEY, scheme, False, marked(lb.props.get("tags")))


CLEAR_TEXT: Mapping[str, Callable[[PolicyResource], Iterator[ClearText | None]]] = {LISTENER: _listener}


ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"


def autostop_grants(resources: list[PolicyResource]) -> Iterator[tuple[PolicyResource, str]]:
    """Each autostop role policy (``aws_autostop.GRANT_SUFFIX``) that lets a node change Auto Scaling
    groups beyond the stack's own, or to anything but 0/0 (``aws_autostop.group_stop_problems``)."""
    groups = [r for r in resources if r.resource_type == aws.ASG]
    environments = {e for r in groups if (e := labels_of(r.props).get(LABEL_ENVIRONMENT))}
    for r in resources:
        autostop = r.resource_type == ROLE_POLICY and r.name.endswith(aws_autostop.GRANT_SUFFIX)
        text = plain(r.props.get("policy")) if autostop else None
        try:
            document = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            continue
        if isinstance(document, dict):
            yield from ((r, p) for p in aws_autostop.group_stop_problems(document, environments))
