"""Every cloud example stack's plan names the quotas it needs, with the amount at the most it reaches."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from fullserver.diff import compare
from fullserver.plan import StackPlan, plan_paths
from fullserver.plan_document import read_document
from fullserver.platforms.quota import QuotaAsk, aws, gcp, tpu
from fullserver.quotas import load_quota_table

STACKS = Path(__file__).resolve().parents[2] / "stacks"
TABLE = load_quota_table()


@pytest.fixture(scope="module")
def plans() -> dict[str, StackPlan]:
    return {p.stack: p for p in plan_paths(sorted(STACKS.glob("Pulumi.*.yaml")))}


def needs(plan: StackPlan) -> dict[str, tuple[str, float, str]]:
    return {q.code: (q.scope, q.amount, q.unit) for q in plan.quotas}


@pytest.mark.parametrize(
    ("stack", "expected"),
    [
        # 2 nodes x 192 vCPUs of p5.48xlarge, On-Demand (a reserved profile runs On-Demand instances)
        (
            "train-p5-cluster",
            {
                "L-417A185B": ("us-east-1", 384, "vCPUs"),
                "L-7A658B76": ("us-east-1", 0.59, "TiB"),
                "L-0263D0A3": ("us-east-1", 1, "addresses"),
                "L-FE5A380F": ("us-east-1", 1, "NAT gateways"),  # per Availability Zone: the nodes' zone
                "L-F678F1CE": ("us-east-1", 1, "VPCs"),
                "L-A4707A72": ("us-east-1", 1, "internet gateways"),
            },
        ),
        # 8 replicas at the most x 16 vCPUs of g6.4xlarge, behind an ALB
        (
            "serve-aws-realtime",
            {
                "L-DB2E81BA": ("us-east-1", 128, "vCPUs"),
                "L-7A658B76": ("us-east-1", 1.17, "TiB"),
                "L-0263D0A3": ("us-east-1", 1, "addresses"),
                "L-FE5A380F": ("us-east-1", 1, "NAT gateways"),
                "L-F678F1CE": ("us-east-1", 1, "VPCs"),
                "L-A4707A72": ("us-east-1", 1, "internet gateways"),
                "L-53DA6B97": ("us-east-1", 1, "load balancers"),
            },
        ),
        (
            "exp-aws-spot",  # no spot price published: run on demand, so On-Demand G quota only
            {
                "L-DB2E81BA": ("us-east-1", 4, "vCPUs"),
                "L-7A658B76": ("us-east-1", 0.21, "TiB"),
                "L-F678F1CE": ("us-east-1", 1, "VPCs"),
                "L-A4707A72": ("us-east-1", 1, "internet gateways"),
            },
        ),
        (
            "serve-gcp-realtime",
            {
                "NVIDIA_L4_GPUS": ("us-central1", 8, "GPUs"),
                "GPUS_ALL_REGIONS": ("global", 8, "GPUs"),
                "CPUS_ALL_REGIONS": ("global", 96, "vCPUs"),  # 8 x 12 vCPUs; G2 has no series CPU metric
                "SSD_TOTAL_GB": ("us-central1", 1289, "GB"),  # 8 x 150 GiB
                "LOCAL_SSD_TOTAL_GB": ("us-central1", 3222, "GB"),  # 8 x 375 GiB
                "IN_USE_ADDRESSES": ("us-central1", 1, "addresses"),
            },
        ),
        (
            "finetune-gcp-a2",
            {
                "PREEMPTIBLE_NVIDIA_A100_GPUS": ("us-central1", 1, "GPUs"),
                "GPUS_ALL_REGIONS": ("global", 1, "GPUs"),
                "A2_CPUS": ("us-central1", 12, "vCPUs"),
                "CPUS_ALL_REGIONS": ("global", 12, "vCPUs"),
                "SSD_TOTAL_GB": ("us-central1", 752, "GB"),
                "IN_USE_ADDRESSES": ("us-central1", 1, "addresses"),
            },
        ),
        (
            "finetune-gcp-g2",
            {
                "PREEMPTIBLE_NVIDIA_L4_GPUS": ("us-central1", 1, "GPUs"),
                "GPUS_ALL_REGIONS": ("global", 1, "GPUs"),
                # the set's g2-standard-16, not the chosen g2-standard-12 (fullserver.capacity)
                "CPUS_ALL_REGIONS": ("global", 16, "vCPUs"),
                "SSD_TOTAL_GB": ("us-central1", 484, "GB"),
                "PREEMPTIBLE_LOCAL_SSD_GB": ("us-central1", 403, "GB"),
                "IN_USE_ADDRESSES": ("us-central1", 1, "addresses"),
            },
        ),
        (
            "train-tpu-v5p-slice",  # v5p quota counts TensorCores: v5p-128 is 128 of them (64 chips)
            {
                "TPUV5PPerProjectPerZoneForTPUAPI": ("us-east5-a", 128, "TensorCores"),
                "TPUV5PPerProjectPerRegionForTPUAPI": ("us-east5", 128, "TensorCores"),
                "IN_USE_ADDRESSES": ("us-east5", 1, "addresses"),
            },
        ),
        (
            "batch-tpu-v5e",
            {
                "TPUV5sPreemptibleLitepodPerProjectPerZoneForTPUAPI": ("us-central1-a", 4, "chips"),
                "TPUV5sPreemptibleLitepodPerProjectPerRegionForTPUAPI": ("us-central1", 4, "chips"),
                "SSD_TOTAL_GB": ("us-central1", 202, "GB"),
                "IN_USE_ADDRESSES": ("us-central1", 1, "addresses"),
            },
        ),
        (
            "train-tpu-v5e",
            {
                "TPUV5sPreemptibleLitepodPerProjectPerZoneForTPUAPI": ("us-central1-a", 8, "chips"),
                "TPUV5sPreemptibleLitepodPerProjectPerRegionForTPUAPI": ("us-central1", 8, "chips"),
                "SSD_TOTAL_GB": ("us-central1", 135, "GB"),
            },
        ),
    ],
)
def test_each_cloud_example_stack_names_its_quotas_with_amounts(
    plans: dict[str, StackPlan], stack: str, expected: dict[str, tuple[str, float, str]]
) -> None:
    assert needs(plans[stack]) == expected


def test_a_rented_server_needs_no_quota(plans: dict[str, StackPlan]) -> None:
    assert plans["dedicated-h100"].quotas == []


def test_plan_json_carries_each_quota_with_its_source(plans: dict[str, StackPlan]) -> None:
    [first, *_] = plans["train-p5-cluster"].model_dump(mode="json")["quotas"]
    assert first["code"] == "L-417A185B" and first["service"] == "ec2"
    assert first["why"] == "2 x p5.48xlarge x 192 vCPUs, on demand"
    assert first["source"] in TABLE.sources


P5 = QuotaAsk(
    shape="p5.48xlarge",
    region="us-east-1",
    zone=None,
    machines=2,
    vcpus=192,
    accelerator="H100-80GB",
    accelerators=8,
    spot=False,
)


@pytest.mark.parametrize(
    ("instance_type", "on_demand"),
    [
        ("g4dn.xlarge", "L-DB2E81BA"),
        ("vt1.3xlarge", "L-DB2E81BA"),
        ("p4d.24xlarge", "L-417A185B"),
        ("inf2.xlarge", "L-1945791B"),  # Inf, not Standard "i"
        ("trn1n.32xlarge", "L-2C3B7624"),
        ("dl1.24xlarge", "L-6E869C2A"),  # DL, not Standard "d"
        ("hpc7g.16xlarge", "L-F7808C92"),  # HPC, not Standard "h"
        ("m7i.large", "L-1216C47A"),
        ("u-6tb1.metal", "L-43DA4232"),
    ],
)
def test_an_instance_type_counts_against_its_familys_on_demand_vcpu_quota(instance_type: str, on_demand: str) -> None:
    group = aws.vcpu_group(instance_type, TABLE)
    assert group is not None and TABLE.quota(group.on_demand).code == on_demand


def test_a_familys_vcpu_group_is_worked_out_once_per_table_and_another_family_gets_its_own() -> None:
    table = load_quota_table.__wrapped__()  # a table of its own: nothing remembered yet
    assert table.aws_vcpu_group_by_family == {}
    p5 = aws.vcpu_group("p5.48xlarge", table)
    assert table.aws_vcpu_group_by_family == {"p5": p5}
    table.aws_vcpu_group_by_family["p5"] = None  # what is remembered is what it answers
    assert aws.vcpu_group("p5.4xlarge", table) is None
    g6 = aws.vcpu_group("g6.xlarge", table)
    assert g6 is not None and g6 is not p5 and table.quota(g6.on_demand).code == "L-DB2E81BA"


@pytest.mark.parametrize(
    ("shape", "spot"),
    [("p5.48xlarge", "L-C4BD4855"), ("p4d.24xlarge", "L-7212CCBC"), ("g6.xlarge", "L-3819A6DF")],
)
def test_spot_counts_against_the_familys_spot_quota_and_the_on_demand_fallback(shape: str, spot: str) -> None:
    codes = [q.code for q in aws.quotas(replace(P5, shape=shape, spot=True), TABLE)]
    od = TABLE.quota(aws.vcpu_group(shape, TABLE).on_demand).code  # type: ignore[union-attr]
    assert codes[:2] == [spot, od]


def test_a_p_family_without_a_sourced_spot_quota_names_only_on_demand() -> None:
    codes = [q.code for q in aws.quotas(replace(P5, shape="p6-b200.48xlarge", spot=True), TABLE)]
    assert codes[0] == "L-417A185B" and "L-7212CCBC" not in codes


def test_a_capacity_block_counts_against_its_own_quota() -> None:
    [first, *_] = aws.quotas(replace(P5, capacity_block=True), TABLE)
    assert (first.code, first.amount) == ("L-DA6814F2", 384)


def test_spot_gpus_count_against_the_preemptible_metric_and_unknown_models_name_nothing() -> None:
    ask = QuotaAsk(
        shape="g2-standard-12",
        region="r1",
        zone="r1-a",
        machines=3,
        vcpus=12,
        accelerator="L4",
        accelerators=2,
        spot=True,
    )
    assert [(q.code, q.amount) for q in gcp.gpu_quotas(ask, TABLE)] == [
        ("PREEMPTIBLE_NVIDIA_L4_GPUS", 6),
        ("GPUS_ALL_REGIONS", 6),
    ]
    assert gcp.gpu_quotas(replace(ask, accelerator="GB300"), TABLE) == []  # no sourced metric: no guess


def test_spot_v5p_draws_the_preemptible_zone_quota_and_an_unsourced_generation_names_none() -> None:
    ask = QuotaAsk(
        shape="v5p-8",
        region="us-east5",
        zone="us-east5-a",
        machines=1,
        vcpus=208,
        accelerator=None,
        accelerators=4,
        spot=True,
    )
    # v5p counts TensorCores (v5p-8: 8); no source gave the preemptible region twin, so none is named
    assert [(q.code, q.amount) for q in tpu.quotas(ask, TABLE)] == [("TPUV5PPreemptiblePerProjectPerZoneForTPUAPI", 8)]
    assert tpu.quotas(replace(ask, shape="v3-8"), TABLE) == []  # no sourced quota for the generation: no guess


def test_every_quota_the_rules_name_is_sourced() -> None:
    for key, quota in TABLE.quotas.items():
        assert quota.source in TABLE.sources, key
        assert TABLE.sources[quota.source].url.startswith("https://"), key


def test_diff_shows_the_quotas_a_change_adds(plans: dict[str, StackPlan]) -> None:
    doc = plans["train-p5-cluster"].model_dump(mode="json")
    more = {
        **doc,
        "quotas": [{**q, "amount": q["amount"] * 2} if q["code"] == "L-417A185B" else q for q in doc["quotas"]],
    }
    more["quotas"].append(
        {
            "service": "elasticloadbalancing",
            "code": "L-53DA6B97",
            "scope": "us-east-1",
            "amount": 1,
            "unit": "load balancers",
        }
    )
    [diff] = compare(read_document([doc], "base"), read_document([more], "head")).stacks
    assert diff.status == "changed"
    assert [(q.code, q.before, q.after) for q in diff.quotas] == [("L-417A185B", 384, 768), ("L-53DA6B97", None, 1)]


# --- capacity paths: where the accelerator quota starts at 0 in a new account ----------------------


def paths(plan: StackPlan) -> list[tuple[str, float | None]]:
    return [(p.path, p.usd_hour) for p in plan.capacity_paths]


def test_a_reserved_p5_cluster_is_told_of_capacity_blocks_and_reservations(plans: dict[str, StackPlan]) -> None:
    """EC2's P quota is 0 in a new account: the plan names the paths a reserved profile can take."""
    assert paths(plans["train-p5-cluster"]) == [
        ("on-demand", 55.04),
        ("EC2 Capacity Blocks for ML", None),
        ("On-Demand Capacity Reservation", None),
    ]
    blocks = plans["train-p5-cluster"].capacity_paths[1]
    assert "Concurrent Capacity Blocks quota" in blocks.how and blocks.source is not None


