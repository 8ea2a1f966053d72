"""Sizing: the cheapest shape that meets every minimum wins, deterministically and explained."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from fullserver.catalog import Catalog, catalog_from_data, load_catalog
from fullserver.catalog.model import Platform
from fullserver.errors import FullserverError, InputError, NothingFits
from fullserver.kube.pool import SIZED_AS
from fullserver.plan import plan_workload
from fullserver.profiles import Profile, load_profiles
from fullserver.sizing import build as build_module
from fullserver.sizing import build_spec, compute_price, size
from fullserver.workload import Workload

from .conftest import MINI, PROFILE, SOURCE, shape, write_catalog, write_profiles


def wl(**kw: Any) -> Workload:
    return Workload.model_validate(
        {"profile": "base", "region": "r-1", "accelerator": "G24", "acceleratorCount": 1} | kw
    )


def test_the_cheapest_shape_meeting_every_minimum_wins(mini_catalog: Catalog, base_profile: Profile) -> None:
    spec = build_spec(base_profile, wl(), Platform.AWS_GPU, mini_catalog, "env")
    # small.x is cheaper but has 16 GiB < 2 x 24 GiB; mid.x and wide.x tie at 2.00/h.
    assert spec.offer == "wide.x"
    assert spec.balance.ok
    assert [m.offer for m in spec.near_misses] == ["small.x"]
    assert spec.near_misses[0].reason == "short: cpu 4 vCPUs < 8 vCPUs; ram 16 GiB < 48 GiB"


def test_ties_break_towards_more_vcpus_then_more_ram_then_name(mini_catalog: Catalog, base_profile: Profile) -> None:
    first = build_spec(base_profile, wl(), Platform.AWS_GPU, mini_catalog, "env")
    again = build_spec(base_profile, wl(), Platform.AWS_GPU, mini_catalog, "env")
    assert first.offer == again.offer == "wide.x"  # 16 vCPUs beat mid.x's 8 at the same price


def test_what_the_ranking_decides_is_worked_out_once_and_each_stack_keeps_its_own(
    tmp_path: Path, mini_catalog: Catalog
) -> None:
    """The chosen shape and what its ranking's question alone decides (near-misses, spot
    alternatives, warnings) are kept with the ranking (``Catalog.answer``): a second stack
    asking the same question gets them as the first did, with its own dataset, owner, keys and
    network (never an object another spec holds); another question (another region) is answered
    afresh."""
    spot = PROFILE.replace("pricing: on-demand", "pricing: spot-with-fallback")
    profile = load_profiles(write_profiles(tmp_path, {"base": spot}))["base"]
    first = build_spec(profile, wl(owner="ana"), Platform.AWS_GPU, mini_catalog, "one")
    second = build_spec(profile, wl(owner="bo", datasetGib=400), Platform.AWS_GPU, mini_catalog, "two")
    assert len(shapes_worked_out(mini_catalog)) == 1  # worked out once, not again
    assert second.network == first.network and second.network is not first.network
    assert second.network.ssh_source_ranges is not first.network.ssh_source_ranges
    narrowed = build_spec(profile, wl(sshSourceRanges=["10.0.0.0/8"]), Platform.AWS_GPU, mini_catalog, "five")
    assert narrowed.network.ssh_source_ranges == ["10.0.0.0/8"] != first.network.ssh_source_ranges
    same = ("offer", "spot", "zone", "near_misses", "alternative_shapes", "warnings", "local_nvme_disks")
    assert [getattr(second, f) for f in same] == [getattr(first, f) for f in same]
    assert first.data_disk is None and second.data_disk is not None
    assert second.data_disk.size_gib == math.ceil(400 * profile.storage.dataset_headroom)
    assert (first.labels["fullserver-owner"], second.labels["fullserver-owner"]) == ("ana", "bo")
    # The platform's rules are asked of each stack's own request: a reservation is refused on spot.
    with pytest.raises(InputError, match="fullserver:reservation: spot capacity cannot consume"):
        build_spec(profile, wl(reservation="res-1"), Platform.AWS_GPU, mini_catalog, "four")
    other = build_spec(profile, wl(region="r-2"), Platform.AWS_GPU, mini_catalog, "three")
    assert len(shapes_worked_out(mini_catalog)) == 2
    assert (other.offer, other.spot) == ("big.x", False) != (first.offer, first.spot)
    assert other.near_misses != first.near_misses
    assert other.warnings == ["no published spot price for big.x in r-2: priced and run on-demand"]


def shapes_worked_out(catalog: Catalog) -> list[object]:
    """The questions the catalog's memo holds a chosen shape for."""
    return [key[1] for key in catalog.memo if isinstance(key, tuple) and key[0] is build_module._shape]


