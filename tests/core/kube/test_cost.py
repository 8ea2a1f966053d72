"""Cluster fees as sourced data, and pools priced at their floor and ceiling."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from fullserver.catalog import load_catalog
from fullserver.catalog.network import NOT_SHAPES
from fullserver.kube import kube_plan
from fullserver.kube.cost import kube_cost
from fullserver.kube.fees import KubernetesFile, load_cluster_fees
from fullserver.plan import StackPlan
from fullserver.platform import Platform
from fullserver.profiles import load_profiles
from fullserver.rules import HOURS_PER_MONTH, disk_usd_month
from tests.core.test_stack_config import plan_offline, stack_config, write_stack

E2_STANDARD_4_US_CENTRAL1 = 0.13402
"""Cyclenerd pricing.yml 2026-07-30: compute.instance.e2-standard-4.cost.us-central1.hour 0.13402284."""


def test_the_fee_file_is_sourced_and_not_a_shape_file() -> None:
    fees = load_cluster_fees()
    assert "kubernetes.yaml" in NOT_SHAPES
    gke, eks = fees.fee("gcp"), fees.fee("aws")
    assert gke is not None and (gke.usd_hour, gke.free_tier_usd_month) == (0.10, 74.40)
    assert gke.free_tier_applies_to == ["zonal", "autopilot"]
    assert eks is not None and eks.usd_hour == 0.10
    extended = fees.fee("aws", "cluster-extended-support")
    assert extended is not None and extended.usd_hour == 0.60
    for fee in (gke, eks, extended):
        source = fees.sources[fee.source]
        assert source.url.startswith("https://") and source.as_of.year >= 2024


def test_a_fee_naming_no_source_is_refused() -> None:
    with pytest.raises(ValidationError, match="unknown source"):
        KubernetesFile.model_validate(
            {"sources": {}, "fees": [{"provider": "gcp", "item": "cluster", "usd_hour": 0.1, "source": "x"}]}
        )


def test_attached_pools_pay_no_cluster_fee(plans: dict[str, StackPlan]) -> None:
    spec = plans["serve-gcp-realtime"].spec
    profile = load_profiles()[spec.profile]
    attached = kube_cost(kube_plan(spec, Platform.GKE_GPU, cluster="prod"), spec, profile, load_catalog())
    assert attached.cluster.usd_hour == 0 and "existing cluster 'prod'" in attached.cluster.note
    created = kube_cost(kube_plan(spec, Platform.GKE_GPU), spec, profile, load_catalog())
    assert created.cluster.usd_hour == 0.10 and "not this regional one" in created.cluster.note
    assert created.cluster.sources == ("gke-pricing", "gcp-cyclenerd-machines", "gcp-cyclenerd-pricing")
    # Serving: 2 replicas at the floor, 8 at the ceiling, each a node at the on-demand rate.
    offer = load_catalog().offer(spec.offer)
    assert offer is not None
    node = offer.prices[spec.region].on_demand
    (pool,) = created.pools
    assert pool.min_usd_hour == pytest.approx(2 * node) and pool.max_usd_hour == pytest.approx(8 * node)
    # The created regional cluster's system pool: one e2-standard-4 in each of the region's 3 zones
    # (no zone planned), in the floor and the ceiling alike; the attached pool has none.
    assert spec.zone is None and created.cluster.system_usd_hour == pytest.approx(3 * E2_STANDARD_4_US_CENTRAL1)
    assert "3 x e2-standard-4" in created.cluster.system_note
    assert attached.cluster.system_usd_hour == 0 and attached.cluster.system_note == ""
    # ... and their three 50 GiB pd-balanced boot disks at $0.10 per GiB-month (Cyclenerd 2026-07-30).
    assert created.cluster.system_disk_usd_hour == pytest.approx(3 * 50 * 0.10 / HOURS_PER_MONTH, abs=1e-6)
    system = created.cluster.system_usd_hour + created.cluster.system_disk_usd_hour
    assert created.min_usd_hour == pytest.approx(0.10 + system + 2 * node)
    assert created.max_usd_month == pytest.approx(round((0.10 + system + 8 * node) * profile.cost.hours_per_month, 2))


def test_spot_and_fallback_pools_at_their_own_prices(plans: dict[str, StackPlan]) -> None:
    spec = plans["exp-aws-l4-spot"].spec
    cost = kube_cost(kube_plan(spec, Platform.EKS_GPU), spec, load_profiles()[spec.profile], load_catalog())
    offer = load_catalog().offer(spec.offer)
    assert offer is not None
    price = offer.prices[spec.region]
    spot, fallback = cost.pools
    # Each node's pod mounts its data volume (the VM's gp3 data disk): one per node, at the floor and ceiling.
    disk = spec.data_disk
    assert disk is not None and disk.kind == "gp3"
    gp3 = load_catalog().storage_price("aws", "gp3", spec.region)
    assert gp3 is not None
    volume = disk_usd_month(gp3, disk.size_gib, disk.iops or 0, disk.throughput_mbps or 0) / HOURS_PER_MONTH
    assert spot.volume_usd_hour == fallback.volume_usd_hour == pytest.approx(volume, abs=1e-6) and volume > 0
    assert price.spot is not None and spot.max_usd_hour == pytest.approx(price.spot + volume)
    assert fallback.max_usd_hour == pytest.approx(price.on_demand + volume)
    assert f"a {disk.size_gib} GiB gp3 data volume per node" in spot.note
    assert spot.min_usd_hour == fallback.min_usd_hour == 0  # elastic: nothing runs at the floor
    # Only the cluster and its system node group (one m6i.large, Karpenter's 2026-07-20 us-east-1 price).
    assert cost.cluster.system_usd_hour == pytest.approx(0.096) and "1 x m6i.large" in cost.cluster.system_note
    assert cost.min_usd_hour == pytest.approx(
        0.10 + 0.096 + 20 * 0.08 / HOURS_PER_MONTH, abs=1e-6
    )  # + its 20 GiB gp3 root
    assert cost.cluster.note.startswith("EKS cluster fee 0.10/h on standard support")


def test_a_tpu_pool_costs_its_slice(plans: dict[str, StackPlan]) -> None:
    plan_ = plans["train-tpu-v5p-slice"]
    spec = plan_.spec
    cost = kube_cost(
        kube_plan(spec, Platform.GKE_TPU, cluster="c"), spec, load_profiles()[spec.profile], load_catalog()
    )
    (pool,) = cost.pools
    # 16 nodes, each a sixteenth of the slice: the slice's hourly rate, as the VM estimate prices it.
    assert pool.max_usd_hour == pytest.approx(plan_.cost.compute_usd_hour)


def test_a_spot_node_pool_is_priced_at_expected_cost_because_its_fallback_pool_is_built() -> None:
    """Compute Engine VMs alone get no on-demand fallback (priced at spot); a GKE spot pool gets an
    on-demand pool beside it, so the pool is priced like AWS spot with fallback."""
    from pathlib import Path

    from fullserver.plan import plan_paths

    stacks = Path(__file__).resolve().parents[3] / "stacks"
    (plan,) = plan_paths([stacks / "Pulumi.gke-gpu-attach.yaml"])
    compute = next(line for line in plan.cost.lines if line.item == "compute")
    assert compute.note.startswith("expected 2.60/h: 80% of hours spot 2.25/h, 20% on-demand fallback 4.00/h")
    assert not any("no on-demand fallback is built" in w for w in plan.warnings)


def test_a_created_zonal_gke_cluster_s_system_pool_is_one_node(plans: dict[str, StackPlan]) -> None:
    """gke-tpu-slice's plan has a zone: its system pool is one e2-standard-4 there, all month."""
    spec = plans["gke-tpu-slice"].spec
    assert spec.kube is not None and spec.zone == "us-central1-a"
    cost = kube_cost(spec.kube, spec, load_profiles()[spec.profile], load_catalog())
    assert cost.cluster.system_usd_hour == pytest.approx(E2_STANDARD_4_US_CENTRAL1)
    # its one boot disk
    assert cost.cluster.system_disk_usd_hour == pytest.approx(50 * 0.10 / HOURS_PER_MONTH, abs=1e-6)
    assert cost.min_usd_hour == pytest.approx(
        0.10 + E2_STANDARD_4_US_CENTRAL1 + cost.cluster.system_disk_usd_hour + sum(p.min_usd_hour for p in cost.pools)
    )


