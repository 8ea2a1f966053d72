"""Policy ``production-on-demand-or-reserved``: production profiles run on capacity that stays.

Production serving and scale training lose money and SLOs to preemption. Which stages count as
production is this policy's choice (``PRODUCTION_STAGES``); a production-stage profile that itself
prices spot (batch-inference: checkpointed, retryable batches) is exempt unless the config says
``allowProfileSpot: false``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
)

from fullserver.profiles import PricingModel, Stage
from policy.labels import labels_of, profile_for
from policy.resources import (
    AWS_ASG,
    AWS_INSTANCE,
    AWS_LAUNCH_TEMPLATE,
    AWS_SPOT_FLEET,
    AWS_SPOT_REQUEST,
    GCP_INSTANCE,
    GCP_TEMPLATES,
    TPU_QUEUED,
    TPU_VM,
    as_list,
    describe,
    number,
    prop,
    truthy,
)

PRODUCTION_STAGES = (Stage.PRODUCTION_INFERENCE, Stage.SCALE_TRAINING)


def _spot_sources(t: str, props: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(where, how to make it on-demand) for every way this resource asks for interruptible capacity."""
    out: list[tuple[str, str]] = []
    if t in (AWS_LAUNCH_TEMPLATE, AWS_INSTANCE):
        if str(prop(props, "instanceMarketOptions", "marketType") or "").lower() == "spot":
            out.append(("instanceMarketOptions.marketType spot", "remove instanceMarketOptions"))
    elif t in (AWS_SPOT_REQUEST, AWS_SPOT_FLEET):
        out.append(("a spot request", "launch on-demand instances or from a capacity reservation"))
    elif t == AWS_ASG:
        dist = prop(props, "mixedInstancesPolicy", "instancesDistribution")
        if prop(props, "mixedInstancesPolicy") is not None:
            pct = number(prop(dist, "onDemandPercentageAboveBaseCapacity"))
            if pct is not None and pct < 100:
                out.append(
                    (
                        f"mixedInstancesPolicy with {pct:g}% on-demand above base",
                        "set onDemandPercentageAboveBaseCapacity to 100",
                    )
                )
    elif t in (GCP_INSTANCE, *GCP_TEMPLATES):
        sched = prop(props, "scheduling")
        if str(prop(sched, "provisioningModel") or "").upper() == "SPOT":
            out.append(("scheduling.provisioningModel SPOT", "set provisioningModel STANDARD"))
        elif truthy(prop(sched, "preemptible")):
            out.append(("scheduling.preemptible", "set preemptible false"))
    elif t == TPU_VM:
        for key in ("spot", "preemptible"):
            if truthy(prop(props, "schedulingConfig", key)):
                out.append((f"schedulingConfig.{key}", f"set schedulingConfig.{key} false"))
    elif t == TPU_QUEUED:
        if prop(props, "spot") is not None:
            out.append(("spot", "remove the spot block (use guaranteed capacity)"))
        for i, spec in enumerate(as_list(prop(props, "tpu", "nodeSpecs"))):
            for key in ("spot", "preemptible"):
                if truthy(prop(spec, "node", "schedulingConfig", key)):
                    out.append((f"tpu.nodeSpecs[{i}].node.schedulingConfig.{key}", "set it false"))
    return out


def check_production_capacity(args: ResourceValidationArgs, report: ReportViolation) -> None:
    """Production serving and scale training lose money and SLOs to preemption; they run on capacity
    that stays. A production-stage profile that itself prices spot (batch-inference: checkpointed,
    retryable batches) is exempt unless ``allowProfileSpot`` is false."""
    sources = _spot_sources(args.resource_type, args.props)
    if not sources:
        return
    profile = profile_for(labels_of(args.props), args.stack_tags)
    if profile is None or profile.stage not in PRODUCTION_STAGES:
        return
    allow = args.get_config().get("allowProfileSpot", True)
    if profile.pricing is PricingModel.SPOT_WITH_FALLBACK and truthy(allow):
        return
    where = ", ".join(s for s, _ in sources)
    how = "; ".join(h for _, h in sources)
    report(
        f"{describe(args.resource_type, args.name)} runs on spot/preemptible capacity ({where}) but profile "
        f"'{profile.name}' is production (stage {profile.stage.value}, pricing {profile.pricing.value}), which runs "
        f"on on-demand or reserved capacity only: {how}; or use a spot profile (experimentation, fine-tuning, "
        "batch-inference) for work that tolerates preemption.",
        None,
    )


POLICY = ResourceValidationPolicy(
    name="production-on-demand-or-reserved",
    description="Production profiles (production-inference, scale-training) run on on-demand or reserved capacity, not spot.",
    validate=check_production_capacity,
    enforcement_level=EnforcementLevel.MANDATORY,
    severity=Severity.HIGH,
    config_schema=PolicyConfigSchema(
        properties={
            "allowProfileSpot": {
                "type": "boolean",
                "default": True,
                "description": "Let a production-stage profile whose own pricing is spot-with-fallback (batch-inference) use spot.",
            }
        }
    ),
)