def test_spot_pricing_ranks_by_spot_price(tmp_path: Path, mini_catalog: Catalog) -> None:
    spot = PROFILE.replace("pricing: on-demand", "pricing: spot-with-fallback").replace(
        "lifecycle: {mode: persistent}", "lifecycle: {mode: ephemeral, ttl_hours: 4}"
    )
    profile = load_profiles(write_profiles(tmp_path, {"base": spot}))["base"]
    spec = build_spec(profile, wl(), Platform.AWS_GPU, mini_catalog, "env")
    assert (spec.offer, spec.spot) == ("mid.x", True)  # spot 0.80 beats wide.x's on-demand 2.00
    assert spec.labels["fullserver-ttl-hours"] == "4"


def test_nothing_fits_names_the_closest_shapes_and_what_each_misses(tmp_path: Path, mini_catalog: Catalog) -> None:
    greedy = PROFILE.replace("value: 8,", "value: 64,")
    profile = load_profiles(write_profiles(tmp_path, {"base": greedy}))["base"]
    with pytest.raises(NothingFits) as err:
        build_spec(profile, wl(), Platform.AWS_GPU, mini_catalog, "env")
    msg = str(err.value)
    assert "no shape meets every minimum; closest: big.x: short: cpu 32 vCPUs < 64 vCPUs" in msg
    assert "\n" not in msg


def test_an_accelerator_count_no_shape_offers_lists_the_counts_that_exist(
    mini_catalog: Catalog, base_profile: Profile
) -> None:
    with pytest.raises(
        InputError,
        match=r"fullserver:acceleratorCount: no aws-gpu shape offers 3 x G24 per node \(offered counts: 1, 4\)",
    ):
        build_spec(base_profile, wl(acceleratorCount=3), Platform.AWS_GPU, mini_catalog, "env")


def test_an_unknown_region_suggests_close_names(mini_catalog: Catalog, base_profile: Profile) -> None:
    with pytest.raises(InputError, match=r"no aws-gpu prices in region 'r-3' \(did you mean r-1, r-2\?\)"):
        build_spec(base_profile, wl(region="r-3"), Platform.AWS_GPU, mini_catalog, "env")


def test_an_unknown_accelerator_is_refused(mini_catalog: Catalog, base_profile: Profile) -> None:
    with pytest.raises(InputError, match="unknown accelerator 'Z80'"):
        size(base_profile, wl(accelerator="Z80"), mini_catalog, "env")


def test_a_shape_not_priced_in_the_region_is_a_near_miss(mini_catalog: Catalog, base_profile: Profile) -> None:
    spec = build_spec(base_profile, wl(region="r-2"), Platform.AWS_GPU, mini_catalog, "env")
    assert spec.offer == "big.x"
    assert {"offer": "mid.x", "usd_hour": None, "reason": "not priced in r-2"} in [
        m.model_dump() for m in spec.near_misses
    ]


def test_multi_node_profiles_require_the_fabric(tmp_path: Path, mini_catalog: Catalog) -> None:
    multi = PROFILE + "topology: {nodes: multi, fabric: efa, compact_placement: true}\n"
    profile = load_profiles(write_profiles(tmp_path, {"base": multi}))["base"]
    spec = build_spec(profile, wl(acceleratorCount=4, nodes=2), Platform.AWS_GPU, mini_catalog, "env")
    assert spec.offer == "quad.x"  # quadne.x is cheaper but has no EFA
    assert ("quadne.x", "no efa fabric (has none)") in [(m.offer, m.reason) for m in spec.near_misses]
    assert spec.network.efa_interfaces == 4 and spec.network.compact_placement and spec.nodes == 2


def test_a_profile_taking_any_fabric_names_the_missing_fabric_in_words(tmp_path: Path, mini_catalog: Catalog) -> None:
    multi = PROFILE + "topology: {nodes: multi, fabric: any}\n"
    profile = load_profiles(write_profiles(tmp_path, {"base": multi}))["base"]
    spec = build_spec(profile, wl(acceleratorCount=4, nodes=2), Platform.AWS_GPU, mini_catalog, "env")
    assert spec.offer == "quad.x"
    assert ("quadne.x", "no scale-out fabric (has none)") in [(m.offer, m.reason) for m in spec.near_misses]


def test_a_single_node_profile_refuses_several_nodes(mini_catalog: Catalog, base_profile: Profile) -> None:
    with pytest.raises(InputError, match="single-node"):
        build_spec(base_profile, wl(nodes=2), Platform.AWS_GPU, mini_catalog, "env")


