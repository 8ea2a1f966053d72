"""What the platforms read of core values: read-only ``Protocol``s, the attributes and no more.

A platform's rules (``PlatformRules.layout``, ``autostop``, ``capacity_steps``) are called with an
``EnvironmentSpec``, which is built on the platforms; annotating with ``fullserver.spec`` closed an
import cycle through the core (issue 36). ``EnvironmentSpec`` satisfies ``SpecReads`` as it stands;
a rule that reads a new field adds it here. The same holds for a network price, and for the
serving endpoint and TLS the node-pool members' Service and Gateway objects read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from fullserver.platform import AcceleratorKind

if TYPE_CHECKING:
    from fullserver.capacity import CapacitySet


class TpuReads(Protocol):
    """``spec.TpuSpec``: how many hosts, and whether it is a queued resource."""

    @property
    def hosts(self) -> int: ...
    @property
    def queued(self) -> bool: ...


class NetworkReads(Protocol):
    """``spec.NetworkSpec``: whether the nodes share a compact placement, and their EFA interfaces."""

    @property
    def compact_placement(self) -> bool: ...

    @property
    def efa_interfaces(self) -> int: ...


class LoadBalancerReads(Protocol):
    """``serving.ServingSpec`` (``spec.endpoint``): the load balancer's scheme."""

    @property
    def load_balancer(self) -> str: ...


class ServingReads(LoadBalancerReads, Protocol):
    """``profiles.Serving`` (``spec.serving``): the scheme, and whether replicas spread over zones."""

    @property
    def spread_zones(self) -> bool: ...


class SpecReads(Protocol):
    """``spec.EnvironmentSpec`` as the platforms' rules read it."""

    @property
    def offer(self) -> str: ...
    @property
    def machine_type(self) -> str: ...
    @property
    def vcpus(self) -> int: ...
    @property
    def nodes(self) -> int: ...
    @property
    def zone(self) -> str | None: ...
    @property
    def spot(self) -> bool: ...
    @property
    def reservation(self) -> str | None: ...
    @property
    def capacity_block(self) -> bool: ...
    @property
    def data_disk(self) -> object | None: ...
    @property
    def autostop_minutes(self) -> int: ...
    @property
    def accelerator_kind(self) -> AcceleratorKind | None: ...
    @property
    def network(self) -> NetworkReads: ...
    @property
    def tpu(self) -> TpuReads | None: ...
    @property
    def serving(self) -> ServingReads | None: ...
    @property
    def endpoint(self) -> LoadBalancerReads | None: ...
    @property
    def capacity(self) -> CapacitySet | None: ...


class PriceReads(Protocol):
    """``catalog.network.NetworkPrice`` as a cloud's price lines read it (``NetworkPricer.price``)."""

    @property
    def source(self) -> str: ...
    @property
    def unit(self) -> str: ...
    @property
    def usd_hour(self) -> float | None: ...
    @property
    def usd_per_gb(self) -> float | None: ...
    @property
    def usd_per_decimal_gb(self) -> float: ...
    @property
    def gb_per_unit_hour(self) -> float | None: ...
    @property
    def max_units(self) -> int | None: ...


class TlsReads(Protocol):
    """``tls.Tls`` as a member's Service annotations read it."""

    @property
    def port(self) -> int: ...
    @property
    def certificate_arn(self) -> str | None: ...


class _ServerReads(Protocol):
    @property
    def health_path(self) -> str: ...


class EndpointReads(Protocol):
    """``serving.ServingSpec`` as a member's TLS front reads it (``pool_rules.TlsFront.objects``)."""

    @property
    def tls(self) -> TlsReads | None: ...
    @property
    def server(self) -> _ServerReads: ...
    @property
    def lb_port(self) -> int: ...
    @property
    def health_interval_seconds(self) -> int: ...
    @property
    def healthy_threshold(self) -> int: ...
    @property
    def unhealthy_threshold(self) -> int: ...
    @property
    def request_timeout_seconds(self) -> int: ...
    @property
    def drain_seconds(self) -> int: ...
