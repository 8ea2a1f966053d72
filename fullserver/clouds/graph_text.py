"""Small formatters the clouds' graph summaries share (``Cloud.graph_summaries``)."""

from __future__ import annotations

from typing import Any


def fmt(value: Any) -> str:
    """A value as the graph table shows it: lowercase booleans, lists and maps inline."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(fmt(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={fmt(v)}" for k, v in value.items()) + "}"
    return str(value)


def disk(i: dict[str, Any]) -> list[str]:
    """A disk's kind, size and provisioned performance (an EBS volume, a persistent disk)."""
    keys = ("type", "size", "provisionedIops", "provisionedThroughput", "iops", "throughput", "encrypted")
    return [f"{k}={fmt(i[k])}" for k in keys if k in i]


def any_inputs(i: dict[str, Any]) -> list[str]:
    """A resource with no summary of its own: its first few plain inputs."""
    parts: list[str] = []
    for k, v in i.items():
        if isinstance(v, (str, int, float, bool)) and k not in ("description", "name", "project", "region", "zone"):
            parts.append(f"{k}={fmt(v)}")
        if len(parts) >= 4:
            break
    return parts
