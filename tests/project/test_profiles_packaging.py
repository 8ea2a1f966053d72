"""Profiles outside the checkout: the wheel ships them, an installed fullserver finds them from
any working directory, and a Pulumi project's own profiles/ adds to or replaces them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

import fullserver
from fullserver.profiles import PROFILES_DIR, load_profiles, profile_dirs, project_profiles_dir

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted(p.name for p in (ROOT / "profiles").glob("*.yaml"))
SKIP = {".git", ".venv", "venv", "tests", "build", "dist", "bench", "docs", "templates", "stacks"}


def _source_copy(dest: Path) -> Path:
    """The files a wheel is built from, copied so the build leaves nothing in the checkout."""
    dest.mkdir()
    for item in ROOT.iterdir():
        if item.name in SKIP or item.name.startswith(".") or item.name.endswith(".egg-info"):
            continue
        if item.is_dir():
            shutil.copytree(item, dest / item.name, ignore=shutil.ignore_patterns("__pycache__", "venv", "*.egg-info"))
        else:
            shutil.copy2(item, dest / item.name)
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pip wheel --no-deps`` of the project (offline when the venv's setuptools can build wheels)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = _source_copy(tmp / "src")
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp / "dist"), str(src)]
    try:
        import setuptools

        if tuple(int(x) for x in setuptools.__version__.split(".")[:2]) >= (77, 0):
            cmd[5:5] = ["--no-build-isolation", "--no-index"]  # bdist_wheel built in since 70.1, SPDX license since 77
    except ImportError:
        pass
    subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    (found,) = (tmp / "dist").glob("fullserver-*.whl")
    return found


def test_the_wheel_carries_every_profile(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    data = f"fullserver-{fullserver.__version__}.data/data/share/fullserver/profiles/"
    assert sorted(n.removeprefix(data) for n in names if n.startswith(data)) == SHIPPED
    assert not any(n.startswith("profiles/") for n in names)  # no stray top-level package


def test_an_installed_fullserver_loads_profiles_from_anywhere(wheel: Path, tmp_path: Path) -> None:
    prefix = tmp_path / "prefix"
    # --ignore-installed: never touch the editable install in this virtualenv.
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--ignore-installed",
            "--no-warn-script-location",
            "--prefix",
            str(prefix),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    purelib = sysconfig.get_path("purelib", vars={"base": str(prefix), "platbase": str(prefix)})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    probe = (
        "import json, fullserver.profiles as p; "
        "print(json.dumps({'module': p.__file__, 'dirs': [str(d) for d in p.profile_dirs()], 'names': sorted(p.load_profiles())}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=elsewhere,
        env={"PYTHONPATH": purelib, "PATH": "/usr/bin:/bin"},
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    seen = json.loads(out.stdout)
    assert seen["module"].startswith(str(prefix))  # the wheel's fullserver, not this checkout
    assert seen["dirs"] == [str((prefix / "share" / "fullserver" / "profiles").resolve())]
    assert seen["names"] == [n.removesuffix(".yaml") for n in SHIPPED]


def test_the_checkout_loads_its_profiles_from_another_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert project_profiles_dir() is None
    assert profile_dirs() == [PROFILES_DIR]
    assert sorted(load_profiles()) == [n.removesuffix(".yaml") for n in SHIPPED]


def test_a_projects_profiles_add_to_and_replace_the_shipped_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: team\nruntime: python\n", encoding="utf-8")
    team = tmp_path / "profiles"
    team.mkdir()
    (team / "team-finetune.yaml").write_text(
        "extends: fine-tuning\ndescription: Our fine-tuning, 24 h TTL.\nlifecycle:\n  ttl_hours: 24\n", encoding="utf-8"
    )
    shipped = (PROFILES_DIR / "experimentation.yaml").read_text(encoding="utf-8")
    (team / "experimentation.yaml").write_text(
        shipped.replace("description:", "description: (team copy)", 1), encoding="utf-8"
    )
    (tmp_path / "stacks").mkdir()
    monkeypatch.chdir(tmp_path / "stacks")  # found from a subdirectory too, like the Pulumi CLI
    assert profile_dirs() == [PROFILES_DIR, team.resolve()]
    profiles = load_profiles()
    assert set(profiles) == {n.removesuffix(".yaml") for n in SHIPPED} | {"team-finetune"}
    assert profiles["experimentation"].description.startswith("(team copy)")
    assert profiles["team-finetune"].stage == profiles["fine-tuning"].stage
    assert load_profiles(PROFILES_DIR).keys() == {
        n.removesuffix(".yaml") for n in SHIPPED
    }  # an explicit directory is only that
