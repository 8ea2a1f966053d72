"""Benchmark: offline planning time and peak memory, without and with resource graphs.

Sizing and cost (issue 2): 1 and up to 500 generated stacks; target 500 in under 3 s, linear.
Two columns (issue 36): warm, the same catalog planning stacks that cycle through 12 variants (the
memo answers most questions), and cold, the memo cleared before each run over stacks that each ask
sizing a question of their own (``distinct_stacks``); target: cold sizing + cost <= 0.5 ms per stack;
beside it the cold work per stack as counts (``work_done``), which the machine's load does not move,
the comparison rows' part of the cold figure (``rows_share``), and the part of it that ranks shapes
and prices environments (``sizing_proper``), which no change to the rest can take below.
Many distinct stacks through the CLI (issue 36): ``fullserver plan --summary`` over 1 and 500 of them,
in a fresh process each; target <= 1 ms of CPU per stack beyond the first.
Resource graphs (issue 3): every example stack, then up to 200 generated stacks evaluated under
Pulumi's mock runtime; growth should be linear. The baseline of each table is the per-stack time
of its first batch of 50 or more measured in the same run; "vs linear" says how far larger
batches stray from it.
Time to the first line of ``fullserver plan`` (issue 14): target under 1 s, against ``--version``.
Sizing decisions per second (issue 13): every shipped profile x every accelerator and per-node count
the catalog sells x every priced region, one ``sizing.size`` call each (a chosen shape or a refusal);
the figure to compare before and after a change to sizing or the catalog. It is measured in CPU
time of this process (best of 5), so other work on a shared machine does not move it much.
Run: ``.venv/bin/python bench/plan.py [--sizes 1,50,100,250,500] [--graph-sizes 50,100,200]``.
"""

from __future__ import annotations

import argparse
import cProfile
import itertools
import os
import pstats
import random
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fullserver.catalog import Catalog, load_catalog  # noqa: E402
from fullserver.errors import InputError, NothingFits  # noqa: E402
from fullserver.plan import plan_paths, plan_stack  # noqa: E402
from fullserver.profiles import Profile, load_profiles  # noqa: E402
from fullserver.sizing import size  # noqa: E402
from fullserver.stacks import load_stack  # noqa: E402
from fullserver.workload import Workload  # noqa: E402

COLD_TARGET_MS = 0.5
"""Issue 36: sizing + cost of a distinct stack, memo cleared (ms of CPU per stack)."""
FULLSERVER = [sys.executable, "-m", "fullserver_cli.app"]
"""The command line of this tree (run with ``cwd=ROOT``, which ``-m`` puts first on ``sys.path``), not
the installed ``fullserver`` script: that runs whichever checkout the virtualenv was installed from."""
CLI_TARGET_MS = 1.0
"""Issue 36: ``fullserver plan --summary`` over many distinct stacks, ms of CPU per stack beyond the first."""

VARIANTS = [
    # (profile, platform, region, accelerator, count, nodes)
    ("experimentation", "aws-gpu", "us-east-1", "T4", 1, 1),
    ("experimentation", "gcp-gpu", "us-central1", "T4", 2, 1),
    ("fine-tuning", "gcp-gpu", "us-central1", "L4", 1, 1),
    ("fine-tuning", "aws-gpu", "us-east-1", "L4", 4, 1),
    ("fine-tuning", "tpu-vm", "us-central1", "v5litepod-8", None, 1),
    ("scale-training", "aws-gpu", "us-east-1", "H100-80GB", 8, 2),
    ("scale-training", "gcp-gpu", "us-central1", "H100-80GB", 8, 4),
    ("scale-training", "tpu-vm", "us-east5", "v5p-64", None, 1),
    ("realtime-inference", "gcp-gpu", "us-central1", "L4", 1, 1),
    ("realtime-inference", "aws-gpu", "us-east-1", "A10G", 1, 1),
    ("batch-inference", "tpu-vm", "us-central1", "v5litepod-4", None, 1),
    ("batch-inference", "aws-gpu", "us-east-1", "Inferentia2", 1, 1),
]


