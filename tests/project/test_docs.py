"""The docs say what the code does: every ``fullserver`` command they show runs as written.

Commands come from the fenced code blocks (``sh``, ``bash``, ``shell``, ``console`` or unlabelled)
of README.md, docs/*.md and templates/*/README.md: every line that starts with ``fullserver``,
``.venv/bin/fullserver``, ``venv/bin/fullserver`` or ``$ fullserver``. Each one runs through bash,
as written, in a temporary copy of the project (the README and docs) or in the project
``pulumi new`` makes from the template (a template's README), with ``.venv`` / ``venv`` pointing at
the virtualenv running these tests, so files a command writes (``> plan.json``) never land in the
repository. The exit code it must end with is the one the doc states: a trailing ``# exit N``
comment, or in a ``console`` transcript the ``$ echo $?`` that follows; otherwise 0. No command may
print a Python traceback. ``cp``/``mkdir`` lines before a command in the same block run first (the
docs' own set-up steps).

What the docs need that this machine does not have is stood in for, never skipped:

* ``ephemeral`` and ``janitor`` talk to the stand-in ``pulumi`` of tests/stackops/fake_pulumi.py,
  first on ``PATH`` (any backend URL the command names, ``s3://...`` included, is served from a
  temporary state directory); afterwards nothing may be left in its "cloud" or in the temp dir.
* ``audit`` and ``verify`` reach real ``sshd`` servers of the loopback test bed (tests/baremetal/testbed.py):
  the inventory the command names is rewritten to test-bed hosts first, and checked to hold only
  127.0.0.1 before anything runs. The sample inventory's documentation addresses (192.0.2.x,
  2001:db8::) are never contacted. ``verify`` of a Kubernetes pool stack runs with no kubeconfig
  (``KUBECONFIG`` dropped, ``HOME`` empty): the one line a reader without access gets.

``pulumi`` command lines are not run (no Pulumi CLI here); each one's subcommand and flags are
checked against the Pulumi CLI's (``PULUMI_COMMANDS``).
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from fullserver.baremetal.inventory import load_inventory
from fullserver.errors import EXIT_INPUT, EXIT_SHORT, EXIT_UNREACHABLE
from fullserver.platform import Platform
from fullserver.profiles import load_profiles, profile_file_schema
from fullserver.stacks import UNTYPED_KEYS, config_keys
from fullserver.workload import Workload, key_refusal
from tests.baremetal.testbed import A100_SXM, H100_SXM, Testbed
from tests.templates.test_templates import pulumi_new

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "templates").glob("*/README.md"))]
SHELL = {"", "sh", "bash", "shell", "console"}
FULLSERVER_LINE = re.compile(r"^(?:\.venv/bin/|venv/bin/)?fullserver(?=\s|$)")
SETUP_WORDS = {"cp", "mkdir"}  # set-up lines the docs show before a command, run before it
VENV_BIN = Path(sys.executable).parent  # the virtualenv running the tests: its fullserver, python, pytest
FAKE_PULUMI = ROOT / "tests" / "stackops" / "fake_pulumi.py"
TRACEBACK = "Traceback (most recent call last)"

# Commands whose exit code here is not the one a reader gets, with the reason.
EXPECTED_HERE = {
    # The test bed's hosts are this machine (its cores and RAM, no data NVMe) with a stand-in
    # nvidia-smi showing 8 x H100: short of dedicated-steady and of the sample's `expect` contract.
    "audit examples/fleet.yaml": EXIT_SHORT,
    # The same hosts measured: short of fine-tuning too (no /mnt/scratch mounted here, either).
    "verify examples/fleet.yaml": EXIT_SHORT,
    # A Kubernetes pool stack: no cluster here (no kubeconfig), so the one line saying how to get
    # credentials, exit 5, as a reader without access gets it.
    "verify gke-gpu-attach": EXIT_UNREACHABLE,
    "verify eks-gpu-cluster": EXIT_UNREACHABLE,
    # No stack was brought up on the stand-in pulumi's backend: the one line naming the stack, exit 2,
    # as a reader gets it before `pulumi up` (tests/stackops/test_start.py starts real ones).
    "fullserver start exp-aws-spot": EXIT_INPUT,
}
# Doc commands that cannot run here, with the reason (none today: keep this list short).
EXCLUDED: dict[str, str] = {}


# --- reading the docs ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    doc: Path
    line: int  # of the opening fence
    lang: str
    lines: tuple[tuple[int, str], ...]  # (line number, text)


@dataclass(frozen=True)
class DocCommand:
    doc: Path
    line: int
    text: str
    expected: int
    setup: tuple[str, ...] = ()
    transcript: tuple[str, ...] = ()  # a console block's output lines after the command

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"

    @property
    def words(self) -> list[str]:
        return shlex.split(self.text, comments=True)


def fenced_blocks(doc: Path) -> Iterator[Block]:
    """CommonMark fences: up to three spaces, then ``` or ~~~ (at least three), closed by the same."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)", lines[i])
        if not m:
            i += 1
            continue
        fence, lang, start = m.group(1), m.group(2).lower(), i + 1
        body: list[tuple[int, str]] = []
        i += 1
        while i < len(lines) and not re.match(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[i]):
            body.append((i + 1, lines[i]))
            i += 1
        yield Block(doc, start, lang, tuple(body))
        i += 1


def logical_lines(block: Block) -> list[tuple[int, str]]:
    """The block's lines with backslash continuations joined."""
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for n, text in block.lines:
        if pending is not None:
            n, text = pending[0], pending[1] + " " + text.strip()
            pending = None
        if text.rstrip().endswith("\\"):
            pending = (n, text.rstrip()[:-1].rstrip())
            continue
        out.append((n, text))
    if pending is not None:
        out.append(pending)
    return out


def stated_exit(text: str) -> int:
    """``cmd ...   # exit 3 when ...`` states exit 3; anything else states success."""
    _, sep, comment = text.partition(" #")
    m = re.match(r"\s*exit (\d+)\b", comment) if sep else None
    return int(m.group(1)) if m else 0


def commands_in(block: Block) -> list[DocCommand]:
    if block.lang not in SHELL:
        return []
    if block.lang == "console":
        return _console_commands(block)
    out: list[DocCommand] = []
    setup: list[str] = []
    for n, text in logical_lines(block):
        line = text.strip()
        if not line or line.startswith("#"):
            continue
        if FULLSERVER_LINE.match(line):
            out.append(DocCommand(block.doc, n, line, stated_exit(line), tuple(setup)))
        elif line.split()[0] in SETUP_WORDS:
            setup.append(line)
    return out


def _console_commands(block: Block) -> list[DocCommand]:
    """``$ cmd`` lines, each with its output, and the code a following ``$ echo $?`` shows."""
    prompts = [(k, n, text[2:].strip()) for k, (n, text) in enumerate(block.lines) if text.startswith("$ ")]
    out: list[DocCommand] = []
    for j, (k, n, line) in enumerate(prompts):
        if not FULLSERVER_LINE.match(line):
            continue
        end = prompts[j + 1][0] if j + 1 < len(prompts) else len(block.lines)
        transcript = tuple(text for _, text in block.lines[k + 1 : end])
        expected = stated_exit(line)
        if j + 1 < len(prompts) and prompts[j + 1][2] == "echo $?":
            k2 = prompts[j + 1][0]
            expected = int(block.lines[k2 + 1][1].strip())
        out.append(DocCommand(block.doc, n, line, expected, (), transcript))
    return out


def doc_commands() -> list[DocCommand]:
    return [c for doc in DOCS for block in fenced_blocks(doc) for c in commands_in(block)]


COMMANDS = doc_commands()


# --- where the commands run ---------------------------------------------------------------------


@dataclass
class Place:
    """A directory to run doc commands in, with the stand-in pulumi on PATH."""

    cwd: Path
    tmp: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def state(self) -> Path:
        return self.tmp / "pulumi-state"

    def run(self, script: str, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "--noprofile", "--norc", "-c", script],
            cwd=self.cwd,
            env={**self.env, **(extra or {})},
            capture_output=True,
            text=True,
            timeout=300,
        )

    def leftovers(self) -> list[str]:
        """Workspaces left in the temp dir and resources left in the stand-in's cloud."""
        left = sorted(p.name for p in (self.tmp / "tmp").glob("fullserver-*"))
        cloud = self.state / "cloud.json"
        if cloud.is_file():
            left += sorted(name for name, res in json.loads(cloud.read_text()).items() if res)
        return left


def make_place(tmp: Path, cwd: Path) -> Place:
    bin_dir = tmp / "pulumi-root" / "bin"
    bin_dir.mkdir(parents=True)
    exe = bin_dir / "pulumi"
    exe.write_text(f"#!{sys.executable}\n" + FAKE_PULUMI.read_text(encoding="utf-8"), encoding="utf-8")
    exe.chmod(0o755)
    for d in ("pulumi-state", "tmp", "home"):
        (tmp / d).mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PULUMI_", "FAKE_PULUMI", "FULLSERVER_")) and k != "KUBECONFIG"
    }
    env.update(
        PATH=os.pathsep.join([str(bin_dir), str(VENV_BIN), env.get("PATH", "/usr/bin:/bin")]),
        HOME=str(tmp / "home"),
        TMPDIR=str(tmp / "tmp"),
        COLUMNS="120",
        FAKE_PULUMI_STATE=str(tmp / "pulumi-state"),
        FAKE_PULUMI_LOG=str(tmp / "pulumi-calls.jsonl"),
        PULUMI_CONFIG_PASSPHRASE="test-only",
    )
    return Place(cwd, tmp, env)


def project_copy(tmp: Path) -> Path:
    """The files the README and docs name, copied (so a command may write beside them), and
    ``.venv`` pointing at the virtualenv that runs these tests."""
    dest = tmp / "project"
    dest.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy2(ROOT / name, dest / name)
    for name in ("stacks", "examples"):
        shutil.copytree(ROOT / name, dest / name)
    (dest / ".venv").symlink_to(VENV_BIN.parent)
    return dest


def template_project(tmp: Path, platform: str) -> Path:
    dest = pulumi_new(platform, tmp / "team-gpu")
    (dest / "venv").symlink_to(VENV_BIN.parent)
    return dest


# --- the audit's inventories, on the loopback test bed ------------------------------------------


def _user_key(tmp: Path) -> tuple[Path, str]:
    key = tmp / "fleet_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "docs", "-f", str(key)], check=True)
    return key, key.with_suffix(".pub").read_text().strip()


def fleet_on_testbed(bed: Testbed, place: Place, inventory: Path) -> dict[str, str]:
    """examples/fleet.yaml as shipped, with each host's address, port and host key replaced by a
    test-bed host's and the login user by root; the private keys where the sample says they are
    (``FULLSERVER_SSH_KEY``, ``~/.ssh/bastion_ed25519``)."""
    key, pub = _user_key(place.tmp)
    data = yaml.safe_load(inventory.read_text(encoding="utf-8"))
    data["defaults"]["user"] = "root"
    for entry in data["hosts"]:
        gpus = None if entry["name"] == "bastion" else [H100_SXM] * 8
        host = bed.add_host(entry["name"], gpus)
        host.authorize("root", pub)
        if gpus:  # what `nvidia-smi -q -x` and `topo -m` print there (verify reads them)
            golden = ROOT / "tests" / "baremetal" / "golden" / "verify"
            host.set_gpu_report((golden / "dgx-h100.xml").read_text(), (golden / "dgx-h100-topo.txt").read_text())
        entry.update(address="127.0.0.1", port=host.port, hostKeys=[host.host_key_line])
    inventory.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    ssh = place.tmp / "home" / ".ssh"
    ssh.mkdir(mode=0o700)
    (ssh / "bastion_ed25519").write_text(key.read_text())
    (ssh / "bastion_ed25519").chmod(0o600)
    return {"FULLSERVER_SSH_KEY": key.read_text()}


def transcript_testbed(bed: Testbed, place: Place, inventory: Path) -> dict[str, str]:
    """The hosts docs/bare-metal.md's audit run describes: two with 8 GPUs (one mixing A100 and
    H100), and one whose sshd is down (127.0.0.1:1, refused)."""
    key, pub = _user_key(place.tmp)
    hosts = []
    for name, gpus in (("gpu-01", [H100_SXM] * 8), ("gpu-02", [A100_SXM] * 4 + [H100_SXM] * 4)):
        host = bed.add_host(name, gpus)
        host.authorize("root", pub)
        hosts.append({"name": name, "port": host.port, "hostKeys": [host.host_key_line]})
    hosts.append({"name": "gpu-03", "port": 1, "hostKeys": hosts[0]["hostKeys"], "connectTimeout": 2})
    defaults = {"address": "127.0.0.1", "user": "root", "privateKeyFile": str(key)}
    inventory.write_text(yaml.safe_dump({"defaults": defaults, "hosts": hosts}, sort_keys=False), encoding="utf-8")
    return {}


SSH_COMMANDS = ("audit", "verify")  # commands that reach hosts: run against the test bed

AUDIT_BEDS: dict[str, Callable[[Testbed, Place, Path], dict[str, str]]] = {
    "examples/fleet.yaml": fleet_on_testbed,
    "inventory.yaml": transcript_testbed,
}


def only_loopback(inventory: Path) -> None:
    for entry in load_inventory(inventory).entries:
        assert ipaddress.ip_address(entry.address).is_loopback, f"{inventory}: {entry.name} is {entry.address}"


# --- every command, run -------------------------------------------------------------------------


def _subcommand(c: DocCommand) -> str:
    words = c.words
    return words[1] if len(words) > 1 else ""


def test_the_docs_show_the_commands_this_test_runs() -> None:
    """The extractor finds what the docs show (a broken one would pass everything by finding nothing)."""
    found = {(c.doc.name, _subcommand(c)) for c in COMMANDS}
    for doc, sub in [
        ("guide.md", "profiles"),
        ("guide.md", "catalog"),
        ("guide.md", "recommend"),
        ("guide.md", "audit"),
        ("guide.md", "verify"),
        ("guide.md", "plan"),
        ("guide.md", "ephemeral"),
        ("guide.md", "janitor"),
        ("ci.md", "ephemeral"),
        ("ci.md", "janitor"),
        ("deploying.md", "plan"),
        ("bare-metal.md", "audit"),
    ]:
        assert (doc, sub) in found, (doc, sub)
    assert (
        sum(c.doc.parent.parent.name == "templates" for c in COMMANDS) == 6
    )  # the cloud and Kubernetes templates' plan
    assert not set(EXCLUDED) - {c.where for c in COMMANDS}, "an exclusion names no command"


COMMAND_PARAMS = [
    pytest.param(c, id=c.where, marks=[pytest.mark.sshd] if _subcommand(c) in SSH_COMMANDS else []) for c in COMMANDS
]


@pytest.mark.parametrize("command", COMMAND_PARAMS)
def test_doc_command_runs_as_written(command: DocCommand, tmp_path: Path) -> None:
    if command.where in EXCLUDED:
        pytest.skip(EXCLUDED[command.where])
    if command.doc.parent.parent.name == "templates":
        cwd = template_project(tmp_path, command.doc.parent.name)
    else:
        cwd = project_copy(tmp_path)
    place = make_place(tmp_path, cwd)
    expected = next((code for k, code in EXPECTED_HERE.items() if k in command.text), command.expected)

    if command.setup:
        r = place.run("set -e\n" + "\n".join(command.setup))
        assert r.returncode == 0, f"{command.where}: set-up failed: {r.stderr}"

    bed: Testbed | None = None
    extra: dict[str, str] = {}
    try:
        if _subcommand(command) in SSH_COMMANDS and not (cwd / "stacks" / f"Pulumi.{command.words[2]}.yaml").is_file():
            inventory = command.words[2]
            assert inventory in AUDIT_BEDS, f"{command.where}: no loopback test bed for {inventory}: add one"
            assert ":" not in str(tmp_path), tmp_path  # the hosts' bin/ goes on a PATH
            try:
                bed = Testbed(tmp_path / "bed")
            except RuntimeError as exc:  # no sshd or not root: fail, as tests/baremetal does, never skip
                pytest.fail(str(exc), pytrace=False)
            extra = AUDIT_BEDS[inventory](bed, place, cwd / inventory)
            only_loopback(cwd / inventory)
        r = place.run(command.text, extra)
    finally:
        if bed is not None:
            bed.close()

    out = r.stdout + r.stderr
    assert TRACEBACK not in out, f"{command.where}: {command.text}\n{out}"
    assert r.returncode == expected, f"{command.where}: {command.text}\nexit {r.returncode}, not {expected}\n{out}"
    assert place.leftovers() == [], f"{command.where}: left behind {place.leftovers()}"
    if bed is not None:  # every GPU host of the test bed shows its GPUs (a PATH mistake would hide them)
        assert "no GPU visible" not in out, f"{command.where}: {out}"
    # A transcript's verdicts: the same hosts short (with the same GPU problem), the same unreachable
    # line exactly (figures of this machine, such as its cores, differ from the doc's).
    verdicts = {
        line.split(":")[1]: line for line in r.stderr.splitlines() if line.startswith(("short:", "unreachable:"))
    }
    for line in command.transcript:
        if line.startswith("short:"):
            host = line.split(":")[1]
            assert host in verdicts and verdicts[host].startswith("short:"), f"{command.where}: {host}: {r.stderr}"
            assert ("mixed GPU models" in line) == ("mixed GPU models" in verdicts[host]), verdicts[host]
        elif line.startswith("unreachable:"):
            assert line in r.stderr.splitlines(), f"{command.where}: {line!r} not in\n{r.stderr}"


# --- the CI workflow in docs/ci.md --------------------------------------------------------------


def _workflow() -> dict[Any, Any]:
    for block in fenced_blocks(ROOT / "docs" / "ci.md"):
        if block.lang == "yaml" and block.lines and "workflows" in block.lines[0][1]:
            data = yaml.safe_load("\n".join(text for _, text in block.lines))
            assert isinstance(data, dict)
            return data
    raise AssertionError("docs/ci.md has no GitHub Actions workflow")


def test_ci_workflow_steps_succeed_on_this_repository(tmp_path: Path) -> None:
    """Every step of the documented workflow that runs fullserver, in order, with GitHub's
    expressions filled in: the plan job passes its own budget guard on the shipped stacks, the
    ephemeral job runs and cleans up, the janitor finds nothing left."""
    workflow = _workflow()
    place = make_place(tmp_path, project_copy(tmp_path))
    github_output = tmp_path / "github-output"
    github_output.touch()
    env = {k: str(v) for k, v in workflow.get("env", {}).items() if "${{" not in str(v)}
    ran = []
    for name, job in workflow["jobs"].items():
        for step in job["steps"]:
            script = step.get("run", "")
            if "fullserver" not in script:
                continue
            script = script.replace("${{ github.run_id }}", "4242")
            assert "${{" not in script, f"{name}: an expression this test does not fill in: {script}"
            r = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                cwd=place.cwd,
                env={**place.env, **env, "GITHUB_OUTPUT": str(github_output)},
                capture_output=True,
                text=True,
                timeout=300,
            )
            out = r.stdout + r.stderr
            assert r.returncode == 0 and TRACEBACK not in out, f"{name}: {script}\nexit {r.returncode}\n{out}"
            ran.append(name)
    assert ran == ["plan", "ephemeral", "ephemeral", "janitor"]
    assert "code=0" in github_output.read_text().splitlines()
    assert (place.cwd / "plan.err").read_text() == ""
    assert place.leftovers() == []


def test_ci_plan_comment_reads_fields_the_plan_json_has(tmp_path: Path) -> None:
    """The github-script step reads ``p.<field>`` of each plan: each one exists, and the per-hour
    column is the compute price per running hour (``usd_hour`` is the month spread over 730 h)."""
    script = next(
        step["with"]["script"]
        for job in _workflow()["jobs"].values()
        for step in job["steps"]
        if "github-script" in step.get("uses", "")
    )
    r = subprocess.run([str(VENV_BIN / "fullserver"), "plan", "--json"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    plans = json.loads(r.stdout)
    paths = sorted(set(re.findall(r"\bp\.([A-Za-z_][\w.]*)", script)))
    assert "cost.compute_usd_hour.toFixed" in paths and "usd_hour.toFixed" not in paths
    for plan in plans:
        for path in paths:
            value: Any = plan
            for part in path.split("."):
                if isinstance(value, dict):
                    assert part in value, f"plan JSON has no {path} ({part})"
                    value = value[part]
                else:
                    assert (part, type(value)) in {("toFixed", float), ("toFixed", int), ("length", list)}, path
                    break


# --- what the docs say about the code -----------------------------------------------------------


def _ticked(text: str) -> list[str]:
    return re.findall(r"`([^`]+)`", text)


def _readme_keys_paragraph() -> str:
    readme = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    return readme[readme.index("Config keys, all under") : readme.index("## Deploying for real")]


def test_readme_lists_every_config_key_and_what_not_set_is() -> None:
    text = " ".join(_readme_keys_paragraph().split())
    keys = config_keys()
    assert [k for k in _ticked(text[: text.index("Only `profile`")]) if k in keys] == list(keys)
    # The keys whose Pulumi.yaml default means "not set" (the model reads it as absent).
    unset = {
        name
        for name, key in keys.items()
        if key.default is not False and key.default is not None and _model_default(name) is None
    }
    said = text[text.index('means "not set"') : text.index("Setting one of these")]
    assert {k for k in _ticked(said) if k in keys} == unset
    # The keys only some platforms take, as the platform rules say.
    taken_by_some = {k for k in keys if any(key_refusal(k, p) for p in Platform)}
    refused = text[text.index("A key only some platforms take") : text.index("Two keys are declared")]
    assert {k for k in _ticked(refused) if k in keys} == taken_by_some
    untyped = text[text.index("Two keys are declared without a type") :]
    assert set(UNTYPED_KEYS) == {k for k in _ticked(untyped) if k in keys}
    assert "`pulumi config set --secret fullserver:sshPrivateKey < key`" in untyped


def _model_default(alias: str) -> Any:
    (f,) = [f for f in Workload.model_fields.values() if f.alias == alias]
    return f.default


PROMPTS_RE = re.compile(r"The prompts wrote (.*?) into", re.S)


@pytest.mark.parametrize("platform", ["aws-gpu", "gcp-gpu", "tpu-vm", "bare-metal"])
def test_template_readme_lists_the_prompts_the_template_asks(platform: str) -> None:
    readme = (ROOT / "templates" / platform / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## Configuration") : readme.index("## Your team")]
    m = PROMPTS_RE.search(section)
    assert m, platform
    prompts = yaml.safe_load((ROOT / "templates" / platform / "Pulumi.yaml").read_text())["template"]["config"]
    asked = {k.removeprefix("fullserver:") for k in prompts}
    assert set(_ticked(m.group(1))) == asked
    keys = set(config_keys())
    takes = {k for k in keys if key_refusal(k, Platform(platform)) is None}
    others = {k for k in _ticked(section[m.end() :]) if k in keys} - asked
    if platform == "bare-metal":  # lists what matters on bare metal, not every key it tolerates
        assert others <= takes and {"dedicated", "sshPrivateKey"} <= others
    else:
        assert others == takes - asked


def test_sample_inventory_loads_and_reaches_nothing() -> None:
    """examples/fleet.yaml through the real loader: every host resolves (keys parse, the jump host
    is known), it is at documentation addresses only, and it expects what the example stack rents."""
    inv = load_inventory(ROOT / "examples" / "fleet.yaml")
    assert [e.name for e in inv.hosts] == ["gpu-01", "gpu-02"]
    assert [e.name for e in inv.entries if inv.is_jump(e)] == ["bastion"]
    documentation = [
        ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")
    ]
    for entry in inv.entries:
        target = inv.target(entry)
        assert target.host_keys and all(k.key_type == "ssh-ed25519" for k in target.host_keys)
        address = ipaddress.ip_address(entry.address)
        assert any(address in net for net in documentation), entry.address
    stack = yaml.safe_load((ROOT / "stacks" / "Pulumi.dedicated-h100.yaml").read_text())
    rented = stack["config"]["fullserver:dedicated"]["host"]
    for entry in inv.hosts:
        assert entry.expect is not None and entry.expect.model_dump(by_alias=True, exclude_unset=True) == rented


def test_team_profile_example_loads_and_matches_the_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/platform-teams.md's team profile: valid against ``fullserver profiles schema``, loads
    beside a project's Pulumi.yaml, and inherits what it leaves out (the description it sets)."""
    block = next(
        b
        for b in fenced_blocks(ROOT / "docs" / "platform-teams.md")
        if b.lang == "yaml" and b.lines and b.lines[0][1].startswith("# profiles/")
    )
    path = block.lines[0][1].split()[1]
    text = "\n".join(t for _, t in block.lines)
    data = yaml.safe_load(text)
    jsonschema.Draft202012Validator(profile_file_schema()).validate(data)
    (tmp_path / "Pulumi.yaml").write_text("name: team\nruntime: python\n")
    (tmp_path / "profiles").mkdir()
    (tmp_path / path).write_text(text)
    monkeypatch.chdir(tmp_path)
    profile = load_profiles()[Path(path).stem]
    shipped = load_profiles()[data["extends"]]
    assert profile.description == data["description"]
    assert profile.lifecycle.ttl_hours == data["lifecycle"]["ttl_hours"]
    assert profile.balance == shipped.balance
    # A profile has no say over regions or zones (they are stack keys): the example promises none.
    assert "region" not in json.dumps(profile_file_schema()) and " only" not in profile.description


# --- pulumi lines: not run, checked against the CLI ---------------------------------------------

# Subcommands and flags the docs use, as the Pulumi CLI (3.x) defines them.
PULUMI_COMMANDS: dict[str, set[str]] = {
    "login": {"--local"},
    "version": set(),
    "install": set(),
    "new": {"-s", "--stack", "-c", "--config", "--dir", "-n", "--name", "-y", "--yes"},
    "stack init": {"-s", "--stack", "--secrets-provider"},
    "stack output": {"-s", "--stack", "--json", "--show-secrets"},
    "stack ls": {"--json", "--tag", "--all"},
    "stack rm": {"-s", "--stack", "--yes", "--force"},
    "stack export": {"-s", "--stack"},
    "config set": {"-s", "--stack", "--secret", "--plaintext", "--path"},
    "preview": {"-s", "--stack", "--policy-pack", "--policy-pack-config"},
    "up": {"-s", "--stack", "--policy-pack", "--policy-pack-config", "--replace", "-y", "--yes"},
    "refresh": {"-s", "--stack", "-y", "--yes"},
    "destroy": {"-s", "--stack", "-y", "--yes", "--remove"},
    "state unprotect": {"-s", "--stack", "--all"},
    "package add": set(),
    "package get-schema": set(),
    "package publish": {"--publisher", "--readme"},
    "policy publish": set(),
    "policy enable": {"--policy-group", "--config"},
    "policy ls": set(),
}
PULUMI_GLOBAL_FLAGS = {"-C", "--cwd", "--non-interactive", "--color"}


def pulumi_lines() -> list[tuple[str, str]]:
    out = []
    for doc in DOCS:
        for block in fenced_blocks(doc):
            if block.lang not in SHELL:
                continue
            for n, text in logical_lines(block):
                words = shlex.split(text.strip().removeprefix("$ "), comments=True)
                while words and re.match(r"^[A-Z_]+=", words[0]):
                    words = words[1:]
                if words and words[0] == "pulumi":
                    out.append((f"{doc.relative_to(ROOT)}:{n}", " ".join(words)))
    return out


@pytest.mark.parametrize(("where", "line"), pulumi_lines(), ids=[w for w, _ in pulumi_lines()])
def test_pulumi_line_uses_real_subcommands_and_flags(where: str, line: str) -> None:
    words = line.split()[1:]
    positional = [w for w in words if not w.startswith("-")]
    sub = next((" ".join(positional[:n]) for n in (2, 1) if " ".join(positional[:n]) in PULUMI_COMMANDS), None)
    assert sub is not None, f"{where}: unknown pulumi subcommand in {line!r}"
    flags = {w.split("=", 1)[0] for w in words if w.startswith("-") and w != "--"}
    unknown = flags - PULUMI_COMMANDS[sub] - PULUMI_GLOBAL_FLAGS
    assert not unknown, f"{where}: pulumi {sub} has no {sorted(unknown)}"


def test_the_readme_says_once_how_fullserver_gets_on_path_and_that_step_works() -> None:
    """The docs write `fullserver ...`; after `make plan` it is `.venv/bin/fullserver`, which no
    shell finds until the README's one step (`source .venv/bin/activate`) puts it on PATH."""
    readme = (ROOT / "README.md").read_text()
    assert readme.count("source .venv/bin/activate") == 1
    bare = [d.name for d in DOCS if re.search(r"^\s*(?:\$ )?fullserver \w", d.read_text(), re.MULTILINE)]
    assert {"deploying.md", "ci.md", "bare-metal.md"} <= set(bare)  # the docs that call it as written
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"} | {"PATH": "/usr/bin:/bin"}
    found = subprocess.run(
        ["bash", "-c", "source .venv/bin/activate && command -v fullserver && fullserver --version"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines() == [str(ROOT / ".venv" / "bin" / "fullserver"), f"fullserver {_version()}"]


def _version() -> str:
    from importlib.metadata import version

    return version("fullserver")