def test_attached_block_storage_makes_up_missing_nvme_where_allowed(tmp_path: Path, mini_catalog: Catalog) -> None:
    text = (
        PROFILE.rstrip()
        + "\n  nvme_gib_per_accelerator: {value: 500, reason: checkpoints need room}\n  nvme_may_be_attached: true\n"
    )
    text += "storage:\n  throughput_mbps_per_accelerator: {value: 300, reason: checkpoint writes}\n  iops_per_accelerator: {value: 4000, reason: many shards}\n"
    profile = load_profiles(write_profiles(tmp_path, {"base": text}))["base"]
    spec = build_spec(profile, wl(datasetGib=100), Platform.AWS_GPU, mini_catalog, "env")
    assert spec.offer == "wide.x"  # no local NVMe at all: 500 GiB attached
    assert spec.data_disk is not None
    assert (spec.data_disk.kind, spec.data_disk.size_gib, spec.data_disk.iops, spec.data_disk.throughput_mbps) == (
        "gp3",
        500,
        4000,
        300,
    )
    nvme = next(line for line in spec.balance.lines if line.dimension == "nvme")
    assert nvme.ok and "500 GiB attached" in nvme.note


def test_without_attach_permission_missing_nvme_rejects_the_shape(tmp_path: Path, mini_catalog: Catalog) -> None:
    text = PROFILE.rstrip() + "\n  nvme_gib_per_accelerator: {value: 500, reason: checkpoints need room}\n"
    profile = load_profiles(write_profiles(tmp_path, {"base": text}))["base"]
    spec = build_spec(profile, wl(), Platform.AWS_GPU, mini_catalog, "env")
    assert spec.offer == "big.x"  # the only 1-GPU shape with >= 500 GiB of local NVMe
    assert spec.local_nvme_disks == 2 and spec.scratch_raid0


def test_tpu_slices_are_chosen_by_type_name_or_by_chip_count(mini_catalog: Catalog, base_profile: Profile) -> None:
    by_name = build_spec(
        base_profile, wl(accelerator="tx-4", acceleratorCount=None), Platform.TPU_VM, mini_catalog, "env"
    )
    by_count = build_spec(
        base_profile, wl(accelerator="TPUX", acceleratorCount=16), Platform.TPU_VM, mini_catalog, "env"
    )
    assert (
        by_name.tpu is not None and by_name.tpu.accelerator_type == "tx-4" and by_name.tpu.runtime_version == "tx-base"
    )
    assert not by_name.tpu.queued
    assert by_count.tpu is not None and by_count.tpu.accelerator_type == "tx-16"
    assert by_count.tpu.hosts == 4 and by_count.tpu.queued and by_count.nodes == 4


def test_a_multi_host_slice_refuses_a_read_write_disk(tmp_path: Path, mini_catalog: Catalog) -> None:
    text = (
        PROFILE.rstrip()
        + "\n  nvme_gib_per_accelerator: {value: 10, reason: scratch for spooling}\n  nvme_may_be_attached: true\n"
    )
    profile = load_profiles(write_profiles(tmp_path, {"base": text}))["base"]
    with pytest.raises(NothingFits, match="cannot attach to a multi-host TPU slice"):
        build_spec(profile, wl(accelerator="tx-16", acceleratorCount=None), Platform.TPU_VM, mini_catalog, "env")


def test_a_tpu_runtime_must_match_the_generation(mini_catalog: Catalog, base_profile: Profile) -> None:
    with pytest.raises(InputError, match="runtime 'other' is not valid for tx-4 \\(choose one of: tx-base, tx-jax\\)"):
        build_spec(base_profile, wl(accelerator="tx-4", image="other"), Platform.TPU_VM, mini_catalog, "env")


def test_size_follows_the_profile_platform_order(mini_catalog: Catalog, base_profile: Profile) -> None:
    assert size(base_profile, wl(), mini_catalog, "env").platform is Platform.AWS_GPU
    assert size(base_profile, wl(accelerator="tx-4"), mini_catalog, "env").platform is Platform.TPU_VM


def two_clouds(tmp_path: Path, cpu_per_accelerator: int) -> tuple[Profile, Catalog]:
    """A profile allowing aws-gpu then gcp-gpu, and a catalog whose one GCP shape has 48 vCPUs
    (the AWS ones have at most 32), so a CPU minimum picks which clouds can fit."""
    data = {
        **MINI,
        "shapes": [*MINI["shapes"], shape("gbig.x", "G24", 1, 48, 256, platform="gcp-gpu")],
        "shape_prices": [
            *MINI["shape_prices"],
            {"shape": "gbig.x", "region": "r-1", "on_demand_usd_hour": 9.0, "source": "fx"},
        ],
    }
    catalog = catalog_from_data([("two-clouds.yaml", {"sources": {"fx": SOURCE}, **data})])
    text = PROFILE.replace("[aws-gpu, tpu-vm]", "[aws-gpu, gcp-gpu]").replace(
        "value: 8,", f"value: {cpu_per_accelerator},"
    )
    return load_profiles(write_profiles(tmp_path, {"base": text}))["base"], catalog


