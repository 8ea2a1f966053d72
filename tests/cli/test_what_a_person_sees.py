"""What a person sees: the summary first, one-line usage errors, output that fits the terminal.

The terminal tests run the real commands on a real tmux screen of each width class (80x40 and
120x40), all of a class on one screen, and read the screen back: a line that wrapped is one tmux had to split, so the rows it joins (``-J``) and the
rows it shows must be the same count.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from fullserver.errors import EXIT_BUDGET, EXIT_CODES, EXIT_INPUT
from fullserver_cli.app import app
from tests import leftovers

ROOT = Path(__file__).resolve().parents[2]
STACKS = ROOT / "stacks"
FULLSERVER = Path(sys.executable).with_name("fullserver")
runner = CliRunner()


pytestmark = pytest.mark.xdist_group("screens")
"""One worker runs this module: its module fixtures (every table's --json, a base plan) run once."""


def run(*args: str, columns: int = 80) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env={"COLUMNS": str(columns)})
    return result.exit_code, result.stdout, result.stderr


def test_plan_opens_with_one_summary_row_per_stack_then_the_details() -> None:
    code, out, _ = run("plan", "--stacks-dir", str(STACKS), columns=120)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:3] == ["stack", "profile", "platform"]
    total = next(i for i, line in enumerate(lines) if "stack(s)," in line)
    rows = [line.split()[0] for line in lines[2:total] if line and not line.startswith(" ")]
    assert rows == sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in STACKS.glob("Pulumi.*.yaml"))
    assert "cost per month" not in "\n".join(lines[:total]) and "cost per month" in out


def test_summary_only_prints_just_the_table_and_the_total() -> None:
    code, out, _ = run("plan", "--stacks-dir", str(STACKS), "--summary")
    assert code == 0
    assert "cost per month" not in out and "resources pulumi up creates" not in out
    assert out.rstrip().splitlines()[-1].startswith("16 stack(s), $")


def test_over_budget_names_every_stack_over_not_only_the_first() -> None:
    code, out, err = run("plan", "--stacks-dir", str(STACKS), "--summary", "--max-monthly-usd", "1000")
    assert code == EXIT_BUDGET
    over = [
        "dedicated-h100",
        "eks-gpu-cluster",
        "gke-gpu-attach",  # its ceiling: both pools at their maximum, with their data volumes ($2,485)
        "gke-tpu-slice",
        "serve-aws-realtime",
        "serve-gcp-realtime",
        "serve-gke-l4",
        "train-p5-cluster",
        "train-tpu-v5p-slice",
    ]
    for stack in over:
        assert f"stack '{stack}'" in err
    assert "stack 'exp-aws-spot'" not in err
    assert "stack 'train-tpu-v5e'" not in err  # spot only (Cloud TPU builds no on-demand fallback): $900
    assert out.count("over budget") == len(over)


def test_warnings_are_the_same_in_text_and_json() -> None:
    for stack in ("exp-aws-spot", "serve-gcp-realtime", "train-tpu-v5p-slice"):
        _, text, _ = run("plan", "--stacks-dir", str(STACKS), stack, columns=400)
        _, raw, _ = run("plan", "--stacks-dir", str(STACKS), stack, "--json")
        [plan] = json.loads(raw)
        shown = [line.strip().removeprefix("warning: ") for line in text.splitlines() if line.startswith("warning: ")]
        assert shown == plan["warnings"]


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["plan", "--max-monthly-usd", "abc"], "--max-monthly-usd"),
        (["audit", "fleet.yaml"], "--profile"),
        (["plan", "--no-such-flag"], "--no-such-flag"),
        (["no-such-command"], "no-such-command"),
    ],
)
def test_usage_errors_are_one_line_like_every_other_error(args: list[str], names: str) -> None:
    code, _, err = run(*args)
    assert code == EXIT_INPUT
    assert err.startswith("error: fullserver") and err.count("\n") == 1 and names in err
    assert "╭" not in err and "Usage:" not in err and "--help" in err


