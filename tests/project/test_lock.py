"""One lock: what a fresh machine installs is uv.lock, whatever PyPI released since.

``make setup`` (and so ``make plan``, ``make test`` and ``.ci/run``) installs uv from
``scripts/uv-bootstrap.txt`` with pip's hash checking, then makes the virtualenv equal to
``uv.lock`` with ``uv sync --locked``. ``requirements.txt`` (what ``pulumi install`` runs) carries
the lock's runtime versions. ``make lock`` (scripts/lock) writes all three; these tests fail
when any of them drifts from pyproject.toml or from the others.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).parent / "uv"
LOCK = tomllib.loads((ROOT / "uv.lock").read_text())


def uv(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    if not UV.exists():
        pytest.fail(f"{UV} is missing: set up with `make setup`, which installs uv.lock", pytrace=False)
    return subprocess.run(
        [str(UV), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "UV_PYTHON_DOWNLOADS": "never", **env},
    )


def locked(name: str) -> Any:
    [package] = [p for p in LOCK["package"] if p["name"] == name]
    return package


def pins(text: str) -> dict[str, str]:
    """``name==version`` lines of a requirements file (markers, hashes and comments aside)."""
    found = {}
    for line in text.splitlines():
        match = re.match(r"^([A-Za-z0-9_.-]+)==([^ ;\\]+)", line)
        if match:
            found[match.group(1).lower()] = match.group(2)
    return found


def test_the_lock_agrees_with_pyproject() -> None:
    """A range moved in pyproject.toml without `make lock` fails here (and `make setup` refuses)."""
    done = uv("lock", "--check", "--offline")
    assert done.returncode == 0, done.stderr


def test_the_lock_pins_every_package_with_hashes() -> None:
    for package in LOCK["package"]:
        source = package["source"]
        if source.get("editable") or source.get("virtual"):
            continue  # this checkout
        files = [*package.get("wheels", []), *([package["sdist"]] if "sdist" in package else [])]
        assert files and all(f["hash"].startswith("sha256:") for f in files), package["name"]


def test_this_environment_is_exactly_the_lock() -> None:
    """Every package and version of uv.lock's runtime, dev and refresh sets, and nothing else."""
    done = uv(
        "sync", "--locked", "--check", "--offline", "--extra", "dev", "--extra", "refresh",
        UV_PROJECT_ENVIRONMENT=sys.prefix,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_pulumi_install_gets_the_locks_runtime_versions() -> None:
    """requirements.txt is uv.lock's runtime set, exported as `make lock` exports it, then -e ."""
    text = (ROOT / "requirements.txt").read_text()
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    assert lines[-1] == "-e ."
    exported = uv("export", "--frozen", "--no-hashes", "--no-emit-project", "--no-header", "--no-annotate")
    assert exported.returncode == 0, exported.stderr
    assert lines[:-1] == exported.stdout.splitlines()
    for name, version in pins(text).items():
        assert locked(name)["version"] == version, name


def test_the_bootstrap_installs_the_locks_uv_by_hash() -> None:
    text = (ROOT / "scripts" / "uv-bootstrap.txt").read_text()
    assert pins(text) == {"uv": locked("uv")["version"]}
    hashes = set(re.findall(r"--hash=(sha256:[0-9a-f]{64})", text))
    package = locked("uv")
    files = {f["hash"] for f in [*package["wheels"], package["sdist"]]}
    assert hashes and hashes <= files