def test_size_tries_the_next_platform_when_no_shape_fits_on_the_first(tmp_path: Path) -> None:
    profile, catalog = two_clouds(tmp_path, cpu_per_accelerator=40)
    spec = size(profile, wl(), catalog, "env")
    assert (spec.platform, spec.offer) == (Platform.GCP_GPU, "gbig.x")


def test_when_no_platform_fits_the_error_names_each_platforms_reason(tmp_path: Path) -> None:
    profile, catalog = two_clouds(tmp_path, cpu_per_accelerator=64)
    with pytest.raises(NothingFits) as err:
        size(profile, wl(), catalog, "env")
    assert str(err.value) == (
        "profile 'base' in r-1: no platform the profile allows fits: "
        "[aws-gpu] no shape meets every minimum; closest: big.x: short: cpu 32 vCPUs < 64 vCPUs; "
        "wide.x: short: cpu 16 vCPUs < 64 vCPUs; mid.x: short: cpu 8 vCPUs < 64 vCPUs "
        "[gcp-gpu] no shape meets every minimum; closest: gbig.x: short: cpu 48 vCPUs < 64 vCPUs "
        # One G24 per node is the fewest any platform sells: lowering the count is no way out.
        "(pick another region, or relax the profile)"
    )


def test_a_platform_refusing_the_input_still_lets_the_others_be_tried_and_named(tmp_path: Path) -> None:
    profile, catalog = two_clouds(tmp_path, cpu_per_accelerator=40)
    with pytest.raises(NothingFits) as err:
        size(profile, wl(region="r-2"), catalog, "env")  # gcp-gpu has no prices in r-2
    assert "[aws-gpu] no shape meets every minimum; closest: big.x: short: cpu 32 vCPUs < 40 vCPUs" in str(err.value)
    assert "[gcp-gpu] fullserver:region: no gcp-gpu prices in region 'r-2'" in str(err.value)


def test_one_reason_shared_by_every_platform_is_said_once(tmp_path: Path) -> None:
    spot = PROFILE.replace("pricing: on-demand", "pricing: spot-with-fallback").replace(
        "[aws-gpu, tpu-vm]", "[aws-gpu, gcp-gpu]"
    )
    profile = load_profiles(write_profiles(tmp_path, {"base": spot}))["base"]
    _, catalog = two_clouds(tmp_path / "catalog", cpu_per_accelerator=8)
    with pytest.raises(InputError) as err:
        size(profile, wl(reservation="cr-1", zone="r-1-a"), catalog, "env")
    # The rule's one message (fullserver.platforms.base), the same words the components refuse with.
    assert str(err.value) == (
        "fullserver:reservation: spot capacity cannot consume a capacity reservation "
        "(remove fullserver:reservation or use an on-demand or reserved profile)"
    )


def test_every_example_stack_sizes_to_a_balanced_shape() -> None:
    from fullserver.plan import plan_paths
    from fullserver.stacks import find_stacks

    plans = plan_paths(find_stacks(Path(__file__).parents[2] / "stacks", []))
    assert len(plans) >= 9
    for plan in plans:
        assert plan.spec.balance.ok, (plan.stack, plan.spec.balance.summary())
    assert {p.spec.profile for p in plans} == set(load_profiles())
    # every platform has an example stack, the Kubernetes node pools (issue 24) included
    assert {p.spec.platform for p in plans} == set(Platform)
    assert {p.spec.platform for p in plans if p.spec.kube is not None} == set(SIZED_AS)


# Property tests: for any catalog and any minimums, the chosen shape meets every minimum and
# no cheaper shape in the catalog does.
shape_st = st.builds(
    lambda i, vcpus, per_vcpu, price: (shape(f"s{i}.x", "G24", 1, vcpus, vcpus * per_vcpu), price),
    st.integers(0, 10_000),
    st.integers(1, 128),
    st.integers(1, 16),
    st.integers(1, 5000).map(lambda c: c / 100),
)


