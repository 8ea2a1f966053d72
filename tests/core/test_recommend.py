"""Recommend and the plan's budget guard: bad answers are refused in one line naming the flag.

The core validates (not the CLI), so every caller of ``recommend`` and ``check_budget`` gets
the same refusals, each an ``InputError`` (exit 2) rather than a ranking of nonsense.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from fullserver.catalog import Catalog, load_catalog
from fullserver.errors import EXIT_INPUT, BudgetExceeded, InputError
from fullserver.plan import check_budget, check_max_monthly_usd, plan_paths
from fullserver.platform import Platform
from fullserver.profiles import Profile, Purpose, load_profiles
from fullserver.recommend import GPU_PLATFORMS, MAX_TOP, RULES, Needs, notes_for, recommend, recommendation
from fullserver.stacks import find_stacks
from fullserver.yamlio import validation_error


@pytest.fixture(scope="module")
def shipped() -> tuple[dict[str, Profile], Catalog]:
    return load_profiles(), load_catalog()


def refused(needs: dict[str, Any], shipped: tuple[dict[str, Profile], Catalog], top: int = 5) -> str:
    with pytest.raises(InputError) as err:
        recommend(Needs.model_validate(needs), *shipped, top=top)
    assert err.value.exit_code == EXIT_INPUT
    assert "\n" not in str(err.value)
    return str(err.value)


# --- recommend --------------------------------------------------------------------------------


def test_an_unknown_gpu_is_refused_with_the_close_models(shipped: tuple[dict[str, Profile], Catalog]) -> None:
    line = refused({"gpu": "H9000"}, shipped)
    assert line.startswith("--gpu: unknown GPU model 'H9000' (did you mean ")
    assert "H100-80GB" in line.split("?")[0]
    assert "known GPUs: A100-40GB, A100-80GB, " in line


def test_a_gpu_may_be_named_by_any_alias_in_any_case(shipped: tuple[dict[str, Profile], Catalog]) -> None:
    for name in ("H100-80GB", "h100", "nvidia-h100-80gb", "L4"):
        assert recommend(Needs(gpu=name), *shipped, top=1)


def test_a_tpu_given_as_a_gpu_says_so(shipped: tuple[dict[str, Profile], Catalog]) -> None:
    assert refused({"gpu": "v5e"}, shipped) == (
        "--gpu: 'v5e' is a TPU, not a GPU (price it with --tpu and a TPU type such as v5litepod-8)"
    )


def test_a_tpu_generation_given_as_a_type_lists_its_types(shipped: tuple[dict[str, Profile], Catalog]) -> None:
    assert refused({"tpu": "v5e"}, shipped).startswith(
        "--tpu: 'v5e' is a TPU generation, not a type (name one of: v5litepod-1, v5litepod-128, "
    )


def test_an_unknown_tpu_type_is_refused_with_the_close_types(shipped: tuple[dict[str, Profile], Catalog]) -> None:
    line = refused({"tpu": "v5litepod-9"}, shipped)
    assert line.startswith("--tpu: unknown TPU type 'v5litepod-9' (did you mean v5litepod-")


def test_a_gpu_count_no_shape_offers_names_the_counts_that_exist(shipped: tuple[dict[str, Profile], Catalog]) -> None:
    """Its first ranks said "no shape offers 3 x H100" and it exited 0."""
    line = refused({"gpu": "H100-80GB", "gpu_count": 3}, shipped)
    assert line.startswith("--gpu-count: no shape offers 3 x H100-80GB per node (H100-80GB shapes have 1, ")
    assert line.endswith(", 8 per node)")


@pytest.mark.parametrize(
    ("answers", "line"),
    [
        ({"tpu": "v5litepod-8", "gpu": "L4"}, "--tpu: and --gpu both name the accelerator to price (give one of them)"),
        ({"tpu": "v5litepod-8", "cloud": "aws"}, "--tpu: TPUs are sold on gcp, not aws (drop --tpu or --cloud)"),
    ],
)
def test_a_tpu_beside_a_gpu_or_a_cloud_without_tpus_is_refused_not_dropped(
    shipped: tuple[dict[str, Profile], Catalog], answers: dict[str, object], line: str
) -> None:
    assert refused(answers, shipped) == line


def test_a_region_no_cloud_prices_is_refused_like_plan_refuses_it(shipped: tuple[dict[str, Profile], Catalog]) -> None:
    """It ranked unpriced rows and exited 0, where ``plan`` says "did you mean"."""
    assert refused({"region": "mars-north-1"}, shipped).startswith(
        "--region: no cloud prices in region 'mars-north-1' (did you mean ap-northeast-1"
    )


@pytest.mark.parametrize("region", ["us-east-1", "europe-west4", "eu-central-1"])
def test_a_region_either_cloud_prices_is_accepted_and_priced(
    shipped: tuple[dict[str, Profile], Catalog], region: str
) -> None:
    clouds = [c for c in recommend(Needs(region=region), *shipped, top=MAX_TOP) if c.platform in GPU_PLATFORMS]
    assert any(c.cost.usd_month is not None for c in clouds)


def test_traffic_on_a_training_question_is_refused_not_ignored(shipped: tuple[dict[str, Profile], Catalog]) -> None:
    assert refused({"purpose": "training", "traffic": "steady-batch"}, shipped) == (
        "--traffic: describes inference traffic, not training (drop it, or ask --purpose inference)"
    )


def test_an_inference_question_without_traffic_plans_for_realtime_traffic(
    shipped: tuple[dict[str, Profile], Catalog],
) -> None:
    said = recommend(Needs(purpose=Purpose.INFERENCE, traffic="realtime-variable"), *shipped, top=MAX_TOP)
    assert recommend(Needs(purpose=Purpose.INFERENCE), *shipped, top=MAX_TOP) == said


@pytest.mark.parametrize("top", [0, -3, MAX_TOP + 1])
def test_top_must_be_a_number_of_choices(shipped: tuple[dict[str, Profile], Catalog], top: int) -> None:
    assert refused({}, shipped, top=top) == f"--top: {top} is not a number of choices to show (give 1 to {MAX_TOP})"


def test_top_bounds_the_ranking(shipped: tuple[dict[str, Profile], Catalog]) -> None:
    assert len(recommend(Needs(), *shipped, top=1)) == 1
    assert len(recommend(Needs(), *shipped, top=MAX_TOP)) >= 2


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        ({"gpu_count": 0}, "recommend: field '--gpu-count': Input should be greater than 0 (fix the value)"),
        ({"gpu_count": 17}, "recommend: field '--gpu-count': Input should be less than or equal to 16"),
        ({"dedicated_monthly_usd": math.nan}, "recommend: field '--dedicated-monthly-usd': Input should be a finite"),
        ({"colour_scheme": "x"}, "recommend: unknown key '--colour-scheme'"),
    ],
)
def test_a_bad_answer_names_the_flag_as_it_is_spelt(answers: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as err:
        Needs.model_validate(answers)
    assert str(validation_error("recommend", err.value, prefix="--")).startswith(message)


def test_a_whole_model_check_names_no_empty_field() -> None:
    """A model validator's error has no location: "field 'fullserver:'" named nothing."""
    from pydantic import BaseModel, model_validator

    class Pair(BaseModel):
        a: int = 0

        @model_validator(mode="after")
        def _positive(self) -> Pair:
            raise ValueError("an accelerator is needed")

    with pytest.raises(ValidationError) as err:
        Pair.model_validate({})
    assert str(validation_error("stack.yaml", err.value, prefix="fullserver:")) == (
        "stack.yaml: an accelerator is needed (fix the value)"
    )
    assert (
        str(validation_error("recommend", err.value, prefix="--"))
        == "recommend: an accelerator is needed (fix the value)"
    )


