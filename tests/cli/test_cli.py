"""The command line: what a person sees, and the exit codes CI relies on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from fullserver.errors import EXIT_BUDGET, EXIT_INPUT
from fullserver_cli.app import app

ROOT = Path(__file__).resolve().parents[2]
STACKS = ROOT / "stacks"
EXAMPLES = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in STACKS.glob("Pulumi.*.yaml"))
runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_plan_prints_every_example_stack_with_balance_and_cost() -> None:
    code, out, _ = run("plan", "--stacks-dir", str(STACKS))
    assert code == 0
    for name in EXAMPLES:
        assert name in out
    assert "balance" in out and "cost per month" in out
    assert f"{len(EXAMPLES)} stack(s)" in out


def test_plan_json_is_machine_readable_for_ci() -> None:
    code, out, _ = run("plan", "--stacks-dir", str(STACKS), "--json", "train-p5-cluster")
    assert code == 0
    [plan] = json.loads(out)
    assert plan["stack"] == "train-p5-cluster"
    assert plan["spec"]["offer"] == "p5.48xlarge" and plan["spec"]["nodes"] == 2
    assert plan["usd_month"] > 0
    assert all(line["ok"] for line in plan["spec"]["balance"]["lines"])
    assert {c["platform"] for c in plan["comparison"]} == {"gcp-gpu", "tpu-vm", "bare-metal"}


def test_a_budget_cap_fails_the_plan_with_its_own_exit_code() -> None:
    code, _, err = run("plan", "--stacks-dir", str(STACKS), "exp-aws-spot", "--max-monthly-usd", "10")
    assert code == EXIT_BUDGET
    assert err.startswith("error: stack 'exp-aws-spot': estimated") and "exceeds --max-monthly-usd 10.00" in err
    assert err.count("\n") == 1


def test_a_stack_budget_in_config_is_enforced(tmp_path: Path) -> None:
    text = (
        (STACKS / "Pulumi.serve-gcp-realtime.yaml")
        .read_text()
        .replace("budgetMonthlyUsd: 9000", "budgetMonthlyUsd: 100")
    )
    (tmp_path / "Pulumi.tight.yaml").write_text(text)
    code, _, err = run("plan", "--stacks-dir", str(tmp_path))
    assert code == EXIT_BUDGET
    assert "Pulumi.tight.yaml: fullserver:budgetMonthlyUsd 100.00" in err


BAD_STACKS: dict[str, tuple[dict[str, object], str]] = {
    "unknown-key": ({"fullserver:colour": "blue"}, "unknown key 'fullserver:colour'"),
    "wrong-type": ({"fullserver:nodes": "many"}, "field 'fullserver:nodes': Input should be a valid integer"),
    "unknown-accelerator": ({"fullserver:accelerator": "Z9000"}, "unknown accelerator 'Z9000'"),
    "count-not-offered": (
        {"fullserver:acceleratorCount": 3},
        "fullserver:acceleratorCount: no aws-gpu shape offers 3 x T4 per node",
    ),
    "unknown-region": (
        {"fullserver:region": "us-east-9"},
        "fullserver:region: no aws-gpu prices in region 'us-east-9' (did you mean us-east-1?)",
    ),
    "open-ssh": ({"fullserver:sshSourceRanges": ["0.0.0.0/0"]}, "would open SSH to much of the internet"),
    "unknown-profile": ({"fullserver:profile": "yolo"}, "unknown profile 'yolo'"),
    "missing-region": ({"fullserver:region": None}, "field 'fullserver:region': is not set (set fullserver:region, or"),
}


@pytest.mark.parametrize("case", sorted(BAD_STACKS))
def test_bad_stack_config_is_one_line_naming_file_and_field(tmp_path: Path, case: str) -> None:
    changes, message = BAD_STACKS[case]
    stack = yaml.safe_load((STACKS / "Pulumi.exp-aws-spot.yaml").read_text())
    for key, value in changes.items():
        if value is None:
            del stack["config"][key]
        else:
            stack["config"][key] = value
    path = tmp_path / f"Pulumi.{case}.yaml"
    path.write_text(yaml.safe_dump(stack))
    code, out, err = run("plan", "--stacks-dir", str(tmp_path))
    assert code == EXIT_INPUT, out + err
    assert message in err
    assert str(path) in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_malformed_yaml_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.broken.yaml").write_text("config:\n  fullserver:profile: [x\n  other: 1\n")
    code, _, err = run("plan", "--stacks-dir", str(tmp_path))
    assert code == EXIT_INPUT
    assert "Pulumi.broken.yaml:" in err and "malformed YAML" in err


def test_an_unknown_stack_name_lists_the_known_ones() -> None:
    code, _, err = run("plan", "--stacks-dir", str(STACKS), "nope")
    assert code == EXIT_INPUT
    assert "stack 'nope'" in err and "known stacks: batch-tpu-v5e" in err


def test_profiles_list_show_and_schema() -> None:
    code, out, _ = run("profiles", "list")
    assert code == 0 and "scale-training" in out and "dedicated-steady" in out
    code, out, _ = run("profiles", "show", "fine-tuning")
    assert code == 0 and json.loads(out)["balance"]["cpu_per_accelerator"]["value"] == 8
    code, _, err = run("profiles", "show", "nope")
    assert code == EXIT_INPUT and "unknown profile 'nope'" in err
    code, out, _ = run("profiles", "schema")
    schema = json.loads(out)
    assert "balance" in schema["properties"] and "extends" in schema["properties"]


def test_catalog_lists_h100_shapes_with_units_sources_and_prices() -> None:
    code, out, _ = run("catalog", "--accelerator", "H100", "--json")
    assert code == 0
    data = json.loads(out)
    names = {s["name"] for s in data["shapes"]}
    assert {"p5.48xlarge", "a3-highgpu-8g", "a3-megagpu-8g"} <= names
    for shape in data["shapes"]:
        assert shape["accelerator"] == "H100-80GB"
        for fig in shape["figures"].values():
            assert fig["source"] in data["sources"]
        assert all(p["on_demand_usd_hour"] > 0 for p in shape["prices"].values())
    code, out, _ = run("catalog", "--provider", "tpu")
    assert code == 0 and "v5p-128" in out and "tpu-v5p-spec" in out


def test_catalog_rejects_an_unknown_provider() -> None:
    code, _, err = run("catalog", "--provider", "azure")
    assert code == EXIT_INPUT and "use aws, gcp or tpu" in err


def test_recommend_ranks_with_reasons_and_costs() -> None:
    code, out, _ = run(
        "recommend", "--framework", "jax", "--maturity", "stable", "--scale", "multi-node", "--cloud", "gcp", "--json"
    )
    assert code == 0
    first = json.loads(out)[0]
    assert (first["profile"], first["platform"]) == ("scale-training", "tpu-vm")
    assert any("JAX/TensorFlow" in r for r in first["reasons"])
    assert first["cost"]["usd_month"] > 0
    code, _, err = run("recommend", "--maturity", "sometimes")
    assert code == EXIT_INPUT and "--maturity" in err


def test_recommend_and_plan_json_say_what_each_price_buys_and_on_which_pricing_model() -> None:
    code, out, _ = run("recommend", "--purpose", "inference", "--json")
    assert code == 0
    choices = json.loads(out)
    assert choices[0]["profile"] == "realtime-inference"  # not experimentation, a training profile
    for c in choices:
        cost = c["cost"]
        assert {"pricing", "capacity", "reference", "capacity_ratio", "on_demand_usd_month"} <= cost.keys()
        assert cost["pricing"] == "on-demand" and cost["capacity_ratio"] == 1.0
    code, out, _ = run("plan", "--stacks-dir", str(STACKS), "--json", "train-tpu-v5e")
    assert code == 0
    [plan] = json.loads(out)
    rows = [plan["baseline"], *plan["comparison"]]
    assert plan["baseline"]["capacity_ratio"] == 1.0
    assert len({r["pricing"] for r in rows}) == 1
    assert all(r["capacity"] and r["capacity_ratio"] for r in rows)
    code, out, _ = run("plan", "--stacks-dir", str(STACKS), "train-tpu-v5e")
    assert "the same job elsewhere (capacity: accelerator memory" in out and "pricing" in out


def test_recommend_shows_rows_on_different_pricing_models_on_demand_too() -> None:
    """Issue 21 item 13: v5p on demand, a3-highgpu-8g reserved and p5 on demand are not comparable
    in one USD/month column; the table adds every row's on-demand price beside its own."""
    code, raw, _ = run("recommend", "--framework", "jax", "--maturity", "stable", "--scale", "multi-node", "--json")
    assert code == 0
    choices = json.loads(raw)
    assert len({c["cost"]["pricing"] for c in choices if c["cost"]["pricing"]}) > 1
    result = runner.invoke(
        app,
        ["recommend", "--framework", "jax", "--maturity", "stable", "--scale", "multi-node"],
        env={"COLUMNS": "300"},
    )
    out = result.stdout
    assert "on demand USD/month" in out
    for c in choices:
        if c["cost"]["on_demand_usd_month"] is not None:
            assert f"${c['cost']['on_demand_usd_month']:,.2f}" in out


