"""Placement: a location wider than a region is ranked over every platform x region, the dataset's
move included, and planned on the winner until it is pinned."""

from __future__ import annotations

from typing import Any

import pytest

from fullserver.catalog import load_catalog
from fullserver.catalog.model import Platform
from fullserver.catalog.network import GIB
from fullserver.errors import InputError, NothingFits
from fullserver.placement import (
    DatasetHome,
    check_pinned,
    dataset_home,
    load_locations,
    place,
    regions_of,
    transfer_usd,
)
from fullserver.plan import plan_workload
from fullserver.profiles import load_profiles
from fullserver.stacks import stack_from_config

BASE = {
    "fullserver:profile": "experimentation",
    "fullserver:accelerator": "T4",
    "fullserver:acceleratorCount": 4,
    "gcp:project": "example-project",
}


def _workload(**config: Any) -> Any:
    return stack_from_config("s", "stacks/Pulumi.s.yaml", {**BASE, **config}).workload


# --- the locations file ------------------------------------------------------------------------


def test_every_location_spans_regions_the_file_places_on_a_cloud_and_a_continent() -> None:
    data = load_locations()
    for name, loc in data.locations.items():
        assert loc.regions, name
        assert all(r in data.regions for r in loc.regions), name
    assert {p.provider for p in data.regions.values()} == {"aws", "gcp"}


def test_every_region_the_catalog_prices_a_gpu_or_tpu_in_is_placed() -> None:
    """A region the catalog can sell in but the locations file does not know could never be chosen."""
    catalog, data = load_catalog(), load_locations()
    priced = {r for p in Platform for r in catalog.regions(p)}
    assert priced <= set(data.regions), sorted(priced - set(data.regions))


def test_us_spans_both_clouds() -> None:
    data = load_locations()
    assert {data.regions[r].provider for r in regions_of(["us"], data)} == {"aws", "gcp"}


def test_locations_and_regions_mix_in_order_and_once_each() -> None:
    data = load_locations()
    assert regions_of(["tokyo", "ap-northeast-1", "eu-central-1"], data) == [
        "ap-northeast-1",
        "asia-northeast1",
        "eu-central-1",
    ]


def test_an_unknown_location_is_one_line_naming_the_key_and_the_known_names() -> None:
    with pytest.raises(InputError) as err:
        regions_of(["mars"], load_locations())
    assert err.value.where == "fullserver:location"
    assert "'mars' is neither a location nor a known region" in err.value.what
    assert "us, us-east, europe" in err.value.hint


# --- where the dataset lives, and what moving it costs -----------------------------------------


def test_a_bucket_url_names_its_cloud_and_region() -> None:
    home = dataset_home("s3://team-data/imagenet@us-east-1", load_locations())
    assert home == DatasetHome(provider="aws", region="us-east-1", url="s3://team-data/imagenet")
    assert dataset_home("us-central1", load_locations()) == DatasetHome(provider="gcp", region="us-central1")


def test_a_bucket_whose_scheme_is_the_other_clouds_is_refused() -> None:
    with pytest.raises(InputError) as err:
        dataset_home("gs://team-data@us-east-1", load_locations())
    assert err.value.what == "gs:// is a gcp bucket, but us-east-1 is a aws region"


def test_a_dataset_location_not_of_the_form_is_refused_by_the_stack() -> None:
    with pytest.raises(InputError) as err:
        _workload(**{"fullserver:region": "us-east-1", "fullserver:datasetLocation": "https://x/y"})
    assert "fullserver:datasetLocation" in str(err.value)


@pytest.mark.parametrize(
    ("home", "region", "usd"),
    [
        ("us-east-1", "us-east-1", 0.0),  # same region: free
        ("us-east-1", "eu-central-1", 100 * GIB * 0.02),  # AWS inter-region from us-east-1
        ("ap-northeast-1", "us-east-1", 100 * GIB * 0.09),  # AWS inter-region from Tokyo
        ("us-central1", "us-east5", 100 * 0.02),  # GCP within North America, per GiB
        ("us-central1", "europe-west4", 100 * 0.08),  # GCP between continents, per GiB
        ("us-east-1", "us-central1", 100 * GIB * 0.09),  # AWS -> GCP: internet egress from us-east-1
        ("us-central1", "us-east-1", 100 * GIB * 0.11176),  # GCP -> AWS: internet egress from us-central1
    ],
)
def test_moving_100_gib_is_priced_from_the_catalogs_tables(home: str, region: str, usd: float) -> None:
    data = load_locations()
    where = dataset_home(home, data)
    got, _ = transfer_usd(where, data.regions[region].provider, region, 100, load_catalog(), data)
    assert got == pytest.approx(usd)


def test_a_region_without_an_egress_price_leaves_the_move_unpriced() -> None:
    data = load_locations()
    got, note = transfer_usd(dataset_home("us-east-2", data), "gcp", "us-central1", 10, load_catalog(), data)
    assert got is None
    assert note == "no internet egress price from us-east-2 in the catalog"


# --- the stack's keys ------------------------------------------------------------------------