# --- the budget guard -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cap", "message"),
    [
        (math.nan, "--max-monthly-usd: 'nan' is not a budget (give a finite number of USD, such as 5000)"),
        (math.inf, "--max-monthly-usd: 'inf' is not a budget (give a finite number of USD, such as 5000)"),
        (-math.inf, "--max-monthly-usd: '-inf' is not a budget"),
        (-1.0, "--max-monthly-usd: -1 USD is negative (give a budget of 0 USD or more)"),
    ],
)
def test_a_budget_that_is_no_budget_is_refused(cap: float, message: str) -> None:
    with pytest.raises(InputError) as err:
        check_max_monthly_usd(cap)
    assert str(err.value).startswith(message)
    with pytest.raises(InputError, match=r"^--max-monthly-usd: "):
        check_budget([], cap)  # refused even with nothing to check it against


def test_nan_no_longer_switches_the_guard_off() -> None:
    plans = plan_paths(find_stacks(Path(__file__).parents[2] / "stacks", ["exp-aws-spot"]))
    with pytest.raises(InputError, match="'nan' is not a budget"):
        check_budget(plans, math.nan)
    with pytest.raises(BudgetExceeded):
        check_budget(plans, 0.0)
    check_budget(plans, None)
    check_budget(plans, 10_000_000.0)


