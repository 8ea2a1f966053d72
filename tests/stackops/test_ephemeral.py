"""The ephemeral-stack API against the stand-in CLI: what it creates, and that it always cleans up."""

from __future__ import annotations

import base64
import json
import math
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from fullserver.errors import EXIT_LEFT_BEHIND, BudgetExceeded, InputError
from fullserver.platforms.quota import QuotaNeed
from fullserver.quotacheck import NoCredentials, QuotaShort, QuotaStatus
from stackops.ephemeral import (
    EphemeralSettings,
    LeftoverStackError,
    PulumiFailed,
    PulumiOptions,
    ephemeral_stack,
    run_ephemeral,
)
from stackops.events import Event, QuotaCheckSkipped, QuotasChecked, Retrying, RunFailed, StackCreating
from stackops.outputs import SECRET_MARK
from tests.stackops.conftest import ROOT, FakePulumi

STACKS = ROOT / "stacks"


def opts(fake: FakePulumi, project: Path, **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "pulumi": fake.options(),
        "project_dir": project,
        "stacks_dir": STACKS,
        "backoff_s": 0.01,
        "handle_signals": False,
        "pulumi_output": False,
    }
    return base | extra


# -- refusals before anything exists ----------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"base_stack": "train-p5-cluster"}, InputError, "persistent and protected"),
        ({"base_stack": "exp-aws-spot", "ttl": "9h"}, InputError, "exceeds profile 'experimentation'"),
        ({"base_stack": "no-such-stack"}, InputError, "known stacks"),
        ({"profile": "scale-training", "base_stack": "exp-aws-spot"}, InputError, "persistent"),
        ({"base_stack": "exp-aws-spot", "max_monthly_usd": 1.0}, BudgetExceeded, "exceeds --max-monthly-usd"),
    ],
)
def test_bad_requests_fail_offline_without_calling_pulumi(
    fake_pulumi: FakePulumi, project: Path, kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match), ephemeral_stack(**opts(fake_pulumi, project, **kwargs)):
        pytest.fail("must not get here")
    assert fake_pulumi.calls() == []


