"""Weighing offers (issue 36): a node pool's offers are weighed as its VMs' once, and only the pod's
room is checked afresh; what is kept is what ``assess`` says of each offer as a node of the pool.
"""

from __future__ import annotations

from typing import Any, cast

import pytest

from fullserver.catalog import load_catalog
from fullserver.catalog.offer import _Refused
from fullserver.errors import InputError
from fullserver.platform import Platform
from fullserver.profiles import load_profiles
from fullserver.sizing import assess, spec_for
from fullserver.sizing.rank import _OffersQuestion, _weighed
from fullserver.workload import Workload

CATALOG = load_catalog()
PROFILES = load_profiles()


def _stack(platform: Platform, region: str) -> Workload:
    return Workload.model_validate(
        {
            "profile": "batch-inference",
            "platform": platform.value,
            "region": region,
            "accelerator": "L4",
            "acceleratorCount": 1,
        }
    )


def _weighings() -> dict[Platform | None, Any]:
    """The weighings the memo keeps, by the node-pool platform each is for (None: the VMs)."""
    kept: dict[Platform | None, Any] = {}
    for key, answer in CATALOG.memo.items():
        work, question = cast("tuple[object, _OffersQuestion]", key)
        if work is _weighed:
            kept[question.pool] = answer
    return kept


@pytest.mark.parametrize(
    ("vm", "pool", "region"),
    [(Platform.GCP_GPU, Platform.GKE_GPU, "us-central1"), (Platform.AWS_GPU, Platform.EKS_GPU, "us-east-1")],
)
def test_a_node_pool_and_its_vms_weigh_the_offers_once(vm: Platform, pool: Platform, region: str) -> None:
    """The VM stack and its node-pool twin (sized with the profile's copy, ``kube_spec``) keep one
    weighing each, the pool's holding the very balance reports of the VMs' (not weighed again),
    and it is ``assess`` of each offer as a node of the pool."""
    profile = PROFILES["batch-inference"]
    CATALOG.memo.clear()
    on_vm = _stack(vm, region)
    spec_for(profile, on_vm, vm, CATALOG, "t")
    spec_for(profile, on_vm.model_copy(update={"platform": pool}), pool, CATALOG, "t")
    kept = _weighings()
    CATALOG.memo.clear()
    assert sorted(kept, key=str) == sorted([None, pool], key=str)
    offers = [row[0] for row in kept[pool]]
    assert offers and all(o.accelerator == "L4" for o in offers)
    assert all(mine[2] is theirs[2] for mine, theirs in zip(kept[pool], kept[None], strict=True))
    assert [row[:4] for row in kept[pool]] == [(o, *assess(profile, o, vm, 1, pool)) for o in offers]


def test_a_refusal_is_weighed_once_and_said_afresh_in_every_region() -> None:
    """A platform that sells none of the accelerator asked refuses it in every region: the refusal
    is kept with the weighing (asked once, not once per region), and each ranking raises its own."""
    profile = PROFILES["batch-inference"]
    CATALOG.memo.clear()
    raised = []
    for region in ("us-east-1", "eu-central-1"):
        stack = _stack(Platform.AWS_GPU, region).model_copy(update={"accelerator": "P100"})
        with pytest.raises(InputError) as caught:
            spec_for(profile, stack, Platform.AWS_GPU, CATALOG, "t")
        raised.append(caught.value)
    kept = _weighings()
    CATALOG.memo.clear()
    assert raised[0] is not raised[1] and raised[0].what == raised[1].what
    assert raised[0].where == "fullserver:accelerator" and "aws-gpu" in raised[0].what
    assert isinstance(kept[None], _Refused)  # the memo keeps the refusal itself, not an answer
    assert isinstance(kept[None].error, InputError) and kept[None].error.what == raised[0].what
    assert kept[None].error not in raised and kept[None].error.__traceback__ is None
