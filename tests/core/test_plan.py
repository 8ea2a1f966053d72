"""Planning a stack file: the first error a person sees is the one to fix first."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from fullserver.catalog import load_catalog
from fullserver.comparable import DEDICATED
from fullserver.errors import InputError
from fullserver.kube import SIZED_AS
from fullserver.plan import StackPlan, _row_keys, plan_paths
from fullserver.platform import Platform
from fullserver.stacks import find_stacks
from fullserver.workload import Workload

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
        "every row compared on demand, the one pricing model all have "
        "(their own: on-demand for aws-gpu, eks-gpu; spot for gcp-gpu, gke-gpu)"
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


# --- node pools in the comparison (issue 38) -------------------------------------------------------


@pytest.mark.parametrize("name", ["eks-gpu-cluster", "gke-gpu-attach", "gke-tpu-slice", "serve-gke-l4"])
def test_every_kubernetes_example_compares_the_same_job_on_the_vm_platforms(name: str) -> None:
    """Each node-pool stack is priced beside its nodes' own VM platform (and the other cloud's GPU
    VMs and pools where the profile allows them), every row sized and priced."""
    plan = _plan(name)
    chosen = plan.spec.platform
    rows = {c.platform: c for c in plan.comparison}
    assert SIZED_AS[chosen] in rows
    assert all(r.usd_month is not None and r.capacity_ratio == 1.0 for r in rows.values()), rows
    vms = {p for p in rows if p not in SIZED_AS}
    expected = {Platform.TPU_VM} if chosen is Platform.GKE_TPU else {Platform.AWS_GPU, Platform.GCP_GPU}
    assert vms == expected
    if chosen is not Platform.GKE_TPU:  # the other cloud's cluster platform too
        assert {p for p in rows if p in SIZED_AS} == {Platform.GKE_GPU, Platform.EKS_GPU} - {chosen}


def test_a_vm_example_lists_its_node_pool_options_each_with_the_fees_in_its_price() -> None:
    """serve-aws-realtime (realtime-inference allows gke-gpu and eks-gpu): each pool row creates a
    cluster of its own and says what that adds: the fee (0.10 USD an hour on both clouds, all month
    for a persistent profile) and its system pool (EKS: one m6i.large at 0.096 an hour)."""
    plan = _plan("serve-aws-realtime")
    rows = {c.platform: c for c in plan.comparison}
    assert list(rows) == [Platform.GCP_GPU, Platform.GKE_GPU, Platform.EKS_GPU]
    eks, aws = rows[Platform.EKS_GPU], plan.baseline
    assert aws is not None and eks.offer == aws.offer == "g6.4xlarge"
    assert eks.note.endswith(
        "a cluster of its own, in the price: cluster fee $73.00, system pool $70.08, system pool disks $1.60 a month"
    )
    assert "a cluster of its own" in rows[Platform.GKE_GPU].note
    assert "cluster" not in aws.note and "cluster" not in rows[Platform.GCP_GPU].note
    assert eks.usd_month is not None and aws.usd_month is not None
    # The same compute, disks and NAT: the pool costs its fees (144.68) more, less 3.99 on its load
    # balancer and the VM group's 0.20 of CloudWatch alarms.
    assert eks.usd_month - aws.usd_month == pytest.approx(140.49)


def test_a_pool_on_an_existing_cluster_says_it_carries_no_cluster_fee_and_the_other_cloud_creates_its_own() -> None:
    plan = _plan("gke-gpu-attach")
    assert plan.baseline is not None
    assert plan.baseline.note.endswith(
        "no cluster fee or system pool: joins the existing cluster 'ml-prod', billed with it"
    )
    eks = next(c for c in plan.comparison if c.platform is Platform.EKS_GPU)
    assert "a cluster of its own, in the price: cluster fee $" in eks.note


def test_a_row_leaves_the_stacks_own_cluster_and_the_keys_its_platform_refuses() -> None:
    """An existing GKE cluster is no EKS cluster, and a VM takes no control-plane ranges; a node pool
    takes no SSH keys. What the job is (serving) is never dropped: such a row says why it cannot be."""
    attached = Workload.model_validate(
        {"profile": "fine-tuning", "platform": "gke-gpu", "region": "us-central1", "accelerator": "L4"}
        | {"cluster": "ml-prod", "clusterLocation": "us-central1-a", "controlPlaneSourceRanges": []}
    )
    assert _row_keys(attached, Platform.EKS_GPU) == {"cluster": None, "cluster_location": None}
    created = Workload.model_validate(
        {"profile": "scale-training", "platform": "eks-gpu", "region": "us-east-1", "accelerator": "H100"}
        | {"controlPlaneSourceRanges": ["198.51.100.0/24"], "clusterIdentity": "irsa"}
    )
    assert _row_keys(created, Platform.GKE_GPU) == {"cluster_identity": None}
    assert _row_keys(created, Platform.AWS_GPU) == {"control_plane_source_ranges": None, "cluster_identity": None}
    vm = Workload.model_validate(
        {"profile": "fine-tuning", "platform": "aws-gpu", "region": "us-east-1", "accelerator": "L4"}
        | {"sshPublicKeys": ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOrTaXkV9hQ5Z8Ao4yYvR8dn2v7nXbX2gJv1X6bY3kQz a"]}
    )
    assert _row_keys(vm, Platform.EKS_GPU) == {"ssh_public_keys": None}
    assert _row_keys(vm, Platform.GCP_GPU) == {}


# --- a plan without its comparison rows (plan --summary) ------------------------------------------


def test_a_plan_without_comparison_rows_is_the_same_plan_less_its_rows() -> None:
    """``plan --summary`` shows no row, so it plans without them: every other field of every example
    stack's plan is the same, as no row fails a plan or feeds another field (issue 36)."""
    paths = find_stacks(STACKS, [])
    full, summary = plan_paths(paths), plan_paths(paths, compared=False)
    assert [p.stack for p in summary] == [p.stack for p in full]
    for with_rows, without in zip(full, summary, strict=True):
        assert without.comparison == [] and without.baseline is None
        assert without.model_dump(exclude={"comparison", "baseline"}) == with_rows.model_dump(
            exclude={"comparison", "baseline"}
        )
    assert any(p.comparison for p in full), "no example stack has rows: the test proves nothing"
