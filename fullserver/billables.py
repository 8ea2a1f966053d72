"""The network resources an environment is billed for beside its machines, decided once here.

Components used to decide these on their own (a NAT gateway when nodes had no public address, a
load balancer's addresses) and the plan never priced them. Now the core decides them from the
spec (``decide``), the spec carries them (``EnvironmentSpec.billables``), the components build
exactly what it says, and ``network_lines`` prices each one from the network catalog
(``fullserver/catalog/data/network.yaml``) so ``fullserver plan``'s total is the bill:

* NAT: nodes without a public address reach package mirrors and model hubs through one NAT
  gateway with an Elastic IP (AWS) or Cloud NAT with one automatically allocated address (GCP,
  billed per VM using it, plus the address).
* Public IPv4 addresses: every node that has one, the NAT's, and an internet-facing ALB's (one per
  zone it spans); each is billed per address-hour on both clouds.
* Serving: the load balancer (an ALB with its LCUs, or a global forwarding rule with the data it
  processes) and its health check (no charge on either cloud's pricing page: a line says so).

Data processed is priced from ``fullserver:egressGbMonth`` (the responses the load balancer
carries out); data a NAT processes (container images and model weights pulled at each replica
start) depends on pulls the plan cannot know, and the line's note says so with its rate.
"""

from __future__ import annotations

from types import ModuleType

from fullserver.catalog import Catalog
from fullserver.catalog.network import Item, NetworkPrices, load_network_prices
from fullserver.cost import CostLine
from fullserver.errors import InputError
from fullserver.platform import AcceleratorKind
from fullserver.platforms import aws as aws_platform
from fullserver.platforms import gcp as gcp_platform
from fullserver.rules import HOURS_PER_MONTH
from fullserver.serving import DEFAULT_MODEL, MAX_INITIAL_DELAY_SECONDS, endpoint_problem, model_server, serving_spec
from fullserver.spec import Billables, EnvironmentSpec
from fullserver.workload import CONFIG_NAMESPACE, ServingConfig, Workload

CLOUDS: dict[str, ModuleType] = {"aws": aws_platform, "gcp": gcp_platform}
"""The platform module that answers, per cloud provider, which load balancers it builds."""


def decide(spec: EnvironmentSpec) -> Billables:
    """The billed network resources of a spec (module docstring); none for bare metal."""
    cloud = CLOUDS.get(spec.provider)
    if cloud is None:
        return Billables()
    n = spec.machines
    public = spec.network.public_ip
    lb, lb_ips, checks, zones = "", 0, 0, 1
    # the spot group's fallback alarm (components.aws_gpu), two per target-tracking policy
    alarms = 1 if cloud is aws_platform and spec.spot and spec.serving is None else 0
    if spec.serving is not None:
        scheme = spec.endpoint.load_balancer if spec.endpoint else spec.serving.load_balancer
        lb, checks = cloud.LOAD_BALANCER, 1
        if cloud is aws_platform:
            zones = aws_platform.SERVING_ZONES if spec.serving.spread_zones else aws_platform.LB_MIN_ZONES
            lb_ips = zones if scheme == "external" else 0
            alarms += 2
    elif cloud is aws_platform and spec.spot and not spec.network.compact_placement:
        # A spot group launches in whichever zone has spare capacity: subnets in every zone that
        # offers the type (up to SERVING_ZONES) widen its pools (a cluster placement group keeps one).
        zones = aws_platform.SERVING_ZONES
    # Tier_1 only where Compute Engine accepts it, and only for multi-node environments, where
    # node-to-node bandwidth is what the profile pays for.
    tier1 = cloud is gcp_platform and spec.nodes > 1 and gcp_platform.tier1_eligible(spec.machine_type, spec.vcpus)
    return Billables(
        tier1=tier1,
        machines=n,
        nat=not public,
        node_public_ips=n if public else 0,
        nat_public_ips=0 if public else 1,
        load_balancer=lb,
        lb_public_ips=lb_ips,
        health_checks=checks,
        alarms=alarms,
        zones=zones,
    )


