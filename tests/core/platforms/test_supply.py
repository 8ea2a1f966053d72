"""How capacity comes: what an environment is built and billed as, what a stack names, where
hardware is priced (``fullserver.platforms.supply``), answered per platform."""

from __future__ import annotations

from fullserver.platform import Platform
from fullserver.platforms import all_rules, rules_for
from fullserver.platforms.supply import DECLARED, MACHINES, SLICES


def test_each_platform_answers_with_its_supply() -> None:
    supplies = {r.platform: r.supply for r in all_rules()}
    assert {p for p, s in supplies.items() if s is SLICES} == {Platform.TPU_VM, Platform.GKE_TPU}
    assert {p for p, s in supplies.items() if s is DECLARED} == {Platform.BARE_METAL}
    assert rules_for(Platform.AWS_GPU).supply is MACHINES


def test_a_slice_is_one_resource_whose_hosts_are_its_nodes() -> None:
    assert (SLICES.units(16), SLICES.nodes(hosts=16, asked=1)) == (1, 16)
    assert (MACHINES.units(4), MACHINES.nodes(hosts=1, asked=4)) == (4, 4)
    assert (DECLARED.units(3), DECLARED.nodes(hosts=1, asked=3)) == (3, 3)


def test_a_slice_is_queued_when_asked_or_when_it_spans_hosts_and_machines_never() -> None:
    assert [SLICES.queued(asked, hosts) for asked, hosts in ((False, 1), (True, 1), (False, 4))] == [False, True, True]
    assert not MACHINES.queued(True, 4) and not DECLARED.queued(True, 4)


def test_a_stack_names_slices_by_type_and_machines_by_accelerator() -> None:
    assert (SLICES.named_by_type, SLICES.offered_as("v5p-8", "TPU-v5p"), SLICES.offered_noun) == (
        True,
        "v5p-8",
        "types",
    )
    assert (MACHINES.named_by_type, MACHINES.offered_as("p5.48xlarge", "H100-80GB")) == (False, "H100-80GB")
    assert MACHINES.offered_noun == "accelerators"


def test_declared_servers_are_priced_by_contract_named_by_their_section_and_reached_over_ssh() -> None:
    assert (DECLARED.from_catalog, DECLARED.hardware_key, DECLARED.reached_over_ssh) == (False, "dedicated", True)
    assert (MACHINES.from_catalog, MACHINES.hardware_key, MACHINES.reached_over_ssh) == (True, "accelerator", False)
    assert DECLARED.hardware_missing("bare-metal") == (
        "platform bare-metal needs a 'dedicated' section",
        "add monthlyUsd and host",
    )
    assert SLICES.hardware_missing("tpu-vm")[0] == "platform tpu-vm needs an accelerator"


def test_the_plan_shows_a_sized_boot_disk_and_a_declared_servers_one() -> None:
    assert [MACHINES.boot_disk_shown(s) for s in (True, False)] == [True, False]
    assert [DECLARED.boot_disk_shown(s) for s in (True, False)] == [True, True]
