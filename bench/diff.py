"""Benchmark: ``fullserver diff`` of N generated stacks against ``fullserver plan`` of the same stacks.

A temporary git repository holds N stacks (the shipped example stacks, cycled, each with its own
owner, dataset and egress) in a base commit; the working tree then changes every tenth stack's
dataset. In the same run, each command runs as its own process: ``plan --json`` of the working
tree, and ``diff --base HEAD --json`` (which plans both sides and runs the guardrails on both).
Wall time and peak resident memory (the child's own ``ru_maxrss`` from ``wait4``) are printed
with their ratio. A diff sizes and prices both sides, but evaluates the resource graph (most of a
plan's time) once for every stack whose plan is the same on both sides, so with a tenth changed
it should take little more than the plan.

Run: ``.venv/bin/python bench/diff.py [--stacks 200] [--rounds 2]``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
EXE = Path(sys.executable).with_name("fullserver")
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def generate(repo: Path, n: int) -> list[Path]:
    """``n`` stack files cycling through the shipped examples, each with its own owner and sizes."""
    examples = sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))
    (repo / "stacks").mkdir(parents=True)
    paths = []
    for i, source in zip(range(n), itertools.cycle(examples), strict=False):
        data = yaml.safe_load(source.read_text())
        config = data["config"]
        config["fullserver:owner"] = f"team-{i % 17}"
        config["fullserver:datasetGib"] = 50 + 10 * (i % 40)
        config["fullserver:egressGbMonth"] = 5 * (i % 30)
        config.pop("fullserver:budgetMonthlyUsd", None)
        path = repo / "stacks" / f"Pulumi.gen-{i:04d}.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        paths.append(path)
    return paths


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, check=True, capture_output=True)


def run(repo: Path, *args: str) -> tuple[float, float, str]:
    """Seconds, peak RSS in MiB (this child's own) and stdout of ``fullserver <args>`` in ``repo``."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen([str(EXE), *args], cwd=repo, stdout=out, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode() if proc.stderr else ""
        if proc.returncode != 0:
            raise SystemExit(f"fullserver {' '.join(args)} exited {proc.returncode}: {err}")
        out.seek(0)
        return elapsed, usage.ru_maxrss / 1024, out.read().decode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stacks", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2, help="runs of each command (best one counts)")
    args = parser.parse_args()
    n, rounds = args.stacks, args.rounds
    with tempfile.TemporaryDirectory(prefix="fullserver-bench-diff-") as tmp:
        repo = Path(tmp) / "infra"
        repo.mkdir()
        (repo / "Pulumi.yaml").write_text("name: fullserver\nruntime: python\nstackConfigDir: stacks\n")
        paths = generate(repo, n)
        git(repo, "init", "-q", "-b", "main")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "base")
        changed = paths[::10]
        for path in changed:
            data = yaml.safe_load(path.read_text())
            data["config"]["fullserver:datasetGib"] += 500
            path.write_text(yaml.safe_dump(data, sort_keys=False))

        # Alternating, best of ``rounds`` each: the machine is shared, and a burst of other work
        # during one run should not decide the ratio.
        plans, diffs = [], []
        for _ in range(rounds):
            plans.append(run(repo, "plan", "--json"))
            diffs.append(run(repo, "diff", "--base", "HEAD", "--json"))
        plan_s, plan_mib, plan_out = min(plans)
        diff_s, diff_mib, diff_out = min(diffs)
    plans = json.loads(plan_out)
    result = json.loads(diff_out)
    moved = [s for s in result["stacks"] if s["status"] != "unchanged"]
    assert len(plans) == n == len(result["stacks"]), (len(plans), len(result["stacks"]))
    print(f"{n} generated stacks, {len(changed)} changed in the working tree ({len(moved)} shown as changed)")
    print(f"{'command':<28} {'seconds':>9} {'ms/stack':>9} {'peak RSS MiB':>13}")
    print(f"{'plan --json':<28} {plan_s:>9.2f} {1000 * plan_s / n:>9.1f} {plan_mib:>13.1f}")
    print(f"{'diff --base HEAD --json':<28} {diff_s:>9.2f} {1000 * diff_s / n:>9.1f} {diff_mib:>13.1f}")
    print(f"ratio diff / plan: time {diff_s / plan_s:.2f}x, memory {diff_mib / plan_mib:.2f}x")


if __name__ == "__main__":
    main()
