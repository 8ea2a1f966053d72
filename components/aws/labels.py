"""AWS tags from the spec's labels: free text, plus the ``Name`` tag the console shows."""

from __future__ import annotations


def aws_tags(labels: dict[str, str], name: str) -> dict[str, str]:
    return {**dict(sorted(labels.items())), "Name": name}