def test_a_stack_names_a_region_or_a_location() -> None:
    with pytest.raises(InputError) as err:
        _workload()
    assert "fullserver:region': is not set" in str(err.value)
    assert "fullserver:location" in err.value.hint


def test_a_zone_waits_for_the_pin() -> None:
    with pytest.raises(InputError) as err:
        _workload(**{"fullserver:location": ["us"], "fullserver:zone": "us-east-1a"})
    assert "fullserver:zone': is set, but the region is still to be chosen" in str(err.value)


# --- ranking and planning --------------------------------------------------------------------


def test_four_t4s_in_the_us_go_to_gcp_and_the_plan_names_the_runner_up() -> None:
    """The issue's case: g4dn.12xlarge in us-east-1 against N1 + 4 x T4 in us-central1."""
    profile = load_profiles()["experimentation"]
    placement = place(profile, _workload(**{"fullserver:location": ["us"]}), load_catalog(), "s")
    winner, runner_up = placement.winner, placement.runner_up
    assert (winner.platform, winner.region, winner.offer) == (Platform.GCP_GPU, "us-central1", "n1-highmem-16+4xT4")
    assert runner_up is not None
    assert (runner_up.platform, runner_up.region, runner_up.offer) == (Platform.AWS_GPU, "us-east-1", "g4dn.12xlarge")
    assert runner_up.total > winner.total
    assert placement.verdict().startswith("cheapest of 2 option(s) in us: gcp-gpu in us-central1")
    assert f"+${runner_up.total - winner.total:,.2f}/month" in placement.verdict()
    assert not placement.pinned


def test_the_datasets_home_can_turn_the_choice() -> None:
    """A dataset big enough that leaving AWS costs more than the GPUs save keeps the job on AWS."""
    config = {"fullserver:location": ["us"], "fullserver:datasetGib": 8_000}
    profile, catalog = load_profiles()["experimentation"], load_catalog()
    near = place(
        profile, _workload(**config, **{"fullserver:datasetLocation": "s3://team-data@us-east-1"}), catalog, "s"
    )
    assert (near.winner.platform, near.winner.region) == (Platform.AWS_GPU, "us-east-1")
    assert near.winner.transfer_usd == 0
    far = place(
        profile, _workload(**config, **{"fullserver:datasetLocation": "gs://team-data@us-central1"}), catalog, "s"
    )
    assert (far.winner.platform, far.winner.region) == (Platform.GCP_GPU, "us-central1")


def test_an_unpinned_stack_is_planned_on_the_winner_and_refused_by_up() -> None:
    workload = _workload(**{"fullserver:location": ["us"]})
    plan = plan_workload("s", "stacks/Pulumi.s.yaml", workload, load_profiles(), load_catalog())
    assert (plan.spec.platform, plan.spec.region) == (Platform.GCP_GPU, "us-central1")
    assert plan.placement is not None and not plan.placement.pinned
    with pytest.raises(InputError) as err:
        check_pinned(plan.placement, "s")
    assert err.value.line() == (
        "fullserver:location: is not pinned: the plan would choose gcp-gpu in us-central1, and up never chooses "
        "a place (run `fullserver plan --pin s` and commit the stack file)"
    )


def test_a_pinned_stack_keeps_its_pin_and_says_what_it_costs_now() -> None:
    """up never moves: a pin to the dearer place is planned there, and the plan says by how much."""
    workload = _workload(
        **{"fullserver:location": ["us"], "fullserver:region": "us-east-1", "fullserver:platform": "aws-gpu"}
    )
    plan = plan_workload("s", "stacks/Pulumi.s.yaml", workload, load_profiles(), load_catalog())
    assert (plan.spec.platform, plan.spec.region) == (Platform.AWS_GPU, "us-east-1")
    placement = plan.placement
    assert placement is not None and placement.pinned
    assert placement.pinned_option == placement.runner_up
    check_pinned(placement, "s")  # a pinned stack builds


def test_a_stack_without_a_location_has_no_placement() -> None:
    workload = _workload(**{"fullserver:region": "us-east-1"})
    plan = plan_workload("s", "stacks/Pulumi.s.yaml", workload, load_profiles(), load_catalog())
    assert plan.placement is None


def test_a_location_where_nothing_is_priced_names_each_platform_and_region() -> None:
    profile = load_profiles()["experimentation"]
    workload = _workload(**{"fullserver:location": ["us-east-2"]})
    with pytest.raises(NothingFits) as err:
        place(profile, workload, load_catalog(), "s")
    assert err.value.line() == (
        "fullserver:location: nothing fits in us-east-2: aws-gpu in us-east-2: no aws-gpu prices in region 'us-east-2'"
    )


def test_an_estimate_missing_a_price_ranks_after_every_whole_one() -> None:
    """A lower bound is no price: gp3 is priced in us-east-1 only, so eu-central-1's AWS row is one."""
    profile = load_profiles()["experimentation"]
    placement = place(profile, _workload(**{"fullserver:location": ["frankfurt"]}), load_catalog(), "s")
    assert [(o.region, o.complete) for o in placement.options] == [("eu-central-1", False)]
    assert placement.verdict().endswith("(a lower bound: a price is missing)")