def complete_spec(spec: EnvironmentSpec, workload: Workload, catalog: Catalog) -> EnvironmentSpec:
    """The sized spec with its serving path (profile + ``fullserver:serving``, zones from the
    catalog) and its billables.

    A load-balancer scheme the platform does not build is refused here, at plan time, naming the
    profile field.
    """
    endpoint = None
    warnings = list(spec.warnings)
    if spec.serving is not None:
        cloud = CLOUDS.get(spec.provider)
        schemes: tuple[str, ...] = cloud.LOAD_BALANCER_SCHEMES if cloud is not None else ()
        if spec.serving.load_balancer not in schemes:
            raise InputError(
                f"profiles/{spec.profile}.yaml: serving.load_balancer",
                f"{spec.platform.value} builds no {spec.serving.load_balancer} load balancer "
                f"(it builds: {', '.join(schemes) or 'none'})",
                "use a profile whose serving.load_balancer the platform builds, or another platform",
            )
        accelerator = catalog.accelerators.get(spec.accelerator) if spec.accelerator else None
        if accelerator is not None and accelerator.kind is not AcceleratorKind.GPU:
            # the replicas run a CUDA container (``docker run --gpus all``) once ``nvidia-smi`` sees the GPUs
            raise InputError(
                f"{CONFIG_NAMESPACE}:accelerator",
                f"{spec.accelerator} ({accelerator.kind.value}) is no GPU, and a serving group's model server "
                "runs on NVIDIA GPUs (vLLM's CUDA image with the NVIDIA container toolkit)",
                "serve on a GPU (e.g. L4), or use a profile without serving",
            )
        cfg = workload.serving or ServingConfig()
        load_minutes = cfg.load_minutes or spec.serving.model_load_minutes
        if load_minutes * 60 > MAX_INITIAL_DELAY_SECONDS:
            where = (
                "fullserver:serving.loadMinutes"
                if cfg.load_minutes
                else f"profiles/{spec.profile}.yaml: serving.model_load_minutes"
            )
            raise InputError(
                where,
                f"{load_minutes} minutes is longer than the clouds wait before judging a new replica "
                f"({MAX_INITIAL_DELAY_SECONDS // 60} minutes: GCP autohealing, the AWS instance warmup)",
                f"at most {MAX_INITIAL_DELAY_SECONDS // 60}: cache the weights (a larger local disk) or serve a smaller model",
            )
        server = model_server(
            model=cfg.model,
            image=cfg.image,
            extra_args=list(cfg.args),
            port=cfg.port,
            health_path=cfg.health_path,
            gpus=spec.accelerator_count,
            token_secret=cfg.token_secret,
            api_key_secret=cfg.api_key_secret,
        )
        problem = endpoint_problem(spec.serving.load_balancer, server.api_key_secret)
        if problem is not None:
            raise InputError(f"{CONFIG_NAMESPACE}:serving.apiKeySecret", *problem)
        offer = catalog.offer(spec.offer)
        zones = offer.zones_in(spec.region) if offer else []
        endpoint = serving_spec(
            spec.serving,
            server,
            requests_per_second=cfg.requests_per_second,
            load_minutes=cfg.load_minutes,
            zones=zones,
        )
        if server.default_model:
            warnings.append(
                f"serving the default model {DEFAULT_MODEL} (a smoke test): set fullserver:serving.model "
                "to the model to serve"
            )
    with_endpoint = spec.model_copy(update={"endpoint": endpoint, "warnings": warnings})
    return with_endpoint.model_copy(update={"billables": decide(with_endpoint)})


def _hourly(prices: NetworkPrices, spec: EnvironmentSpec, item: Item, what: str, warnings: list[str]) -> float | None:
    p = prices.price(spec.provider, item, spec.region)
    if p is None or p.usd_hour is None:
        warnings.append(f"no {what} price for {spec.region} in the network catalog: {what} not priced")
        return None
    return p.usd_hour


