"""The resource graph as a person reads it: one row per resource with the inputs that matter.

Rendering only; ``components.graph`` computes the graph (under Pulumi's mock runtime) and knows
nothing of terminals.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.text import Text

from components.graph import Graph, Row
from fullserver.platforms import QUEUED_TPU_TYPE
from fullserver.rules import LABEL_ENVIRONMENT
from fullserver_cli.tables import FitTable, table


def short_type(typ: str) -> str:
    """``aws:ec2/launchTemplate:LaunchTemplate`` -> ``aws:ec2:LaunchTemplate``."""
    parts = typ.split(":")
    if len(parts) == 3:
        return f"{parts[0]}:{parts[1].split('/')[0]}:{parts[2]}"
    return typ


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={_fmt(v)}" for k, v in value.items()) + "}"
    return str(value)


def _nics(nics: list[dict[str, Any]]) -> str:
    efa = [n for n in nics if str(n.get("interfaceType", "")).startswith("efa")]
    if efa:
        cards = sorted(int(n.get("networkCardIndex", 0)) for n in efa)
        return f"{len(efa)} EFA (cards {cards[0]}-{cards[-1]})"
    return f"{len(nics)} NIC"


def _aws_launch_template(i: dict[str, Any]) -> list[str]:
    parts = [i.get("instanceType", ""), f"image={i.get('imageId', '')}", _nics(i.get("networkInterfaces", []))]
    for m in i.get("blockDeviceMappings", []):
        e = m.get("ebs", {})
        extra = "".join(f" {k}={e[k]}" for k in ("iops", "throughput") if k in e)
        parts.append(
            f"{m.get('deviceName')} {e.get('volumeType')} {e.get('volumeSize')}GiB{extra} encrypted={e.get('encrypted')}"
        )
    parts.append(f"IMDS tokens={i.get('metadataOptions', {}).get('httpTokens')}")
    if i.get("placement"):
        parts.append("cluster placement")
    if i.get("instanceMarketOptions"):
        parts.append(f"market={i['instanceMarketOptions'].get('marketType')}")
    crs = i.get("capacityReservationSpecification", {})
    parts.append(f"reservation={_fmt(crs.get('capacityReservationTarget', crs.get('capacityReservationPreference')))}")
    return parts


def _gcp_instance(i: dict[str, Any]) -> list[str]:
    s = i.get("scheduling", {})
    nic = (i.get("networkInterfaces") or [{}])[0]
    parts = [
        i.get("machineType", ""),
        f"{len(i.get('scratchDisks', []))} local SSD",
        f"{s.get('provisioningModel')} onHostMaintenance={s.get('onHostMaintenance')}",
        f"nic={nic.get('nicType')} external={'yes' if nic.get('accessConfigs') else 'no'}",
        f"boot={i.get('bootDisk', {}).get('initializeParams', {}).get('image', '').rsplit('/', 1)[-1]}",
    ]
    more: list[dict[str, Any]] = (i.get("networkInterfaces") or [])[1:]
    if more:
        kinds = sorted({str(n.get("nicType")) for n in more})
        parts.append(f"+{len(more)} NICs ({'/'.join(kinds)}) on {len({n.get('network') for n in more})} networks")
    if i.get("guestAccelerators"):
        parts.append(_fmt(i["guestAccelerators"]))
    if i.get("networkPerformanceConfig"):
        parts.append("TIER_1")
    if i.get("resourcePolicies"):
        parts.append("compact placement")
    return parts


def _tpu_vm(i: dict[str, Any]) -> list[str]:
    return [
        i.get("acceleratorType", ""),
        f"runtime={i.get('runtimeVersion')}",
        f"scheduling={_fmt(i.get('schedulingConfig', {}))}",
        f"external={_fmt(i.get('networkConfig', {}).get('enableExternalIps'))}",
        f"data disks={len(i.get('dataDisks', []))}",
    ]


def _queued_tpu(i: dict[str, Any]) -> list[str]:
    node = i.get("tpu", {}).get("nodeSpecs", [{}])[0].get("node", {})
    parts = [node.get("acceleratorType", ""), f"runtime={node.get('runtimeVersion')}", "queued"]
    if LABEL_ENVIRONMENT in (node.get("labels") or {}):
        parts.append("labelled")
    return parts


def _disk(i: dict[str, Any]) -> list[str]:
    keys = ("type", "size", "provisionedIops", "provisionedThroughput", "iops", "throughput", "encrypted")
    return [f"{k}={_fmt(i[k])}" for k in keys if k in i]


def _gcp_firewall(i: dict[str, Any]) -> list[str]:
    return [
        f"from={_fmt(i.get('sourceRanges') or i.get('sourceTags'))} allow={_fmt(i.get('allows'))}",
        f"to={_fmt(i['targetTags'])}" if i.get("targetTags") else "to=every node of its network",
    ]


def _aws_security_group(i: dict[str, Any]) -> list[str]:
    parts = []
    for rule in i.get("ingress", []):
        src = rule.get("cidrBlocks") or ("self" if rule.get("self") else "")
        parts.append(f"in {rule.get('protocol')}:{rule.get('fromPort')} from {_fmt(src)}")
    return parts


def _aws_autoscaling_group(i: dict[str, Any]) -> list[str]:
    parts = [f"min={i.get('minSize')} max={i.get('maxSize')}"]
    if i.get("mixedInstancesPolicy"):
        mix = i["mixedInstancesPolicy"].get("instancesDistribution") or {}
        on_demand = mix.get("onDemandPercentageAboveBaseCapacity")
        parts.append(f"on-demand, {mix.get('onDemandAllocationStrategy')}" if on_demand else "spot (0% on-demand)")
        overrides = i["mixedInstancesPolicy"].get("launchTemplate", {}).get("overrides") or []
        if overrides:
            parts.append("types=" + _fmt([o.get("instanceType") for o in overrides]))
    return parts


def _provider(i: dict[str, Any]) -> list[str]:
    """The explicit provider every resource of the environment uses: where they are created."""
    return [f"{k}={i[k]}" for k in ("project", "region", "zone") if i.get(k)]


def _any(i: dict[str, Any]) -> list[str]:
    """A resource with no summary of its own: its first few plain inputs."""
    parts: list[str] = []
    for k, v in i.items():
        if isinstance(v, (str, int, float, bool)) and k not in ("description", "name", "project", "region", "zone"):
            parts.append(f"{k}={_fmt(v)}")
        if len(parts) >= 4:
            break
    return parts


def _url_map(i: dict[str, Any]) -> list[str]:
    """A URL map forwards to its backend, or answers every request with a redirect (HTTP to HTTPS)."""
    redirect = i.get("defaultUrlRedirect") or {}
    if redirect.get("httpsRedirect"):
        return [f"redirect to HTTPS ({redirect.get('redirectResponseCode', '')})"]
    return _any(i)


def _certificate(i: dict[str, Any]) -> list[str]:
    """A Google-managed certificate's names (the ones DNS must point at the load balancer)."""
    domains = (i.get("managed") or {}).get("domains") or []
    return [f"managed for {', '.join(domains)}" if domains else "", *_any(i)]


