"""One rule, one message: the plan (``fullserver.sizing``) and the components refuse the same
request with the same words, because both ask the platform's module (``fullserver.platforms``)."""

from __future__ import annotations

from typing import Any

import pytest

from components.args import SpecRefused
from components.aws.args import aws_args
from components.aws.environment import AwsGpuEnvironment
from components.gcp.args import gcp_args
from components.gcp.environment import GcpGpuEnvironment
from components.tpu.args import tpu_args
from components.tpu.environment import TpuVmEnvironment
from fullserver.catalog import Catalog
from fullserver.errors import InputError
from fullserver.platform import Platform, PricingModel
from fullserver.profiles import load_profiles
from fullserver.sizing import build_spec
from fullserver.workload import Workload
from tests.components.conftest import Plans, spec_of


def _planned(catalog: Catalog, profile: str, platform: Platform, **keys: Any) -> InputError:
    workload = Workload.model_validate({"profile": profile, "platform": platform, **keys})
    with pytest.raises(InputError) as err:
        build_spec(load_profiles()[profile], workload, platform, catalog, "env")
    return err.value


def _built(component: Any) -> SpecRefused:
    with pytest.raises(SpecRefused) as err:
        component()
    return err.value


def test_spot_with_a_reservation(plans: Plans, catalog: Catalog) -> None:
    planned = _planned(
        catalog,
        "experimentation",
        Platform.AWS_GPU,
        region="us-east-1",
        zone="us-east-1a",
        accelerator="T4",
        reservation="cr-1",
    )
    spot = {"spot": True, "pricing": PricingModel.SPOT_WITH_FALLBACK}
    aws = _built(
        lambda: AwsGpuEnvironment(
            "x", aws_args(spec_of(plans, "exp-aws-spot", reservation="cr-1", zone="us-east-1a", **spot))
        )
    )
    gcp = _built(lambda: GcpGpuEnvironment("x", gcp_args(spec_of(plans, "finetune-gcp-a2", reservation="r", **spot))))
    assert planned.what == aws.what == gcp.what == "spot capacity cannot consume a capacity reservation"
    assert (planned.where, aws.where, gcp.where) == ("fullserver:reservation", "spec.reservation", "spec.reservation")


def test_a_queued_tpu_naming_a_reservation(plans: Plans, catalog: Catalog) -> None:
    planned = _planned(
        catalog,
        "scale-training",
        Platform.TPU_VM,
        region="us-central1",
        zone="us-central1-a",
        accelerator="v5litepod-8",
        queued=True,
        reservation="tpu-res",
    )
    spec = plans["train-tpu-v5e"].spec
    assert spec.tpu is not None
    queued = spec_of(
        plans,
        "train-tpu-v5e",
        spot=False,
        pricing=PricingModel.RESERVED,
        reservation="tpu-res",
        tpu=spec.tpu.model_copy(update={"queued": True}),
    )
    built = _built(lambda: TpuVmEnvironment("x", tpu_args(queued)))
    assert planned.what == built.what
    assert planned.what.startswith("v5litepod-8 is requested as a queued resource, which cannot name a reservation")
    assert (planned.where, built.where) == ("fullserver:reservation", "spec.reservation")