def generate(directory: Path, n: int) -> list[Path]:
    """``n`` distinct stack files cycling through the variants with varying datasets and owners."""
    paths = []
    for i, (profile, platform, region, acc, count, nodes) in zip(range(n), itertools.cycle(VARIANTS), strict=False):
        config = _stack_config(profile, platform, region, acc, count, nodes, i)
        path = directory / f"Pulumi.gen-{i:04d}.yaml"
        path.write_text(yaml.safe_dump({"config": config}))
        paths.append(path)
    return paths


def _stack_config(
    profile: str, platform: str, region: str, acc: str, count: int | None, nodes: int, i: int
) -> dict[str, object]:
    """One generated stack's ``config``: the sizing question, then what only this stack owns."""
    config: dict[str, object] = {
        "fullserver:profile": profile,
        "fullserver:platform": platform,
        "fullserver:region": region,
        "fullserver:accelerator": acc,
        "fullserver:nodes": nodes,
        "fullserver:owner": f"team-{i % 17}",
        "fullserver:datasetGib": 10 * (i % 50),
        "fullserver:egressGbMonth": 5 * (i % 40),
        "gcp:project": "bench-project",
    }
    if count:
        config["fullserver:acceleratorCount"] = count
    if profile == "realtime-inference":  # an external endpoint needs its API key (issue 22), and TLS or
        # plainHttp said (issue 33): plain HTTP keeps every variant's platform
        config["fullserver:serving"] = {"apiKeySecret": "bench-api-key", "plainHttp": True}
    return config


def distinct_stacks(directory: Path, n: int) -> list[Path]:
    """``n`` stack files that each ask sizing a question no other asks (profile, platform, region,
    accelerator, count, nodes: ``decision_grid`` in a fixed random order), keeping only those that
    plan; what the cold column measures."""
    profiles, catalog = load_profiles(), load_catalog()
    grid = decision_grid(profiles, catalog)
    random.Random(36).shuffle(grid)
    paths: list[Path] = []
    for profile, workload in grid:
        if len(paths) == n:
            break
        acc = str(workload.accelerator)
        config = _stack_config(
            profile.name,
            str(workload.platform),
            workload.region,
            acc,
            workload.accelerator_count,
            workload.nodes,
            len(paths),
        )
        path = directory / f"Pulumi.cold-{len(paths):04d}.yaml"
        path.write_text(yaml.safe_dump({"config": config}))
        try:
            plan_stack(load_stack(path), profiles, catalog)
        except (InputError, NothingFits):
            path.unlink()
            continue
        paths.append(path)
    catalog.memo.clear()
    return paths


def measure(paths: list[Path], cold: bool = False) -> tuple[float, int]:
    """CPU time of a plain run (best of 3), then peak traced memory of a separate run. CPU time of
    this process, not wall time: the machine is shared, and others' load moved the wall figure by
    a factor of three between runs. ``cold``: the catalog's memo is cleared before each run, so
    every question the stacks ask is worked out afresh."""
    profiles, catalog = load_profiles(), load_catalog()
    elapsed = float("inf")
    for _ in range(3):
        if cold:
            catalog.memo.clear()
        start = time.process_time()
        plans = plan_paths(paths, profiles, catalog)
        elapsed = min(elapsed, time.process_time() - start)
    assert len(plans) == len(paths)
    tracemalloc.start()
    plan_paths(paths, profiles, catalog)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return elapsed, peak


def measure_graphs(paths: list[Path]) -> tuple[float, int]:
    """Plan + resource graph per stack (one run; graphs are too slow to repeat; CPU time of the
    process, every thread), then traced peak."""
    from components.graph import plan_with_graphs

    plans = plan_paths(paths, load_profiles(), load_catalog())
    start = time.process_time()
    graphs = plan_with_graphs(plans)
    elapsed = time.process_time() - start
    assert all(g.rows for _, g in graphs)
    tracemalloc.start()
    plan_with_graphs(plans[: min(len(plans), 50)])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return elapsed, peak


def work_done(paths: list[Path]) -> dict[str, float]:
    """What planning ``paths`` cold works out, per stack: environments sized (each stack's own and
    its comparison rows that plan) and the memo's answers by kind. Counts, not times: they do not
    move with the machine's load, so a change to the work shows here before the timings agree."""
    profiles, catalog = load_profiles(), load_catalog()
    catalog.memo.clear()
    plans = plan_paths(paths, profiles, catalog)
    kinds: dict[str, int] = {
        "environments sized": sum(1 + sum(r.offer is not None for r in p.comparison) for p in plans)
    }
    for key in catalog.memo:
        work = key[0] if isinstance(key, tuple) else key  # ``Catalog.answer`` keys (work, question)
        name = getattr(work, "__name__", str(work)).strip("_")
        kinds[name] = kinds.get(name, 0) + 1
    return {kind: n / len(paths) for kind, n in kinds.items()}


