"""Node-pool stacks name every quota their pools and their cluster draw on (issue 33, item 3), and
each accelerator counts against the provider's own metric (issue 34, item 4)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from fullserver.plan import StackPlan, plan_paths
from fullserver.platforms.quota import Pool, QuotaAsk, eks, gke, tpu
from fullserver.quotas import load_quota_table, quotas_for

STACKS = Path(__file__).resolve().parents[2] / "stacks"
TABLE = load_quota_table()
KUBE_STACKS = ("eks-gpu-cluster", "gke-gpu-attach", "gke-tpu-slice", "serve-gke-l4")


@pytest.fixture(scope="module")
def plans() -> dict[str, StackPlan]:
    return {p.stack: p for p in plan_paths([STACKS / f"Pulumi.{s}.yaml" for s in KUBE_STACKS])}


def needs(plan: StackPlan) -> dict[str, tuple[str, float, str]]:
    return {q.code: (q.scope, q.amount, q.unit) for q in plan.quotas}


@pytest.mark.parametrize(
    ("stack", "expected"),
    [
        (
            # 2 p5.48xlarge (reserved: On-Demand P vCPUs), one m6i.large system node (Standard), and
            # what the created cluster's network builds
            "eks-gpu-cluster",
            {
                "L-417A185B": ("us-east-1", 384, "vCPUs"),
                "L-1216C47A": ("us-east-1", 2, "vCPUs"),
                "L-1194D53C": ("us-east-1", 1, "clusters"),
                "L-7A658B76": ("us-east-1", 0.59, "TiB"),  # 2 x 300 GiB gp3 root volumes
                "L-0263D0A3": ("us-east-1", 1, "addresses"),
                "L-FE5A380F": ("us-east-1", 1, "NAT gateways"),
                "L-F678F1CE": ("us-east-1", 1, "VPCs"),
                "L-A4707A72": ("us-east-1", 1, "internet gateways"),
            },
        ),
        (
            # a spot pool and an on-demand fallback pool of one g2-standard-48 each, on an attached
            # cluster: no system pool, no network, no cluster of its own
            "gke-gpu-attach",
            {
                "PREEMPTIBLE_NVIDIA_L4_GPUS": ("us-central1", 4, "GPUs"),
                "NVIDIA_L4_GPUS": ("us-central1", 4, "GPUs"),
                "GPUS_ALL_REGIONS": ("global", 8, "GPUs"),
                "CPUS_ALL_REGIONS": ("global", 96, "vCPUs"),
                "SSD_TOTAL_GB": ("us-central1", 1504, "GB"),  # 2 x (200 GiB boot + 500 GiB data volume)
                "PREEMPTIBLE_LOCAL_SSD_GB": ("us-central1", 1611, "GB"),
                "LOCAL_SSD_TOTAL_GB": ("us-central1", 1611, "GB"),
            },
        ),
        (
            # four ct5lp-hightpu-4t hosts of a v5litepod-16 on Compute Engine's TPU metric, one
            # e2-standard-4 system node in the pool's zone, Cloud NAT's address
            "gke-tpu-slice",
            {
                "TPU_LITE_PODSLICE_V5": ("us-central1", 16, "chips"),
                "CPUS": ("us-central1", 4, "vCPUs"),
                "CPUS_ALL_REGIONS": ("global", 4, "vCPUs"),
                "SSD_TOTAL_GB": ("us-central1", 1343, "GB"),  # 4 x 300 GiB + 50 GiB system boot disk
                "IN_USE_ADDRESSES": ("us-central1", 1, "addresses"),
            },
        ),
        (
            # 8 replicas at the most of g2-standard-12, three e2-standard-4 system nodes (regional)
            "serve-gke-l4",
            {
                "NVIDIA_L4_GPUS": ("us-central1", 8, "GPUs"),
                "GPUS_ALL_REGIONS": ("global", 8, "GPUs"),
                "CPUS": ("us-central1", 12, "vCPUs"),
                "CPUS_ALL_REGIONS": ("global", 108, "vCPUs"),
                "SSD_TOTAL_GB": ("us-central1", 1451, "GB"),  # 8 x 150 GiB + 3 x 50 GiB
                "LOCAL_SSD_TOTAL_GB": ("us-central1", 3222, "GB"),
                "IN_USE_ADDRESSES": ("us-central1", 1, "addresses"),
            },
        ),
    ],
)
def test_each_node_pool_stack_names_every_quota_it_draws_on(
    plans: dict[str, StackPlan], stack: str, expected: dict[str, tuple[str, float, str]]
) -> None:
    assert needs(plans[stack]) == expected


def test_the_system_pools_cpus_are_named_with_the_pools_they_share_a_quota_with(plans: dict[str, StackPlan]) -> None:
    [all_cpus] = [q for q in plans["serve-gke-l4"].quotas if q.code == "CPUS_ALL_REGIONS"]
    assert all_cpus.why == "8 x g2-standard-12 x 12 vCPUs; 3 x e2-standard-4 x 4 vCPUs"


def test_a_spot_eks_group_counts_against_spot_and_its_fallback_group_against_on_demand() -> None:
    ask = QuotaAsk(
        shape="g6.4xlarge",
        region="us-east-1",
        zone=None,
        machines=6,
        vcpus=16,
        accelerator="L4",
        accelerators=1,
        spot=True,
        pools=(Pool(4, True), Pool(2, False)),
    )
    assert [(q.code, q.amount) for q in eks.vcpu_quotas(ask, TABLE)] == [("L-3819A6DF", 64), ("L-DB2E81BA", 32)]


def test_a_gke_tpu_pool_on_a_reservation_needs_no_tpu_quota() -> None:
    ask = QuotaAsk(
        shape="ct5lp-hightpu-4t",
        region="us-central1",
        zone="us-central1-a",
        machines=4,
        vcpus=112,
        accelerator="TPU-v5e",
        accelerators=4,
        spot=False,
        slice_type="v5litepod-16",
    )
    assert [q.code for q in gke.tpu_chip_quotas(ask, TABLE)] == ["TPU_LITE_PODSLICE_V5"]
    assert [q.code for q in gke.tpu_chip_quotas(replace(ask, spot=True), TABLE)] == ["PREEMPTIBLE_TPU_LITE_PODSLICE_V5"]
    assert gke.tpu_chip_quotas(replace(ask, reservation=True), TABLE) == []
    assert gke.tpu_chip_quotas(replace(ask, slice_type="v6e-16"), TABLE) == []  # no sourced metric: no guess


# --- each accelerator on the provider's own metric (issue 34, item 4) ------------------------------


def test_an_a3_mega_counts_its_h100s_on_the_mega_metric_not_the_a3_high_one(tmp_path: Path) -> None:
    """Sizing picks A3 High for these H100s; the same plan on A3 Mega machines names Mega quotas."""
    stack = tmp_path / "Pulumi.a3.yaml"
    stack.write_text(
        "config:\n  gcp:project: ml-project\n  fullserver:profile: scale-training\n  fullserver:platform: gcp-gpu\n"
        "  fullserver:region: us-central1\n  fullserver:accelerator: H100-80GB\n  fullserver:acceleratorCount: 8\n"
        "  fullserver:nodes: 2\n  fullserver:owner: t\n"
    )
    [plan] = plan_paths([stack])
    assert plan.spec.offer == "a3-highgpu-8g" and "NVIDIA_H100_GPUS" in needs(plan)
    mega = plan.spec.model_copy(update={"offer": "a3-megagpu-8g", "machine_type": "a3-megagpu-8g"})
    codes = {q.code: q.amount for q in quotas_for(mega)}
    assert codes["NVIDIA_H100_MEGA_GPUS"] == 16 and "NVIDIA_H100_GPUS" not in codes
    spot = mega.model_copy(update={"spot": True})
    assert {q.code for q in quotas_for(spot)} >= {"PREEMPTIBLE_NVIDIA_H100_MEGA_GPUS", "GPUS_ALL_REGIONS"}


def test_a_tpu_v4_spot_slice_counts_against_v4s_preemptible_quota_in_zone_and_region() -> None:
    ask = QuotaAsk(
        shape="v4-32",
        region="us-central2",
        zone="us-central2-b",
        machines=1,
        vcpus=240,
        accelerator=None,
        accelerators=4,
        spot=True,
    )
    assert [(q.code, q.scope, q.amount, q.unit) for q in tpu.quotas(ask, TABLE)] == [
        ("TPUV4sPreemptiblePodPerProjectPerZoneForTPUAPI", "us-central2-b", 32, "TensorCores"),
        ("TPUV4sPreemptiblePodPerProjectPerRegionForTPUAPI", "us-central2", 32, "TensorCores"),
    ]
    assert tpu.quotas(replace(ask, spot=False), TABLE) == []  # on-demand v4 IDs: no source, no guess


def test_a_flex_start_pool_draws_on_the_preemptible_gpu_quota(tmp_path: Path) -> None:
    """Flex-start VMs consume preemptible quota (Compute Engine "About flex-start VMs"), on GKE too."""
    stack = tmp_path / "Pulumi.flex.yaml"
    stack.write_text(
        "config:\n  gcp:project: ml-project\n  fullserver:profile: realtime-inference\n  fullserver:platform: gke-gpu\n"
        "  fullserver:region: us-central1\n  fullserver:zone: us-central1-a\n  fullserver:accelerator: L4\n"
        "  fullserver:acceleratorCount: 1\n  fullserver:owner: t\n  fullserver:flexStart: true\n"
        "  fullserver:serving:\n    apiKeySecret: k\n    domains: [llm.example.com]\n"
    )
    [plan] = plan_paths([stack])
    found = needs(plan)
    assert found["PREEMPTIBLE_NVIDIA_L4_GPUS"] == ("us-central1", 8, "GPUs") and "NVIDIA_L4_GPUS" not in found
    assert "PREEMPTIBLE_LOCAL_SSD_GB" in found and "LOCAL_SSD_TOTAL_GB" not in found


def test_a_node_pool_stack_whose_quota_starts_at_zero_is_told_its_capacity_paths(plans: dict[str, StackPlan]) -> None:
    """EC2's P quota is 0 in a new account: the EKS stack, reserved, is pointed at the on-demand request."""
    assert [(p.path, p.usd_hour) for p in plans["eks-gpu-cluster"].capacity_paths] == [("on-demand", 55.04)]
