"""The GCP serving group: a managed instance group of model-server replicas behind Google's global
external Application Load Balancer, with an autoscaler (``components.serving``).

Design notes: docs/design/components.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import pulumi
import pulumi_gcp as gcp

from components.args import ServingArgs, TlsArgs
from components.names import logical, physical
from components.serving import HEALTH_TIMEOUT_SECONDS, NAMED_PORT, lb_endpoint
from fullserver.platforms import gcp as gce
from fullserver.tls import PLAIN_HTTP_LABEL

GCP_ZONES_PER_REGION = gce.SERVING_ZONES  # a regional MIG spreads over three zones by default


@dataclass(frozen=True)
class GcpServing:
    instance_group: pulumi.Output[str]
    endpoint: pulumi.Output[str]
    address: pulumi.Output[str]
    """The load balancer's IP address: where the stack's domains point (``dnsTarget``)."""
    base_instance_name: str
    """What the group names its replicas after (``<base>-`` and four random characters)."""
    zone: str | None
    """A zonal group's zone; ``None`` for a regional group."""


def _gcp_load_balancer(
    name: str,
    opts: pulumi.ResourceOptions,
    *,
    project: pulumi.Input[str] | None,
    instance_group: pulumi.Input[str],
    health_check: gcp.compute.HealthCheck,
    serving: ServingArgs,
) -> tuple[pulumi.Output[str], pulumi.Output[str]]:
    """The global external Application Load Balancer in front of the group; returns the endpoint
    and the load balancer's address."""
    backend = gcp.compute.BackendService(
        logical(gcp.compute.BackendService, f"{name}-backend"),
        project=project,
        load_balancing_scheme="EXTERNAL_MANAGED",
        protocol="HTTP",
        port_name=NAMED_PORT,
        timeout_sec=serving["request_timeout_seconds"],
        connection_draining_timeout_sec=serving["drain_seconds"],
        health_checks=health_check.id,
        backends=[
            {
                "group": instance_group,
                "balancing_mode": "RATE",
                "max_rate_per_instance": serving["requests_per_second"],
                "capacity_scaler": 1.0,
            }
        ],
        opts=opts,
    )
    url_map = gcp.compute.URLMap(
        logical(gcp.compute.URLMap, f"{name}-urls"), project=project, default_service=backend.id, opts=opts
    )
    tls = serving.get("tls")
    if tls is None:
        # serving.plainHttp (the only way here to an external endpoint without TLS, fullserver.tls.clear_text)
        # is said on the forwarding rule, where the policy pack reads it
        plain = {PLAIN_HTTP_LABEL: "true"} if serving.get("plain_http") else None
        rule = _http_rule(name, opts, project, url_map, serving["lb_port"], address=None, labels=plain)
        return lb_endpoint(serving, rule.ip_address), rule.ip_address
    address = gcp.compute.GlobalAddress(
        logical(gcp.compute.GlobalAddress, f"{name}-address"), project=project, address_type="EXTERNAL", opts=opts
    )
    _https_rule(name, opts, project, url_map, tls, address.address)
    # port 80 answers a redirect to HTTPS on the same address: the URL map's default redirect
    # (pulumi-gcp URLMapDefaultUrlRedirect: ``https_redirect`` "must only be set for UrlMaps used in
    # TargetHttpProxys"; ``strip_query`` is required; MOVED_PERMANENTLY_DEFAULT is the 301)
    redirect = gcp.compute.URLMap(
        logical(gcp.compute.URLMap, f"{name}-redirect"),
        project=project,
        default_url_redirect={
            "https_redirect": True,
            "strip_query": False,
            "redirect_response_code": "MOVED_PERMANENTLY_DEFAULT",
        },
        opts=opts,
    )
    _http_rule(name, opts, project, redirect, serving["lb_port"], address=address.address)
    return lb_endpoint(serving, address.address), address.address


def _http_rule(
    name: str,
    opts: pulumi.ResourceOptions,
    project: pulumi.Input[str] | None,
    url_map: gcp.compute.URLMap,
    port: int,
    address: pulumi.Input[str] | None,
    labels: dict[str, str] | None = None,
) -> gcp.compute.GlobalForwardingRule:
    """The target HTTP proxy of ``url_map`` and its forwarding rule on ``port``: at ``address`` (a
    reserved address's IP, which pulumi-gcp ``GlobalForwardingRule.ip_address`` takes "that
    references an existing static (reserved) IP address"), or an ephemeral one; ``labels``: the
    rule's (pulumi-gcp ``GlobalForwardingRule.labels``)."""
    proxy = gcp.compute.TargetHttpProxy(
        logical(gcp.compute.TargetHttpProxy, f"{name}-proxy"), project=project, url_map=url_map.id, opts=opts
    )
    return _forwarding_rule(f"{name}-lb", opts, project, proxy.id, port, address, labels)