def rows_share(paths: list[Path], runs: int = 5) -> tuple[float, float, float]:
    """Cold CPU seconds of planning ``paths`` with their comparison rows and without
    (``plan_paths(compared=False)``, as ``plan --summary`` plans), alternating, best of ``runs``
    each, and the rows per stack: what the rows alone cost, the plan's largest part (issue 36)."""
    profiles, catalog = load_profiles(), load_catalog()
    best = {True: float("inf"), False: float("inf")}
    for _ in range(runs):
        for compared in (True, False):
            catalog.memo.clear()
            start = time.process_time()
            plan_paths(paths, profiles, catalog, compared=compared)
            best[compared] = min(best[compared], time.process_time() - start)
    rows = sum(len(p.comparison) for p in plan_paths(paths, profiles, catalog)) / len(paths)
    return best[True], best[False], rows


SIZING_PROPER = {("fullserver/sizing/rank.py", "ranking"), ("fullserver/cost.py", "estimate_at_minimum")}
"""What ranks a platform's shapes (a ranking worked out, not a memo hit) and what prices an environment."""


def sizing_proper(paths: list[Path]) -> float:
    """The share of a cold plan of ``paths`` spent in ``SIZING_PROPER`` (under cProfile, which weighs
    many small calls a little more than few large ones; what ``docs/design/core.md`` reasons from)."""
    profiles, catalog = load_profiles(), load_catalog()
    catalog.memo.clear()
    profiler = cProfile.Profile()
    profiler.runcall(plan_paths, paths, profiles, catalog)
    # (file, line, name) -> (primitive calls, calls, own time, cumulative time, callers)
    stats: dict[tuple[str, int, str], tuple[int, int, float, float, object]]
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    total = sum(entry[2] for entry in stats.values())
    found = {
        (file, name): entry[3]
        for (file, _, name), entry in stats.items()
        for suffix, wanted in SIZING_PROPER
        if name == wanted and file.endswith(suffix)
    }
    assert len(found) == len(SIZING_PROPER), f"not found under cProfile: {SIZING_PROPER}"
    return sum(found.values()) / total


def cold_warm_table(warm: list[tuple[int, float, int]], cold: list[tuple[int, float, int]]) -> None:
    """Warm (variants cycled, memo kept) beside cold (distinct questions, memo cleared), per stack."""
    print("sizing + cost (no graph): warm = 12 variants cycled, memo kept; cold = distinct questions, memo cleared")
    print(f"{'stacks':>7} {'warm ms/stack':>14} {'cold ms/stack':>14} {'cold target':>12} {'cold peak MiB':>14}")
    for (n, t, _), (_, c, peak) in zip(warm, cold, strict=True):
        print(
            f"{n:>7} {1000 * t / n:>14.3f} {1000 * c / n:>14.3f} {'<= ' + str(COLD_TARGET_MS):>12} {peak / 2**20:>14.1f}"
        )
    n, c, _ = cold[-1]
    verdict = "met" if 1000 * c / n <= COLD_TARGET_MS else "MISSED"
    print(f"target cold <= {COLD_TARGET_MS} ms/stack: {verdict} ({1000 * c / n:.3f} ms/stack over {n} distinct stacks)")


