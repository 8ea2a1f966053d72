"""A stand-in ``pulumi`` on a temp dir, a file:// backend for it, and helpers to read what it saw.

Every test's temporary directories (the ephemeral workspaces, a kept one included, and the
janitor's) go under its own ``tmp_path``: ``TMPDIR`` and ``tempfile.tempdir`` point there, for this
process and the ``fullserver`` processes it starts. ``workspaces_stay_in_tmp_path`` fails a test in
which the stand-in ran in a stackops workspace outside it; it reads the test's own call log only,
never the shared system temp dir (which other runs on the machine fill at the same time).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from stackops.workspace import PulumiOptions

ROOT = Path(__file__).resolve().parents[2]
FAKE_SOURCE = Path(__file__).with_name("fake_pulumi.py")
CLI = [sys.executable, "-m", "fullserver_cli.app"]
"""``fullserver`` as CI runs it: a real process (real signals, real exit codes)."""
OUR_TEMP_DIRS = ("fullserver-ephemeral-*", "fullserver-janitor-*")


def workspaces_in(log: Path) -> set[Path]:
    """The stackops workspaces the stand-in ran in (its working directory or ``--cwd``), by its log."""
    found: set[Path] = set()
    lines = log.read_text().splitlines() if log.is_file() else []
    for call in (json.loads(line) for line in lines if line.strip()):
        argv = call["argv"]
        given = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("--cwd", "-C")]
        for where in (Path(call["cwd"]), *map(Path, given)):
            found |= {p for p in (where, *where.parents) if any(p.match(g) for g in OUR_TEMP_DIRS)}
    return found


@pytest.fixture(autouse=True)
def workspaces_stay_in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Temporary directories go under ``tmp_path``; afterwards every workspace the stand-in ran in
    is there. A real run keeps a workspace after a failed cleanup (the cleanup command runs in it),
    and several tests fail a cleanup on purpose: they must not pile up in the system temp dir."""
    private = tmp_path / "tmp"
    private.mkdir()
    for name in ("TMPDIR", "TEMP", "TMP"):  # tempfile reads all three, in this order
        monkeypatch.setenv(name, str(private))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # the quota check's credential lookup: no IMDS wait
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    yield private
    outside = sorted(str(p) for p in workspaces_in(tmp_path / "pulumi-calls.jsonl") if not p.is_relative_to(tmp_path))
    assert not outside, f"the stand-in ran in workspaces outside {tmp_path}: {outside}"


@dataclass
class FakePulumi:
    """Where the stand-in lives and what it recorded."""

    root: Path
    state: Path
    log: Path
    started_log: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def backend(self) -> str:
        return f"file://{self.state}"

    def options(self, **extra: Any) -> PulumiOptions:
        return PulumiOptions(backend=self.backend, pulumi_root=self.root, **extra)

    def calls(self) -> list[dict[str, Any]]:
        if not self.log.is_file():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def commands(self) -> list[str]:
        """Each call as its command words, e.g. ``stack tag set`` or ``destroy``."""
        out = []
        for call in self.calls():
            words: list[str] = []
            for a in call["argv"]:
                if a.startswith("-"):
                    if words:
                        break
                    continue
                words.append(a)
                if words[0] not in ("stack", "config") or len(words) >= (3 if words[:2] == ["stack", "tag"] else 2):
                    break
            out.append(" ".join(words))
        return out

    def stacks(self) -> dict[str, dict[str, Any]]:
        return {p.stem: json.loads(p.read_text()) for p in sorted((self.state / "stacks").glob("*.json"))}

    def edit_stack(self, name: str, **changes: Any) -> None:
        """Change a stack's record in the backend (another project, an update in progress)."""
        path = self.state / "stacks" / f"{name}.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))

    def cloud(self) -> dict[str, list[str]]:
        """What exists in the stand-in's cloud, per stack (stacks with nothing left are omitted)."""
        path = self.state / "cloud.json"
        data: dict[str, list[str]] = json.loads(path.read_text()) if path.is_file() else {}
        return {k: v for k, v in data.items() if v}

    def started(self) -> list[str]:
        """The command words of every call so far, as each started (a call still running included)."""
        return self.started_log.read_text().splitlines() if self.started_log.is_file() else []

    def subprocess_env(self, **extra: str) -> dict[str, str]:
        """The environment for running ``fullserver`` in a subprocess with the fake first on PATH."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FAKE_PULUMI", "PULUMI_"))}
        env["PATH"] = (
            f"{self.root / 'bin'}{os.pathsep}{os.path.dirname(sys.executable)}{os.pathsep}{env.get('PATH', '')}"
        )
        env.update(self.env)
        env.update(extra)
        return env


def install_fake(directory: Path) -> FakePulumi:
    """Write the stand-in to ``<directory>/pulumi-root/bin/pulumi``, run by this interpreter."""
    root = directory / "pulumi-root"
    (root / "bin").mkdir(parents=True)
    exe = root / "bin" / "pulumi"
    exe.write_text(f"#!{sys.executable}\n" + FAKE_SOURCE.read_text())
    exe.chmod(0o755)
    state = directory / "state"
    state.mkdir()
    fake = FakePulumi(
        root=root, state=state, log=directory / "pulumi-calls.jsonl", started_log=directory / "pulumi-started.txt"
    )
    fake.env = {
        "FAKE_PULUMI_LOG": str(fake.log),
        "FAKE_PULUMI_STARTED": str(fake.started_log),
        "PULUMI_CONFIG_PASSPHRASE": "test-only",
    }
    return fake


@pytest.fixture
def fake_pulumi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakePulumi]:
    fake = install_fake(tmp_path)
    for key in [k for k in os.environ if k.startswith(("FAKE_PULUMI", "PULUMI_BACKEND_URL"))]:
        monkeypatch.delenv(key)
    for key, value in fake.env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(ROOT)
    yield fake


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project directory with the repository's project name and runtime (the program is not run:
    the stand-in CLI deploys nothing), so these tests do not depend on the live Pulumi.yaml."""
    return write_project(tmp_path / "project")


def ephemeral_argv(fake: FakePulumi, project: Path, *command: str, extra: tuple[str, ...] = ()) -> list[str]:
    """``fullserver ephemeral`` from the base stack ``exp-aws-spot`` on the stand-in's backend."""
    return [
        *CLI,
        "ephemeral",
        "--stack",
        "exp-aws-spot",
        "--ttl",
        "2h",
        "--backend",
        fake.backend,
        "--project-dir",
        str(project),
        "--backoff",
        "0.01",
        *extra,
        "--",
        *command,
    ]


def run(argv: list[str], fake: FakePulumi, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` from the repository root with the stand-in first on ``PATH``."""
    return subprocess.run(
        argv, cwd=ROOT, env=fake.subprocess_env(**env), capture_output=True, text=True, timeout=timeout
    )


def write_project(d: Path) -> Path:
    d.mkdir()
    (d / "Pulumi.yaml").write_text(
        "name: fullserver\n"
        "runtime:\n  name: python\n  options:\n    toolchain: pip\n    virtualenv: .venv\n"
        "stackConfigDir: stacks\n"
        "config:\n  ttlHours:\n    type: integer\n"
    )
    return d
