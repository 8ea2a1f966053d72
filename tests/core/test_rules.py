"""``fullserver.rules``: rules every layer shares, each written once."""

from __future__ import annotations

import pytest

from fullserver import netcheck, rules
from fullserver.catalog.model import StoragePrice
from fullserver.cost import HOURS_PER_MONTH as COST_HOURS
from fullserver.profiles import CostAssumptions


def test_a_month_is_730_hours_everywhere() -> None:
    assert rules.HOURS_PER_MONTH == 730.0 == COST_HOURS == CostAssumptions().hours_per_month
    assert rules.MAX_HOURS_PER_MONTH == 31 * 24


def test_ssh_ranges_are_checked_by_the_one_check() -> None:
    assert rules.check_ssh_ranges is netcheck.check_ssh_ranges


@pytest.mark.parametrize(
    ("ttl", "labels"),
    [
        (
            None,
            {
                "fullserver-profile": "fine-tuning",
                "fullserver-environment": "dev",
                "fullserver-owner": "ml",
                "fullserver-lifecycle": "persistent",
            },
        ),
        (
            8.0,
            {
                "fullserver-profile": "fine-tuning",
                "fullserver-environment": "dev",
                "fullserver-owner": "ml",
                "fullserver-lifecycle": "persistent",
                "fullserver-ttl-hours": "8",
            },
        ),
        (1.5, {"fullserver-ttl-hours": "1.5"}),
    ],
)
def test_environment_labels(ttl: float | None, labels: dict[str, str]) -> None:
    got = rules.environment_labels(
        profile="fine-tuning", environment="dev", owner="ml", lifecycle="persistent", ttl_hours=ttl
    )
    assert labels.items() <= got.items()


@pytest.mark.parametrize(
    ("labels", "gcp"),
    [
        ({"fullserver-owner": "ML Research"}, {"fullserver-owner": "ml-research"}),
        ({"fullserver-owner": "a.b@c.d"}, {"fullserver-owner": "a-b-c-d"}),
        ({"9lives": "x"}, {"l-9lives": "x"}),  # a key starts with a letter
        ({"k": "x" * 80}, {"k": "x" * 63}),  # at most 63 characters
        ({"K_1": "v_1"}, {"k_1": "v_1"}),
    ],
)
def test_gcp_labels(labels: dict[str, str], gcp: dict[str, str]) -> None:
    assert rules.gcp_labels(labels) == gcp


def _price(**rates: float) -> StoragePrice:
    return StoragePrice(provider="aws", kind="gp3", region="r", source="s", **rates)


@pytest.mark.parametrize(
    ("price", "args", "usd"),
    [
        (_price(usd_gib_month=0.08), (100,), 8.0),
        # gp3: 3,000 IOPS and 125 MiB/s free per volume
        (
            _price(usd_gib_month=0.08, usd_iops_month=0.005, usd_mbps_month=0.04, free_iops=3000, free_mbps=125),
            (100, 4000, 225),
            8.0 + 5.0 + 4.0,
        ),
        # two volumes: twice the free baseline
        (
            _price(usd_gib_month=0.08, usd_iops_month=0.005, usd_mbps_month=0.04, free_iops=3000, free_mbps=125),
            (200, 8000, 250, 2),
            16.0 + 10.0 + 0.0,
        ),
        (_price(usd_gib_month=0.1, free_iops=3000, usd_iops_month=1), (10, 1000), 1.0),  # below the free IOPS
    ],
)
def test_disk_monthly_price(price: StoragePrice, args: tuple[float, ...], usd: float) -> None:
    assert rules.disk_usd_month(price, *args) == pytest.approx(usd)


@pytest.mark.parametrize(
    ("file_name", "stack", "problem"),
    [
        ("Pulumi.dev.yaml", "dev", None),
        ("Pulumi.train-p5.cluster_1.yaml", "train-p5.cluster_1", None),
        ("Pulumi.yaml", "", "'' is not a stack name Pulumi accepts"),
        ("Pulumi.a b.yaml", "a b", "'a b' is not a stack name Pulumi accepts"),
        ("dev.yaml", None, None),
        ("Pulumi.dev.yml", None, None),
    ],
)
def test_stack_file_names(file_name: str, stack: str | None, problem: str | None) -> None:
    assert rules.stack_of_file(file_name) == stack
    if stack is not None:
        assert rules.stack_name_problem(stack) == problem
        if problem is None:
            assert rules.stack_file(stack) == file_name
    assert rules.STACK_FILE_GLOB == "Pulumi.*.yaml"