def cli_cpu(directory: Path) -> float:
    """CPU seconds of one ``fullserver plan --summary`` over every stack in ``directory``, in a
    fresh process (user + system time of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        [*FULLSERVER, "plan", "--summary", "--stacks-dir", str(directory)], cwd=ROOT, check=True, capture_output=True
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def cli_table(paths: list[Path], many: int = 500, runs: int = 5) -> None:
    """Issue 36: planning many distinct stacks through the CLI costs <= 1 ms per stack beyond the first.
    The one-stack and the many-stack runs alternate (best of ``runs`` each), so a busy minute
    slows both; a process's start varies by ~0.2 s, spread here over up to 500 stacks."""
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as lots:
        for path in paths[:1]:
            (Path(one) / path.name).write_text(path.read_text())
        for path in paths[:many]:
            (Path(lots) / path.name).write_text(path.read_text())
        pairs = [(cli_cpu(Path(one)), cli_cpu(Path(lots))) for _ in range(runs)]
    first, all_of_them = min(p[0] for p in pairs), min(p[1] for p in pairs)
    n = min(many, len(paths))
    beyond = 1000 * (all_of_them - first) / (n - 1)
    verdict = "met" if beyond <= CLI_TARGET_MS else "MISSED"
    print(f"\nfullserver plan --summary, distinct stacks (CPU s, best of {runs}, alternating, a fresh process each)")
    print(f"  1 stack: {first:.2f} s; {n} stacks: {all_of_them:.2f} s")
    print(f"  per stack beyond the first: {beyond:.2f} ms (target <= {CLI_TARGET_MS} ms: {verdict})")


def table(title: str, results: list[tuple[int, float, int]]) -> None:
    base_n, base_t, _ = next((r for r in results if r[0] >= 50), results[0])
    per_stack = base_t / base_n
    print(title)
    print(f"{'stacks':>7} {'CPU s':>9} {'ms/stack':>9} {'vs linear':>10} {'peak MiB':>9}")
    for n, t, peak in results:
        print(f"{n:>7} {t:>9.3f} {1000 * t / n:>9.3f} {t / (per_stack * n):>9.2f}x {peak / 2**20:>9.1f}")


def decision_grid(profiles: dict[str, Profile], catalog: Catalog) -> list[tuple[Profile, Workload]]:
    """Every (profile, workload) the catalog can be asked: each profile's platforms, each accelerator
    and per-node count sold there (TPU types by name), each region priced there; multi-node profiles
    with two nodes."""
    grid: list[tuple[Profile, Workload]] = []
    for profile in profiles.values():
        nodes = 2 if profile.topology.nodes == "multi" else 1
        for platform in profile.platforms:
            offers = [o for o in catalog.offers if o.platform is platform and o.accelerator]
            asks = sorted(
                {
                    (o.name, None) if o.hosts > 1 or o.topology else (str(o.accelerator), o.host.accelerator_count)
                    for o in offers
                },
                key=str,
            )
            for region in sorted(catalog.regions(platform)):
                for acc, count in asks:
                    workload = Workload.model_validate(
                        {
                            "profile": profile.name,
                            "platform": platform.value,
                            "region": region,
                            "accelerator": acc,
                            "acceleratorCount": count,
                            "nodes": 1 if count is None else nodes,
                        }
                    )
                    grid.append((profile, workload))
    return grid


def decisions_per_second(runs: int = 5) -> tuple[int, int, float]:
    """Sizing decisions over ``decision_grid`` (best of ``runs``, CPU time): count, how many chose a
    shape, and decisions per second."""
    profiles, catalog = load_profiles(), load_catalog()
    grid = decision_grid(profiles, catalog)
    best, chosen = float("inf"), 0
    for _ in range(runs):
        chosen = 0
        catalog.memo.clear()  # each round decides afresh: no ranking kept from the last one
        start = time.process_time()
        for profile, workload in grid:
            try:
                size(profile, workload, catalog, "bench")
                chosen += 1
            except (InputError, NothingFits):
                pass
        best = min(best, time.process_time() - start)
    return len(grid), chosen, len(grid) / best


