"""``fullserver plan``'s serving row says what ``up`` builds: where the load balancer listens, with
which certificate, and the URL clients call; its summary shows every name as it is written
(``fullserver_cli.render``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from rich.console import Console
from typer.testing import CliRunner

from fullserver.plan import StackPlan
from fullserver_cli.app import app
from fullserver_cli.output import console
from fullserver_cli.render import stack_plan
from fullserver_cli.tables import table
from tests.core.test_tls import CERT, serve

ROOT = Path(__file__).resolve().parents[2]


def shown(plan: StackPlan) -> str:
    con = Console(width=400, record=True, color_system=None)
    with con.capture() as captured:
        con.print(stack_plan(plan, []))
    return " ".join(captured.get().split())


def test_the_serving_row_says_plain_http_when_no_certificate_is_given() -> None:
    text = shown(serve("aws-gpu", "us-east-1", plainHttp=True))  # HTTP only when the stack says so
    assert "external load balancer on port 80 (HTTP), OpenAI API at <endpoint>/v1" in text


def test_the_serving_row_names_the_acm_certificate_and_the_redirect() -> None:
    text = shown(serve("aws-gpu", "us-east-1", certificateArn=CERT))
    assert f"external load balancer with HTTPS on port 443 (ACM certificate {CERT}), port 80 redirecting to it" in text
    assert "OpenAI API at <endpoint>/v1 (`pulumi stack output endpoint` after up)" in text


def test_the_serving_row_names_the_managed_certificates_domains_and_the_url_clients_call() -> None:
    text = shown(serve("gcp-gpu", "us-central1", domains=["api.example.com", "chat.example.com"]))
    assert "with HTTPS on port 443 (a Google-managed certificate for api.example.com, chat.example.com)" in text
    assert "OpenAI API at https://api.example.com/v1 (point api.example.com at `pulumi stack output dnsTarget`" in text


def test_a_profile_named_like_markup_is_shown_as_it_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A profile is named by its file, and a file may be named ``tune[red].yaml`` or
    ``tune:fire:.yaml``: the summary and each stack's head show those names, not red text or an emoji."""
    (tmp_path / "Pulumi.yaml").write_text("name: team\nruntime: python\n", encoding="utf-8")
    (tmp_path / "profiles").mkdir()
    (tmp_path / "stacks").mkdir()
    example = yaml.safe_load((ROOT / "stacks/Pulumi.batch-tpu-v5e.yaml").read_text(encoding="utf-8"))
    for stack, profile in (("red", "tune[red]"), ("fire", "tune:fire:")):
        (tmp_path / "profiles" / f"{profile}.yaml").write_text("extends: fine-tuning\n", encoding="utf-8")
        config = {**example, "config": {**example["config"], "fullserver:profile": profile}}
        (tmp_path / "stacks" / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["plan", "--stacks-dir", "stacks"])
    assert result.exit_code == 0, result.stderr
    lines = [line.split() for line in result.stdout.splitlines()]
    assert {line[0]: line[1] for line in lines if line[:1] in (["red"], ["fire"])} == {
        "red": "tune[red]",
        "fire": "tune:fire:",
    }
    assert [line[1] for line in lines if line[:1] == ["profile"]] == ["tune:fire:", "tune[red]"]


def test_a_value_that_reads_like_an_emoji_code_is_printed_as_written(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cells built from a stack's values (an image tag, a warning quoting a key) are markup with
    ``[`` escaped; a ``:fire:`` in them is text too: the CLI's console prints no emoji codes."""
    monkeypatch.setenv("COLUMNS", "80")
    t = table("image", "note")
    t.add_row("team/train:fire:", "tag :smile: kept")
    console().print(t)
    out = capsys.readouterr().out
    assert "team/train:fire:" in out and "tag :smile: kept" in out
