"""The quotas a planned environment needs: what ``plan`` lists and ``fullserver quota`` checks.

Quota is the usual reason a first ``pulumi up`` of accelerators fails, late (after the network
and IAM exist) and with a code nobody recognises: a new AWS account has 0 vCPUs of P instances,
most GCP projects 0 GPUs of most models. The plan already knows every node's shape, count,
region and pricing, so it names each quota with the amount the stack can reach at the most
(every node of the serving group's maximum replicas). Which quotas a platform counts against is
that platform's rule (``PlatformRules.quotas``); their names, codes and units are sourced data
(``catalog/data/quotas.yaml``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from fullserver.catalog import Catalog, Same, load_catalog
from fullserver.catalog.network import DATA_DIR, QUOTAS_FILE
from fullserver.errors import InputError
from fullserver.kube.pool import KubePlan
from fullserver.platform import Platform, PricingModel
from fullserver.platforms import pool_member, rules_for
from fullserver.platforms.quota import Pool, QuotaAsk, QuotaNeed, QuotaTable, SystemMachines
from fullserver.sources import check_cited
from fullserver.spec import EnvironmentSpec
from fullserver.yamlio import parse, read_yaml


@functools.lru_cache(maxsize=4)
def load_quota_table(path: Path = DATA_DIR / QUOTAS_FILE) -> QuotaTable:
    """The quota data file, checked whole: every quota names a known source, every rule a known quota."""
    table = parse(QuotaTable, read_yaml(path), str(path))
    for i, path_ in enumerate(table.capacity_paths):
        check_cited(f"{path}: capacity_paths[{i}]", path_.source, table.sources)
    for key, quota in table.quotas.items():
        check_cited(f"{path}: quotas.{key}", quota.source, table.sources)
    named = [
        *(k for g in table.aws_vcpu_groups.values() for k in (g.on_demand, g.spot) if k),
        *(
            k
            for g in table.aws_vcpu_groups.values()
            for k in [*g.spot_by_family.values(), *g.capacity_block_by_family.values()]
        ),
        *table.aws_storage.values(),
        *table.aws_load_balancers.values(),
        *table.aws_other.values(),
        *table.gcp_disks.values(),
        *(k for g in table.gcp_gpus.values() for k in (g.on_demand, g.preemptible)),
        *table.gcp_cpus.values(),
        *table.gcp_other.values(),
        *(k for g in table.gke_tpu_generations.values() for k in (g.on_demand, g.preemptible)),
        *table.eks_other.values(),
        *(
            k
            for g in table.tpu_generations.values()
            for k in (g.zone, g.region, g.preemptible_zone, g.preemptible_region)
            if k
        ),
    ]
    unknown = sorted({k for k in named if k not in table.quotas})
    if unknown:
        raise InputError(str(path), f"rules name unknown quota(s) {', '.join(unknown)}", "add them under quotas")
    bad_series = sorted(s for s, gpu in table.gcp_gpu_series.items() if gpu not in table.gcp_gpus)
    if bad_series:
        raise InputError(str(path), f"gcp_gpu_series name no gcp_gpus entry: {', '.join(bad_series)}", "add it")
    return table


def most_machines(spec: EnvironmentSpec) -> int:
    """Machines at the most: every node of the serving group's maximum replicas; a TPU slice,
    whatever its hosts, is one resource; a node-pool platform's pools, each at its maximum."""
    if spec.kube is not None:
        return spec.kube.max_nodes
    nodes = 1 if spec.tpu is not None else spec.nodes
    return nodes * (spec.serving.max_replicas if spec.serving else 1)


def _disks(spec: EnvironmentSpec) -> dict[str, float]:
    disks: dict[str, float] = {}
    if spec.boot_disk_kind and rules_for(spec.platform).boot_disk_sized:
        disks[spec.boot_disk_kind] = float(spec.boot_disk_gib)
    if spec.data_disk is not None:
        disks[spec.data_disk.kind] = disks.get(spec.data_disk.kind, 0) + spec.data_disk.size_gib
    return disks


def ask_of(spec: EnvironmentSpec, catalog: Catalog | None = None) -> QuotaAsk:
    """What the environment asks of its account, from its spec; a node-pool platform's from its
    pools (``kube_ask``), with the system pool's vCPUs from ``catalog``."""
    machines = most_machines(spec)
    bill = spec.billables
    ask = QuotaAsk(
        shape=spec.offer if spec.tpu is None else spec.tpu.accelerator_type,
        region=spec.region,
        zone=spec.zone,
        machines=machines,
        vcpus=spec.vcpus,
        accelerator=spec.accelerator,
        accelerators=spec.accelerator_count,
        spot=spec.spot,
        capacity_block=spec.capacity_block,
        disk_gib=_disks(spec),
        local_ssds=spec.local_nvme_disks,
        local_ssd_gib=spec.local_nvme_disk_gib,
        node_public_ips=machines if spec.network.public_ip and spec.tpu is None else 0,
        nat_public_ips=bill.nat_public_ips if bill is not None else 0,
        nat_gateways=1 if bill is not None and bill.nat else 0,
        load_balancer=bill.load_balancer if bill is not None else "",
        reservation=spec.reservation is not None,
    )
    return ask if spec.kube is None else kube_ask(ask, spec.kube, catalog)