def test_cpu_only_machines_are_priced_but_never_offers() -> None:
    """The system pools' machine types are in the catalog with their sourced prices, but are no offer, so
    sizing (which ranks offers only) never picks them for an accelerator request."""
    catalog = load_catalog()
    for name, region, usd in (("e2-standard-4", "us-central1", 0.13402), ("m6i.large", "us-east-1", 0.096)):
        price = catalog.machine_price(name, region)
        assert price is not None and price.on_demand == usd
        assert catalog.offer(name) is None
        assert all(o.machine_type != name for o in catalog.offers)
    assert catalog.machine_price("g2-standard-4", "us-central1") is None  # an accelerator shape is an offer


# --- every disk and NAT charge the graph builds (issue 33, item 8) ----------------------------------


def _lines(plan: StackPlan) -> dict[str, tuple[float, str]]:
    return {line.item: (line.usd_month, line.note) for line in plan.cost.lines}


def test_serve_gke_l4_bills_its_system_pools_disks_and_every_vm_behind_cloud_nat(
    plans: dict[str, StackPlan],
) -> None:
    """The component builds three e2-standard-4 system nodes with 50 GiB pd-balanced boot disks
    (``gke.SYSTEM_POOL_DISK_GIB``/``_KIND``), and Cloud NAT bills each VM that uses it: the two
    serving nodes and the three system nodes, 5 (8 + 3 at the peak), not 2."""
    got = _lines(plans["serve-gke-l4"])
    usd, note = got["system pool disks"]
    assert usd == 15.00 and note.startswith("3 x 50 GiB pd-balanced at 0.1/GiB-month")
    assert "(catalog: gcp-cyclenerd-pricing, us-central1), all month" in note
    usd, note = got["Cloud NAT"]
    assert usd == round(5 * 0.0014 * HOURS_PER_MONTH, 2) == 5.11
    assert note.startswith("5 VM(s) x 0.0014/h") and note.endswith("(catalog: gcp-cloud-nat)")
    assert "catalog: gcp-cyclenerd-machines" in got["system pool"][1]
    cost = plans["serve-gke-l4"].cost
    assert cost.usd_month == 2197.54 and cost.usd_month_peak == 6855.51  # was 2,179.47 and 6,837.45