@settings(max_examples=200, deadline=None)
@given(
    shapes=st.lists(shape_st, min_size=1, max_size=12, unique_by=lambda s: s[0]["name"]),
    cpu=st.integers(1, 64),
    ratio=st.integers(1, 40).map(lambda r: r / 10),
    floor=st.integers(1, 512),
)
def test_property_chosen_shape_is_feasible_and_nothing_cheaper_is(
    shapes: list[tuple[dict[str, Any], float]], cpu: int, ratio: float, floor: int
) -> None:
    data = {
        "sources": {"fx": SOURCE},
        "accelerators": MINI["accelerators"][:1],
        "shapes": [s for s, _ in shapes],
        "shape_prices": [
            {"shape": s["name"], "region": "r-1", "on_demand_usd_hour": p, "source": "fx"} for s, p in shapes
        ],
    }
    catalog = catalog_from_data([("generated.yaml", data)])
    raw = yaml.safe_load(PROFILE) | {"name": "base"}
    raw["balance"]["cpu_per_accelerator"]["value"] = cpu
    raw["balance"]["ram_per_accelerator_memory"]["value"] = ratio
    raw["balance"]["ram_floor_gib"]["value"] = floor
    profile = Profile.model_validate(raw)
    need_ram = max(math.ceil(ratio * 24 - 1e-9), floor)
    feasible = [o for o in catalog.offers if o.host.vcpus >= cpu and o.host.memory_gib >= need_ram]
    try:
        spec = build_spec(profile, wl(), Platform.AWS_GPU, catalog, "env")
    except NothingFits:
        assert feasible == []
        return
    assert spec.balance.ok
    assert spec.vcpus >= cpu and spec.memory_gib >= need_ram
    chosen = catalog.offer(spec.offer)
    assert chosen is not None
    cheapest = min(compute_price(o, "r-1", profile, catalog)[0] for o in feasible)
    assert compute_price(chosen, "r-1", profile, catalog)[0] == cheapest


def test_a_tpu_zone_comes_from_the_catalog_when_none_is_asked(mini_catalog: Catalog, base_profile: Profile) -> None:
    spec = build_spec(base_profile, wl(accelerator="tx-4"), Platform.TPU_VM, mini_catalog, "env")
    assert spec.zone == "r-1-a"
    with pytest.raises(NothingFits, match="tx-4: not offered in r-1-b"):
        build_spec(base_profile, wl(accelerator="tx-4", zone="r-1-b"), Platform.TPU_VM, mini_catalog, "env")


def test_a_disk_grows_to_carry_the_iops_and_throughput_the_profile_asks(tmp_path: Path, mini_catalog: Catalog) -> None:
    text = PROFILE + "storage:\n  throughput_mbps_per_accelerator: {value: 900, reason: fast checkpoint writes}\n"
    text += "  iops_per_accelerator: {value: 100, reason: few large sequential files}\n"
    profile = load_profiles(write_profiles(tmp_path, {"base": text}))["base"]
    spec = build_spec(profile, wl(datasetGib=4), Platform.AWS_GPU, mini_catalog, "env")
    disk = spec.data_disk
    assert disk is not None
    # 900 MiB/s needs 3600 IOPS on gp3 (0.25 MiB/s per IOPS), and 3600 IOPS need 8 GiB (500 per GiB).
    assert (disk.throughput_mbps, disk.iops) == (900, 3600)
    assert disk.size_gib == 8  # the 4 GiB dataset x 1.25 would give 5 GiB: grown for the IOPS


def test_a_queued_or_multi_host_slice_may_be_spot(tmp_path: Path, mini_catalog: Catalog) -> None:
    """Issue 37: the slice is created with gcloud, whose queued-resources create takes --spot."""
    spot = PROFILE.replace("pricing: on-demand", "pricing: spot-with-fallback").replace(
        "lifecycle: {mode: persistent}", "lifecycle: {mode: ephemeral, ttl_hours: 4}"
    )
    profile = load_profiles(write_profiles(tmp_path, {"base": spot}))["base"]
    queued = build_spec(profile, wl(accelerator="tx-4", queued=True), Platform.TPU_VM, mini_catalog, "env")
    multi = build_spec(profile, wl(accelerator="tx-16"), Platform.TPU_VM, mini_catalog, "env")
    for spec in (queued, multi):
        assert spec.spot is True and spec.tpu is not None and spec.tpu.queued is True
    assert multi.tpu is not None and multi.tpu.hosts == 4


def test_a_reservation_needs_its_zone(mini_catalog: Catalog, base_profile: Profile) -> None:
    with pytest.raises(InputError, match="fullserver:zone: reservation 'cr-1' lives in one zone"):
        build_spec(base_profile, wl(reservation="cr-1"), Platform.AWS_GPU, mini_catalog, "env")


@pytest.mark.parametrize(
    ("ranges", "message"),
    [
        (["10.0.0.0/33"], "'10.0.0.0/33' is not a CIDR range"),
        (["bogus"], "'bogus' is not a CIDR range"),
        (["10.0.0.1/24"], "did you mean 10.0.0.0/24?"),
        (["0.0.0.0/1", "128.0.0.0/1"], "'0.0.0.0/1' is wider than /8"),
        (["::/0"], "wider than /32"),
    ],
)
def test_ssh_source_ranges_must_be_narrow_cidr_networks(ranges: list[str], message: str) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=re.escape(message)):
        wl(sshSourceRanges=ranges)
    assert wl(sshSourceRanges=["203.0.113.0/24", "2001:db8::/48"]).ssh_source_ranges == [
        "203.0.113.0/24",
        "2001:db8::/48",
    ]