def test_recommend_shows_its_notes_after_the_ranking_and_keeps_json_a_list() -> None:
    """--portable --cloud aws was ranked without a word; the note follows the table, and with
    --json goes to stderr so stdout stays the list scripts read."""
    code, out, _ = run("recommend", "--portable", "--cloud", "aws", "--top", "1")
    assert code == 0
    table, _, notes = out.partition("note: --portable keeps the option to move between providers")
    assert "aws-gpu" in table and "and --cloud aws names one" in " ".join(notes.split())
    code, out, err = run("recommend", "--portable", "--cloud", "aws", "--top", "1", "--json")
    assert code == 0 and len(json.loads(out)) == 1
    assert err.startswith("note: --portable keeps the option") and err.count("\n") == 1
    code, out, err = run("recommend", "--top", "1")
    assert code == 0 and "note:" not in out + err


def test_a_stack_file_name_with_an_escape_sequence_is_reported_escaped(tmp_path: Path) -> None:
    """Printed raw, the terminal showed a red "exp": a name that does not exist."""
    (tmp_path / "Pulumi.ex\x1b[31mp.yaml").write_text((ROOT / "stacks" / "Pulumi.exp-aws-spot.yaml").read_text())
    code, _, err = run("plan", "--stacks-dir", str(tmp_path))
    assert code == EXIT_INPUT and "\x1b" not in err
    assert err.startswith(f"error: {tmp_path}/Pulumi.ex\\x1b[31mp.yaml: 'ex\\x1b[31mp' is not a stack name Pulumi")


def test_verify_help_says_it_verifies_cloud_stacks_too() -> None:
    code, out, _ = run("verify", "--help")
    assert code == 0 and "cloud stack" in " ".join(out.split()) and "aws-gpu, gcp-gpu, tpu-vm" in " ".join(out.split())