def test_over_budget_names_every_stack_over_and_each_budget_it_is_over() -> None:
    stacks = Path(__file__).parents[2] / "stacks"
    plans = plan_paths(find_stacks(stacks, ["exp-aws-spot", "train-p5-cluster", "dedicated-h100"]))
    cheap = next(p for p in plans if p.stack == "exp-aws-spot")
    cap = cheap.cost.usd_month + 1
    with pytest.raises(BudgetExceeded) as err:
        check_budget(plans, cap)
    line = str(err.value)
    assert line.startswith("stack 'train-p5-cluster': estimated ") or line.startswith("stack 'dedicated-h100': ")
    assert "stack 'train-p5-cluster': estimated" in line and "stack 'dedicated-h100': estimated" in line
    assert "exp-aws-spot" not in line and "\n" not in line
    own = cheap.model_copy(update={"budget_monthly_usd": 1.0})
    with pytest.raises(BudgetExceeded) as both:
        check_budget([own], 2.0)
    assert f"exceeds --max-monthly-usd 2.00 and {own.path}: fullserver:budgetMonthlyUsd 1.00" in str(both.value)


# --- recommend follows the seeds' rules ---------------------------------------------------------


def test_when_portability_is_required_a_tpu_is_never_first(shipped: tuple[dict[str, Profile], Catalog]) -> None:
    """TensorFlow, stable, portable, any cloud ranked tpu-vm first; portability is a requirement,
    so every TPU choice now ranks after every portable one, whatever its score."""
    for needs in (
        Needs(framework="tensorflow", maturity="stable", portability=True),
        Needs(framework="jax", maturity="stable", scale="multi-node", cloud="gcp", portability=True),
        Needs(purpose=Purpose.INFERENCE, traffic="steady-batch", portability=True),
    ):
        platforms = [c.platform for c in recommend(needs, *shipped, top=MAX_TOP)]
        assert platforms[0] is not Platform.TPU_VM, needs
        assert Platform.TPU_VM in platforms
        first_tpu = platforms.index(Platform.TPU_VM)
        assert all(p is Platform.TPU_VM for p in platforms[first_tpu:]), platforms


def test_a_reason_is_shown_only_when_its_conditions_hold(shipped: tuple[dict[str, Profile], Catalog]) -> None:
    """Neither scale nor Google Cloud was asked, yet "training at scale on Google Cloud" was the
    first choice's reason."""
    single = recommend(Needs(framework="tensorflow", maturity="stable"), *shipped, top=MAX_TOP)
    shown = [r for c in single for r in c.reasons]
    assert shown and not [r for r in shown if "at scale" in r or "Google Cloud" in r]
    at_scale = recommend(
        Needs(framework="tensorflow", maturity="stable", scale="multi-node", cloud="gcp"), *shipped, top=1
    )[0]
    assert at_scale.platform is Platform.TPU_VM
    assert "+ stable JAX/TensorFlow training at scale can favour TPUs" in at_scale.reasons
    assert "+ the team's cloud is Google Cloud" in at_scale.reasons


