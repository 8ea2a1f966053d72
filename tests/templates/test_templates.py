"""The ``pulumi new`` templates: each loads in the CLI, prompts for what fullserver reads, and the
project ``pulumi new`` makes from it plans offline with fullserver's own program."""

from __future__ import annotations

import re
import runpy
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from packaging.requirements import Requirement

import fullserver
from components.graph import evaluate
from fullserver.plan import plan_paths
from fullserver.platforms import all_rules
from fullserver.stacks import find_stacks
from fullserver.workload import Workload
from tests.project.projectfile import missing_keys, project_errors, stack_errors

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "templates"
PLATFORMS = [rules.platform.value for rules in all_rules()]
GCP = {"tpu-vm", "gcp-gpu", "gke-gpu", "gke-tpu"}

# What `pulumi new -s dev -c gcp:project=...` would be told for prompts without a default.
ANSWERS = {"gcp:project": "my-ml-project"}
# Secrets a real stack sets with `pulumi config set --secret` after `pulumi new`.
SECRETS = {"bare-metal": {"fullserver:sshPrivateKey": "mock-private-key"}}
# Resource types that show the program built the template's platform.
PLATFORM_TYPES: dict[str, str | tuple[str, ...]] = {
    "tpu-vm": "gcp:tpu/v2Vm:V2Vm",
    "aws-gpu": "aws:ec2/launchTemplate:LaunchTemplate",
    # one VM per node, or on spot a regional group over the balanced set (components.gcp.flexible)
    "gcp-gpu": ("gcp:compute/instance:Instance", "gcp:compute/regionInstanceGroupManager:RegionInstanceGroupManager"),
    "bare-metal": "BareMetalFleet",
    "gke-gpu": "gcp:container/nodePool:NodePool",
    "gke-tpu": "gcp:container/nodePool:NodePool",
    "eks-gpu": "aws:eks/nodeGroup:NodeGroup",
}
READ_KEYS = {f"fullserver:{f.alias}" for f in Workload.model_fields.values() if f.alias} | {"fullserver:sshPrivateKey"}


