"""What the plan says and decides so the first real ``pulumi up`` is usable: spot alternatives a
diversified spot request may run on, the platforms without an on-demand fallback said plainly,
and people's public keys carried into the spec."""

from __future__ import annotations

from pathlib import Path

from fullserver.catalog import load_catalog
from fullserver.platform import Platform
from fullserver.platforms import rules_for
from fullserver.profiles import get_profile, load_profiles
from fullserver.sizing import ALTERNATIVE_PRICE_RATIO, MAX_ALTERNATIVE_SHAPES, alternative_shapes, rank
from fullserver.stacks import workload_from_config
from tests.core.test_stack_config import ED25519_KEY, plan_offline, stack_config, write_stack


def test_alternatives_are_balanced_shapes_of_the_same_gpus_within_the_price_ratio() -> None:
    config = stack_config("exp-aws-spot", accelerator="L4")
    workload = workload_from_config(config, "stack")
    profile = get_profile(workload.profile, load_profiles())
    feasible, _ = rank(profile, workload, Platform.AWS_GPU, load_catalog())
    chosen = feasible[0]
    alternatives = alternative_shapes(chosen, feasible, 0)
    assert alternatives and len(alternatives) <= MAX_ALTERNATIVE_SHAPES
    by_name = {c.offer.name: c for c in feasible}
    for alt in alternatives:
        cand = by_name[alt.offer]
        assert cand.report.ok  # passes the same balance
        assert cand.offer.accelerator == chosen.offer.accelerator
        assert cand.offer.host.accelerator_count == chosen.offer.host.accelerator_count
        assert alt.usd_hour == cand.usd_hour <= chosen.usd_hour * ALTERNATIVE_PRICE_RATIO
        assert alt.machine_type != chosen.offer.machine_type
    assert [a.usd_hour for a in alternatives] == sorted(a.usd_hour for a in alternatives)
    # with EFA, only shapes with as many EFA interfaces (one per network card) take the template
    assert alternative_shapes(chosen, feasible, 32) == []


def test_only_spot_specs_carry_alternatives(tmp_path: Path) -> None:
    spot = plan_offline(write_stack(tmp_path, "g2", stack_config("finetune-gcp-g2"))).spec
    assert spot.spot and [a.machine_type for a in spot.alternative_shapes] == ["g2-standard-16"]
    on_demand = plan_offline(write_stack(tmp_path, "p5", stack_config("train-p5-cluster"))).spec
    assert not on_demand.spot and on_demand.alternative_shapes == []


def test_spot_without_a_fallback_is_said_in_one_sentence_naming_the_platform(tmp_path: Path) -> None:
    # each says what its platform does when spot capacity is out: a regional group keeps retrying
    # (Compute Engine); a spot TPU VM is created at once or fails, a queued slice waits (Cloud TPU)
    for stack, platform, out in (
        ("finetune-gcp-g2", Platform.GCP_GPU, ("when spot capacity is out", "keeps retrying", "fails pulumi up")),
        ("batch-tpu-v5e", Platform.TPU_VM, ("created at once or pulumi up fails", "waits in the queue")),
    ):
        plan = plan_offline(write_stack(tmp_path, stack, stack_config(stack)))
        said = [w for w in plan.warnings if "no on-demand fallback" in w]
        assert said == [rules_for(platform).no_spot_fallback], plan.warnings
        assert said[0].startswith(f"{platform.value} has no on-demand fallback for spot")
        assert all(what in said[0] for what in out), said[0]
        assert "\n" not in said[0] and ". " not in said[0]
    # AWS builds its fallback (a spot group and an on-demand group): nothing to say
    assert rules_for(Platform.AWS_GPU).no_spot_fallback == ""
    on_demand = plan_offline(write_stack(tmp_path, "serve", stack_config("serve-gcp-realtime")))
    assert not [w for w in on_demand.warnings if "no on-demand fallback" in w]


def test_public_keys_reach_the_spec_normalised_a_queued_slice_too(tmp_path: Path) -> None:
    spaced = "  " + ED25519_KEY.replace(" ", "   ")
    spec = plan_offline(write_stack(tmp_path, "k", stack_config("finetune-gcp-g2", sshPublicKeys=[spaced]))).spec
    assert spec.network.ssh_public_keys == [ED25519_KEY]
    plan = plan_offline(write_stack(tmp_path, "q", stack_config("train-tpu-v5p-slice", sshPublicKeys=[ED25519_KEY])))
    assert plan.spec.network.ssh_public_keys == [ED25519_KEY]
    assert not [w for w in plan.warnings if "sshPublicKeys" in w]  # the queued node's metadata holds them


def test_unprotect_lets_a_protected_profiles_stack_be_destroyed_after_one_up(tmp_path: Path) -> None:
    """realtime-inference protects its resources (Pulumi's protect, a cluster's deletion protection):
    ``unprotect: true`` turns both off for the stack, so ``up`` then ``destroy`` removes everything."""
    kept = plan_offline(write_stack(tmp_path, "kept", stack_config("serve-gke-l4")))
    assert kept.spec.lifecycle.protect is True and kept.spec.kube is not None and kept.spec.kube.protect is True
    freed = plan_offline(write_stack(tmp_path, "freed", stack_config("serve-gke-l4", unprotect=True)))
    assert freed.spec.lifecycle.protect is False and freed.spec.kube is not None and freed.spec.kube.protect is False