def test_every_rule_states_only_what_it_checks() -> None:
    """A reason naming scale, a cloud, a framework or a maturity stage is guarded by that answer."""
    words = {
        "at scale": "scale",
        "Google Cloud": "cloud",
        "AWS": "cloud",
        "JAX/TensorFlow": "framework",
        "PyTorch": "framework",
        "stable": "maturity",
        "production": "maturity",
        "inference": "purpose",
    }
    for rule in RULES:
        for word, answer in words.items():
            # The portability rule names Google Cloud as the tie it avoids, not as the team's cloud.
            if word in rule.reason and not rule.never_first:
                assert answer in rule.when, (rule.reason, answer)


@pytest.mark.parametrize(
    ("traffic", "profile"), [("realtime-variable", "realtime-inference"), ("steady-batch", "batch-inference")]
)
def test_an_inference_question_without_maturity_gets_inference_profiles(
    shipped: tuple[dict[str, Profile], Catalog], traffic: str, profile: str
) -> None:
    """It fell to experimentation, a training profile with an 8-hour TTL."""
    profiles, _ = shipped
    choices = recommend(Needs(purpose=Purpose.INFERENCE, traffic=traffic), *shipped, top=MAX_TOP)
    assert choices[0].profile == profile
    assert {profiles[c.profile].purpose for c in choices} == {Purpose.INFERENCE}
    for maturity in ("exploring", "adapting", "stable", "production"):
        asked = Needs(purpose=Purpose.INFERENCE, traffic=traffic, maturity=maturity)
        assert {profiles[c.profile].purpose for c in recommend(asked, *shipped, top=MAX_TOP)} == {Purpose.INFERENCE}


def test_a_training_question_without_maturity_starts_with_experimentation(
    shipped: tuple[dict[str, Profile], Catalog],
) -> None:
    first = recommend(Needs(), *shipped, top=1)[0]
    assert first.profile == "experimentation"
    assert "+ no maturity given: training starts with short-lived, cheap experiments" in first.reasons


# --- comparisons compare like with like ---------------------------------------------------------


def _memory(catalog: Catalog, offer: str) -> float:
    o = catalog.offer(offer)
    assert o is not None and o.accelerator
    return o.total_accelerators * catalog.accelerator(o.accelerator).memory_gib


@pytest.mark.parametrize(
    ("needs", "gpu", "per_profile"),
    [
        (Needs(), "L4", {"experimentation": 1}),
        (Needs(gpu="H100-80GB"), "H100-80GB", {"experimentation": 1}),
        (Needs(framework="jax", maturity="stable", scale="multi-node"), "H100-80GB", {"scale-training": 16}),
    ],
)
def test_a_tpu_is_priced_for_the_accelerator_memory_of_the_gpus_asked_for(
    shipped: tuple[dict[str, Profile], Catalog], needs: Needs, gpu: str, per_profile: dict[str, int]
) -> None:
    """A v5litepod-8 (8 chips) was priced against one L4 and a v5p-128 (64 chips) against 2 x 8
    H100: now each TPU is the smallest slice of its generation holding the GPUs of the same
    profile (one node, or two of 8 at scale), and every row states its ratio to them."""
    _, catalog = shipped
    choices = recommend(needs, *shipped, top=MAX_TOP)
    tpus = [c for c in choices if c.platform is Platform.TPU_VM]
    assert tpus and {c.profile for c in tpus} == set(per_profile)
    for c in tpus:
        reference = catalog.accelerator(gpu).memory_gib * per_profile[c.profile]
        offer = catalog.offer(c.cost.offer or "")
        assert offer is not None
        held = _memory(catalog, offer.name)
        assert held >= reference
        smaller = [
            o
            for o in catalog.offers
            if o.accelerator == offer.accelerator and o.total_accelerators < offer.total_accelerators
        ]
        assert smaller and all(_memory(catalog, o.name) < reference for o in smaller)
        assert c.cost.capacity_ratio == round(held / reference, 2)
    for g in choices:
        if g.platform in GPU_PLATFORMS and g.cost.offer:
            assert g.cost.capacity_ratio == 1.0