def _forwarding_rule(
    name: str,
    opts: pulumi.ResourceOptions,
    project: pulumi.Input[str] | None,
    target: pulumi.Input[str],
    port: int,
    address: pulumi.Input[str] | None,
    labels: dict[str, str] | None = None,
) -> gcp.compute.GlobalForwardingRule:
    """The global external Application Load Balancer's entry on ``port`` (``EXTERNAL_MANAGED``)."""
    return gcp.compute.GlobalForwardingRule(
        logical(gcp.compute.GlobalForwardingRule, name),
        project=project,
        target=target,
        load_balancing_scheme="EXTERNAL_MANAGED",
        ip_protocol="TCP",
        ip_address=address,
        port_range=str(port),
        labels=labels,
        opts=opts,
    )


def _https_rule(
    name: str,
    opts: pulumi.ResourceOptions,
    project: pulumi.Input[str] | None,
    url_map: gcp.compute.URLMap,
    tls: TlsArgs,
    address: pulumi.Input[str],
) -> gcp.compute.GlobalForwardingRule:
    """A Google-managed certificate for the stack's domains, an SSL policy of TLS 1.2 and newer, the
    target HTTPS proxy holding both, and its forwarding rule on the HTTPS port at ``address``.

    Google provisions the certificate once every domain resolves to ``address`` (pulumi-gcp
    ``ManagedSslCertificate``: provisioning "can complete only when the domain name ... points to"
    the load balancer); until then HTTPS handshakes fail. ``MODERN`` with ``min_tls_version``
    ``TLS_1_2`` matches the ALB's TLS 1.3/1.2 policy (pulumi-gcp ``SSLPolicy``; the default,
    ``COMPATIBLE`` from ``TLS_1_0``, still accepts TLS 1.0)."""
    cert = gcp.compute.ManagedSslCertificate(
        logical(gcp.compute.ManagedSslCertificate, f"{name}-cert"),
        project=project,
        type="MANAGED",
        managed={"domains": list(tls["domains"])},
        # domains cannot change in place: an autonamed certificate is replaced by creating the new one
        # first, so the proxy is never left without one
        opts=opts,
    )
    policy = gcp.compute.SSLPolicy(
        logical(gcp.compute.SSLPolicy, f"{name}-tls"),
        project=project,
        profile="MODERN",
        min_tls_version="TLS_1_2",
        opts=opts,
    )
    proxy = gcp.compute.TargetHttpsProxy(
        logical(gcp.compute.TargetHttpsProxy, f"{name}-https-proxy"),
        project=project,
        url_map=url_map.id,
        ssl_certificates=[cert.id],
        ssl_policy=policy.id,
        opts=opts,
    )
    return _forwarding_rule(f"{name}-https-lb", opts, project, proxy.id, tls["port"], address)