def test_bare_fullserver_shows_help_and_succeeds_and_there_is_a_version() -> None:
    code, out, _ = run()
    assert code == 0 and "Commands" in out and "plan" in out
    code, out, _ = run("--version")
    assert code == 0 and out.startswith("fullserver ")


def test_every_exit_code_has_one_meaning_in_one_table() -> None:
    assert sorted(EXIT_CODES) == list(range(8))
    assert len(set(EXIT_CODES.values())) == len(EXIT_CODES)
    readme = (ROOT / "README.md").read_text()
    for code, meaning in EXIT_CODES.items():
        assert f"| {code} | {meaning} |" in readme


# --- real terminal screens ----------------------------------------------------------------------

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is installed by make test")


def _screens(commands: dict[str, bool], width: int, height: int = 40) -> dict[str, list[str]]:
    """Run ``fullserver <command>`` for each of ``commands``, one after another, on one detached
    tmux screen of ``width`` x ``height`` (no COLUMNS in its environment: the program must ask the
    terminal); return each one's output lines as tmux holds them, wrapped rows joined back (``-J``),
    so a line that did not fit shows as one longer than the screen. A command mapped to ``False``
    leaves out what it says on stderr."""
    session = f"fs-{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["PS1"] = "$ "
    shell = f"cd {shlex.quote(str(ROOT))} && exec bash --norc --noprofile"
    # The markers print differently from how they are typed, so the echoed commands never match.
    marks = [(f"start{i}-{session}", f"done{i}-{session}") for i in range(1, len(commands) + 1)]
    # A server of its own (-S, a socket in a temporary dir removed afterwards): a server shared
    # between tests exits when its last session is killed, and a new session asked of it
    # meanwhile fails ("server exited unexpectedly").
    sockets = leftovers.temp_dir("tmux")  # a killed run's tmux server is swept by the next run
    tmux = ["tmux", "-S", os.path.join(sockets, "socket"), "-f", "/dev/null"]
    try:
        subprocess.run(
            [*tmux, "new-session", "-d", "-s", session, "-x", str(width), "-y", str(height), shell],
            check=True,
            env=env,
        )
        subprocess.run([*tmux, "set-option", "-t", session, "history-limit", "100000"], check=True)
        script = "; ".join(
            f"echo; echo start$(({i}))-{session}; {shlex.quote(str(FULLSERVER))} {command} "
            f"{'2>&1' if stderr else '2>/dev/null'}; echo done$(({i}))-{session}"
            for i, (command, stderr) in enumerate(commands.items(), start=1)
        )
        subprocess.run([*tmux, "send-keys", "-t", session, script, "Enter"], check=True)
        deadline = time.monotonic() + 120 + 60 * len(commands)
        joined = ""
        while time.monotonic() < deadline:
            joined = subprocess.run(
                [*tmux, "capture-pane", "-p", "-J", "-S", "-", "-t", session],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            if f"\n{marks[-1][1]}\n" in joined:
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"{list(commands)} did not finish on the tmux screen in time")
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)
        shutil.rmtree(sockets, ignore_errors=True)
    lines = joined.splitlines()
    out = {}
    for command, (start_mark, done) in zip(commands, marks, strict=True):
        assert start_mark in lines, joined
        out[command] = [row.rstrip() for row in lines[lines.index(start_mark) + 1 : lines.index(done)]]
    return out


def _words(text: str) -> set[str]:
    """The words of a text as a reader takes them: split at spaces, without the punctuation a
    sentence or a list puts around them."""
    return {w.strip(",;:()[]<>'\"`") for w in text.split()} - {""}


def _summary_words(plans: list[dict[str, Any]]) -> set[str]:
    words: set[str] = set()
    for p in plans:
        s = p["spec"]
        words |= {p["stack"], s["profile"], s["platform"], s["region"], f"${p['usd_month']:,.0f}", *_words(s["offer"])}
    return words


def _plan_words(plans: list[dict[str, Any]]) -> set[str]:
    """The summary's words and every word of every warning."""
    return _summary_words(plans) | {w for p in plans for warning in p["warnings"] for w in _words(warning)}