def test_every_price_names_its_pricing_model_and_capacity(shipped: tuple[dict[str, Profile], Catalog]) -> None:
    for c in recommend(Needs(framework="jax", maturity="stable"), *shipped, top=MAX_TOP):
        assert c.cost.usd_month is not None
        assert c.cost.pricing in ("spot", "on-demand", "reserved 1-year", "reserved 3-year")
        assert c.cost.capacity and c.cost.reference and c.cost.capacity_ratio
        assert c.cost.on_demand_usd_month is not None
        if c.cost.pricing == "on-demand":
            assert c.cost.on_demand_usd_month == c.cost.usd_month


def test_ties_are_broken_by_the_on_demand_price_of_equal_capacity(shipped: tuple[dict[str, Profile], Catalog]) -> None:
    """Equal scores were ordered by the raw monthly price: a smaller shape, or a spot price beside
    an on-demand one, won by being cheaper. Now by on-demand USD per reference capacity."""
    choices = recommend(Needs(framework="tensorflow", maturity="stable"), *shipped, top=MAX_TOP)
    by_score: dict[int, list[float]] = {}
    for c in choices:
        assert c.cost.on_demand_usd_month is not None and c.cost.capacity_ratio
        by_score.setdefault(c.score, []).append(c.cost.on_demand_usd_month / c.cost.capacity_ratio)
    tied = [prices for prices in by_score.values() if len(prices) > 1]
    assert tied, "the question should produce a tie"
    for prices in tied:
        assert prices == sorted(prices)


# --- notes: answers the ranking cannot honour together are said, never ranked silently ----------


@pytest.mark.parametrize(
    ("answers", "says"),
    [
        (
            {"portability": True, "cloud": "aws"},
            "--portable keeps the option to move between providers, and --cloud aws",
        ),
        ({"portability": True, "cloud": "gcp"}, "or --portable if the team stays on gcp"),
        ({"demand": "steady", "maturity": "exploring"}, "--demand steady with --maturity exploring: steady demand"),
        ({"demand": "steady", "maturity": "adapting"}, "with --maturity adapting"),
        ({"purpose": "inference", "demand": "steady"}, "say --traffic steady-batch if the load is steady batches"),
        (
            {"purpose": "inference", "demand": "steady", "traffic": "realtime-variable"},
            "inference is ranked for real-time traffic",
        ),
        ({"maturity": "production"}, "no training profile is for production work on a single node"),
    ],
)
def test_answers_that_contradict_each_other_get_a_note_beside_the_ranking(
    answers: dict[str, Any], says: str, shipped: tuple[dict[str, Profile], Catalog]
) -> None:
    result = recommendation(Needs.model_validate(answers), *shipped, top=2)
    assert len(result.choices) == 2
    assert [n for n in result.notes if says in n], result.notes


@pytest.mark.parametrize(
    "answers",
    [
        {},
        {"portability": True},
        {"cloud": "aws"},
        {"demand": "steady", "maturity": "stable"},
        {"demand": "steady", "maturity": "production"},  # dedicated-steady is favoured: no gap
        {"maturity": "production", "scale": "multi-node"},
        {"purpose": "inference", "traffic": "steady-batch", "demand": "steady"},
        {"purpose": "inference", "maturity": "production", "traffic": "steady-batch"},  # the guide's example
    ],
)
def test_answers_that_agree_get_no_note(answers: dict[str, Any], shipped: tuple[dict[str, Profile], Catalog]) -> None:
    assert recommendation(Needs.model_validate(answers), *shipped, top=1).notes == []


def test_a_note_is_true_of_the_ranking_it_is_shown_with(shipped: tuple[dict[str, Profile], Catalog]) -> None:
    """The production single-node note says no profile is favoured: no profile rule matched."""
    needs = Needs(maturity="production")
    favoured = [r for r in RULES if r.weight > 0 and r.matches(needs) and r.target in shipped[0]]
    assert favoured == [] and notes_for(needs)
    steady = Needs(maturity="exploring", demand="steady")
    assert [r for r in RULES if r.target == "dedicated-steady" and r.weight > 0 and r.matches(steady)] == []