def _cpu_seconds(pid: int) -> float:
    """CPU seconds a running process has used (Linux ``/proc``; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def first_line(args: list[str], runs: int = 3) -> tuple[float, float, float]:
    """Best-of-``runs`` seconds until ``fullserver <args>`` prints its first line, the CPU seconds
    it had used by then (what a shared machine's load does not inflate), and until it ends."""
    first, cpu, total = [], [], []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.Popen([*FULLSERVER, *args], cwd=ROOT, stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        proc.stdout.readline()
        first.append(time.perf_counter() - start)
        cpu.append(_cpu_seconds(proc.pid))
        proc.communicate()
        total.append(time.perf_counter() - start)
    return min(first), min(cpu), min(total)


def first_line_table() -> None:
    """Issue 14: the first line of `plan` in under 1 s; the baseline is `fullserver --version` (the
    interpreter and the CLI's own imports) measured in the same run."""
    base, base_cpu, _ = first_line(["--version"])
    print("\ntime to the first line (best of 3, a fresh process each; cpu s: its CPU time by then)")
    print(f"{'command':<36} {'first line s':>12} {'cpu s':>6} {'x --version':>12} {'done s':>8}")
    print(f"{'fullserver --version':<36} {base:>12.2f} {base_cpu:>6.2f} {1.0:>11.1f}x {base:>8.2f}")
    for stack in ("exp-aws-spot", "finetune-gcp-g2", "train-tpu-v5e"):
        first, cpu, done = first_line(["plan", stack])
        verdict = "met" if first < 1.0 else "MISSED"
        print(
            f"{'fullserver plan ' + stack:<36} {first:>12.2f} {cpu:>6.2f} {first / base:>11.1f}x {done:>8.2f}"
            f"  (< 1 s: {verdict})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1,50,100,250,500")
    parser.add_argument("--graph-sizes", default="50,100,200")
    parser.add_argument("--no-cli", dest="cli", action="store_false", help="skip plan --summary over 1 and 500 stacks")
    parser.add_argument("--no-first-line", dest="first_line", action="store_false", help="skip time to the first line")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    graph_sizes = [int(s) for s in args.graph_sizes.split(",") if s]

    cold = time.perf_counter()
    load_catalog.cache_clear()
    load_catalog()
    load_profiles()
    print(f"catalog + profiles load (cold): {time.perf_counter() - cold:.3f} s")

    asked, chosen, rate = decisions_per_second()
    print(f"sizing decisions: {rate:,.0f} per second of CPU ({asked} asked, {chosen} chose a shape, best of 5)")

    with tempfile.TemporaryDirectory() as tmp:
        paths = generate(Path(tmp), max(sizes))
        measure(paths[:5])  # warm imports and caches, so the first size is not charged for them
        results = [(n, *measure(paths[:n])) for n in sizes]
        table("sizing + cost (no graph)", results)
        largest = results[-1]
        target = "met" if largest[0] < 500 or largest[1] < 3.0 else "MISSED"
        print(f"target 500 stacks < 3 s: {target} ({largest[1]:.3f} s for {largest[0]})")
        cold_dir = Path(tmp) / "cold"
        cold_dir.mkdir()
        distinct = distinct_stacks(cold_dir, max(sizes))
        cold_rows = [(n, *measure(distinct[:n], cold=True)) for n in sizes if n <= len(distinct)]
        cold_warm_table(results[: len(cold_rows)], cold_rows)
        with_rows, without, rows = rows_share(distinct)
        n = len(distinct)
        print(
            f"  of which comparison rows: {1000 * (with_rows - without) / n:.3f} ms/stack, {rows:.2f} rows per stack "
            f"(cold, {1000 * with_rows / n:.3f} with them, {1000 * without / n:.3f} without; best of 5, alternating)"
        )
        proper = sizing_proper(distinct)
        print(
            f"  of which ranking shapes and pricing environments: {100 * proper:.0f} % "
            f"(~{1000 * with_rows * proper / n:.2f} ms/stack; cProfile share of one cold run)"
        )
        work = work_done(distinct)
        print(f"cold work per stack ({len(distinct)} distinct stacks; counts, not times):")
        print("  " + ", ".join(f"{kind} {n:.2f}" for kind, n in sorted(work.items(), key=lambda kv: -kv[1])))
        if args.cli:
            cli_table(distinct)

        if graph_sizes:
            examples = sorted((ROOT / "stacks").glob("Pulumi.*.yaml"))
            start = time.perf_counter()
            first, _ = measure_graphs(examples)  # includes importing the provider SDKs once
            print(
                f"\nall {len(examples)} example stacks with resource graphs: {first:.2f} s (first run, SDK imports included)"
            )
            again, _ = measure_graphs(examples)
            print(
                f"again, warm: {again:.2f} s ({1000 * again / len(examples):.0f} ms/stack); wall incl. sizing {time.perf_counter() - start:.2f} s"
            )
            table("\nplan + resource graph", [(n, *measure_graphs(paths[:n])) for n in graph_sizes])
    if args.first_line:
        first_line_table()
    print(f"process max RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