_SUMMARIES: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "gcp:compute/uRLMap:URLMap": _url_map,
    "gcp:certificatemanager/certificate:Certificate": _certificate,
    "aws:ec2/launchTemplate:LaunchTemplate": _aws_launch_template,
    "gcp:compute/instance:Instance": _gcp_instance,
    "gcp:tpu/v2Vm:V2Vm": _tpu_vm,
    QUEUED_TPU_TYPE: _queued_tpu,
    "gcp:compute/disk:Disk": _disk,
    "aws:ebs/volume:Volume": _disk,
    "gcp:compute/firewall:Firewall": _gcp_firewall,
    "aws:ec2/securityGroup:SecurityGroup": _aws_security_group,
    "aws:autoscaling/group:Group": _aws_autoscaling_group,
}
"""The inputs that matter, by resource type; ``pulumi:providers:*`` and the rest are below."""


def summary(row: Row) -> str:
    """The inputs that matter for one resource, on one line."""
    i, t = row.inputs, row.type
    pick = _SUMMARIES.get(t) or (_provider if t.startswith("pulumi:providers:") else _any)
    parts = pick(i)
    labels = i.get("labels") or i.get("tags")
    if isinstance(labels, dict) and LABEL_ENVIRONMENT in labels and t not in ("aws:ec2/securityGroup:SecurityGroup",):
        parts.append("labelled")
    return ", ".join(p for p in parts if p)


def graph_table(graph: Graph) -> FitTable:
    """The resources as a table (type, name, what matters), printed after each stack's plan."""
    t = table(
        "type",
        "name",
        "inputs that matter",
        title=f"resources pulumi up creates ({sum(r.custom for r in graph.rows)})",
        narrow=[("type", "name"), ("inputs that matter",)],
    )
    for row in graph.rows:
        if row.custom:
            t.add_row(Text(short_type(row.type)), Text(row.name), Text(summary(row)))
    return t
