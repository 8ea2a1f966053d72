"""Kubernetes cluster fees (``data/kubernetes.yaml``): what a control plane costs per hour.

Kept apart from the shape catalog's files (the shape loader skips the file, ``NOT_SHAPES``);
every fee names a source of the file, as the network prices do.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from fullserver.catalog.network import DATA_DIR, KUBERNETES_FILE
from fullserver.errors import InputError
from fullserver.sources import Source
from fullserver.yamlio import parse, read_yaml


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ClusterFee(_Strict):
    provider: Literal["aws", "gcp"]
    item: Literal["cluster", "cluster-extended-support"]
    usd_hour: Annotated[float, Field(ge=0)]
    free_tier_usd_month: Annotated[float, Field(ge=0)] = 0.0
    """A monthly credit per billing account (GKE's free tier)."""
    free_tier_applies_to: list[Literal["zonal", "regional", "autopilot"]] = []
    source: str


class KubernetesFile(_Strict):
    sources: dict[str, Source]
    fees: list[ClusterFee]

    @model_validator(mode="after")
    def _sourced(self) -> KubernetesFile:
        for fee in self.fees:
            if fee.source not in self.sources:
                raise ValueError(f"fee {fee.provider}/{fee.item} names unknown source '{fee.source}'")
        return self


class ClusterFees:
    def __init__(self, data: KubernetesFile) -> None:
        self.sources = data.sources
        self._by_key: dict[tuple[str, str], ClusterFee] = {(f.provider, f.item): f for f in data.fees}

    def fee(self, provider: str, item: str = "cluster") -> ClusterFee | None:
        return self._by_key.get((provider, item))


@functools.lru_cache(maxsize=4)
def load_cluster_fees(path: Path = DATA_DIR / KUBERNETES_FILE) -> ClusterFees:
    """Load and validate the cluster fee file (cached: the data is read-only)."""
    try:
        return ClusterFees(parse(KubernetesFile, read_yaml(path), str(path)))
    except FileNotFoundError:
        raise InputError(str(path), "missing", "reinstall fullserver") from None
