"""``fullserver.platforms.bare_metal``: rented servers, declared by the stack and reached over SSH."""

from __future__ import annotations

import pytest

from fullserver.platform import AcceleratorKind, Platform, PricingModel
from fullserver.platforms import Request, bare_metal, option_refusal, rules_for, zone_problem
from fullserver.platforms.supply import DECLARED

RULES = bare_metal.RULES


def test_it_is_the_bare_metal_platform() -> None:
    assert rules_for(Platform.BARE_METAL) is RULES
    assert (RULES.provider, RULES.supply) == ("dedicated", DECLARED)
    assert RULES.accelerator_kinds == {AcceleratorKind.GPU}
    assert RULES.pricing == set(PricingModel)  # the contract sets the price
    assert set(RULES.options) == {"dedicated", "sshPrivateKey"}
    # Nothing is provisioned: no cloud disks, no placement, no catalog zones, no hourly comparison.
    assert (RULES.default_disk_kind, RULES.disk_kinds, RULES.boot_disk_sized) == ("", {}, False)
    assert (RULES.compact_placement, RULES.zone_from_catalog, RULES.hourly_gpus) == (False, False, False)


@pytest.mark.parametrize("zone", ["fra-rack-4", "dc1", "us-east-1a"])
def test_a_zone_is_a_label_and_a_region_is_itself(zone: str) -> None:
    assert RULES.zone_form is None and zone_problem(zone, "eu-central", Platform.BARE_METAL) is None
    assert RULES.nearest_region("hetzner-fsn", set()) == "hetzner-fsn"


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("reservation", "does not apply to bare-metal servers (they run what is installed on them)"),
        ("image", "does not apply to bare-metal servers (they run what is installed on them)"),
        (
            "queued",
            "applies only to tpu-vm (a queued resource is a Cloud TPU request); this stack is bare-metal",
        ),
        ("dedicated", None),
        ("sshPrivateKey", None),
    ],
)
def test_the_keys_it_takes_and_refuses(key: str, why: str | None) -> None:
    assert option_refusal(key, Platform.BARE_METAL) == why


def test_no_capacity_rule_applies_to_declared_servers() -> None:
    assert RULES.refusal(Request("dedicated (own)", spot=True, reservation="r", queued=True)) is None
    assert RULES.multi_node is None


def test_the_servers_rented_are_checked_by_bare_metal_itself() -> None:
    """The model runs each platform's stack rules; bare metal's holds the stack's counts to
    what ``dedicated`` declares."""
    assert rules_for(Platform.BARE_METAL).stack_rules == (bare_metal.servers_agree,)
    assert all(not rules_for(p).stack_rules for p in Platform if p is not Platform.BARE_METAL)