# --- Issue 13: expected cost for spot with fallback, every cheaper shape explained, minimums that
# follow the topology.


def spot_profile(tmp_path: Path, share: float, extra: str = "") -> Profile:
    text = PROFILE.replace("pricing: on-demand", "pricing: spot-with-fallback").replace(
        "lifecycle: {mode: persistent}", "lifecycle: {mode: ephemeral, ttl_hours: 4}"
    )
    return load_profiles(write_profiles(tmp_path, {"base": text + f"cost: {{spot_share: {share}}}\n" + extra}))["base"]


def spot_catalog() -> Catalog:
    """A balanced shape with no spot price (1.32/h) beside a bigger one whose spot price is known
    (1.24/h spot, 3.40/h when it falls back): the g6.4xlarge / g6.16xlarge case of issue 13."""
    return catalog_from_data(
        [
            (
                "spot.yaml",
                {
                    "sources": {"fx": SOURCE},
                    "accelerators": MINI["accelerators"][:1],
                    "shapes": [shape("bal.x", "G24", 1, 16, 64), shape("huge.x", "G24", 1, 64, 256)],
                    "shape_prices": [
                        {"shape": "bal.x", "region": "r-1", "on_demand_usd_hour": 1.32, "source": "fx"},
                        {
                            "shape": "huge.x",
                            "region": "r-1",
                            "on_demand_usd_hour": 3.40,
                            "spot_usd_hour": 1.24,
                            "source": "fx",
                        },
                    ],
                },
            )
        ]
    )


def test_a_known_spot_price_alone_does_not_win_against_a_cheaper_expected_cost(tmp_path: Path) -> None:
    profile = spot_profile(tmp_path, 0.8)
    spec = build_spec(profile, wl(), Platform.AWS_GPU, spot_catalog(), "env")
    # huge.x is expected to cost 0.8 x 1.24 + 0.2 x 3.40 = 1.672/h; bal.x runs on-demand at 1.32/h.
    assert (spec.offer, spec.spot) == ("bal.x", False)
    huge = spot_catalog().offer("huge.x")
    assert huge is not None
    rate, spot = compute_price(huge, "r-1", profile, spot_catalog())
    assert spot and rate == pytest.approx(1.672)


def test_every_cheaper_shape_passed_over_is_a_near_miss_with_its_reason(tmp_path: Path) -> None:
    cheap = [shape(f"tiny{i}.x", "G24", 1, 2, 8) for i in range(7)]
    data = {
        "sources": {"fx": SOURCE},
        "accelerators": MINI["accelerators"][:1],
        "shapes": [*cheap, shape("ok.x", "G24", 1, 16, 64), shape("far.x", "G24", 1, 1, 2)],
        "shape_prices": [
            *(
                {"shape": s["name"], "region": "r-1", "on_demand_usd_hour": 0.1 + i / 100, "source": "fx"}
                for i, s in enumerate(cheap)
            ),
            {"shape": "ok.x", "region": "r-1", "on_demand_usd_hour": 1.0, "source": "fx"},
            {"shape": "far.x", "region": "r-1", "on_demand_usd_hour": 5.0, "source": "fx"},
        ],
    }
    catalog = catalog_from_data([("cheap.yaml", data)])
    profile = load_profiles(write_profiles(tmp_path, {"base": PROFILE}))["base"]
    spec = build_spec(profile, wl(), Platform.AWS_GPU, catalog, "env")
    assert spec.offer == "ok.x"
    cheaper = [m for m in spec.near_misses if m.usd_hour is not None and m.usd_hour < 1.0]
    assert [m.offer for m in cheaper] == [f"tiny{i}.x" for i in range(7)]  # all seven, cheapest first
    assert all(m.reason.startswith("short: cpu 2 vCPUs < 8 vCPUs") for m in cheaper)


def test_the_spot_shape_wins_once_its_expected_cost_is_the_lower(tmp_path: Path) -> None:
    # 0.96 x 1.24 + 0.04 x 3.40 = 1.3264 > 1.32; 0.97 x 1.24 + 0.03 x 3.40 = 1.3048 < 1.32.
    assert build_spec(spot_profile(tmp_path / "a", 0.96), wl(), Platform.AWS_GPU, spot_catalog(), "e").offer == "bal.x"
    assert build_spec(spot_profile(tmp_path / "b", 0.97), wl(), Platform.AWS_GPU, spot_catalog(), "e").offer == "huge.x"


