"""`pulumi install` from a clean clone: what Pulumi's pip toolchain does with this project.

With ``runtime.options.toolchain: pip`` and ``virtualenv: .venv`` the CLI creates the virtualenv,
upgrades pip, then installs ``requirements.txt`` from the project directory, and nothing else: a
project without that file gets an empty virtualenv and ``pulumi up`` fails on ``import pulumi``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_the_project_names_the_pip_toolchain_and_its_virtualenv() -> None:
    runtime = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())["runtime"]
    assert runtime["name"] == "python"
    assert runtime["options"] == {"toolchain": "pip", "virtualenv": ".venv"}


def test_requirements_install_this_checkout_with_its_pinned_sdks(tmp_path: Path) -> None:
    """pip, run as Pulumi runs it (in the project directory), resolves requirements.txt to this
    project at uv.lock's versions (tests/project/test_lock.py); the project's dependencies are the
    pinned provider SDKs the program is written for."""
    lines = [
        line.strip()
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert lines[-1] == "-e ."
    report = tmp_path / "report.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--quiet",
            "--ignore-installed",  # resolve every package, as in Pulumi's new virtualenv
            "--report",
            str(report),
            "-r",
            "requirements.txt",
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=300,
    )
    [this] = [i for i in json.loads(report.read_text())["install"] if i["metadata"]["name"] == "fullserver"]
    assert this["is_direct"] and this["download_info"]["dir_info"].get("editable") is True
    assert Path(this["download_info"]["url"].removeprefix("file://")) == ROOT
    lock = {p["name"]: p["version"] for p in tomllib.loads((ROOT / "uv.lock").read_text())["package"]}
    for item in json.loads(report.read_text())["install"]:
        name = item["metadata"]["name"].lower().replace("_", "-").replace(".", "-")
        if name != "fullserver":
            assert item["metadata"]["version"] == lock[name], name
    wanted = set(this["metadata"]["requires_dist"])
    pins = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    for sdk in ("pulumi", "pulumi-aws", "pulumi-gcp"):
        [pin] = [p for p in pins if p.split("~=")[0].split(">=")[0].split("==")[0].strip() == sdk]
        assert "~=" in pin, pin  # the version the code is tested with, not any later major
        assert any(req.replace(" ", "") == pin.replace(" ", "") for req in wanted), (pin, wanted)
