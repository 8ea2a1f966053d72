"""What a cloud is (``Cloud``) and what it answers with, apart from the registry that finds the
clouds (``fullserver.clouds``), so a cloud's module imports these without importing the registry
that imports it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from fullserver.catalog import Offer
    from fullserver.catalog.refresh.ask import Ask
    from fullserver.catalog.refresh.rows import Fetched
    from fullserver.platforms.quota import QuotaTable
    from fullserver.quotacheck import Reader


def _none(_: str) -> str:
    return ""


def _no_check(config: Mapping[str, Any], where: str) -> None:
    return None


@dataclass(frozen=True)
class PriceRefresh:
    """What the refresh of the cloud's prices re-prices (its ``--provider`` names, "" for none),
    read from the refresh's own SKU tables so a stale price names a refresh that fixes it."""

    offers: Callable[[Offer, bool], str]
    """The refresh of an offer's price (offer, spot)."""
    storage: str
    """The refresh of its disk prices, for the kinds ``disks`` names."""
    disks: Callable[[], frozenset[str]]
    egress: str = ""
    commitments: Callable[[str], str] = _none
    """The refresh of a commitment discount, by its source key."""
    machines: Callable[[str], str] = _none
    """The refresh of a CPU-only machine's price, by machine type."""


@dataclass(frozen=True)
class RefreshSource:
    """One ``catalog refresh --provider``: the data file it edits and the fetcher of its source."""

    file: str
    fetch: Callable[[Ask], Fetched]
    default: bool = False
    """Run when no ``--provider`` is named (the public price sources, no credentials)."""


class MockSession(Protocol):
    """What the offline graph's mocks keep across one evaluation (``components.graph.GraphMocks``)."""

    aws_region: str
    zones_without: dict[tuple[str, ...], tuple[str, ...]]
    gke_without_workload_identity: set[str]
    notes: dict[str, Any]

    def next_ip(self, prefix: str) -> str: ...

    def region_of(self, args: Mapping[str, Any], provider: object) -> str: ...


Summary = Callable[[dict[str, Any]], list[str]]


@dataclass(frozen=True)
class Cloud:
    """One cloud: its provider key and everything fullserver asks it (see the module docstring)."""

    key: str
    """``PlatformRules.provider``, the prefix of its resource types (``aws:ec2/...``) and config keys."""
    title: str
    sdk_module: str
    """Its Pulumi provider package (``pulumi_aws``)."""
    own_modules: tuple[str, ...]
    """The modules beside this one that are the cloud's alone (its refresh fetchers, quota rules)."""
    refresh_sources: Mapping[str, RefreshSource]
    price_refresh: PriceRefresh
    quota_reader: Callable[[QuotaTable, str | None], Reader]
    """Its quota API's reader (table, the stack's project), raising ``NoCredentials`` without them."""
    cli_install: Mapping[str, str]
    """How to install the CLI a node-group listing runs, by its command name."""
    graph_summaries: Mapping[str, Summary]
    """What matters in a resource's inputs for the plan's graph table, by resource type."""
    mock_outputs: Callable[[str, str, dict[str, Any], dict[str, Any], MockSession], None]
    """What its provider computes for a resource in the offline graph: (type, name, inputs, the
    outputs so far, the session) adds to the outputs."""
    mock_invoke: Callable[[str, Mapping[str, Any], object, MockSession], dict[str, Any] | None]
    """Its provider's answer to an invoke (token, args, explicit provider), None for a token not its own."""
    graph_unlabelled: frozenset[str] = frozenset()
    """Types whose tags the graph table does not report as labels (a security group's ``Name``)."""
    mock_config: Mapping[str, str] = field(default_factory=dict)
    """Config the offline graph adds for a stack on the cloud (what ``pulumi up`` would have)."""
    check_config: Callable[[Mapping[str, Any], str], None] = _no_check
    """Refuses, in one line naming the stack file, a setting of its namespace the cloud would
    refuse at ``pulumi up`` (config, the stack file's path)."""
    policy_reader: str = ""
    """Its policy reader module (``policy.clouds.<key>``): its load balancers for the budget and
    the clear-text policy."""
    bucket_scheme: str = ""
    """Its object store's URL scheme (``s3``, ``gs``): where ``fullserver:datasetLocation`` says a bucket lives."""
    region_config: str = ""
    """The config key of the region its invokes default to (``aws:region``), "" for none."""
    compute_types: tuple[str, ...] = ()
    """The resource types that run (and bill) accelerators: what expiry and capacity policies watch."""