def _yaml(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    return data


def template(platform: str) -> dict[str, Any]:
    return _yaml(TEMPLATES / platform / "Pulumi.yaml")


def test_one_template_per_platform() -> None:
    assert sorted(p.name for p in TEMPLATES.iterdir() if p.is_dir()) == sorted(PLATFORMS)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_template_loads_in_the_cli(platform: str) -> None:
    project = template(platform)
    assert project_errors(project) == []
    assert project["name"] == "${PROJECT}" and project["description"] == "${DESCRIPTION}"
    assert project["runtime"] == {"name": "python", "options": {"toolchain": "pip", "virtualenv": "venv"}}
    for name in ("Pulumi.yaml", "__main__.py", "requirements.txt", "README.md"):
        assert (TEMPLATES / platform / name).is_file(), name


@pytest.mark.parametrize("platform", PLATFORMS)
def test_template_prompts_for_what_fullserver_reads(platform: str) -> None:
    section = template(platform)["template"]
    assert section["displayName"] and section["description"]
    config: dict[str, dict[str, Any]] = section["config"]
    wanted = {
        "fullserver:platform",
        "fullserver:profile",
        "fullserver:region",
        "fullserver:accelerator",
        "fullserver:owner",
        "fullserver:budgetMonthlyUsd",
    }
    if platform in GCP:
        wanted |= {"fullserver:zone", "gcp:project"}
    assert wanted <= set(config)
    assert config["fullserver:platform"]["default"] == platform
    for key, prompt in config.items():
        assert set(prompt) <= {"description", "default", "secret"} and prompt.get("description"), key
        # The CLI reads template defaults into a Go string: quote numbers and booleans.
        assert "default" not in prompt or isinstance(prompt["default"], str), key
        # The program reads `fullserver:` keys only, so the prompts are written namespaced;
        # a key it does not read would be silently ignored.
        assert key.startswith(("fullserver:", "gcp:")) and (key in READ_KEYS or key.startswith("gcp:")), key
    for key in template(platform).get("config", {}):
        assert key in READ_KEYS, key


@pytest.mark.parametrize("platform", PLATFORMS)
def test_requirements_fail_closed_until_repointed_and_the_readme_says_why(platform: str) -> None:
    """A bare ``fullserver==<version>`` is answered by PyPI, where this project publishes nothing:
    whoever registers the name there gets their code run, with cloud credentials, by ``pulumi new``.
    The shipped line is a direct reference (no index is asked) to a host under ``.invalid``, which
    RFC 6761 reserves: it never resolves and cannot be registered, so an unedited template fails."""
    text = (TEMPLATES / platform / "requirements.txt").read_text(encoding="utf-8")
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    # The one line: no bare name, no index option (--extra-index-url would let PyPI answer too).
    assert lines == [f"fullserver @ git+https://git.example.invalid/YOUR-ORG/fullserver@v{fullserver.__version__}"]
    req = Requirement(lines[0])
    assert req.name == "fullserver" and req.url and not req.specifier
    assert (urlsplit(req.url.removeprefix("git+")).hostname or "").endswith(".invalid")
    readme = (TEMPLATES / platform / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Where fullserver comes from", 1)[1]
    assert "fails on purpose" in section and "dependency confusion" in section and "RFC 6761" in section
    assert f"fullserver @ git+https://github.com/<org>/fullserver@v{fullserver.__version__}" in section
    assert "#sha256=" in section  # a wheel URL, hash-checked
    assert "`--index-url https://<your index>/simple`" in section and "Never `--extra-index-url`" in section


def pulumi_new(
    platform: str, dest: Path, project: str = "team-gpu", description: str = "Our GPU box", stack: str = "dev"
) -> Path:
    """What ``pulumi new <template> -n <project> -d <description> -s <stack> --yes`` writes: the
    files copied, ${PROJECT}/${DESCRIPTION} substituted, the template section dropped, and the
    prompts' defaults (or answers) saved to the stack's config under their namespaced keys."""
    shutil.copytree(TEMPLATES / platform, dest, ignore=shutil.ignore_patterns("__pycache__", "venv"))
    for path in dest.rglob("*"):
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            path.write_text(
                text.replace("${PROJECT}", project).replace("${DESCRIPTION}", description), encoding="utf-8"
            )
    manifest = _yaml(dest / "Pulumi.yaml")
    prompts: dict[str, dict[str, Any]] = manifest.pop("template")["config"]
    (dest / "Pulumi.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False), encoding="utf-8")
    config = {(k if ":" in k else f"{project}:{k}"): p.get("default", ANSWERS.get(k)) for k, p in prompts.items()}
    assert None not in config.values(), "a prompt without a default needs an answer in ANSWERS"
    (dest / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump({"config": config}, sort_keys=False), encoding="utf-8")
    return dest


def project_config(manifest: dict[str, Any], stack_config: dict[str, Any]) -> dict[str, Any]:
    """The config the program sees: project-level values under the stack's own."""
    values = {k: d["value"] for k, d in (manifest.get("config") or {}).items() if isinstance(d, dict) and "value" in d}
    return {**values, **stack_config}


@pytest.mark.parametrize("platform", PLATFORMS)
def test_generated_project_is_valid_and_plans_offline(
    platform: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    generated = pulumi_new(platform, tmp_path / "team-gpu")
    manifest = _yaml(generated / "Pulumi.yaml")
    assert "template" not in manifest and manifest["name"] == "team-gpu"
    leftovers = [
        p.name
        for p in generated.rglob("*")
        if p.is_file() and re.search(r"\$\{(PROJECT|DESCRIPTION)\}", p.read_text(encoding="utf-8"))
    ]
    assert leftovers == []
    assert project_errors(manifest) == []
    stack_config = _yaml(generated / "Pulumi.dev.yaml")["config"]
    assert stack_errors(manifest, "dev", stack_config) == [] and missing_keys(manifest, stack_config) == []

    monkeypatch.chdir(generated)  # Pulumi runs the program in the project directory
    config = {**project_config(manifest, stack_config), **SECRETS.get(platform, {})}
    graph = evaluate(lambda: runpy.run_path(str(generated / "__main__.py"), run_name="__main__"), "dev", config)
    custom = [r for r in graph.rows if r.custom]
    assert custom, "the program created nothing"
    assert graph.warnings == []
    assert any(r.type.endswith(PLATFORM_TYPES[platform]) for r in graph.rows), sorted({r.type for r in graph.rows})


@pytest.mark.parametrize("platform", sorted(set(PLATFORMS) - {"bare-metal"}))
def test_fullserver_plan_reads_the_generated_stack(
    platform: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``fullserver plan --stacks-dir . dev`` in the new project: the stack file alone says it all."""
    generated = pulumi_new(platform, tmp_path / "team-gpu")
    monkeypatch.chdir(generated)
    (plan,) = plan_paths(find_stacks(generated, ["dev"]))
    assert plan.spec.platform.value == platform
    budget = float(_yaml(generated / "Pulumi.dev.yaml")["config"]["fullserver:budgetMonthlyUsd"])
    assert 0 < plan.cost.usd_month <= budget