def gcp_serving_group(
    name: str,
    parent: pulumi.Resource,
    *,
    project: pulumi.Input[str] | None,
    region: str,
    zone: str | None,
    template: dict[str, Any],
    serving: ServingArgs,
    egress: tuple[pulumi.Resource, ...] = (),
) -> GcpServing:
    """Instance template, health check, managed group, load balancer and autoscaler.

    The group waits for the nodes' way out (``egress``: Cloud NAT for replicas without an
    external address): a replica's startup script installs the container runtime where missing
    and pulls the server image."""
    opts = pulumi.ResourceOptions(parent=parent)
    group_opts = pulumi.ResourceOptions(parent=parent, depends_on=list(egress))
    port = serving["port"]
    delay = serving["initial_delay_seconds"]
    tmpl = gcp.compute.InstanceTemplate(
        logical(gcp.compute.InstanceTemplate, f"{name}-template"), project=project, region=region, opts=opts, **template
    )
    hc = gcp.compute.HealthCheck(
        logical(gcp.compute.HealthCheck, f"{name}-health"),
        project=project,
        check_interval_sec=serving["health_interval_seconds"],
        timeout_sec=HEALTH_TIMEOUT_SECONDS,
        healthy_threshold=serving["healthy_threshold"],
        unhealthy_threshold=serving["unhealthy_threshold"],
        http_health_check={"port": port, "request_path": serving["health_path"]},
        opts=opts,
    )
    versions: Any = [{"name": "primary", "instance_template": tmpl.self_link_unique}]
    healing: Any = {"health_check": hc.id, "initial_delay_sec": delay}
    named_ports: Any = [{"name": NAMED_PORT, "port": port}]
    policy: Any = {
        "min_replicas": serving["min_replicas"],
        "max_replicas": serving["max_replicas"],
        # a new replica serves nothing until its model is loaded
        "cooldown_period": delay,
        "mode": "ON",
        "load_balancing_utilization": {"target": serving["target_utilisation"]},
    }
    # The group names its instances base + "-" + 4 characters, in the project's zones.
    base = physical(gcp.compute.RegionInstanceGroupManager, name, "baseInstanceName")
    regional = serving["spread_zones"] or not zone
    manager: dict[str, Any] = {
        "project": project,
        "base_instance_name": base,
        "versions": versions,
        "named_ports": named_ports,
        "auto_healing_policies": healing,
    }
    if regional:
        group = _regional_group(parent, name, region, serving, manager, policy, group_opts)
    else:
        group = _zonal_group(parent, name, zone, manager, policy, group_opts)
    endpoint, address = _gcp_load_balancer(
        name, opts, project=project, instance_group=group, health_check=hc, serving=serving
    )
    return GcpServing(
        instance_group=group,
        endpoint=endpoint,
        address=address,
        base_instance_name=base,
        zone=None if regional else zone,
    )


def _regional_group(
    parent: pulumi.Resource,
    name: str,
    region: str,
    serving: ServingArgs,
    manager: dict[str, Any],
    policy: Any,
    group_opts: pulumi.ResourceOptions,
) -> pulumi.Output[str]:
    """A regional group spreading replicas (``BALANCED``) over the catalog's zones, and its autoscaler."""
    zones = list(serving.get("zones", []))
    if not zones:
        pulumi.log.warn(
            f"{name}: no zones are known for this shape in {region}; Compute Engine picks the serving group's "
            "zones, and zones without the GPU hold no replica",
            resource=parent,
        )
    mig = gcp.compute.RegionInstanceGroupManager(
        logical(gcp.compute.RegionInstanceGroupManager, f"{name}-mig"),
        region=region,
        distribution_policy_target_shape="BALANCED",
        distribution_policy_zones=zones or None,
        update_policy=cast(
            Any,
            {
                "type": "PROACTIVE",
                "minimal_action": "REPLACE",
                # a regional group's fixed surge is 0 or at least its zone count
                "max_surge_fixed": len(zones) or GCP_ZONES_PER_REGION,
                "max_unavailable_fixed": 0,
                "instance_redistribution_type": "NONE",
            },
        ),
        wait_for_instances=False,
        opts=group_opts,
        **manager,
    )
    gcp.compute.RegionAutoscaler(
        logical(gcp.compute.RegionAutoscaler, f"{name}-autoscaler"),
        project=manager["project"],
        region=region,
        target=mig.id,
        autoscaling_policy=policy,
        opts=pulumi.ResourceOptions(parent=parent),
    )
    return mig.instance_group


def _zonal_group(
    parent: pulumi.Resource,
    name: str,
    zone: str | None,
    manager: dict[str, Any],
    policy: Any,
    group_opts: pulumi.ResourceOptions,
) -> pulumi.Output[str]:
    """A zonal group in the one configured zone, and its autoscaler."""
    zmig = gcp.compute.InstanceGroupManager(
        logical(gcp.compute.InstanceGroupManager, f"{name}-mig"),
        zone=zone,
        update_policy=cast(
            Any,
            {"type": "PROACTIVE", "minimal_action": "REPLACE", "max_surge_fixed": 1, "max_unavailable_fixed": 0},
        ),
        wait_for_instances=False,
        opts=group_opts,
        **manager,
    )
    gcp.compute.Autoscaler(
        logical(gcp.compute.Autoscaler, f"{name}-autoscaler"),
        project=manager["project"],
        zone=zone,
        target=zmig.id,
        autoscaling_policy=policy,
        opts=pulumi.ResourceOptions(parent=parent),
    )
    return zmig.instance_group