def _catalog_words(data: dict[str, Any]) -> set[str]:
    words: set[str] = set()
    for o in data["shapes"]:
        words |= {o["name"], o["platform"], o["accelerator"]}
        words |= {f["source"] for f in o["figures"].values()}
        for region, price in o["prices"].items():
            words |= {region, f"{price['on_demand_usd_hour']:.2f}", *price["source"].split("+")}
            if price["spot_usd_hour"]:
                words.add(f"{price['spot_usd_hour']:.2f}")
    return words


def _profile_words(profiles: list[dict[str, Any]]) -> set[str]:
    words: set[str] = set()
    for p in profiles:
        words |= {p["name"], p["stage"], p["purpose"], *p["platforms"], *_words(p["description"])}
    return words


def _recommend_words(choices: list[dict[str, Any]]) -> set[str]:
    words: set[str] = set()
    for c in choices:
        cost = c["cost"]
        words |= {c["profile"], c["platform"], cost["offer"], cost["region"], f"${cost['usd_month']:,.2f}"}
        for reason in c["reasons"]:
            words |= _words(reason)
    return words


def _diff_words(diff: dict[str, Any]) -> set[str]:
    words: set[str] = set()
    for s in diff["stacks"]:
        if s["status"] != "unchanged":
            words |= {s["stack"], *_words(s["was"] or ""), *_words(s["now"] or "")}
            words |= {f"${s[side]:,.2f}" for side in ("usd_before", "usd_after") if s[side] is not None}
    return words


def _host_words(hosts: list[dict[str, Any]]) -> set[str]:
    words: set[str] = set()
    for h in hosts:
        words |= {h["name"], *_words(h["error"] or "")}
    return words


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An inventory whose hosts refuse every connection (a port nobody listens on): ``audit`` and
    ``verify`` print a table per host all the same, offline and in a second."""
    folder = tmp_path_factory.mktemp("fleet")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / "key")], check=True)
    public = " ".join((folder / "key.pub").read_text().split()[:2])
    with socket.socket() as probe:  # a port that was free a moment ago: connecting to it is refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    hosts = [
        {"name": "gpu-01", "address": "127.0.0.1"},
        {"name": "gpu-02-in-the-second-rack-by-the-window", "address": "127.0.0.1"},
    ]
    inventory = {
        "defaults": {"privateKeyFile": str(folder / "key"), "connectTimeout": 1, "port": port, "hostKeys": [public]},
        "hosts": hosts,
    }
    (folder / "fleet.yaml").write_text(yaml.safe_dump(inventory))
    return folder / "fleet.yaml"


@pytest.fixture(scope="module")
def changed_tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A base plan of this repository's stacks and a copy of them with two stacks changed (the
    README's ``diff`` example): what ``diff --base-plan`` compares."""
    folder = tmp_path_factory.mktemp("diff")
    shutil.copytree(STACKS, folder / "stacks")
    _, base, _ = run("plan", "--stacks-dir", str(STACKS), "--json")
    (folder / "base.json").write_text(base)
    for name, old, new in [
        ("exp-aws-spot", "acceleratorCount: 1", "acceleratorCount: 4"),
        ("finetune-gcp-g2", "profile: fine-tuning", "profile: experimentation"),
    ]:
        path = folder / "stacks" / f"Pulumi.{name}.yaml"
        path.write_text(path.read_text().replace(old, new))
    return folder / "base.json", folder / "stacks"


TABLES: dict[str, Callable[[Any], set[str]]] = {
    "plan --summary": _summary_words,
    "plan exp-aws-spot": _plan_words,
    "plan train-tpu-v5p-slice": _plan_words,
    "plan serve-gcp-realtime": _plan_words,
    "catalog --accelerator L4": _catalog_words,
    "catalog --accelerator H100-80GB": _catalog_words,
    "profiles list": _profile_words,
    "recommend --framework jax --maturity stable": _recommend_words,
    "recommend --purpose inference --gpu H100-80GB --dedicated-monthly-usd 9000": _recommend_words,
    "recommend --cloud gcp --tpu v5litepod-8 --portable": _recommend_words,
    "diff --base-plan {base} --stacks-dir {stacks}": _diff_words,
    "audit {fleet} --profile dedicated-steady": _host_words,
    "verify {fleet} --profile dedicated-steady": _host_words,
}
"""Every command that prints a table, and the words of its ``--json`` that the table shows."""