def internode_profile(tmp_path: Path) -> Profile:
    text = PROFILE.rstrip() + (
        "\n  network_gbps_per_accelerator: {value: 5, reason: datasets and checkpoints over the host network}"
        "\n  internode_network_gbps_per_accelerator: {value: 50, reason: gradient all-reduce between nodes}\n"
        "topology: {nodes: multi, fabric: efa}\n"
    )
    return load_profiles(write_profiles(tmp_path, {"base": text}))["base"]


def test_internode_minimums_and_the_fabric_apply_only_with_more_than_one_node(tmp_path: Path) -> None:
    profile = internode_profile(tmp_path)
    one = build_spec(profile, wl(acceleratorCount=4), Platform.AWS_GPU, mini(), "env")
    # One node: quadne.x (no EFA, 100 Gbps < 4 x 50) is the cheaper and is balanced.
    assert one.offer == "quadne.x" and one.balance.ok
    assert "internode network" not in [line.dimension for line in one.balance.lines]
    with pytest.raises(NothingFits, match=r"internode network 100 Gbps < 200 Gbps"):
        build_spec(profile, wl(acceleratorCount=4, nodes=2), Platform.AWS_GPU, mini(), "env")


def mini() -> Catalog:
    return catalog_from_data([("mini.yaml", {"sources": {"fx": SOURCE}, **MINI})])


def test_a_network_figure_no_source_publishes_is_a_gap_the_plan_asks_for_not_a_refusal(
    tmp_path: Path, mini_catalog: Catalog
) -> None:
    """Issue 21: a missing figure is a gap. The shape is not refused as if a rule failed (nor
    compared as 0 Gbps): the plan warns that the minimum is unchecked and asks for the figure."""
    text = PROFILE.rstrip() + "\n  network_gbps_per_accelerator: {value: 5, reason: datasets over the host network}\n"
    profile = load_profiles(write_profiles(tmp_path, {"base": text}))["base"]
    spec = build_spec(profile, wl(accelerator="tx-4"), Platform.TPU_VM, mini_catalog, "env")
    network = next(line for line in spec.balance.lines if line.dimension == "network")
    assert spec.offer == "tx-4" and spec.balance.ok and (network.known, network.provided) == (False, 0.0)
    assert spec.balance.summary() == "balanced where published; unchecked: network not published (needs 20 Gbps)"
    assert any(
        w.startswith("tx-4: network not published (needs 20 Gbps), so this minimum is unchecked: give the figure")
        for w in spec.warnings
    )


def test_the_hint_offers_fewer_accelerators_only_where_fewer_are_sold(tmp_path: Path, mini_catalog: Catalog) -> None:
    greedy = load_profiles(write_profiles(tmp_path, {"base": PROFILE.replace("value: 8,", "value: 64,")}))["base"]
    with pytest.raises(NothingFits) as four:
        build_spec(greedy, wl(acceleratorCount=4), Platform.AWS_GPU, mini_catalog, "env")
    assert "(lower the accelerator count (aws-gpu sells 1 per node), pick another region" in str(four.value)
    with pytest.raises(NothingFits) as one:
        build_spec(greedy, wl(), Platform.AWS_GPU, mini_catalog, "env")
    assert "lower the accelerator count" not in str(one.value)


# --- the shipped catalog and profiles: the cases issue 13 names.


def real(**kw: Any) -> tuple[Profile, Workload]:
    return load_profiles()[kw["profile"]], Workload.model_validate(kw)


def test_fine_tuning_one_l4_on_aws_takes_the_balanced_g6_4xlarge() -> None:
    from fullserver.catalog import load_catalog

    profile, work = real(profile="fine-tuning", platform="aws-gpu", region="us-east-1", accelerator="L4")
    spec = size(profile, work, load_catalog(), "env")
    assert (spec.offer, spec.spot) == ("g6.4xlarge", True)
    assert "g6.16xlarge" not in [m.offer for m in spec.near_misses]  # dearer: not passed over


@pytest.mark.parametrize(
    ("accelerator", "platform", "region", "offer"),
    [
        ("A100-80GB", "aws-gpu", "us-east-1", "p4de.24xlarge"),
        ("H200-141GB", "aws-gpu", "us-east-1", "p5en.48xlarge"),
        ("B200", "aws-gpu", "us-east-1", "p6-b200.48xlarge"),
        ("v5p-8", "tpu-vm", "us-east5", "v5p-8"),
    ],
)
def test_fine_tuning_has_a_shape_for_the_eight_gpu_reference_servers_and_v5p_8(
    accelerator: str, platform: str, region: str, offer: str
) -> None:
    from fullserver.catalog import load_catalog

    kw: dict[str, Any] = {"profile": "fine-tuning", "platform": platform, "region": region, "accelerator": accelerator}
    if platform != "tpu-vm":
        kw["acceleratorCount"] = 8
    profile, work = real(**kw)
    assert size(profile, work, load_catalog(), "env").offer == offer


