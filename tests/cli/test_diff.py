"""``fullserver diff`` on a real git repository: each change a pull request makes shows as what it
does to the stack's shape, balance, bill and resources, against the merge base or a saved plan.

Every test builds its own repository in a temporary directory (stacks copied from the shipped
examples, a project profile of its own) and asserts on the deltas its own commits cause, not on
today's prices.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from fullserver.errors import EXIT_BUDGET, EXIT_INPUT
from fullserver_cli import diff as diff_cli
from fullserver_cli.app import app
from fullserver_cli.diff_render import COMMENT_MARKER

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}
TEAM_PROFILE = {
    "extends": "fine-tuning",
    "description": "The team's fine-tuning: the shipped one, with its own monthly hours.",
    "cost": {"hours_per_month": 300, "idle_share": 0.2},
}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, capture_output=True, text=True, check=True
    )
    return done.stdout


class Repo:
    """A Pulumi project in git: stacks copied from the examples, a project profile, commits."""

    def __init__(self, path: Path) -> None:
        self.path = path
        (path / "stacks").mkdir(parents=True)
        (path / "profiles").mkdir()
        (path / "Pulumi.yaml").write_text("name: fullserver\nruntime: python\nstackConfigDir: stacks\n")
        git(path, "init", "-q", "-b", "main")

    def stack(self, name: str, source: str | None = None, **config: Any) -> None:
        """Write stacks/Pulumi.<name>.yaml: a shipped example's config with ``config`` keys changed."""
        data = yaml.safe_load((ROOT / "stacks" / f"Pulumi.{source or name}.yaml").read_text())
        data["config"].update({f"fullserver:{k}": v for k, v in config.items()})
        (self.path / "stacks" / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))

    def edit_stack(self, name: str, **config: Any) -> None:
        path = self.path / "stacks" / f"Pulumi.{name}.yaml"
        data = yaml.safe_load(path.read_text())
        data["config"].update({f"fullserver:{k}": v for k, v in config.items()})
        path.write_text(yaml.safe_dump(data, sort_keys=False))

    def remove_stack(self, name: str) -> None:
        (self.path / "stacks" / f"Pulumi.{name}.yaml").unlink()

    def profile(self, name: str, data: dict[str, Any]) -> None:
        (self.path / "profiles" / f"{name}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))

    def commit(self, message: str) -> str:
        git(self.path, "add", "-A")
        git(self.path, "commit", "-q", "-m", message)
        return git(self.path, "rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    r = Repo(tmp_path / "infra")
    r.stack("exp", source="exp-aws-spot")
    r.stack("tune", source="finetune-gcp-a2", profile="team-tuning")
    r.stack("serve", source="serve-gcp-realtime")
    r.profile("team-tuning", TEAM_PROFILE)
    r.commit("base")
    monkeypatch.chdir(r.path)
    return r


def run_json(*args: str) -> tuple[int, dict[str, Any], str]:
    result = runner.invoke(app, ["diff", "--json", *args])
    data = json.loads(result.stdout) if result.stdout.strip().startswith("{") else {}
    return result.exit_code, data, result.stderr


def by_stack(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["stack"]: s for s in data["stacks"]}


def test_an_unchanged_tree_shows_no_stack_moving(repo: Repo) -> None:
    code, data, err = run_json("--base", "HEAD")
    assert code == 0, err
    assert {s["status"] for s in data["stacks"]} == {"unchanged"}, data
    assert data["delta_usd"] == 0 and data["usd_before"] == data["usd_after"] > 0


def test_more_accelerators_show_the_shape_the_bill_and_the_resources_that_change(repo: Repo) -> None:
    repo.edit_stack("exp", acceleratorCount=4)
    code, data, err = run_json("--base", "HEAD")
    assert code == 0, err
    stacks = by_stack(data)
    exp = stacks["exp"]
    assert exp["status"] == "changed"
    shape = {f["field"]: (f["before"], f["after"]) for f in exp["shape"]}
    assert shape["accelerator_count"] == ("1", "4")
    assert shape["offer"][0] != shape["offer"][1]
    assert exp["delta_usd"] > 0 and exp["usd_after"] > exp["usd_before"]
    assert any(line["item"] == "compute" and line["delta_usd"] > 0 for line in exp["cost"])
    # The stack total is the sum of its cost lines' deltas; the whole diff's total is this stack's.
    assert round(sum(line["delta_usd"] for line in exp["cost"]), 2) == exp["delta_usd"]
    assert data["delta_usd"] == exp["delta_usd"]
    # The balance requirements scale with the accelerators: every per-accelerator line moves.
    assert {b["dimension"] for b in exp["balance"]} >= {"cpu", "ram"}
    # The instance's launch template gets another instance type (same logical name: changed in place).
    changed = [r for r in exp["resources"] if r["status"] == "changed"]
    assert any("instanceType" in r["inputs"] for r in changed), exp["resources"]
    assert stacks["tune"]["status"] == stacks["serve"]["status"] == "unchanged"


def test_switching_a_profile_moves_that_stack_only(repo: Repo) -> None:
    repo.profile("team-tuning-long", {**TEAM_PROFILE, "cost": {"hours_per_month": 600, "idle_share": 0.2}})
    repo.edit_stack("tune", profile="team-tuning-long")
    code, data, err = run_json("--base", "HEAD")
    assert code == 0, err
    tune = by_stack(data)["tune"]
    assert {f["field"]: (f["before"], f["after"]) for f in tune["shape"]}["profile"] == (
        "team-tuning",
        "team-tuning-long",
    )
    compute = next(line for line in tune["cost"] if line["item"] == "compute")
    assert compute["after_usd"] == pytest.approx(2 * compute["before_usd"], abs=0.02)  # twice the hours
    assert [s["stack"] for s in data["stacks"] if s["status"] != "unchanged"] == ["tune"]


def test_editing_a_profile_shows_every_stack_it_moves(repo: Repo) -> None:
    repo.stack("tune-2", source="finetune-gcp-g2", profile="team-tuning")
    repo.commit("a second stack on the team profile")
    repo.profile("team-tuning", {**TEAM_PROFILE, "cost": {"hours_per_month": 150, "idle_share": 0.2}})
    code, data, err = run_json("--base", "HEAD")
    assert code == 0, err
    moved = {s["stack"]: s for s in data["stacks"] if s["status"] != "unchanged"}
    assert set(moved) == {"tune", "tune-2"}
    assert all(s["delta_usd"] < 0 for s in moved.values())
    assert data["delta_usd"] == pytest.approx(sum(s["delta_usd"] for s in moved.values()), abs=0.01)


def test_added_and_removed_stacks_count_their_whole_bill_and_resources(repo: Repo) -> None:
    repo.remove_stack("serve")
    repo.stack("exp-eu", source="exp-aws-spot", region="eu-central-1")
    code, data, err = run_json("--base", "HEAD")
    assert code == 0, err
    stacks = by_stack(data)
    added, removed = stacks["exp-eu"], stacks["serve"]
    assert added["status"] == "added" and added["usd_before"] == 0 and added["delta_usd"] == added["usd_after"] > 0
    assert removed["status"] == "removed" and removed["usd_after"] == 0 and removed["delta_usd"] < 0
    assert {r["status"] for r in added["resources"]} == {"added"} and added["resources_after"] == len(
        added["resources"]
    )
    assert {r["status"] for r in removed["resources"]} == {"removed"}
    assert data["delta_usd"] == pytest.approx(added["usd_after"] - removed["usd_before"], abs=0.01)


def test_the_default_base_is_the_merge_base_with_the_default_branch(repo: Repo) -> None:
    git(repo.path, "checkout", "-q", "-b", "feature")
    repo.edit_stack("exp", acceleratorCount=4)
    repo.commit("more GPUs")
    git(repo.path, "checkout", "-q", "main")
    repo.edit_stack("serve", acceleratorCount=2)  # main moves on; the PR must not show main's change
    repo.commit("main moves on")
    git(repo.path, "checkout", "-q", "feature")
    code, data, err = run_json()
    assert code == 0, err
    assert data["base"].startswith("merge base with main")
    assert [s["stack"] for s in data["stacks"] if s["status"] != "unchanged"] == ["exp"]


def test_no_default_branch_is_one_line_exit_2(repo: Repo) -> None:
    git(repo.path, "branch", "-m", "main", "trunk")
    code, _, err = run_json()
    assert code == EXIT_INPUT
    assert err.startswith("error: --base: no default branch") and "give --base REF" in err
    assert err.count("\n") == 1


def test_outside_git_a_saved_plan_is_the_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "stacks").mkdir()
    source = yaml.safe_load((ROOT / "stacks" / "Pulumi.exp-aws-spot.yaml").read_text())
    (tmp_path / "stacks" / "Pulumi.exp.yaml").write_text(yaml.safe_dump(source))
    monkeypatch.chdir(tmp_path)
    code, _, err = run_json()
    assert code == EXIT_INPUT and "is not in a git repository" in err and "--base-plan" in err
    saved = runner.invoke(app, ["plan", "--json"])
    assert saved.exit_code == 0, saved.stderr
    (tmp_path / "base.json").write_text(saved.stdout)
    source["config"]["fullserver:acceleratorCount"] = 4
    (tmp_path / "stacks" / "Pulumi.exp.yaml").write_text(yaml.safe_dump(source))
    code, data, err = run_json("--base-plan", "base.json")
    assert code == 0, err
    [exp] = data["stacks"]
    assert exp["status"] == "changed" and exp["delta_usd"] > 0
    # A saved `plan --json` has no guardrail results: nothing appears or disappears, the working
    # tree's findings are listed as they are.
    assert exp["guardrails_added"] == [] and exp["guardrails_now"] is not None


@pytest.mark.parametrize(
    ("flags", "code"),
    [
        (["--max-increase-usd", "1"], EXIT_BUDGET),
        (["--max-increase-pct", "0.5"], EXIT_BUDGET),
        (["--max-increase-usd", "100000000"], 0),
        (["--max-increase-pct", "100000"], 0),
    ],
)
def test_a_rise_above_either_cap_exits_3_after_printing_the_diff(repo: Repo, flags: list[str], code: int) -> None:
    repo.edit_stack("exp", acceleratorCount=4)
    result = runner.invoke(app, ["diff", "--base", "HEAD", *flags])
    assert result.exit_code == code, result.stderr
    assert "exp" in result.stdout  # the diff is printed either way
    if code == EXIT_BUDGET:
        assert result.stderr.startswith("error: fullserver diff: the monthly estimate rises by")
        assert "exp +" in result.stderr and result.stderr.count("\n") == 1


def test_a_fall_never_trips_the_caps(repo: Repo) -> None:
    repo.remove_stack("serve")
    result = runner.invoke(app, ["diff", "--base", "HEAD", "--max-increase-usd", "0", "--max-increase-pct", "0"])
    assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--base", "no-such-ref"], "--base: 'no-such-ref' is not a commit"),
        (["--base", "HEAD", "--base-plan", "x.json"], "--base-plan: cannot be given with --base"),
        (["--base-plan", "missing.json"], "missing.json: cannot read file"),
        (["--base", "HEAD", "--max-increase-usd", "nan"], "--max-increase-usd: 'nan' is not a budget"),
        (
            ["--base", "HEAD", "--max-increase-pct", "-5"],
            "--max-increase-pct: -5% is negative (give a cap of 0% or more)",
        ),
        (["--base", "HEAD", "--max-increase-pct", "nan"], "'nan' is not a cap (give a finite percentage, such as 10)"),
        (["--base", "HEAD", "nosuch"], "stack 'nosuch': is on neither side"),
        (["--format", "yaml"], "'yaml' is not one of"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(repo: Repo, args: list[str], needle: str) -> None:
    result = runner.invoke(app, ["diff", *args])
    assert result.exit_code == EXIT_INPUT, result.stdout
    assert needle in result.stderr and result.stderr.count("\n") == 1, result.stderr


def test_a_saved_plan_that_is_not_a_plan_names_the_entry(repo: Repo) -> None:
    (repo.path / "bad.json").write_text(json.dumps([{"stack": "exp", "spec": {}, "cost": {"lines": [{"item": 3}]}}]))
    result = runner.invoke(app, ["diff", "--base-plan", "bad.json"])
    assert result.exit_code == EXIT_INPUT
    assert result.stderr.startswith("error: bad.json: entry 0 (stack 'exp'): field 'item'"), result.stderr
    (repo.path / "bad.json").write_text("{not json")
    result = runner.invoke(app, ["diff", "--base-plan", "bad.json"])
    assert result.exit_code == EXIT_INPUT and "is not JSON (line 1" in result.stderr


def test_a_saved_plan_with_a_nan_total_is_refused_in_one_line_instead_of_passing_every_cap(repo: Repo) -> None:
    saved = runner.invoke(app, ["plan", "--json"])
    assert saved.exit_code == 0, saved.stderr
    data = json.loads(saved.stdout)
    data[0]["usd_month"] = float("nan")
    (repo.path / "nan.json").write_text(json.dumps(data))  # json writes NaN, and reads it back
    repo.edit_stack("exp", acceleratorCount=4)
    result = runner.invoke(app, ["diff", "--base-plan", "nan.json", "--max-increase-usd", "0"])
    assert result.exit_code == EXIT_INPUT and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: nan.json: entry 0 (stack 'exp'): field 'usd_month': nan is not a finite")


def test_every_diff_says_whether_the_guardrails_ran_and_on_which_sides(repo: Repo) -> None:
    repo.edit_stack("exp", acceleratorCount=4)
    git_base = runner.invoke(app, ["diff", "--base", "HEAD"])
    assert git_base.exit_code == 0, git_base.stderr
    assert "guardrails: run on both sides; " in git_base.stdout
    comment = runner.invoke(app, ["diff", "--base", "HEAD", "--format", "markdown"]).stdout
    assert "_guardrails: run on both sides; " in comment
    saved = runner.invoke(app, ["plan", "--json"]).stdout
    (repo.path / "base.json").write_text(saved)
    from_plan = runner.invoke(app, ["diff", "--base-plan", "base.json"])
    assert "guardrails: run on the working tree only (the base has no guardrail results" in from_plan.stdout


def test_the_pr_comment_shows_each_stacks_bill_before_and_after_and_flags_a_stack_over_its_budget(repo: Repo) -> None:
    repo.edit_stack("exp", acceleratorCount=4, budgetMonthlyUsd=500)  # the rise takes it past its own budget
    repo.remove_stack("serve")
    comment = runner.invoke(app, ["diff", "--base", "HEAD", "--format", "markdown"]).stdout
    data = by_stack(run_json("--base", "HEAD")[1])
    rows = {
        line.split(" | ")[0].strip("| "): line.split(" | ") for line in comment.splitlines() if line.startswith("| ")
    }
    assert rows["stack"][4:] == ["$/month before", "$/month after", "delta |"]
    exp, serve = rows["exp"], rows["serve"]
    assert exp[1] == "changed, OVER its budget $500.00" and data["exp"]["over_budget"] is True
    assert exp[4] == f"${data['exp']['usd_before']:,.2f}" and exp[5] == f"${data['exp']['usd_after']:,.2f}"
    assert serve[1] == "removed" and serve[5] == "-"  # not $0.00: the stack is gone, not free
    assert "->" in comment and "-&gt;" not in comment


def test_a_mistyped_base_answers_before_anything_is_planned(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    def never(*_: Any, **__: Any) -> Any:
        raise AssertionError("planned before the base was resolved")

    monkeypatch.setattr(diff_cli, "plan_documents", never)
    result = runner.invoke(app, ["diff", "--base", "no-such-ref"])
    assert result.exit_code == EXIT_INPUT and "'no-such-ref' is not a commit" in result.stderr


def test_a_saved_plan_holding_a_number_longer_than_python_reads_is_one_line(repo: Repo) -> None:
    (repo.path / "big.json").write_text('[{"stack": "exp", "usd_month": ' + "9" * 5_000 + "}]")
    result = runner.invoke(app, ["diff", "--base-plan", "big.json"])
    assert result.exit_code == EXIT_INPUT and result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("error: big.json: is not a plan: it holds a number of over 4,300 digits")


def test_a_base_stack_the_code_cannot_plan_that_is_deleted_now_shows_as_removed(repo: Repo) -> None:
    repo.stack("old", source="exp-aws-spot", accelerator="Z999")  # no such accelerator today
    repo.commit("a stack the current code refuses")
    repo.remove_stack("old")
    result = runner.invoke(app, ["diff", "--base", "HEAD"])
    assert result.exit_code == 0, result.stderr
    assert "no stack changed" not in result.stdout and "1 removed" in result.stdout
    code, data, err = run_json("--base", "HEAD", "old")
    assert code == 0, err
    [old] = data["stacks"]
    assert old["status"] == "removed" and old["note"].startswith("the base does not plan with the current code:")
    assert old["note"].endswith("it is deleted now")


def test_named_stacks_limit_the_diff(repo: Repo) -> None:
    repo.edit_stack("exp", acceleratorCount=4)
    repo.edit_stack("serve", acceleratorCount=2)
    code, data, err = run_json("--base", "HEAD", "serve")
    assert code == 0, err
    assert [s["stack"] for s in data["stacks"]] == ["serve"]


def test_a_catalog_price_change_moves_every_stack_priced_from_it(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A repository that carries the catalog (fullserver's own) compares the base's prices."""
    data_dir = repo.path / "catalog"
    data_dir.mkdir()
    for source in sorted(diff_cli.CATALOG_DIR.glob("*.yaml")):
        (data_dir / source.name).write_text(source.read_text())
    repo.commit("carry the catalog")
    monkeypatch.setattr(diff_cli, "CATALOG_DIR", data_dir)
    aws = data_dir / "aws.yaml"
    doc = yaml.safe_load(aws.read_text())
    for price in (p for p in doc["shape_prices"] if p["shape"] == "g4dn.xlarge"):
        for key in ("on_demand_usd_hour", "spot_usd_hour"):
            if isinstance(price.get(key), (int, float)):
                price[key] = round(price[key] * 2, 4)
    aws.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, data, err = run_json("--base", "HEAD")
    assert code == 0, err
    moved = [s for s in data["stacks"] if s["status"] != "unchanged"]
    assert [s["stack"] for s in moved] == ["exp"]
    assert moved[0]["delta_usd"] > 0  # dearer, whether on the same shape or on the next one sizing picks
    assert any(line["item"] == "compute" and line["delta_usd"] > 0 for line in moved[0]["cost"])


def _carry_catalog(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The repository carries its catalog (fullserver's own does), committed: the base's prices."""
    data_dir = repo.path / "catalog"
    data_dir.mkdir()
    for source in sorted(diff_cli.CATALOG_DIR.glob("*.yaml")):
        (data_dir / source.name).write_text(source.read_text())
    repo.commit("carry the catalog")
    monkeypatch.setattr(diff_cli, "CATALOG_DIR", data_dir)
    return data_dir


def test_a_price_only_change_shows_the_unit_price_before_and_after(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every AWS shape 10% dearer: the same shape stays the cheapest, so only its price moves, and
    the comment says by how much an hour, not only by how much a month."""
    aws = _carry_catalog(repo, monkeypatch) / "aws.yaml"
    doc = yaml.safe_load(aws.read_text())
    for price in doc["shape_prices"]:
        for key in ("on_demand_usd_hour", "spot_usd_hour"):
            if isinstance(price.get(key), (int, float)):
                price[key] = round(price[key] * 1.1, 4)
    aws.write_text(yaml.safe_dump(doc, sort_keys=False))
    exp = by_stack(run_json("--base", "HEAD")[1])["exp"]
    before, after = exp["unit_usd_hour_before"], exp["unit_usd_hour_after"]
    assert exp["was"] == exp["now"] and exp["shape"] == [] and after == pytest.approx(before * 1.1, rel=0.01)
    comment = runner.invoke(app, ["diff", "--base", "HEAD", "--format", "markdown"]).stdout
    md = MarkdownIt("commonmark").enable("table")
    tokens = md.parse(comment)
    rows = {r[0]: r for r in _rows(tokens, next(i for i, t in enumerate(tokens) if t.type == "table_open"))}
    assert rows["exp"][1] == f"changed, unit price ${before:,.4f}/h -> ${after:,.4f}/h"
    assert f"| compute, while running | ${before:,.4f}/h | ${after:,.4f}/h |" in comment  # its own section
    terminal = runner.invoke(app, ["diff", "--base", "HEAD"], env={"COLUMNS": "200"}).stdout
    assert f"unit price ${before:,.4f}/h -> ${after:,.4f}/h" in terminal


def test_stale_prices_are_said_once_per_source_not_once_per_stack(repo: Repo) -> None:
    """Against a saved plan, with a threshold every source is past: each source one bullet naming
    every stack it prices, and no stack's own section repeats it."""
    (repo.path / "base.json").write_text(runner.invoke(app, ["plan", "--json"]).stdout)
    args = ["--base-plan", "base.json", "--max-price-age-days", "1"]
    data = run_json(*args)[1]
    stale = [(s["stack"], w) for s in data["stacks"] for w in s["warnings_added"] if "days old (source " in w]
    sources: dict[str, set[str]] = {}
    for stack, w in stale:
        sources.setdefault(w.split("(source ")[1].split(",")[0], set()).add(stack)
    assert len(stale) > len(sources) > 1  # some source prices several stacks: the case at hand
    comment = runner.invoke(app, ["diff", *args, "--format", "markdown"]).stdout
    tokens = MarkdownIt("commonmark").enable("table").parse(comment)
    items = [t.content for t in tokens if t.type == "inline" and t.level == 3]  # list items' text
    assert "**Stale prices, each source once**:" in comment
    new = items[: len(sources)]  # then those of the saved plan, at its own threshold: gone now
    assert sorted(item.split(":")[0] for item in new) == sorted(sources)
    for item in new:
        source = item.split(":")[0]
        named = item.rsplit(" for ", 1)[1].split(":")[0].split(", ")
        assert set(named) == sources[source], item
    details = comment.split("<details>", 1)[1]
    assert "days old" not in details


# --- the pull-request comment, read by a Markdown parser ---------------------------------------


class _Html(HTMLParser):
    """The rendered comment's structure: each <details> with its summary text and its tables."""

    def __init__(self) -> None:
        super().__init__()
        self.details: list[dict[str, Any]] = []
        self._in_summary = False
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "details":
            self.details.append({"summary": "", "tables": 0, "text": ""})
            self._depth += 1
        elif tag == "summary":
            self._in_summary = True
        elif tag == "table" and self._depth:
            self.details[-1]["tables"] += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "summary":
            self._in_summary = False
        elif tag == "details":
            self._depth -= 1

    def handle_data(self, data: str) -> None:
        if self._in_summary:
            self.details[-1]["summary"] += data
        elif self._depth:
            self.details[-1]["text"] += data


def test_markdown_is_one_comment_with_a_summary_and_a_section_per_stack(repo: Repo) -> None:
    repo.edit_stack("exp", acceleratorCount=4, budgetMonthlyUsd=5000)  # within its budget: no flag
    repo.remove_stack("serve")
    result = runner.invoke(app, ["diff", "--base", "HEAD", "--format", "markdown"])
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert text.startswith(COMMENT_MARKER + "\n")
    _, data, _ = run_json("--base", "HEAD")
    md = MarkdownIt("commonmark").enable("table")
    tokens = md.parse(text)
    # The marker is an HTML comment (hidden on GitHub and GitLab), then the summary paragraph.
    assert tokens[0].type == "html_block" and tokens[0].content.strip() == COMMENT_MARKER
    summary = next(t for t in tokens if t.type == "inline")
    assert "fullserver diff" in summary.content
    total = data["delta_usd"]
    assert f"-${abs(total):,.2f}" in summary.content if total < 0 else f"+${total:,.2f}" in summary.content
    # The stacks table: one body row per changed stack, with its delta in the last column.
    tables = [i for i, t in enumerate(tokens) if t.type == "table_open"]
    assert tables, "no table in the comment"
    first_rows = _rows(tokens, tables[0])
    assert first_rows[0] == ["stack", "change", "before", "after", "$/month before", "$/month after", "delta"]
    assert {r[0]: r[1] for r in first_rows[1:]} == {"exp": "changed", "serve": "removed"}
    # One closed <details> per changed stack, its summary naming the stack, holding its tables.
    page = _Html()
    page.feed(md.render(text))
    assert [d["summary"].split(":")[0] for d in page.details] == ["exp", "serve"]
    assert all(d["tables"] >= 1 for d in page.details)
    exp = page.details[0]
    assert "cost per month" in exp["text"] and "accelerator_count" in exp["text"]


def _rows(tokens: list[Any], start: int) -> list[list[str]]:
    rows: list[list[str]] = []
    for t in tokens[start:]:
        if t.type == "tr_open":
            rows.append([])
        elif t.type == "inline" and rows:
            rows[-1].append(t.content)
        elif t.type == "table_close":
            break
    return rows


def test_markdown_cells_cannot_break_the_table(repo: Repo) -> None:
    from fullserver_cli.diff_render import _md_table

    md = MarkdownIt("commonmark").enable("table")
    lines = _md_table(["a", "b"], [["x | y", "<details>"]])
    tokens = md.parse("\n".join(lines))
    cells = [t.content for t in tokens if t.type == "inline"]
    assert cells == ["a", "b", "x | y", "&lt;details>"]  # one row of two cells; "<" alone opens a tag
    assert "<details>" not in md.render("\n".join(lines))


def test_the_terminal_table_names_each_changed_stack_and_the_total(repo: Repo) -> None:
    repo.edit_stack("exp", acceleratorCount=4)
    result = runner.invoke(app, ["diff", "--base", "HEAD"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert out.splitlines()[0].startswith("+$")
    assert "exp: changed" in out and "cost per month" in out and "2 stack(s) unchanged" in out
    assert max(len(line) for line in out.splitlines()) <= 80


# --- guardrails: the policy pack's own policies over the mock evaluation's resources --------------


def test_guardrails_run_the_pack_over_the_graph_and_find_what_it_would() -> None:
    from components.graph import graph_for_stack_plan
    from fullserver.plan import plan_paths
    from fullserver_cli.guardrails import run_guardrails

    [plan] = plan_paths([ROOT / "stacks" / "Pulumi.exp-aws-spot.yaml"])
    graph = graph_for_stack_plan(plan)
    assert run_guardrails(graph) == []  # the shipped stack passes every guardrail
    group = next(r for r in graph.rows if r.type == "aws:ec2/securityGroup:SecurityGroup")
    opened = {
        **group.inputs,
        "ingress": [{"protocol": "tcp", "fromPort": 22, "toPort": 22, "cidrBlocks": ["0.0.0.0/0"]}],
    }
    graph.rows[graph.rows.index(group)] = type(group)(group.type, group.name, opened, group.custom)
    found = run_guardrails(graph)
    assert found is not None
    assert [(g.policy, g.level) for g in found] == [("no-open-admin-ports", "mandatory")]
    assert "0.0.0.0/0" in found[0].message


def test_without_pulumi_policy_the_diff_says_guardrails_were_not_run(
    repo: Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pulumi_policy", None)  # import fails as if not installed
    code, data, err = run_json("--base", "HEAD")
    assert code == 0, err
    assert data["guardrails_run"] is False
    result = runner.invoke(app, ["diff", "--base", "HEAD", "--format", "markdown"])
    assert "guardrails not run: pulumi-policy is not installed" in result.stdout


def test_a_project_in_a_subdirectory_reads_its_base_from_the_same_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    top = tmp_path / "monorepo"
    top.mkdir()
    git(top, "init", "-q", "-b", "main")
    project = Repo.__new__(Repo)
    project.path = top / "teams" / "ml"
    (project.path / "stacks").mkdir(parents=True)
    (project.path / "profiles").mkdir()
    (project.path / "Pulumi.yaml").write_text("name: fullserver\nruntime: python\nstackConfigDir: stacks\n")
    project.stack("tune", source="finetune-gcp-a2", profile="team-tuning")
    project.profile("team-tuning", TEAM_PROFILE)
    project.commit("base")
    project.profile("team-tuning", {**TEAM_PROFILE, "cost": {"hours_per_month": 600, "idle_share": 0.2}})
    monkeypatch.chdir(project.path)
    for stacks_dir in ("stacks", str(project.path / "stacks")):
        code, data, err = run_json("--base", "HEAD", "--stacks-dir", stacks_dir)
        assert code == 0, err
        [tune] = data["stacks"]
        assert tune["status"] == "changed" and tune["delta_usd"] > 0, stacks_dir
