"""The plan JSON and the whole program's resource graph of every example stack, as files.

A refactor that says "behaviour does not change" is held to it here: ``python -m
tests.project.golden`` writes ``tests/data/golden/<stack>.json`` from the code as it is, and
``test_golden.py`` fails on any difference afterwards. Rewrite them only for a change that means
to change behaviour, and say so in the commit.

Pinned so the files do not move with the calendar: today (price-age warnings count days), and
the dynamic providers' pickled code (it moves with module paths, which a refactor may change;
what the provider *does* is tested apart).
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from fullserver.catalog import load_catalog
from fullserver.catalog.staleness import DEFAULT_MAX_PRICE_AGE_DAYS
from fullserver.plan import plan_paths
from fullserver.stacks import find_stacks

ROOT = Path(__file__).resolve().parents[2]
STACKS = ROOT / "stacks"
GOLDEN = ROOT / "tests" / "data" / "golden"
TODAY = dt.date(2026, 11, 26)


def _declared_defaults() -> dict[str, Any]:
    config = yaml.safe_load((ROOT / "Pulumi.yaml").read_text(encoding="utf-8"))["config"]
    return {f"fullserver:{k}": d["default"] for k, d in config.items() if "default" in d}


def _pin(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: "<dynamic provider>" if k == "__provider" else _pin(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_pin(v) for v in value]
    return value


def snapshot(stack: str) -> dict[str, Any]:
    """What ``plan --json`` says of the stack, and what ``pulumi up`` would register."""
    from components.graph import graph_for_config, graph_for_stack_plan, rows_json
    from fullserver_cli.plan import dated_warnings, plan_document

    catalog = load_catalog()
    (plan,) = plan_paths(find_stacks(STACKS, [stack]), catalog=catalog)
    warnings = [*plan.warnings, *dated_warnings(plan, catalog, TODAY, DEFAULT_MAX_PRICE_AGE_DAYS)]
    graph = graph_for_stack_plan(plan)
    document = plan_document(plan, [*warnings, *graph.warnings], rows_json(graph))
    document["path"] = str(Path(document["path"]).relative_to(ROOT))  # the same in every clone
    config = {**_declared_defaults(), **yaml.safe_load((STACKS / f"Pulumi.{stack}.yaml").read_text())["config"]}
    if plan.spec.platform.value == "bare-metal":
        config["fullserver:sshPrivateKey"] = "decrypted key"
    program = graph_for_config(stack, config, full=True)
    pinned: dict[str, Any] = _pin(
        {
            "plan": document,
            "program": {
                "rows": [r.as_json() for r in program.rows],
                "warnings": program.warnings,
                "outputs": program.outputs,
            },
        }
    )
    return pinned


def stacks() -> list[str]:
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in STACKS.glob("Pulumi.*.yaml"))


def text(stack: str) -> str:
    return json.dumps(snapshot(stack), indent=1, sort_keys=True, default=str) + "\n"


if __name__ == "__main__":
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for name in sys.argv[1:] or stacks():
        (GOLDEN / f"{name}.json").write_text(text(name), encoding="utf-8")
        print(f"wrote tests/data/golden/{name}.json")