def test_the_eks_system_nodes_root_volume_is_billed(plans: dict[str, StackPlan]) -> None:
    usd, note = _lines(plans["eks-gpu-cluster"])["system pool disks"]
    assert usd == 1.60 and note == (
        "1 x 20 GiB gp3 at 0.08/GiB-month (catalog: aws-infracost-ebs-golden, us-east-1), all month"
    )
    assert _lines(plans["eks-gpu-cluster"])["NAT gateway"][1].endswith("(catalog: aws-vpc-nat)")


def test_an_ephemeral_clusters_always_on_parts_bill_the_stacks_paid_hours(tmp_path: Path) -> None:
    """experimentation is ephemeral: its created EKS cluster, system node, root volume and NAT
    gateway exist while the stack does, so each bills the paid hours, none all month."""
    plan = plan_offline(
        write_stack(
            tmp_path,
            "eph",
            stack_config("exp-aws-l4-spot", platform="eks-gpu", controlPlaneSourceRanges=["198.18.0.0/24"]),
        )
    )
    paid = plan.cost.paid_hours
    assert 0 < paid < HOURS_PER_MONTH
    got = _lines(plan)
    hours = f"{paid:.0f} h: the stack's paid hours"
    assert got["cluster fee"][0] == pytest.approx(0.10 * paid, abs=0.01)
    assert got["cluster fee"][1] == f"EKS cluster fee 0.10/h on standard support, {hours}"
    assert got["system pool"][0] == pytest.approx(0.096 * paid, abs=0.01) and got["system pool"][1].endswith(hours)
    assert got["system pool disks"][0] == pytest.approx(20 * 0.08 * paid / HOURS_PER_MONTH, abs=0.01)
    assert got["NAT gateway"][0] == pytest.approx(0.045 * paid, abs=0.01)
    assert got["public IPv4 addresses"][0] == pytest.approx(0.005 * paid, abs=0.01)
