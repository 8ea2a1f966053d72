"""Policy ``no-open-admin-ports``: no SSH or other admin port open to much of the internet.

Design notes: docs/design/policy.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from fullserver.rules import check_ssh_ranges
from policy.resources import (
    AWS_SECURITY_GROUP,
    AWS_SG_INGRESS_RULE,
    AWS_SG_RULE,
    GCP_FIREWALL,
    as_list,
    describe,
    number,
    plain,
    prop,
    truthy,
)

# Ports that administer a machine or expose a notebook/dashboard with code execution; none of them
# may be reachable from much of the internet.
ADMIN_PORTS: dict[int, str] = {
    22: "SSH",
    3389: "RDP",
    5900: "VNC",
    2375: "Docker API",
    2376: "Docker API (TLS)",
    2379: "etcd",
    6443: "Kubernetes API",
    10250: "kubelet",
    8888: "Jupyter",
    6006: "TensorBoard",
    8265: "Ray dashboard",
}

FIX_SSH = (
    "restrict the source to your office or VPN range (fullserver:sshSourceRanges), or remove the rule and connect "
    "through IAP (gcloud ... --tunnel-through-iap) on GCP or Session Manager (aws ssm start-session) on AWS"
)


def _aws_ports(protocol: Any, from_port: Any, to_port: Any, ports: Iterable[int]) -> list[int]:
    """Admin ports inside an AWS rule's protocol and port range ("-1" is every protocol and port)."""
    proto = str(plain(protocol) if plain(protocol) is not None else "-1").lower()
    if proto in ("-1", "all"):
        return sorted(ports)
    if proto not in ("tcp", "6", "udp", "17"):
        return []
    lo, hi = number(from_port), number(to_port)
    if lo is None and hi is None:
        return sorted(ports)
    lo = 0 if lo is None or lo < 0 else lo
    hi = 65535 if hi is None or hi < 0 else hi
    return sorted(p for p in ports if lo <= p <= hi)


def _gcp_ports(allow: Any, ports: Iterable[int]) -> list[int]:
    """Admin ports a GCP ``allows`` entry opens: protocol "all", or tcp/udp/sctp without ports, is all."""
    proto = str(prop(allow, "protocol") or "").lower()
    if proto == "all":
        return sorted(ports)
    if proto not in ("tcp", "udp", "sctp", "6", "17", "132"):
        return []
    ranges = [str(p) for p in as_list(prop(allow, "ports"))]
    if not ranges:
        return sorted(ports)
    hit: set[int] = set()
    for r in ranges:
        lo_s, _, hi_s = r.partition("-")
        try:
            lo, hi = int(lo_s), int(hi_s or lo_s)
        except ValueError:
            continue
        hit.update(p for p in ports if lo <= p <= hi)
    return sorted(hit)


def _port_names(ports: Sequence[int]) -> str:
    """``22 (SSH), 3389 (RDP)``: the numbers a rule names, and what each one administers."""
    return ", ".join(f"{p} ({ADMIN_PORTS.get(p, 'admin')})" for p in ports)


def _admin_ports(config: Mapping[str, Any]) -> set[int]:
    """The ports this policy guards: the config's ``ports`` when given (a team may guard e.g. 5432),
    else ``ADMIN_PORTS``."""
    configured = config.get("ports")
    if isinstance(configured, Sequence) and not isinstance(configured, str) and configured:
        return {int(p) for p in configured}
    return set(ADMIN_PORTS)