def test_a_spot_profile_on_tpus_is_told_of_spot_and_queued_resources_with_their_prices(
    plans: dict[str, StackPlan],
) -> None:
    assert paths(plans["train-tpu-v5e"]) == [("on-demand", 9.6), ("spot", 2.38168), ("Cloud TPU queued resource", None)]


def test_capacity_blocks_are_offered_only_for_the_families_that_have_them(plans: dict[str, StackPlan]) -> None:
    names = [p.path for p in plans["exp-aws-l4-spot"].capacity_paths]
    assert names == ["on-demand", "spot"]  # a G family, spot-with-fallback: no capacity blocks, no reservation


def test_a_spot_path_without_a_catalog_spot_price_says_so_instead_of_a_number(plans: dict[str, StackPlan]) -> None:
    spot = next(p for p in plans["exp-aws-spot"].capacity_paths if p.path == "spot")
    assert (spot.priced, spot.usd_hour) == ("spot", None)


def test_no_paths_where_no_quota_is_known_to_start_at_zero(plans: dict[str, StackPlan]) -> None:
    """Google states no default for GPU quotas ("not all projects have the same quotas"), and a
    rented server needs no quota: the plan says nothing rather than guess."""
    for stack in ("finetune-gcp-g2", "serve-gcp-realtime", "dedicated-h100"):
        assert plans[stack].capacity_paths == [], stack


def test_a_capacity_path_naming_an_unknown_source_is_refused(tmp_path: Path) -> None:
    import yaml

    from fullserver.catalog.network import DATA_DIR, QUOTAS_FILE
    from fullserver.errors import InputError

    data = yaml.safe_load((DATA_DIR / QUOTAS_FILE).read_text())
    data["capacity_paths"][2]["source"] = "nowhere"
    path = tmp_path / "quotas.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(InputError, match=r"capacity_paths\[2\]: names unknown source 'nowhere'"):
        load_quota_table(path)