def test_scale_training_single_node_is_not_held_to_the_internode_minimum() -> None:
    from fullserver.catalog import load_catalog

    kw = {"profile": "scale-training", "platform": "aws-gpu", "region": "us-east-1", "accelerator": "A10G"}
    profile, work = real(**kw, acceleratorCount=4)
    assert size(profile, work, load_catalog(), "env").offer == "g5.12xlarge"
    profile, two = real(**kw, acceleratorCount=4, nodes=2)
    with pytest.raises(NothingFits, match=r"g5\.12xlarge: short: internode network 40 Gbps < 400 Gbps"):
        size(profile, two, load_catalog(), "env")


def test_g6e_48xlarge_local_nvme_counts_for_scale_training() -> None:
    from fullserver.catalog import load_catalog

    profile, work = real(
        profile="scale-training",
        platform="aws-gpu",
        region="us-east-1",
        accelerator="L40S",
        acceleratorCount=8,
        nodes=2,
    )
    spec = size(profile, work, load_catalog(), "env")
    nvme = next(line for line in spec.balance.lines if line.dimension == "nvme")
    assert spec.offer == "g6e.48xlarge" and nvme.ok and nvme.provided == pytest.approx(7600 / 1.073741824)
    assert (spec.local_nvme_disks, spec.scratch_raid0) == (4, True)


# --- GCP machine series are sold in some zones only (catalog machine_zones).


def test_a_gcp_node_goes_to_a_zone_that_sells_its_shape() -> None:
    """An H200 cluster in us-central1 lands in us-central1-b, the one zone there selling
    a3-ultragpu-8g (not us-central1-a, the region's first zone); naming another zone is refused."""
    profiles = load_profiles()
    catalog = load_catalog()
    config = {
        "profile": "scale-training",
        "platform": "gcp-gpu",
        "region": "us-central1",
        "accelerator": "H200-141GB",
        "acceleratorCount": 8,
        "nodes": 2,
        "owner": "t",
    }
    spec = plan_workload("h200", "h200", Workload.model_validate(config), profiles, catalog).spec
    assert (spec.offer, spec.zone) == ("a3-ultragpu-8g", "us-central1-b")
    with pytest.raises(FullserverError, match="not offered in us-central1-a"):
        plan_workload("h200", "h200", Workload.model_validate({**config, "zone": "us-central1-a"}), profiles, catalog)


def _two_clouds(tmp_path: Path) -> tuple[Profile, Catalog]:
    """G24 on both clouds in r-1, Google's cheaper and first in the profile's order."""
    data = {
        **MINI,
        "shapes": [*MINI["shapes"], shape("g.x", "G24", 1, 16, 96, platform="gcp-gpu")],
        "shape_prices": [
            *MINI["shape_prices"],
            {"shape": "g.x", "region": "r-1", "on_demand_usd_hour": 1.5, "source": "fx"},
        ],
    }
    catalog = load_catalog(write_catalog(tmp_path / "two", data))
    text = PROFILE.replace("platforms: [aws-gpu, tpu-vm]", "platforms: [gcp-gpu, aws-gpu]")
    return load_profiles(write_profiles(tmp_path / "p2", {"base": text}))["base"], catalog


def test_a_key_only_one_platform_takes_is_a_choice_of_that_platform(tmp_path: Path) -> None:
    """capacityBlock is an AWS reservation: sizing lands the stack on AWS, never on the cheaper
    Google shape that would ignore it."""
    profile, catalog = _two_clouds(tmp_path)
    assert size(profile, wl(), catalog, "env").offer == "g.x"
    block = wl(capacityBlock=True, reservation="cr-0123456789abcdef0", zone="r-1a")
    assert block.takes_keys(Platform.AWS_GPU) and not block.takes_keys(Platform.GCP_GPU)
    spec = size(profile, block, catalog, "env")
    assert (spec.platform, spec.offer, spec.capacity_block) == (Platform.AWS_GPU, "wide.x", True)


def test_keys_no_single_platform_takes_are_refused_naming_them(tmp_path: Path) -> None:
    profile, catalog = _two_clouds(tmp_path)
    both = wl(capacityBlock=True, reservation="cr-0123456789abcdef0", zone="r-1a", queued=True)
    with pytest.raises(InputError) as err:
        size(profile, both, catalog, "env")
    assert err.value.line() == (
        "fullserver:queued, fullserver:capacityBlock: no platform the profile allows takes them all: "
        "gcp-gpu refuses queued, capacityBlock; aws-gpu refuses queued "
        "(remove the keys of the platform you do not want, or set fullserver:platform)"
    )
