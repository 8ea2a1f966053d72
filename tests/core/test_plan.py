"""Planning a stack file: the first error a person sees is the one to fix first."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from fullserver.catalog import load_catalog
from fullserver.comparable import DEDICATED
from fullserver.errors import InputError
from fullserver.plan import StackPlan, plan_paths
from fullserver.platform import Platform
from fullserver.stacks import find_stacks

KNOWN = "batch-inference, dedicated-steady, experimentation, fine-tuning, realtime-inference, scale-training"


def test_a_stack_naming_an_unknown_profile_is_told_so_before_anything_else(tmp_path: Path) -> None:
    """The profile decides what the other keys must be, so it is named (with the known ones)
    even when those keys are wrong too; it used to say "an accelerator is needed"."""
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(
        "config:\n  fullserver:profile: fine-tunning\n  fullserver:region: us-east-1\n  fullserver:platform: aws-gpu\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as err:
        plan_paths([path])
    assert str(err.value) == (
        f"{path}: fullserver:profile: unknown profile 'fine-tunning' (did you mean fine-tuning? known profiles: {KNOWN})"
    )


def test_a_stack_with_a_known_profile_keeps_its_own_error(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.x.yaml"
    path.write_text(
        "config:\n  fullserver:profile: fine-tuning\n  fullserver:region: us-east-1\n  fullserver:platform: aws-gpu\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as err:
        plan_paths([path])
    assert "unknown profile" not in str(err.value)
    assert "accelerator" in str(err.value)


# --- the same job elsewhere: like with like -------------------------------------------------------

STACKS = Path(__file__).parents[2] / "stacks"


def _plan(name: str) -> StackPlan:
    [plan] = plan_paths(find_stacks(STACKS, [name]))
    return plan


@pytest.mark.parametrize("name", ["exp-aws-spot", "train-tpu-v5e", "train-p5-cluster", "finetune-gcp-g2"])
def test_every_cloud_row_is_priced_on_one_pricing_model_and_says_which(name: str) -> None:
    """exp-aws-spot put GCP's spot price beside AWS's on-demand one without a word."""
    plan = _plan(name)
    assert plan.baseline is not None and plan.comparison
    rows = [plan.baseline, *plan.comparison]
    assert all(r.pricing for r in rows if r.usd_month is not None)
    assert len({r.pricing for r in rows if r.usd_month is not None and r.pricing != DEDICATED}) == 1


def test_a_mixed_comparison_is_repriced_on_demand_and_the_chosen_row_says_why() -> None:
    """Spot where every row has a spot price; when one has none, every row on demand."""
    catalog = load_catalog()
    [both_spot] = plan_paths(find_stacks(STACKS, ["finetune-gcp-g2"]), catalog=catalog)
    assert {r.pricing for r in (both_spot.baseline, *both_spot.comparison) if r} == {"spot"}
    no_aws_spot = replace(
        catalog,
        offers=[
            replace(o, prices={r: replace(p, spot=None) for r, p in o.prices.items()})
            if o.platform is Platform.AWS_GPU
            else o
            for o in catalog.offers
        ],
    )
    [mixed] = plan_paths(find_stacks(STACKS, ["finetune-gcp-g2"]), catalog=no_aws_spot)
    assert mixed.baseline is not None
    assert {r.pricing for r in (mixed.baseline, *mixed.comparison)} == {"on-demand"}
    assert mixed.baseline.note.endswith(
        "every row compared on demand, the one pricing model all have (their own: on-demand for aws-gpu; spot for gcp-gpu)"
    )
    assert mixed.baseline.usd_month is not None
    assert mixed.cost.usd_month < mixed.baseline.usd_month  # the plan's own estimate stays spot


def test_a_dedicated_server_keeps_its_contract_labelled() -> None:
    bare = next(c for c in _plan("train-p5-cluster").comparison if c.platform is Platform.BARE_METAL)
    assert bare.pricing == DEDICATED


def test_an_alternative_left_unsized_holds_the_chosen_accelerator_memory() -> None:
    """A v5p-128 slice (64 chips) was compared with 64 H100s, chip for chip: less memory.
    Now with the fewest 8-GPU nodes that hold as much."""
    plan = _plan("train-tpu-v5p-slice")
    catalog = load_catalog()
    assert plan.baseline is not None and plan.baseline.capacity_ratio == 1.0
    chosen_gib = (
        plan.spec.accelerator_count * plan.spec.nodes * catalog.accelerator(plan.spec.accelerator or "").memory_gib
    )
    [aws] = plan.comparison
    node_gib = 8 * catalog.accelerator("H100-80GB").memory_gib
    nodes = int(aws.note.split(" node(s)")[0].split()[-1])
    assert nodes * node_gib >= chosen_gib > (nodes - 1) * node_gib
    assert aws.capacity_ratio == round(nodes * node_gib / chosen_gib, 2)
    assert aws.capacity == f"{nodes * 8} x H100-80GB, {nodes * node_gib:g} GiB"


def test_an_explicitly_sized_alternative_states_its_capacity_ratio() -> None:
    plan = _plan("train-tpu-v5e")  # v5litepod-8 beside 8 x L4, as the stack asks
    catalog = load_catalog()
    ratio = round(catalog.accelerator("L4").memory_gib / catalog.accelerator("TPU-v5e").memory_gib, 2)
    assert {c.capacity_ratio for c in plan.comparison} == {ratio}
    assert ratio != 1.0


def test_the_same_accelerator_elsewhere_is_the_same_capacity() -> None:
    for name in ("exp-aws-spot", "finetune-gcp-g2", "serve-gcp-realtime"):
        assert {c.capacity_ratio for c in _plan(name).comparison} == {1.0}
