"""An ephemeral stack's config: a base stack's, with the profile, TTL and overrides, planned offline.

The base stack is a file under ``stacks/`` (named with ``--stack``, or the first one using
``--profile``); its config is copied, never its encrypted secrets (they are encrypted for that
stack and cannot be read by another). ``check_plan`` plans the result exactly as ``fullserver
plan`` does before anything is created, so bad config or a blown budget costs nothing.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from fullserver.catalog import load_catalog
from fullserver.errors import InputError
from fullserver.plan import StackPlan, check_budget, plan_workload
from fullserver.profiles import get_profile, load_profiles
from fullserver.rules import STACK_FILE_GLOB, stack_of_file
from fullserver.stacks import cloud_project, stack_path, workload_from_config
from fullserver.workload import CONFIG_NAMESPACE
from fullserver.yamlio import read_yaml


def config_key(name: str) -> str:
    """``region`` -> ``fullserver:region``; a key with a namespace (``aws:region``) stays as it is."""
    return name if ":" in name else f"{CONFIG_NAMESPACE}:{name}"


@dataclass(frozen=True)
class BaseStack:
    """The stack file whose config an ephemeral stack starts from."""

    name: str
    path: Path
    config: dict[str, Any]


def choose_base(stacks_dir: Path, profile: str | None, base_stack: str | None) -> BaseStack:
    """The named base stack, else the first stack file (by name) whose profile is ``profile``."""
    if base_stack:
        path = stack_path(stacks_dir, base_stack, f"--stack {base_stack}")
        return BaseStack(_stack_of(path), path, _config_of(path))
    if not profile:
        raise InputError("ephemeral", "no base stack and no profile", "pass --stack <base> or --profile <name>")
    for path in sorted(stacks_dir.glob(STACK_FILE_GLOB)):
        config = _config_of(path)
        if config.get(config_key("profile")) == profile:
            return BaseStack(_stack_of(path), path, config)
    raise InputError(
        f"--profile {profile}", f"no stack under {stacks_dir} uses this profile", "pass --stack <base> to name one"
    )


def _stack_of(path: Path) -> str:
    """The stack a base stack file configures (a path given by hand may be named otherwise)."""
    stack = stack_of_file(path.name)
    return stack if stack is not None else path.stem


def _config_of(path: Path) -> dict[str, Any]:
    config = read_yaml(path).get("config", {})
    if not isinstance(config, dict):
        raise InputError(f"{path}: field 'config'", "expected a mapping of keys to values")
    return {str(k): v for k, v in config.items()}


def ephemeral_config(
    base: BaseStack, *, profile: str | None, ttl: timedelta, overrides: Mapping[str, Any]
) -> dict[str, Any]:
    """The base stack's config with the profile, ``ttlHours`` (whole hours, rounded up: the
    project declares it an integer) and the caller's overrides applied."""
    config: dict[str, Any] = {}
    for key, value in base.config.items():
        if isinstance(value, dict) and set(value) == {"secure"}:
            raise InputError(
                f"{base.path}: {key}",
                "is a secret encrypted for the base stack and cannot be copied",
                "pass it with ephemeral_stack(secrets={...}) from Python, or drop the key from the base stack",
            )
        config[key] = value
    for key, value in overrides.items():
        config[config_key(key)] = value
    if profile:
        config[config_key("profile")] = profile
    config[config_key("ttlHours")] = max(1, math.ceil(ttl.total_seconds() / 3600 - 1e-9))
    return config


def check_plan(
    name: str, where: str, config: dict[str, Any], ttl: timedelta, max_monthly_usd: float | None
) -> StackPlan:
    """Plan offline before creating anything: bad config or a blown budget costs nothing."""
    workload = workload_from_config(config, where)
    profiles = load_profiles()
    profile = get_profile(workload.profile, profiles)
    life = profile.lifecycle
    if life.mode != "ephemeral" or life.ttl_hours is None:
        raise InputError(
            f"profile '{profile.name}'",
            "is persistent" + (" and protected" if life.protect else "") + "; an ephemeral stack would be left running",
            "use an ephemeral profile: "
            + ", ".join(sorted(p.name for p in profiles.values() if p.lifecycle.mode == "ephemeral")),
        )
    if ttl.total_seconds() > life.ttl_hours * 3600:  # no timedelta: a huge ttl_hours would overflow it
        raise InputError(
            "--ttl", f"{ttl} exceeds profile '{profile.name}''s TTL of {life.ttl_hours:g} h", "ask for less"
        )
    plan = plan_workload(name, where, workload, profiles, load_catalog())
    cloud_project(plan.spec.platform, config, os.environ)  # up needs it: refused before anything exists
    check_budget([plan], max_monthly_usd)
    return plan
