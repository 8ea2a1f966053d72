"""The resource graph as a person reads it: one row per resource with the inputs that matter.

Rendering only; ``components.graph`` computes the graph (under Pulumi's mock runtime) and knows
nothing of terminals.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.text import Text

from components.graph import Graph, Row
from fullserver.clouds import all_clouds, graph_text
from fullserver.platforms import QUEUED_TPU_TYPE
from fullserver.rules import LABEL_ENVIRONMENT
from fullserver_cli.tables import FitTable, table


def short_type(typ: str) -> str:
    """``aws:ec2/launchTemplate:LaunchTemplate`` -> ``aws:ec2:LaunchTemplate``."""
    parts = typ.split(":")
    if len(parts) == 3:
        return f"{parts[0]}:{parts[1].split('/')[0]}:{parts[2]}"
    return typ


def _queued_tpu(i: dict[str, Any]) -> list[str]:
    node = i.get("tpu", {}).get("nodeSpecs", [{}])[0].get("node", {})
    parts = [node.get("acceleratorType", ""), f"runtime={node.get('runtimeVersion')}", "queued"]
    if LABEL_ENVIRONMENT in (node.get("labels") or {}):
        parts.append("labelled")
    return parts


def _provider(i: dict[str, Any]) -> list[str]:
    """The explicit provider every resource of the environment uses: where they are created."""
    return [f"{k}={i[k]}" for k in ("project", "region", "zone") if i.get(k)]


_SUMMARIES: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    **{t: f for c in all_clouds() for t, f in c.graph_summaries.items()},
    QUEUED_TPU_TYPE: _queued_tpu,
}
"""The inputs that matter, by resource type (each cloud's own, ``Cloud.graph_summaries``);
``pulumi:providers:*`` and the rest are below."""
_UNLABELLED = frozenset(t for c in all_clouds() for t in c.graph_unlabelled)


def summary(row: Row) -> str:
    """The inputs that matter for one resource, on one line."""
    i, t = row.inputs, row.type
    pick = _SUMMARIES.get(t) or (_provider if t.startswith("pulumi:providers:") else graph_text.any_inputs)
    parts = pick(i)
    labels = i.get("labels") or i.get("tags")
    if isinstance(labels, dict) and LABEL_ENVIRONMENT in labels and t not in _UNLABELLED:
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