def kube_ask(ask: QuotaAsk, kube: KubePlan, catalog: Catalog | None) -> QuotaAsk:
    """A node-pool stack's ask: the pools' nodes (each pool at its maximum, Spot or not) on their
    machine type, its local SSDs, and, for a created cluster, the cluster and its system pool."""
    system = None
    if kube.create_cluster:
        member = pool_member(kube.provider)
        shape, nodes = member.system_pool(kube.zone)
        vcpus = (catalog or load_catalog()).machine_vcpus.get(shape, 0)
        kind, gib = member.system_disk
        system = SystemMachines(shape, nodes, vcpus, kind, gib)
    return replace(
        ask,
        shape=kube.machine_type,
        slice_type=ask.shape if kube.tpu_slice_topology else "",
        accelerators=kube.accelerators_per_node,
        # flex-start nodes draw on the preemptible quotas as Spot ones do (gcp-flex-start)
        pools=tuple(Pool(p.max_nodes, p.spot or kube.flex_start) for p in kube.pools),
        spot=any(p.spot for p in kube.pools) or kube.flex_start,
        local_ssds=kube.local_ssd_count,
        # a created cluster's nodes are private; an attached pool's follow its cluster, unknown here
        node_public_ips=0,
        system=system,
        cluster=kube.create_cluster,
        network=kube.create_cluster,
    )


def quotas_for(
    spec: EnvironmentSpec, table: QuotaTable | None = None, catalog: Catalog | None = None
) -> list[QuotaNeed]:
    """Each quota the environment needs, with its amount at the most (its platform's rule), over
    every shape of the balanced set its cloud may launch (``set_quotas``)."""
    rule, table = rules_for(spec.platform).quotas, table or load_quota_table()
    ask = ask_of(spec, catalog)
    held = spec.capacity
    if held is None or not held.used or len(held.members) < 2:
        return rule(ask, table)
    return set_quotas([rule(replace(ask, shape=m.offer, vcpus=m.vcpus), table) for m in held.members])


def set_quotas(per_member: list[list[QuotaNeed]]) -> list[QuotaNeed]:
    """The quotas of a balanced set: every node may run on any member, so each quota any member
    counts against is needed at the most any member needs of it (not their sum: the nodes are
    one count), in the order first named; its reason names each member that needs it."""
    out: dict[tuple[str, str, str], QuotaNeed] = {}
    for needs in per_member:
        for n in needs:
            key = (n.service, n.code, n.scope)
            seen = out.get(key)
            if seen is None:
                out[key] = n
            elif n.why not in seen.why:
                out[key] = replace(seen, amount=max(seen.amount, n.amount), why=f"{seen.why}, or {n.why}")
    return list(out.values())


class CapacityAdvice(BaseModel):
    """One way to get the accelerators when their quota starts at 0 (``plan --json`` carries it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str
    how: str
    priced: str | None = None
    """The catalog price it is billed at (``on-demand``, ``spot``); ``None``: its own terms."""
    usd_hour: float | None = None
    """That price per ``offer``-hour, where the catalog has it."""
    offer: str
    source: str | None = None


def capacity_paths(
    spec: EnvironmentSpec, needs: list[QuotaNeed], catalog: Catalog, table: QuotaTable | None = None
) -> list[CapacityAdvice]:
    """The capacity paths that fit the profile's pricing, when a quota the stack needs starts at 0
    in a new account: a first ``pulumi up`` there fails on quota, so the plan says what to ask for
    before it does (quota increases take days; some paths draw on another, easier quota). They
    depend on the offer, region, platform and pricing alone: one answer per catalog (``_paths``)."""
    if not any(n.new_account_zero for n in needs):
        return []
    asked = _PathQuestion(Same(table or load_quota_table()), spec.offer, spec.region, spec.platform, spec.pricing)
    return list(catalog.answer(_paths, asked))


@dataclass(frozen=True, slots=True)
class _PathQuestion:
    """What the capacity paths of a stack depend on (``capacity_paths``)."""

    table: Same[QuotaTable]
    offer: str
    region: str
    platform: Platform
    pricing: PricingModel


def _paths(q: _PathQuestion, catalog: Catalog) -> tuple[CapacityAdvice, ...]:
    table = q.table.of
    offer = catalog.offer(q.offer)
    price = offer.prices.get(q.region) if offer is not None else None
    family = offer.family if offer is not None else ""  # the family a Capacity Block quota names
    out = []
    platform, pricing = q.platform.value, q.pricing.value
    for path in table.capacity_paths:
        if platform not in path.platforms or pricing not in path.fits:
            continue
        if path.families and family not in path.families:
            continue
        usd = None
        if price is not None and path.priced is not None:
            usd = price.on_demand if path.priced == "on-demand" else price.spot
        url = table.sources[path.source].url if path.source else None
        out.append(
            CapacityAdvice(path=path.name, how=path.how, priced=path.priced, usd_hour=usd, offer=q.offer, source=url)
        )
    return tuple(out)