WIDTH_CLASSES = {"narrow": 80, "wide": 120}
"""The real-terminal widths: a laptop's default terminal and a wide one (the tables' width rule
itself is held at every width from 61 to 120 in ``tests/cli/test_tables.py``)."""


def _problems(name: str, lines: list[str], width: int, expected: set[str] | None) -> list[str]:
    """What is wrong with one command's screen: too few lines, a traceback, a line wider than the
    screen, a word of its ``--json`` not whole on it."""
    if len(lines) <= 3 or any("Traceback" in row for row in lines):
        return [f"{name}: {len(lines)} line(s) or a traceback: {lines[-3:]}"]
    too_long = sum(len(row) > width for row in lines)
    found = [f"{name}: {too_long} line(s) wider than {width} columns"] if too_long else []
    if expected is not None:
        missing = sorted(expected - _words("\n".join(lines)))
        found += [f"{name}: words of --json not whole on the {width}-column screen: {missing}"] if missing else []
    return found


@pytest.fixture(scope="module")
def table_words(fleet: Path, changed_tree: tuple[Path, Path]) -> dict[str, set[str]]:
    """The words each table shows, from its ``--json`` (run once, whatever the width)."""
    base, stacks = changed_tree
    found = {}
    for name, words in TABLES.items():
        command = name.format(fleet=fleet, base=base, stacks=stacks)
        done = subprocess.run(
            [str(FULLSERVER), *shlex.split(command), "--json"], cwd=ROOT, capture_output=True, text=True, check=False
        )
        found[name] = words(json.loads(done.stdout))
        assert len(found[name]) > 3, name
    return found


@needs_tmux
@pytest.mark.parametrize("width_class", sorted(WIDTH_CLASSES))
def test_output_fits_a_real_terminal(
    width_class: str, fleet: Path, changed_tree: tuple[Path, Path], table_words: dict[str, set[str]]
) -> None:
    """Every table command and ``--help``, on one real screen of the class's width: no line wider
    than the screen, and no word of what the table shows (its ``--json``: names, shapes, regions,
    prices as the table formats them) split or cut: each is whole on the screen."""
    width, (base, stacks) = WIDTH_CLASSES[width_class], changed_tree
    names = [*TABLES, "--help"]
    commands = {name: name.format(fleet=fleet, base=base, stacks=stacks) for name in names}
    # audit and verify say on stderr, one line per host, which hosts failed: lines meant for grep
    # (a terminal wraps them), not tables
    screens = _screens({c: c.split()[0] not in ("audit", "verify") for c in commands.values()}, width)
    problems = [p for name in names for p in _problems(name, screens[commands[name]], width, table_words.get(name))]
    assert problems == []