def network_lines(spec: EnvironmentSpec, workload: Workload, share: float, warnings: list[str]) -> list[CostLine]:
    """A cost line per billed network resource of ``spec`` (``share``: the part of the month it runs)."""
    b = spec.billables or decide(spec)
    if spec.provider not in CLOUDS:
        return []
    prices = load_network_prices()
    hours = HOURS_PER_MONTH * share
    lines: list[CostLine] = []
    aws = spec.provider == "aws"

    def add(item: str, usd: float, note: str) -> None:
        lines.append(CostLine(item=item, usd_month=round(usd, 2), note=note))

    if b.nat:
        if aws:
            rate = _hourly(prices, spec, "nat-gateway", "NAT gateway", warnings)
            data = prices.price("aws", "nat-gateway-data", spec.region)
            if rate is not None:
                per_gb = f"; {data.usd_per_gb}/GB processed (image and model pulls) not estimated" if data else ""
                add("NAT gateway", rate * hours, f"1 x {rate}/h{per_gb}")
                if b.zones > 1:
                    # One gateway lives in one zone: its outage cuts every other zone's egress.
                    warnings.append(
                        f"one NAT gateway serves subnets in {b.zones} zones: if its zone fails, nodes in the others "
                        f"lose internet egress (image pulls, Session Manager); a gateway per zone would cost "
                        f"{rate * hours * (b.zones - 1):,.2f} USD/month more"
                    )
        else:
            rate = _hourly(prices, spec, "cloud-nat-vm", "Cloud NAT", warnings)
            limit = prices.price("gcp", "cloud-nat-vm", spec.region)
            most = limit.max_units if limit is not None else None
            if rate is not None and most is not None and b.machines > most:
                warnings.append(f"Cloud NAT for {b.machines} VMs: the network catalog prices gateways of up to {most}")
            elif rate is not None:
                data = prices.price("gcp", "cloud-nat-data", spec.region)
                per_gb = (
                    f"; {data.usd_per_gb}/{data.unit} processed (image and model pulls) not estimated" if data else ""
                )
                add("Cloud NAT", rate * b.machines * hours, f"{b.machines} VM(s) x {rate}/h{per_gb}")
    ips = b.node_public_ips + b.nat_public_ips + b.lb_public_ips
    if ips:
        spot_nodes = spec.spot and not aws and b.node_public_ips
        usd, parts = 0.0, []
        node_item: Item = "public-ipv4-spot" if spot_nodes else "public-ipv4"
        addresses: list[tuple[int, Item, str]] = [
            (b.node_public_ips, node_item, "node"),
            (b.nat_public_ips, "public-ipv4", "NAT"),
            (b.lb_public_ips, "public-ipv4", "load balancer"),
        ]
        for count, address, what in addresses:
            if not count:
                continue
            rate = _hourly(prices, spec, address, "public IPv4 address", warnings)
            if rate is not None:
                usd += rate * count * hours
                parts.append(f"{count} {what} x {rate}/h")
        if parts:
            add("public IPv4 addresses", usd, ", ".join(parts))
    gb = float(workload.egress_gb_month)
    if b.load_balancer == "alb":
        rate = _hourly(prices, spec, "alb", "Application Load Balancer", warnings)
        lcu = prices.price("aws", "alb-lcu", spec.region)
        if rate is not None and lcu is not None and lcu.usd_hour is not None and lcu.gb_per_unit_hour:
            lcu_usd = gb / lcu.gb_per_unit_hour * lcu.usd_hour
            add(
                "load balancer",
                rate * hours + lcu_usd,
                f"ALB {rate}/h + {gb:.0f} GB processed = {gb / lcu.gb_per_unit_hour:.0f} LCU-hours x {lcu.usd_hour}",
            )
        elif rate is not None:
            warnings.append(f"no ALB LCU price for {spec.region} in the network catalog: LCUs not priced")
            add("load balancer", rate * hours, f"ALB {rate}/h (LCUs not priced)")
    elif b.load_balancer == "gcp-global-external":
        rate = _hourly(prices, spec, "forwarding-rule", "forwarding rule", warnings)
        data = prices.price("gcp", "lb-data", spec.region)
        if rate is not None:
            if data is None:
                warnings.append(f"no load-balancer data price for {spec.region}: data processed not priced")
                add("load balancer", rate * hours, f"1 global forwarding rule x {rate}/h (data not priced)")
            else:
                add(
                    "load balancer",
                    rate * hours + gb * data.usd_per_decimal_gb,
                    f"1 global forwarding rule x {rate}/h + {gb:.0f} GB processed x {data.usd_per_gb}/{data.unit}",
                )
    if b.health_checks:
        check: Item = "alb-health-check" if aws else "health-check"
        p = prices.price(spec.provider, check, spec.region)
        if p is not None:
            add("health checks", (p.usd_hour or 0) * b.health_checks * hours, f"{b.health_checks}: {p.free or ''}")
    if b.tier1:
        warnings.append("Tier_1 networking is not in the network catalog: its per-VM hours are not priced")
    if b.alarms:
        p = prices.price(spec.provider, "cloudwatch-alarm", spec.region)
        if p is None or p.usd_month is None:
            warnings.append(f"no CloudWatch alarm price for {spec.region} in the network catalog: alarms not priced")
        else:
            add("CloudWatch alarms", p.usd_month * b.alarms * share, f"{b.alarms} x {p.usd_month}/month")
    return lines
