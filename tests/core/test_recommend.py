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
from fullserver.profiles import Profile, load_profiles
from fullserver.recommend import MAX_TOP, Needs, recommend
from fullserver.workload import find_stacks
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