def test_a_successful_plan_leaves_nothing_on_stderr() -> None:
    """The SDK's event loop is closed before exit: no "Exception ignored in BaseEventLoop.__del__"."""
    for stack in ("exp-aws-spot", "finetune-gcp-g2"):
        done = subprocess.run(
            [str(FULLSERVER), "plan", stack], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0 and done.stderr == ""


def test_the_sdk_event_loop_is_closed_when_the_command_ends() -> None:
    """In a child interpreter (closing the loop ends Pulumi for that process)."""
    code = (
        "import asyncio, sys; from fullserver_cli.app import main; sys.argv = ['fullserver', 'plan', 'exp-aws-spot'];\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(asyncio.get_event_loop_policy().get_event_loop().is_closed())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.stdout.strip().splitlines()[-1] == "True" and done.stderr == ""


def test_a_config_flag_value_gets_the_same_yaml_guards_as_a_file() -> None:
    """`ephemeral --config KEY=VALUE` parses VALUE as YAML: bounded depth, one line, exit 2."""
    code, _, err = run("ephemeral", "--stack", "exp-aws-spot", "-c", "region=" + "[" * 5000, "--", "true")
    assert code == EXIT_INPUT and err.startswith("error: --config region:1: nesting deeper than 64 levels")
    assert err.count("\n") == 1


def _one_refusal(code: int, err: str, *expected: str) -> None:
    """Exit 2 and one line naming what is wrong: never a traceback."""
    assert code == EXIT_INPUT, err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    for part in expected:
        assert part in err, err


@pytest.mark.parametrize("region", ["US EAST", "us-east-1 ", "\x1b[31mus-east-1"])
def test_recommend_refuses_a_region_that_is_no_region_name_as_plan_does(region: str) -> None:
    _one_refusal(*run("recommend", "--region", region)[::2], "field '--region'", "is not a region name")


def test_a_stack_name_longer_than_pulumi_takes_is_refused_before_the_file_system_sees_it() -> None:
    code, _, err = run("plan", "--stacks-dir", str(STACKS), "a" * 5000)
    _one_refusal(code, err, "(5000 characters)", "not a stack name Pulumi accepts")
    assert len(err) < 300


def test_a_base_plan_that_is_not_text_a_pipe_or_a_device_is_refused_in_one_line(tmp_path: Path) -> None:
    binary = tmp_path / "plan.json"
    binary.write_bytes(b"\x00\x8c\xff" * 10)
    pipe = tmp_path / "pipe.json"
    os.mkfifo(pipe)
    for path, says in [
        (binary, "not UTF-8 text"),
        (pipe, "not a regular file"),
        (Path("/dev/zero"), "not a regular file"),
    ]:
        code, _, err = run("diff", "--stacks-dir", str(STACKS), "--base-plan", str(path))
        _one_refusal(code, err, str(path), says)


def test_a_named_pipe_given_as_a_stack_file_is_refused_not_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "Pulumi.piped.yaml")
    code, _, err = run("plan", "--stacks-dir", str(tmp_path))
    _one_refusal(code, err, "Pulumi.piped.yaml", "not a regular file")


@pytest.mark.parametrize(
    "command",
    [
        ["plan", "piped"],
        ["quota", "piped"],
        ["ephemeral", "--stack", "piped", "--", "true"],
        ["plan", "{dir}/Pulumi.piped.yaml"],
    ],
)
def test_a_named_pipe_named_as_a_stack_gets_the_readers_one_message_from_every_command(
    tmp_path: Path, command: list[str]
) -> None:
    """Named, the pipe was "no file ... (known stacks: piped, ...)" from quota and ephemeral while
    plan of every stack said "not a regular file": one reader, one message."""
    os.mkfifo(tmp_path / "Pulumi.piped.yaml")
    args = [a.format(dir=tmp_path) for a in command]
    code, _, err = run(args[0], "--stacks-dir", str(tmp_path), *args[1:])
    _one_refusal(code, err, "Pulumi.piped.yaml: not a regular file (a pipe, socket or device)")


@pytest.mark.parametrize("command", ["plan", "quota"])
def test_a_gke_stack_naming_no_project_is_refused_by_plan_as_by_quota(
    tmp_path: Path, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """plan planned it against the graph's "mock-project" while quota refused it; now both say
    what pulumi up needs, in one line; plan takes the project pulumi-gcp reads from the environment."""
    for variable in ("GOOGLE_PROJECT", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT"):
        monkeypatch.delenv(variable, raising=False)
    config = yaml.safe_load((STACKS / "Pulumi.gke-gpu-attach.yaml").read_text())["config"]
    del config["gcp:project"]
    (tmp_path / "Pulumi.gke-gpu-attach.yaml").write_text(yaml.safe_dump({"config": config}))
    code, _, err = run(command, "--stacks-dir", str(tmp_path), "gke-gpu-attach")
    _one_refusal(code, err, "gcp:project: not set, and gke-gpu creates", "pulumi config set gcp:project <project-id>")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "env-project")
    code, _, err = run("plan", "--stacks-dir", str(tmp_path), "--summary", "gke-gpu-attach")
    assert code == 0, err