def _rules(t: str, props: Mapping[str, Any], ports: set[int]) -> list[tuple[list[int], list[str]]]:
    """(admin ports it opens, source ranges) for each ingress rule of a security group, security
    group rule or firewall; none for anything else, an egress rule or a disabled firewall."""
    rules: list[tuple[list[int], list[str]]] = []
    if t == AWS_SECURITY_GROUP:
        for rule in as_list(props.get("ingress")):
            cidrs = as_list(prop(rule, "cidrBlocks")) + as_list(prop(rule, "ipv6CidrBlocks"))
            hit = _aws_ports(prop(rule, "protocol"), prop(rule, "fromPort"), prop(rule, "toPort"), ports)
            rules.append((hit, [str(c) for c in cidrs]))
    elif t == AWS_SG_RULE:
        if str(plain(props.get("type")) or "").lower() == "ingress":
            cidrs = as_list(props.get("cidrBlocks")) + as_list(props.get("ipv6CidrBlocks"))
            hit = _aws_ports(props.get("protocol"), props.get("fromPort"), props.get("toPort"), ports)
            rules.append((hit, [str(c) for c in cidrs]))
    elif t == AWS_SG_INGRESS_RULE:
        cidrs = [c for c in (plain(props.get("cidrIpv4")), plain(props.get("cidrIpv6"))) if c]
        hit = _aws_ports(props.get("ipProtocol"), props.get("fromPort"), props.get("toPort"), ports)
        rules.append((hit, [str(c) for c in cidrs]))
    elif t == GCP_FIREWALL:
        if str(plain(props.get("direction")) or "INGRESS").upper() != "INGRESS" or truthy(props.get("disabled")):
            return []
        sources = as_list(props.get("sourceRanges"))
        if not sources and not as_list(props.get("sourceTags")) and not as_list(props.get("sourceServiceAccounts")):
            sources = ["0.0.0.0/0"]  # GCE: an ingress rule without any source applies to every source
        hit = sorted({p for allow in as_list(props.get("allows")) for p in _gcp_ports(allow, ports)})
        rules.append((hit, [str(c) for c in sources]))
    return rules


def _by_sources(rules: Iterable[tuple[list[int], list[str]]]) -> dict[tuple[str, ...], list[int]]:
    """Each admin port's sources across all rules, and the ports that share the same sources
    (one verdict, one message for them)."""
    per_port: dict[int, list[str]] = {}
    for hit, cidrs in rules:
        for port in hit:
            seen = per_port.setdefault(port, [])
            seen.extend(c for c in cidrs if c not in seen)
    grouped: dict[tuple[str, ...], list[int]] = {}
    for port in sorted(per_port):
        grouped.setdefault(tuple(per_port[port]), []).append(port)
    return grouped


def check_open_admin_ports(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Admin ports open to the internet are how GPU hosts get hijacked for mining; nodes need none."""
    ports = _admin_ports(args.get_config())
    what = describe(args.resource_type, args.name)
    for sources, hit in _by_sources(_rules(args.resource_type, args.props, ports)).items():
        opens = ADMIN_PORTS.get(hit[0], f"port {hit[0]}") if len(hit) == 1 else "admin ports"
        try:
            check_ssh_ranges(list(sources), opens=opens)
        except ValueError as exc:
            shown = ", ".join(sources[:5]) + (f" and {len(sources) - 5} more" if len(sources) > 5 else "")
            report(f"{what} allows {_port_names(hit)} from {shown}: {exc}. To fix it, {FIX_SSH}.", None)


_PORTS_SCHEMA = {
    "type": "array",
    "items": {"type": "integer", "minimum": 1, "maximum": 65535},
    "description": "Ports that must not be open to much of the internet (default: SSH, RDP, VNC, Docker, etcd, "
    "Kubernetes, kubelet, Jupyter, TensorBoard, Ray dashboard).",
}

POLICY = ResourceValidationPolicy(
    name="no-open-admin-ports",
    description="No SSH or admin ports (RDP, VNC, Docker, Kubernetes, Jupyter, ...) open to much of the internet: "
    "no source wider than /8 (IPv4) or /32 (IPv6), alone or together, as fullserver.netcheck rules for SSH.",
    validate=check_open_admin_ports,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.CRITICAL,
    config_schema=PolicyConfigSchema(properties={"ports": _PORTS_SCHEMA}),
    remediation_steps=FIX_SSH,
)