def test_a_google_cloud_base_stack_naming_no_project_fails_offline(
    fake_pulumi: FakePulumi, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pulumi up would fail without a project; the run is refused before anything is created."""
    for variable in ("GOOGLE_PROJECT", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT"):
        monkeypatch.delenv(variable, raising=False)
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    config = yaml.safe_load((STACKS / "Pulumi.finetune-gcp-g2.yaml").read_text())["config"]
    del config["gcp:project"]
    (stacks / "Pulumi.finetune-gcp-g2.yaml").write_text(yaml.safe_dump({"config": config}))
    with (
        pytest.raises(InputError, match="gcp:project: not set, and gcp-gpu creates its resources"),
        ephemeral_stack(**opts(fake_pulumi, project, base_stack="finetune-gcp-g2", stacks_dir=stacks)),
    ):
        pytest.fail("must not get here")
    assert fake_pulumi.calls() == []


# -- the life of a stack ----------------------------------------------------------------------


def test_success_creates_tags_ups_exposes_outputs_then_destroys_and_removes(
    fake_pulumi: FakePulumi, project: Path
) -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    with ephemeral_stack(profile="experimentation", ttl="90m", **opts(fake_pulumi, project)) as env:
        # the base stack is the first stack file (by name) using the profile
        assert env.plan.spec.offer == "g6.2xlarge"
        [state] = fake_pulumi.stacks().values()
        assert state["name"] == env.stack and len(state["resources"]) == 3
        tags = state["tags"]
        assert tags["fullserver:ephemeral"] == "true" and tags["fullserver:base-stack"] == "exp-aws-l4-spot"
        expires = datetime.fromisoformat(tags["fullserver:expires-at"].replace("Z", "+00:00"))
        assert before + timedelta(minutes=90) <= expires <= datetime.now(UTC) + timedelta(minutes=90)
        # the config the program ran with: the base stack's, plus the TTL that labels carry
        assert state["config"]["fullserver:ttlHours"] == 2
        assert state["config"]["fullserver:accelerator"] == "L4" and state["config"]["fullserver:datasetGib"] == 50
        assert not list(STACKS.glob(f"*{env.stack}*"))  # never written into stacks/
        # outputs, as values, in the environment and in a private JSON file
        assert env.outputs["connect"] == f"ssh ubuntu@{env.stack}.example.invalid"
        assert env.secret_outputs == {"apiToken"}
        environ = env.environ()
        assert environ["FULLSERVER_STACK"] == env.stack
        assert json.loads(environ["FULLSERVER_OUTPUT_PUBLIC_IPS"]) == ["198.51.100.7"]
        assert json.loads(Path(environ["FULLSERVER_OUTPUTS_FILE"]).read_text()) == env.outputs
        assert Path(environ["FULLSERVER_OUTPUTS_FILE"]).stat().st_mode & 0o077 == 0
        work_dir = env.work_dir
    assert fake_pulumi.stacks() == {}
    assert not work_dir.exists()
    assert fake_pulumi.commands() == [
        "version",
        "stack init",
        *["stack tag set"] * 4,
        "up",
        "stack output",
        "stack output",
        "stack history",
        "stack select",
        "destroy",
        "stack history",
        "stack export",  # pending operations left? then the stack is kept (none here)
        "stack rm",
    ]


def test_the_cli_is_called_the_way_the_automation_api_calls_it(fake_pulumi: FakePulumi, project: Path) -> None:
    with ephemeral_stack(base_stack="exp-aws-spot", **opts(fake_pulumi, project)) as env:
        pass
    calls = fake_pulumi.calls()
    assert calls[0]["argv"] == ["version"]
    for call in calls[1:]:
        assert call["argv"][0] == "--non-interactive"
        assert call["env"]["PULUMI_BACKEND_URL"] == fake_pulumi.backend
        assert call["env"]["PULUMI_AUTOMATION_API"] == "true"
        assert call["env"]["PULUMI_CONFIG_PASSPHRASE"] == "<redacted>"  # the log never holds secrets
        assert call["cwd"] != str(ROOT) and call["exit"] == 0
    by_cmd = {" ".join(a for a in c["argv"][1:3]): c["argv"] for c in calls[1:]}
    up = by_cmd["up --yes"]
    assert {"--skip-preview", "--exec-kind", "auto.local"} <= set(up) and up[-2:] == ["--stack", env.stack]
    assert by_cmd["stack rm"] == ["--non-interactive", "stack", "rm", "--yes", env.stack]


def test_a_failing_body_still_destroys_and_the_error_propagates(fake_pulumi: FakePulumi, project: Path) -> None:
    with (
        pytest.raises(AssertionError, match="the test failed"),
        ephemeral_stack(base_stack="exp-aws-spot", **opts(fake_pulumi, project)),
    ):
        raise AssertionError("the test failed")
    assert fake_pulumi.stacks() == {}
    assert fake_pulumi.commands()[-4:] == ["destroy", "stack history", "stack export", "stack rm"]


def test_a_failed_up_tears_down_what_it_created(
    fake_pulumi: FakePulumi, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PULUMI_FAIL", "up:1")
    with (
        pytest.raises(PulumiFailed, match="injected failure of 'up'") as err,
        ephemeral_stack(base_stack="exp-aws-spot", **opts(fake_pulumi, project)),
    ):
        pytest.fail("must not get here")
    assert err.value.exit_code == 6
    assert fake_pulumi.stacks() == {}
    assert "destroy" in fake_pulumi.commands()


def test_a_failed_stack_init_leaves_nothing_and_destroys_nothing(
    fake_pulumi: FakePulumi, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PULUMI_FAIL", "stack init:always")
    work_root = project / "work"
    with (
        pytest.raises(PulumiFailed, match="pulumi stack init failed, so nothing was created") as err,
        ephemeral_stack(base_stack="exp-aws-spot", work_root=work_root, **opts(fake_pulumi, project)),
    ):
        pytest.fail("must not get here")
    assert err.value.exit_code == 6 and "check --backend" in err.value.line()
    assert fake_pulumi.commands() == ["version", "stack init"]  # the CLI said no: nothing to look for
    assert list(work_root.iterdir()) == []  # and no workspace directory is left


def test_a_backend_url_pulumi_cannot_take_is_refused_before_anything_runs(
    fake_pulumi: FakePulumi, project: Path
) -> None:
    for url in ("not a url", "ftp://x/y", "file://"):
        options = {**opts(fake_pulumi, project), "pulumi": PulumiOptions(backend=url, pulumi_root=fake_pulumi.root)}
        with (
            pytest.raises(InputError, match="is not a Pulumi state backend URL") as err,
            ephemeral_stack(base_stack="exp-aws-spot", **options),
        ):
            pytest.fail("must not get here")
        assert err.value.line().startswith(f"--backend: '{url}' is not a Pulumi state backend URL (use file://")
    assert fake_pulumi.commands() == []


def test_a_failing_destroy_is_retried_with_backoff(
    fake_pulumi: FakePulumi, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PULUMI_FAIL", "destroy:2")
    events: list[Event] = []
    with ephemeral_stack(base_stack="exp-aws-spot", **opts(fake_pulumi, project, retries=3, notify=events.append)):
        pass
    assert fake_pulumi.stacks() == {}
    assert fake_pulumi.commands().count("destroy") == 3
    retries = [e for e in events if isinstance(e, Retrying)]
    assert [(e.by, e.delay_s) for e in retries] == [("ephemeral", 0.01), ("ephemeral", 0.02)]


def test_a_destroy_that_keeps_failing_reports_exactly_what_is_left(
    fake_pulumi: FakePulumi, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PULUMI_FAIL", "destroy:always")
    with (
        pytest.raises(LeftoverStackError) as err,
        ephemeral_stack(base_stack="exp-aws-spot", **opts(fake_pulumi, project, retries=3)) as env,
    ):
        name, work_dir = env.stack, env.work_dir
    assert err.value.exit_code == EXIT_LEFT_BEHIND
    report = "\n".join(err.value.report)
    assert f"stack '{name}' was NOT cleaned up after 3 attempt(s)" in report
    assert "injected failure of 'destroy'" in report and "possibly running cloud resources" in report
    assert fake_pulumi.backend in report
    assert f"fullserver janitor --backend {fake_pulumi.backend} --destroy" in report
    assert fake_pulumi.commands().count("destroy") == 3
    assert list(fake_pulumi.stacks()) == [name]
    assert (work_dir / f"Pulumi.{name}.yaml").is_file() and not (work_dir / "outputs.json").exists()
    # the printed cleanup command works once the cause is gone
    [cmd] = [ln.split("clean up:", 1)[1].strip() for ln in err.value.report if "clean up:" in ln]
    assert (
        cmd == f"PULUMI_BACKEND_URL={fake_pulumi.backend} pulumi destroy --yes --remove --stack {name} --cwd {work_dir}"
    )
    env_vars = {**os.environ, "PATH": f"{fake_pulumi.root / 'bin'}:{os.environ['PATH']}", "FAKE_PULUMI_FAIL": ""}
    subprocess.run(["sh", "-c", cmd], env=env_vars, check=True, capture_output=True)
    assert fake_pulumi.stacks() == {}


def test_when_only_stack_rm_fails_the_report_says_the_resources_are_gone(
    fake_pulumi: FakePulumi, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PULUMI_FAIL", "stack rm:always")
    with (
        pytest.raises(LeftoverStackError) as err,
        ephemeral_stack(base_stack="exp-aws-spot", **opts(fake_pulumi, project, retries=2)) as env,
    ):
        name = env.stack
    report = "\n".join(err.value.report)
    assert "its resources were destroyed" in report and f"pulumi stack rm --yes {name}" in report
    assert fake_pulumi.commands().count("destroy") == 1  # not destroyed twice
    assert fake_pulumi.stacks()[name]["resources"] == []


def test_secrets_never_appear_on_a_command_line(fake_pulumi: FakePulumi, project: Path) -> None:
    """``/proc/<pid>/cmdline`` is readable by every local user: secrets go to ``config set`` on stdin."""
    secrets = {"hfToken": "hf_s3cr3t-value", "sshKey": "-----BEGIN KEY-----\nabc\n-----END KEY-----\n"}
    with ephemeral_stack(base_stack="exp-aws-spot", **opts(fake_pulumi, project, secrets=secrets)) as env:
        config = yaml.safe_load((env.work_dir / f"Pulumi.{env.stack}.yaml").read_text())["config"]
        for key, value in secrets.items():
            stored = config[f"fullserver:{key}"]
            assert set(stored) == {"secure"}  # encrypted by the CLI, and exactly the value (newlines kept)
            assert base64.b64decode(stored["secure"][3:]).decode() == value
    calls = fake_pulumi.calls()
    assert [c["argv"][1:3] for c in calls].count(["config", "set"]) == 2
    for call in calls:
        seen = json.dumps(call["argv"]) + json.dumps(call["env"])
        for value in secrets.values():
            assert value not in seen and json.dumps(value)[1:-1] not in seen, call["argv"]


def test_tags_come_right_after_stack_init_before_any_config(fake_pulumi: FakePulumi, project: Path) -> None:
    """Killed between ``stack init`` and the tags, a stack is invisible to the janitor: nothing else
    (secrets included) may run in between."""
    with ephemeral_stack(base_stack="exp-aws-spot", **opts(fake_pulumi, project, secrets={"hfToken": "x"})):
        pass
    commands = fake_pulumi.commands()
    start = commands.index("stack init")
    assert commands[start + 1 : start + 6] == ["stack tag set"] * 4 + ["config set"]
    first_tag = fake_pulumi.calls()[start + 1]["argv"]
    assert first_tag[3:6] == ["set", "fullserver:ephemeral", "true"]  # found by `stack ls --tag` from here on


def test_a_failed_up_is_refreshed_before_it_is_destroyed(
    fake_pulumi: FakePulumi, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PULUMI_FAIL", "up:1")
    with pytest.raises(PulumiFailed), ephemeral_stack(base_stack="exp-aws-spot", **opts(fake_pulumi, project)):
        pytest.fail("must not get here")
    commands = fake_pulumi.commands()
    assert commands.index("up") < commands.index("refresh") < commands.index("destroy")
    assert commands.count("refresh") == 1
    assert fake_pulumi.stacks() == {} and fake_pulumi.cloud() == {}


def test_pending_creates_after_the_destroy_keep_the_stack_and_say_so(
    fake_pulumi: FakePulumi, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CLI stopped mid-create (a provider crash, a SIGKILL) leaves a resource in the cloud that the
    state only lists as a pending create: refresh cannot clear it non-interactively and destroy
    cannot see it. Removing the stack would drop the last record of it."""
    monkeypatch.setenv("FAKE_PULUMI_FAIL", "up:1")
    monkeypatch.setenv("FAKE_PULUMI_FAIL_PENDING", "1")
    with (
        pytest.raises(LeftoverStackError) as err,
        ephemeral_stack(base_stack="exp-aws-spot", **opts(fake_pulumi, project, retries=3)),
    ):
        pytest.fail("must not get here")
    [name] = fake_pulumi.stacks()
    assert fake_pulumi.cloud() == {name: ["fullserver:index:Resource-1"]}  # what a person must look for
    report = "\n".join(err.value.report)
    assert "1 pending operation(s)" in report and "creating urn:pulumi:" in report and "Resource-1" in report
    assert f"pulumi refresh --stack {name}" in report and "interactively" in report
    commands = fake_pulumi.commands()
    assert commands.count("destroy") == 1 and "stack rm" not in commands  # not retried: only a person can fix it
    assert commands.index("refresh") < commands.index("destroy") < commands.index("stack export")


# -- secret outputs: to the command only by name, never on disk (issue 11.7) ------------------


def files_holding(root: Path, text: str, *skip: Path) -> list[Path]:
    """Every file under ``root`` (but not under ``skip``) whose bytes contain ``text``."""
    return [
        p
        for p in sorted(root.rglob("*"))
        if p.is_file() and not any(p.is_relative_to(s) for s in skip) and text.encode() in p.read_bytes()
    ]


def test_a_secret_output_not_named_is_masked_and_in_no_file(fake_pulumi: FakePulumi, project: Path) -> None:
    with ephemeral_stack(base_stack="exp-aws-spot", **opts(fake_pulumi, project)) as env:
        secret = f"s3cr3t-{env.stack}"  # the stand-in's secret output `apiToken`
        assert env.secret_outputs == {"apiToken"} and env.passed_secrets == set()
        assert env.outputs["apiToken"] == SECRET_MARK
        assert "FULLSERVER_OUTPUT_API_TOKEN" not in env.environ()
        assert secret not in json.dumps(env.environ()) and secret not in repr(env)
        assert json.loads(env.outputs_file.read_text())["apiToken"] == SECRET_MARK
        # the backend keeps outputs (a real one encrypts secrets); nothing of the run's does
        assert files_holding(fake_pulumi.state.parent, secret, fake_pulumi.state) == []


def test_a_secret_output_named_reaches_the_environment_and_still_no_file(
    fake_pulumi: FakePulumi, project: Path
) -> None:
    with ephemeral_stack(
        base_stack="exp-aws-spot", **opts(fake_pulumi, project, pass_secret_outputs=["apiToken"])
    ) as env:
        secret = f"s3cr3t-{env.stack}"
        assert env.passed_secrets == {"apiToken"} and env.outputs["apiToken"] == secret
        assert env.environ()["FULLSERVER_OUTPUT_API_TOKEN"] == secret
        assert secret not in repr(env)
        assert json.loads(env.outputs_file.read_text())["apiToken"] == SECRET_MARK
        assert files_holding(fake_pulumi.state.parent, secret, fake_pulumi.state) == []


SNAPSHOT = (
    "import json, os, shutil, sys; out = sys.argv[1]; "
    "json.dump({k: v for k, v in os.environ.items() if k.startswith('FULLSERVER_')}, "
    "open(os.path.join(out, 'environ.json'), 'w')); "
    "shutil.copytree(os.path.dirname(os.environ['FULLSERVER_OUTPUTS_FILE']), os.path.join(out, 'workspace'))"
)
"""The command records its environment and copies the run's whole workspace while the run is live."""


@pytest.mark.parametrize("named", [(), ("apiToken",)])
def test_the_command_gets_a_secret_output_only_when_named_and_no_file_holds_it(
    fake_pulumi: FakePulumi, project: Path, tmp_path: Path, named: tuple[str, ...]
) -> None:
    seen = tmp_path / "seen"
    seen.mkdir()
    settings = EphemeralSettings(base_stack="exp-aws-spot", **opts(fake_pulumi, project, pass_secret_outputs=named))
    assert run_ephemeral([sys.executable, "-c", SNAPSHOT, str(seen)], settings) == 0
    environ = json.loads((seen / "environ.json").read_text())
    secret = f"s3cr3t-{environ['FULLSERVER_STACK']}"
    assert environ["FULLSERVER_OUTPUT_CONNECT"] == f"ssh ubuntu@{environ['FULLSERVER_STACK']}.example.invalid"
    assert environ.get("FULLSERVER_OUTPUT_API_TOKEN") == (secret if named else None)
    assert json.loads((seen / "workspace" / "outputs.json").read_text())["apiToken"] == SECRET_MARK
    # no file the run wrote (its workspace while live, the stand-in's call log) holds the secret
    assert files_holding(tmp_path, secret, fake_pulumi.state, seen / "environ.json") == []


def test_naming_a_secret_output_the_stack_does_not_have_is_refused_and_torn_down(
    fake_pulumi: FakePulumi, project: Path
) -> None:
    with (
        pytest.raises(InputError, match=r"^--secret-output apiTokn: .* has no such output") as err,
        ephemeral_stack(base_stack="exp-aws-spot", **opts(fake_pulumi, project, pass_secret_outputs=["apiTokn"])),
    ):
        pytest.fail("must not get here")
    assert "apiToken" in str(err.value)
    assert fake_pulumi.stacks() == {}


@pytest.mark.parametrize("name", ["", "api token", "apiToken\x1b[2J", "-x"])
def test_a_secret_output_that_is_no_output_name_is_refused_before_anything_starts(
    fake_pulumi: FakePulumi, project: Path, name: str
) -> None:
    with (
        pytest.raises(InputError, match=r"^--secret-output '.*': is not a stack output name"),
        ephemeral_stack(base_stack="exp-aws-spot", **opts(fake_pulumi, project, pass_secret_outputs=[name])),
    ):
        pytest.fail("must not get here")
    assert fake_pulumi.calls() == []  # no stack init, no up, nothing to destroy


# -- workspaces: under work_root, removed with the stack, kept only when something is left -----


def test_a_workspace_kept_for_the_cleanup_stays_under_work_root(
    fake_pulumi: FakePulumi, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PULUMI_FAIL", "destroy:always")
    root = tmp_path / "runs"
    with (
        pytest.raises(LeftoverStackError),
        ephemeral_stack(base_stack="exp-aws-spot", **opts(fake_pulumi, project, retries=1, work_root=root)) as env,
    ):
        name, work_dir = env.stack, env.work_dir
    assert work_dir.parent == root and work_dir.name.startswith("fullserver-ephemeral-")
    assert (work_dir / f"Pulumi.{name}.yaml").is_file()


def test_without_work_root_the_workspace_goes_to_the_temp_dir(
    fake_pulumi: FakePulumi, project: Path, workspaces_stay_in_tmp_path: Path
) -> None:
    with ephemeral_stack(base_stack="exp-aws-spot", **opts(fake_pulumi, project)) as env:
        assert env.work_dir.parent == workspaces_stay_in_tmp_path
    assert not env.work_dir.exists()


# -- every duration and count has a real range (issue 14.5) ------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "flag"),
    [
        ("ttl", "100000000h", "--ttl"),
        ("ttl", timedelta(days=4000), "--ttl"),
        ("retries", 10**9, "--retries"),
        ("retries", 0, "--retries"),
        ("backoff_s", math.inf, "--backoff"),
        ("backoff_s", math.nan, "--backoff"),
        ("backoff_s", -1.0, "--backoff"),
        ("max_monthly_usd", math.nan, "--max-monthly-usd"),
    ],
)
def test_an_out_of_range_setting_is_one_line_exit_2_before_any_pulumi_call(
    fake_pulumi: FakePulumi, project: Path, field: str, value: object, flag: str
) -> None:
    events: list[Event] = []
    settings = EphemeralSettings(
        base_stack="exp-aws-spot", **opts(fake_pulumi, project, notify=events.append, **{field: value})
    )
    assert run_ephemeral(["true"], settings) == 2
    [event] = events
    assert isinstance(event, RunFailed) and event.error.startswith(f"{flag}: "), event
    assert fake_pulumi.calls() == []


@pytest.mark.parametrize("grace", [math.nan, math.inf, -1.0, 1e9])
def test_an_out_of_range_grace_is_one_line_exit_2_before_any_pulumi_call(
    fake_pulumi: FakePulumi, project: Path, grace: float
) -> None:
    events: list[Event] = []
    settings = EphemeralSettings(base_stack="exp-aws-spot", **opts(fake_pulumi, project, notify=events.append))
    assert run_ephemeral(["true"], settings, grace_s=grace) == 2
    [event] = events
    assert isinstance(event, RunFailed)
    assert event.error.startswith("--grace: ") and "out of range (use 0 to 3600 seconds)" in event.error
    assert fake_pulumi.calls() == []


def test_the_announced_price_is_what_an_hour_of_running_costs(fake_pulumi: FakePulumi, project: Path) -> None:
    """Not the monthly total / 730 (idle hours and storage spread over the month)."""
    events: list[Event] = []
    with ephemeral_stack(base_stack="exp-aws-spot", **opts(fake_pulumi, project, notify=events.append)) as env:
        running = env.plan.cost.compute_usd_hour
    [announce] = [e for e in events if isinstance(e, StackCreating)]
    assert announce.usd_per_hour == running and announce.stack == env.stack


# -- the quota check: before anything exists (issue 25) ----------------------------------------


class Account:
    """An account's answers per quota code, as ``fullserver.quotacheck`` readers give them."""

    def __init__(self, limits: dict[str, float]) -> None:
        self.limits = limits

    def read(self, need: QuotaNeed) -> QuotaStatus:
        return QuotaStatus(need, self.limits.get(need.code), 0.0)

    def request(self, status: QuotaStatus) -> str:
        return f"raise {status.need.code} to {status.desired}"


def readers(limits: dict[str, float]) -> Any:
    return lambda needs, project: {"aws": Account(limits)}


def test_a_short_quota_stops_the_run_before_stack_init_and_up(fake_pulumi: FakePulumi, project: Path) -> None:
    short = readers({"L-DB2E81BA": 0, "L-7A658B76": 50, "L-F678F1CE": 5})  # new account: 0 G vCPUs
    with (
        pytest.raises(QuotaShort, match=r"L-DB2E81BA .* needs 4 vCPUs, limit 0.*raise L-DB2E81BA to 4") as err,
        ephemeral_stack(base_stack="exp-aws-spot", **opts(fake_pulumi, project, quota_readers=short)),
    ):
        pytest.fail("must not get here")
    assert err.value.exit_code == 4
    assert fake_pulumi.calls() == []  # no stack, nothing to destroy


def test_a_node_pool_stack_short_of_its_pools_gpus_stops_before_up(fake_pulumi: FakePulumi, project: Path) -> None:
    """A GKE pool draws on Compute Engine's GPU quotas like a GPU VM: short of spot L4s, the run
    stops before anything is built rather than leaving a pool whose nodes never come."""
    account = Account({"PREEMPTIBLE_NVIDIA_L4_GPUS": 0, "NVIDIA_L4_GPUS": 16, "GPUS_ALL_REGIONS": 16})
    short = lambda needs, project: {"gcp": account}  # noqa: E731
    with (
        pytest.raises(QuotaShort, match=r"PREEMPTIBLE_NVIDIA_L4_GPUS .* needs 4 GPUs, limit 0") as err,
        ephemeral_stack(base_stack="gke-gpu-attach", **opts(fake_pulumi, project, quota_readers=short)),
    ):
        pytest.fail("must not get here")
    assert err.value.exit_code == 4
    assert fake_pulumi.calls() == []


def test_enough_quota_goes_on_to_up(fake_pulumi: FakePulumi, project: Path) -> None:
    events: list[Event] = []
    enough = readers({"L-DB2E81BA": 64, "L-7A658B76": 50, "L-F678F1CE": 5})
    with ephemeral_stack(
        base_stack="exp-aws-spot", **opts(fake_pulumi, project, quota_readers=enough, notify=events.append)
    ):
        assert "up" in fake_pulumi.commands()
    assert QuotasChecked(4) in events  # G vCPUs, gp3 storage, the VPC and its internet gateway


def test_without_credentials_the_check_says_so_and_the_run_goes_on(fake_pulumi: FakePulumi, project: Path) -> None:
    def none(needs: Any, project: Any) -> Any:
        raise NoCredentials("AWS", "no credentials to read Service Quotas and EC2 with", "set AWS_PROFILE")

    events: list[Event] = []
    with ephemeral_stack(
        base_stack="exp-aws-spot", **opts(fake_pulumi, project, quota_readers=none, notify=events.append)
    ):
        pass
    assert any(isinstance(e, QuotaCheckSkipped) and e.reason.startswith("AWS: no credentials") for e in events)
    assert "up" in fake_pulumi.commands()


def test_an_unread_quota_is_not_mentioned_before_an_error_that_stops_the_run(
    fake_pulumi: FakePulumi, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Said before "stack init failed" (or "the Pulumi CLI was not found"), the notice read as the
    reason the run stopped; it is said when up goes on without the check, and only then."""

    def none(needs: Any, project: Any) -> Any:
        raise NoCredentials("AWS", "no credentials to read Service Quotas and EC2 with", "set AWS_PROFILE")

    monkeypatch.setenv("FAKE_PULUMI_FAIL", "stack init:always")
    events: list[Event] = []
    with (
        pytest.raises(PulumiFailed, match="pulumi stack init failed"),
        ephemeral_stack(
            base_stack="exp-aws-spot", **opts(fake_pulumi, project, quota_readers=none, notify=events.append)
        ),
    ):
        pytest.fail("must not get here")
    assert not any(isinstance(e, QuotaCheckSkipped) for e in events), events
    assert any(isinstance(e, StackCreating) for e in events)


def test_run_ephemeral_exits_4_when_a_quota_is_short(fake_pulumi: FakePulumi, project: Path) -> None:
    settings = EphemeralSettings(
        base_stack="exp-aws-spot", **opts(fake_pulumi, project, quota_readers=readers({"L-DB2E81BA": 0}))
    )
    assert run_ephemeral([sys.executable, "-c", "pass"], settings) == 4
    assert fake_pulumi.calls() == []
