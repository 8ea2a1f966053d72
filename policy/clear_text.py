"""Policy ``no-api-key-in-clear``: no serving endpoint sends its API key across the internet in
clear unless its stack said so (``fullserver:serving.plainHttp: true``).

Clients send ``Authorization: Bearer <key>`` with every request; over plain HTTP anyone on the path
reads it. The rule is the core's (``fullserver.tls.clear_text``); this reads what the stack builds:

* AWS: an ``HTTP`` listener that forwards (not the redirect to HTTPS) on an internet-facing load
  balancer (its ``loadBalancerArn`` dependency, ``internal`` false);
* GCP: an ``EXTERNAL*`` global forwarding rule to a target HTTP proxy whose URL map forwards (no
  ``defaultUrlRedirect``);
* node pools: a LoadBalancer Service of the applied workload (``kubernetes:yaml/v2:ConfigGroup``),
  read by ``fullserver.kube.serve.clear_text_of``.

The stack's ``plainHttp`` is read where the components write it: the load balancer's tag, the
forwarding rule's label (``fullserver.tls.PLAIN_HTTP_LABEL``), the Service's annotation.
"""

from __future__ import annotations

from collections.abc import Iterator

from pulumi_policy import (
    EnforcementLevel,
    PolicyResource,
    ReportViolation,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from fullserver.kube.serve import clear_text_of
from fullserver.tls import PLAIN_HTTP_LABEL, ClearText, clear_text
from policy.resources import as_list, describe, plain, prop, truthy

AWS_LB = "aws:lb/loadBalancer:LoadBalancer"
AWS_LISTENER = "aws:lb/listener:Listener"
GCP_GLOBAL_RULE = "gcp:compute/globalForwardingRule:GlobalForwardingRule"
GCP_HTTP_PROXY = "gcp:compute/targetHttpProxy:TargetHttpProxy"
GCP_URL_MAP = "gcp:compute/uRLMap:URLMap"
CONFIG_GROUP = "kubernetes:yaml/v2:ConfigGroup"


def _on(r: PolicyResource, key: str, resource_type: str) -> list[PolicyResource]:
    """The resources of ``resource_type`` an input of ``r`` came from (the engine's property dependencies)."""
    return [d for d in (r.property_dependencies or {}).get(key, []) if d.resource_type == resource_type]


def _marked(labels: object) -> bool:
    return bool(prop(labels, PLAIN_HTTP_LABEL) == "true")


def _aws(r: PolicyResource) -> Iterator[ClearText | None]:
    if str(plain(r.props.get("protocol")) or "").upper() != "HTTP":
        return
    if not any(prop(a, "type") == "forward" for a in as_list(r.props.get("defaultActions"))):
        return  # the redirect to HTTPS
    for lb in _on(r, "loadBalancerArn", AWS_LB):
        scheme = "internal" if truthy(lb.props.get("internal")) else "external"
        yield clear_text("aws", scheme, False, _marked(lb.props.get("tags")))


def _gcp(r: PolicyResource) -> Iterator[ClearText | None]:
    if not str(plain(r.props.get("loadBalancingScheme")) or "").startswith("EXTERNAL"):
        return
    for proxy in _on(r, "target", GCP_HTTP_PROXY):
        for url_map in _on(proxy, "urlMap", GCP_URL_MAP):
            if not prop(url_map.props, "defaultUrlRedirect"):
                yield clear_text("gcp", "external", False, _marked(r.props.get("labels")))


def findings(resources: list[PolicyResource]) -> list[tuple[PolicyResource, ClearText]]:
    """Each resource that would send the key in clear, with the rule's verdict (allowed or not)."""
    out: list[tuple[PolicyResource, ClearText]] = []
    for r in resources:
        if r.resource_type == AWS_LISTENER:
            verdicts = list(_aws(r))
        elif r.resource_type == GCP_GLOBAL_RULE:
            verdicts = list(_gcp(r))
        elif r.resource_type == CONFIG_GROUP:
            objs = plain(r.props.get("objs"))
            verdicts = [clear_text_of([o for o in objs if isinstance(o, dict)])] if isinstance(objs, list) else []
        else:
            continue
        out.extend((r, v) for v in verdicts if v is not None)
    return out


def check_clear_text(args: StackValidationArgs, report: ReportViolation) -> None:
    for r, verdict in findings(list(args.resources)):
        if not verdict.allowed:
            report(
                f"{describe(r.resource_type, r.name)}: {verdict.what}. Fix: {verdict.hint} in the stack's config.",
                r.urn,
            )


POLICY = StackValidationPolicy(
    name="no-api-key-in-clear",
    description="No internet-facing serving endpoint without TLS (the API key would cross the internet in clear) "
    "unless the stack sets fullserver:serving.plainHttp: true.",
    validate=check_clear_text,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
)
