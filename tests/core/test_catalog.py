"""The catalog: the shipped data is complete and sourced; the loader refuses impossible data."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from fullserver.catalog import Catalog, Same, load_catalog
from fullserver.catalog.model import GB_PER_GIB, Platform
from fullserver.errors import InputError
from fullserver.kube import SIZED_AS
from fullserver.platforms import pool_member_of

from .conftest import MINI, SOURCE, shape, write_catalog

REQUIRED_AWS_FAMILIES = {
    "g4dn",
    "g5",
    "g6",
    "g6e",
    "p4d",
    "p4de",
    "p5",
    "p5e",
    "p5en",
    "p6-b200",
    "trn1",
    "trn2",
    "inf2",
}
REQUIRED_GCP_FAMILIES = {"a2", "a3", "a4", "g2", "n1"}
REQUIRED_TPU_GENERATIONS = {"v4", "v5e", "v5p", "v6e"}


@pytest.fixture(scope="module")
def shipped() -> Catalog:
    load_catalog.cache_clear()
    return load_catalog()


def test_the_shipped_catalog_covers_the_required_families(shipped: Catalog) -> None:
    aws = {o.family for o in shipped.offers if o.platform is Platform.AWS_GPU}
    assert REQUIRED_AWS_FAMILIES - {f.replace("trn1n", "trn1") for f in aws} == set()
    gcp = {o.family.split("-")[0].split("+")[0] for o in shipped.offers if o.platform is Platform.GCP_GPU}
    assert gcp >= REQUIRED_GCP_FAMILIES
    assert {o.family for o in shipped.offers if o.platform is Platform.TPU_VM} >= REQUIRED_TPU_GENERATIONS


def test_every_shape_a_pinning_node_pool_may_run_says_how_many_pods_its_network_addresses(shipped: Catalog) -> None:
    """A member that pins its nodes' reservations (EKS's nodeadm) pins ``maxPods`` at what the VPC
    CNI addresses (``eks.max_pods``): a shape without the figure would pin 110 and strand pods
    past its ENIs without an address. Every shape such a pool may run has it."""
    for pool, vm in SIZED_AS.items():
        member = pool_member_of(pool)
        if member is None or member.kube_reserved is None:
            continue
        missing = [o.name for o in shipped.offers if o.platform is vm and o.pods is None]
        assert missing == [], pool


def test_every_figure_and_price_names_a_dated_source(shipped: Catalog) -> None:
    for offer in shipped.offers:
        for name, fig in offer.figures.items():
            assert fig.source in shipped.sources, (offer.name, name)
        for price in offer.prices.values():
            for key in price.source.split("+"):
                assert shipped.sources[key].as_of.year >= 2016, (offer.name, key)


def test_prices_cover_america_europe_and_asia(shipped: Catalog) -> None:
    for platform in (Platform.AWS_GPU, Platform.GCP_GPU):
        regions = shipped.regions(platform)
        assert any(r.startswith("us-") for r in regions)
        assert any(r.startswith(("eu", "europe")) for r in regions)
        assert any(r.startswith(("ap-", "asia")) for r in regions)


def test_h100_shapes_exist_on_both_clouds(shipped: Catalog) -> None:
    h100 = {o.platform for o in shipped.offers if o.accelerator == "H100-80GB"}
    assert {Platform.AWS_GPU, Platform.GCP_GPU} <= h100


def test_aws_instance_store_is_decimal_gb_converted_to_gib(shipped: Catalog) -> None:
    p5 = shipped.offer("p5.48xlarge")
    assert p5 is not None
    assert p5.local_nvme_disks == 8
    assert p5.host.local_nvme_gib == pytest.approx(8 * 3800 / GB_PER_GIB, rel=0.01)


def test_attached_gpu_hosts_stay_within_the_per_count_limits(shipped: Catalog) -> None:
    n1 = [o for o in shipped.offers if o.family.startswith("n1+")]
    assert n1
    for offer in n1:
        host = shipped.offer(offer.machine_type)
        assert host is None  # hosts without GPUs are not offers of their own
        assert offer.host.accelerator_count >= 1


def test_tpu_slice_price_is_chips_times_chip_price(mini_catalog: Catalog) -> None:
    tx16 = mini_catalog.offer("tx-16")
    assert tx16 is not None
    assert tx16.prices["r-1"].on_demand == pytest.approx(16 * 1.5)
    assert tx16.host.accelerator_count == 4 and tx16.hosts == 4


def test_accelerators_are_found_by_alias_case_insensitively(mini_catalog: Catalog) -> None:
    assert mini_catalog.accelerator("G24-ALIAS").name == "G24"
    with pytest.raises(InputError, match="unknown accelerator 'nope'"):
        mini_catalog.accelerator("nope")


def _broken(mutate: Any) -> dict[str, Any]:
    data = copy.deepcopy(MINI)
    mutate(data)
    return data


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["shapes"].append(shape("mid.x", "G24", 1, 8, 64)), "shapes[6] (mid.x): duplicate shape"),
        (lambda d: d["shapes"].append(shape("odd.x", "H999", 1, 8, 64)), "unknown accelerator 'H999'"),
        (lambda d: d["shapes"].append(shape("mib.x", "G24", 1, 8, 65536)), "implausible"),
        (lambda d: d["shapes"].append(shape("neg.x", "G24", 1, -8, 64)), "greater than 0"),
        (lambda d: d["shape_prices"].append({**d["shape_prices"][0]}), "duplicate price"),
        (
            lambda d: d["shape_prices"].append(
                {"shape": "ghost.x", "region": "r-1", "on_demand_usd_hour": 1, "source": "fx"}
            ),
            "unknown shape 'ghost.x'",
        ),
        (
            lambda d: d["shape_prices"].append(
                {"shape": "wide.x", "region": "r-9", "on_demand_usd_hour": 1, "spot_usd_hour": 2, "source": "fx"}
            ),
            "spot price above on-demand",
        ),
        (
            lambda d: d["shape_prices"].append(
                {"shape": "wide.x", "region": "r-9", "on_demand_usd_hour": 1, "source": "nowhere"}
            ),
            "unknown source 'nowhere'",
        ),
        (lambda d: d["tpu_types"][0].update(topology="2x3"), "topology 2x3 has 6 chips, not 4"),
        (
            lambda d: d["accelerators"].append({**d["accelerators"][0], "name": "G25"}),
            "alias 'g24-alias' is already used by G24",
        ),
        (lambda d: d["shapes"][0].update(price=3), "unknown key 'shapes[0].price'"),
        (
            lambda d: d["shapes"][0].update(local_nvme_total_gb=500),
            "local_nvme_total_gb is for a total without a per-disk split",
        ),
        (
            lambda d: d["commitment_discounts"][0].update(shapes=["quad.x", "ghost.x"]),
            "commitment_discounts[0] (quad, 1 years): unknown shape 'ghost.x'",
        ),
        (
            lambda d: d["commitment_discounts"].append(
                {"provider": "aws", "applies_to": "nofamily", "term_years": 3, "discount": 0.5, "source": "fx"}
            ),
            "no offer of family 'nofamily'",
        ),
        (
            lambda d: d["commitment_discounts"].extend(
                {
                    "provider": "aws",
                    "applies_to": a,
                    "term_years": 3,
                    "discount": 0.5,
                    "shapes": ["quad.x"],
                    "source": "fx",
                }
                for a in ("one", "two")
            ),
            "quad.x already has a discount (one)",
        ),
        (
            lambda d: d.setdefault("machine_zones", []).append({"series": "ghost", "zones": ["r-1-a"], "source": "fx"}),
            "machine_zones[0] (ghost): no shape of this series",
        ),
        (
            lambda d: d.setdefault("machine_zones", []).append(
                {"series": "big.x", "zones": ["nowhere"], "source": "fx"}
            ),
            "machine_zones[0] (big.x): 'nowhere' is not a zone",
        ),
        (
            lambda d: d.setdefault("machine_zones", []).append({"series": "big.x", "zones": ["r-1-a"], "source": "fx"}),
            "machine_zones[0] (big.x): big.x is priced in r-2 but no zone there is listed",
        ),
        (
            lambda d: d.update(
                sources={
                    "fx": SOURCE | {"url": f"https://github.com/o/r/blob/{'a1' * 20}/p.csv", "as_of_kind": "retrieved"}
                }
            ),
            "the url pins commit a1a1a1a1a1a1: date the source by that snapshot",
        ),
    ],
)
def test_the_loader_refuses_impossible_data_naming_file_and_entry(tmp_path: Path, mutate: Any, message: str) -> None:
    with pytest.raises(InputError) as err:
        load_catalog(write_catalog(tmp_path / "c", _broken(mutate)))
    assert message in str(err.value)
    assert "fixture.yaml" in str(err.value)


# --- Issue 13: no figure silently zero, no discount where its source does not reach.


def test_local_nvme_known_only_in_total_counts_as_that_total(tmp_path: Path) -> None:
    data = copy.deepcopy(MINI)
    data["shapes"].append(shape("total.x", "G24", 1, 8, 64, local_nvme_total_gb=7600))
    catalog = load_catalog(write_catalog(tmp_path / "c", data))
    offer = catalog.offer("total.x")
    assert offer is not None
    assert offer.host.local_nvme_gib == pytest.approx(7600 / GB_PER_GIB)
    assert (offer.local_nvme_disks, offer.figures["local_nvme_total_gb"].value) == (0, 7600)


def test_shipped_shapes_with_instance_store_never_read_as_zero(shipped: Catalog) -> None:
    # g6/g6e/trn1n/trn2 were once left without local NVMe (per-disk split unsourced): 0 GiB.
    for name, gb in {"g6.4xlarge": 600, "g6e.48xlarge": 7600, "trn1n.32xlarge": 7600, "trn2.48xlarge": 7600}.items():
        offer = shipped.offer(name)
        assert offer is not None and offer.host.local_nvme_gib == pytest.approx(gb / GB_PER_GIB), name


def test_a_discount_naming_its_shapes_reaches_no_other_shape_of_the_family(shipped: Catalog) -> None:
    high = shipped.commitment("gcp", "a3", 1, "a3-highgpu-8g")
    assert high is not None and high.discount == 0.3063
    assert shipped.commitment("gcp", "a3", 1, "a3-ultragpu-8g") is None
    assert shipped.commitment("gcp", "a2", 1, "a2-ultragpu-8g") is None
    mega = shipped.commitment("gcp", "a3", 3, "a3-megagpu-8g")
    assert mega is not None and mega.discount == 0.5645
    # A family-wide entry (a TPU generation priced per chip-hour) still reaches every type of it.
    v6e = shipped.commitment("gcp", "v6e", 1, "v6e-16")
    assert v6e is not None and v6e.discount == 0.30


def test_tpu_host_network_follows_the_hosts_google_builds(shipped: Catalog) -> None:
    per_chip = {"v5p-8": 50, "v5litepod-8": 25, "v5litepod-16": 25, "v6e-8": 100, "v6e-4": 100}
    for name, gbps in per_chip.items():
        offer = shipped.offer(name)
        assert offer is not None and offer.host.network_gbps == gbps * offer.host.accelerator_count, name
    v4 = shipped.offer("v4-8")
    assert v4 is not None and v4.host.network_gbps is None  # not published: unknown, never 0


def test_a_price_given_twice_for_one_key_is_read_from_its_first_entry() -> None:
    """Storage and egress prices are looked up by key (indexes built once per catalog); where the
    data lists a key twice, the first entry is the one used, as a scan in file order found it."""
    catalog = load_catalog()
    disk, egress = catalog.storage_prices[0], catalog.egress_prices[0]
    dearer_disk = disk.model_copy(update={"usd_gib_month": disk.usd_gib_month + 1})
    dearer_egress = egress.model_copy(update={"usd_per_gb": egress.usd_per_gb + 1})
    twice = Catalog(
        sources=catalog.sources,
        accelerators=catalog.accelerators,
        offers=catalog.offers,
        storage_prices=[disk, dearer_disk],
        egress_prices=[egress, dearer_egress],
        commitment_discounts=[],
    )
    assert twice.storage_price(disk.provider, disk.kind, disk.region) is disk
    assert twice.egress_price(egress.provider, egress.region) is egress
    assert twice.storage_price(disk.provider, disk.kind, "nowhere-1") is None
    assert twice.egress_price(egress.provider, "nowhere-1") is None


@dataclasses.dataclass(frozen=True)
class _Asked:
    word: str


_WORKED: list[str] = []


def _echo(q: _Asked, catalog: Catalog) -> str:
    _WORKED.append(q.word)
    return q.word.upper()


def _other(q: _Asked, catalog: Catalog) -> str:
    _WORKED.append(f"other {q.word}")
    return q.word


def test_an_answer_is_worked_out_once_per_function_and_question_and_the_memory_is_bounded(
    mini_catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Catalog.answer`` (the rankings, shapes, capacity rules and rates sizing keeps): an equal
    question to the same function gets the kept answer without the work; another function or
    another question is worked out; past ``MEMO_LIMIT`` answers the memory starts again. ``Same``
    holds an object by identity: an equal copy is another question."""
    import fullserver.catalog.memo as memo_module

    _WORKED.clear()
    assert mini_catalog.answer(_echo, _Asked("a")) == "A"
    assert mini_catalog.answer(_echo, _Asked("a")) == "A"
    assert mini_catalog.answer(_other, _Asked("a")) == "a"
    assert mini_catalog.answer(_echo, _Asked("b")) == "B"
    assert _WORKED == ["a", "other a", "b"]
    one, copy = _Asked("x"), _Asked("x")
    assert Same(one) == Same(one) != Same(copy) and hash(Same(one)) == id(one)
    monkeypatch.setattr(memo_module, "MEMO_LIMIT", len(mini_catalog.memo))
    mini_catalog.answer(_echo, _Asked("c"))
    assert list(mini_catalog.memo) == [(_echo, _Asked("c"))]
