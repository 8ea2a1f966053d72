"""Issue 21: the vendors' reference designs pass the profile for their job, and the counter-examples
a rule's own reason calls unbalanced are refused (``tests/data/reference_designs.yaml``).

Cloud shapes and TPU slices are judged as sizing judges them (``fullserver.sizing.assess``, the
same path ``rank`` takes); declared servers as a bare-metal plan judges them (``declared_host``
then ``evaluate``). A figure no source publishes is a gap: listed, never a refusal.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from fullserver.balance import BalanceReport, evaluate
from fullserver.catalog import Offer, load_catalog
from fullserver.kube import SIZED_AS
from fullserver.platform import Platform
from fullserver.platforms import Refusal, pool_member_of
from fullserver.profiles import load_profiles
from fullserver.sizing import assess, declared_host
from fullserver.workload import DedicatedHost

DATA = yaml.safe_load((Path(__file__).parent.parent / "data" / "reference_designs.yaml").read_text())
DESIGNS: list[dict[str, Any]] = DATA["designs"]


def _judge(design: dict[str, Any], pool: Platform | None = None) -> tuple[BalanceReport, str]:
    """The balance report of a design under its profile, and the rejection no line states;
    ``pool``: its shape as a node of that node-pool platform."""
    profile = load_profiles()[design["profile"]]
    platform = Platform(design["platform"])
    nodes = design.get("nodes", 1)
    catalog = load_catalog()
    if "offer" in design:
        offer = catalog.offer(design["offer"])
        assert offer is not None, design["offer"]
        _, report, reason = assess(profile, offer, platform, nodes, pool)
        return report, reason
    host = declared_host(DedicatedHost.model_validate(design["host"]), catalog)
    return evaluate(profile.balance_for(platform), host, nodes), ""


@pytest.mark.parametrize("design", DESIGNS, ids=[f"{d['design']} / {d['profile']}" for d in DESIGNS])
def test_a_reference_design_gets_the_verdict_its_job_calls_for(design: dict[str, Any]) -> None:
    report, reason = _judge(design)
    gaps = [line.dimension for line in report.gaps]
    assert gaps == design.get("gaps", []), f"gaps {gaps}"
    if design["expect"] == "balanced":
        assert report.ok and not reason, reason or report.summary()
        return
    refused = design["expect"]["refused"]
    short = [line.dimension for line in report.short]
    assert refused in short or refused in reason, f"expected refused on {refused}: {reason or report.summary()}"


def test_every_design_is_sourced_with_a_url_and_a_date() -> None:
    catalog = load_catalog()
    for design in DESIGNS:
        if "offer" in design:
            offer = catalog.offer(design["offer"])
            assert offer is not None and offer.figures, design["design"]
            for name, figure in offer.figures.items():
                source = catalog.sources[figure.source.split("+")[0]]
                assert source.url.startswith("https://") and source.as_of, (design["design"], name)
            if "source" in design:  # the vendor page naming the shape for this job
                cited = DATA["sources"][design["source"]]
                assert cited["url"].startswith("https://") and cited["as_of"], design["design"]
        else:
            source = DATA["sources"][design["source"]]
            assert source["url"].startswith("https://") and source["as_of"], design["design"]


def test_every_catalog_machine_a_profile_reason_cites_is_in_the_table_for_that_profile() -> None:
    """A threshold's reason names the designs it was set from; each named catalog machine is
    then checked against that profile by the table above (not only the one minimum citing it)."""
    offers = {o.name for o in load_catalog().offers}
    tabled = {(d["profile"], d.get("offer")) for d in DESIGNS}
    missing = []
    for profile in load_profiles().values():
        reasons = [
            m.reason for p in profile.platforms for m in dict(profile.balance_for(p)).values() if hasattr(m, "reason")
        ]
        for name in {n for r in reasons for n in re.findall(r"[a-z0-9][a-z0-9.-]*[a-z0-9]", r) if n in offers}:
            if (profile.name, name) not in tabled:
                missing.append((profile.name, name))
    assert missing == []


def test_the_table_covers_every_profile_with_a_design_and_a_counter_example_where_one_is_named() -> None:
    assert {d["profile"] for d in DESIGNS} == set(load_profiles())
    assert any(d["expect"] != "balanced" for d in DESIGNS if d["profile"] == "scale-training")


def _sells(pool: Platform, offer: Offer) -> bool:
    """Whether the node-pool platform runs this shape as its nodes (its member's GPU or TPU pool rule)."""
    rules = pool_member_of(pool)
    assert rules is not None
    if offer.topology:  # a TPU slice: only a member with TPU pools takes it
        if rules.tpu_nodes is None:
            return False
        return not isinstance(
            rules.tpu_nodes(offer.name, offer.total_accelerators, offer.hosts, offer.topology), Refusal
        )
    return not isinstance(rules.gpu_nodes(offer.machine_type, offer.accelerator), Refusal)


def _offer(design: dict[str, Any]) -> Offer:
    offer = CATALOG.offer(design["offer"])
    assert offer is not None, design["offer"]
    return offer


CATALOG = load_catalog()
ON_POOLS = [
    (design, pool)
    for design in DESIGNS
    if "offer" in design
    for pool, vm in SIZED_AS.items()
    if vm.value == design["platform"] and _sells(pool, _offer(design))
]


def test_the_node_pool_table_covers_every_pool_platform_and_each_named_shape() -> None:
    """The shapes the issue named (p4d/p4de and p6-b200 on EKS, a2-ultragpu on GKE) are in it."""
    assert {pool for _, pool in ON_POOLS} == set(SIZED_AS)
    named = {(d["offer"], d["profile"], pool) for d, pool in ON_POOLS}
    assert ("p4d.24xlarge", "scale-training", Platform.EKS_GPU) in named
    assert ("p4de.24xlarge", "fine-tuning", Platform.EKS_GPU) in named
    assert {("p6-b200.48xlarge", p, Platform.EKS_GPU) for p in ("fine-tuning", "realtime-inference")} <= named
    assert ("a2-ultragpu-8g", "scale-training", Platform.GKE_GPU) in named


@pytest.mark.parametrize(
    ("design", "pool"), ON_POOLS, ids=[f"{d['design']} / {d['profile']} / {p.value}" for d, p in ON_POOLS]
)
def test_a_reference_design_gets_the_same_verdict_as_a_node_of_a_pool(design: dict[str, Any], pool: Platform) -> None:
    """Issue 38: the profile's minimums are what the accelerators get of the node, not the pod's
    share after kubelet's reservations, so a shape balanced as a VM is balanced as a node (and a
    counter-example stays refused, on the same dimension)."""
    report, reason = _judge(design, pool)
    if design["expect"] == "balanced":
        assert report.ok and not reason, reason or report.summary()
        return
    refused = design["expect"]["refused"]
    assert refused in [line.dimension for line in report.short] or refused in reason, reason or report.summary()
