"""The Pulumi program: stack config -> the core's plan -> ``Environment`` -> exports.

``__main__.py`` calls ``main()``. ``fullserver plan`` runs ``deploy()`` (and tests run ``main()``)
under Pulumi's mock runtime, so the graph it prints is the one ``pulumi up`` creates.

Config is read through ``pulumi.Config("fullserver")`` and validated by the core's
``workload_from_config``, so a bad key fails ``pulumi up`` with the same one-line error as
``fullserver plan`` (as a ``RunError``: Pulumi prints it without a traceback).
"""

from __future__ import annotations

import json
from typing import Any

import pulumi

from components.args import environment_args
from components.environment import Environment
from fullserver.catalog import load_catalog
from fullserver.errors import FullserverError
from fullserver.plan import StackPlan, check_budget, plan_workload
from fullserver.profiles import load_profiles
from fullserver.workload import CONFIG_NAMESPACE, Workload, workload_from_config


def read_config() -> dict[str, Any]:
    """This stack's ``fullserver:*`` values, decoded the way the stack file wrote them.

    Pulumi hands every value over as text: objects and arrays as JSON, scalars as their text
    (``8``, ``true``); the core's model converts scalars, so only JSON is decoded here.
    """
    cfg = pulumi.Config(CONFIG_NAMESPACE)
    out: dict[str, Any] = {}
    for field in Workload.model_fields.values():
        key = field.alias
        if key is None:
            continue
        raw = cfg.get(key)
        if raw is None:
            continue
        value: Any = raw
        if raw[:1] in ("[", "{"):
            try:
                value = json.loads(raw)
            except json.JSONDecodeError:
                value = raw
        out[f"{CONFIG_NAMESPACE}:{key}"] = value
    return out


def plan_from_config(stack: str) -> StackPlan:
    where = f"stacks/Pulumi.{stack}.yaml"
    try:
        workload = workload_from_config(read_config(), where)
        plan = plan_workload(stack, where, workload, load_profiles(), load_catalog())
        check_budget([plan], None)
    except FullserverError as exc:
        raise pulumi.RunError(f"{where}: {exc.line()}" if not exc.line().startswith(where) else exc.line()) from None
    return plan


def deploy(plan: StackPlan) -> Environment:
    """Build the environment for a plan and export what people need to use and judge it."""
    spec = plan.spec
    project = pulumi.Config("gcp").get("project") if spec.provider == "gcp" else None
    try:
        env = Environment(plan.stack, environment_args(spec, project=project))
    except FullserverError as exc:
        raise pulumi.RunError(exc.line()) from None
    pulumi.export("platform", spec.platform.value)
    pulumi.export(
        "shape", f"{spec.offer}: {spec.accelerator_count} x {spec.accelerator} per node, {spec.nodes} node(s)"
    )
    pulumi.export("privateIps", env.private_ips)
    pulumi.export("publicIps", env.public_ips)
    pulumi.export("connect", env.connect)
    pulumi.export("balance", spec.balance.model_dump(mode="json"))
    pulumi.export(
        "cost",
        {
            "usdPerHour": plan.cost.usd_hour,
            "usdPerMonth": plan.cost.usd_month,
            "items": plan.cost.model_dump(mode="json"),
        },
    )
    pulumi.export("warnings", plan.warnings)
    return env


def main() -> Environment:
    return deploy(plan_from_config(pulumi.get_stack()))
