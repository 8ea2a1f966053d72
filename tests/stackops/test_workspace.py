"""The Automation API workspace: the project's program, run from a private directory."""

from __future__ import annotations

from pathlib import Path

from stackops.workspace import project_settings


def test_the_workspace_project_runs_the_real_program_from_its_own_directory(project: Path) -> None:
    settings = project_settings(project)
    assert settings["main"] == str(project.resolve())
    assert settings["runtime"]["options"]["virtualenv"] == str(project.resolve() / ".venv")
    assert "stackConfigDir" not in settings  # the stack's config stays out of stacks/
