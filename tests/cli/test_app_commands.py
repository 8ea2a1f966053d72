"""The command line loads each command's module only when that command runs (``COMMANDS``)."""

from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from fullserver_cli.app import COMMANDS, app


def test_the_version_is_printed_without_importing_the_core_or_any_command() -> None:
    code = (
        "import sys; from fullserver_cli.app import main; sys.argv = ['fullserver', '--version']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "prefixes = ('fullserver.', 'components', 'pulumi', 'pydantic')\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(prefixes) and m != 'fullserver.errors')\n"
        "print(loaded[:5] or 'nothing')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # the version, and nothing of the core but its errors table (what every failure prints with)
    assert out.startswith("fullserver ")
    assert out.splitlines()[1] == "nothing", out


def test_what_a_command_kept_is_not_scanned_again_as_the_process_ends() -> None:
    code = (
        "import gc, sys; from fullserver_cli.app import main; sys.argv = ['fullserver', 'plan', '--summary']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(gc.get_freeze_count())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    # the plans and the catalog's memo are frozen: the interpreter's last collection skips them
    assert int(out.splitlines()[-1]) > 0, out


def test_help_lists_every_command_in_the_declared_order() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    listed = [line.split()[0] for line in result.output.split("Commands:")[1].splitlines() if line.strip()]
    assert listed == [name for name, _ in COMMANDS]


def test_a_lazily_loaded_command_runs_and_a_typo_is_still_offered_the_command() -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["plan", "--help"]).exit_code == 0
    typo = runner.invoke(app, ["pla"])
    assert typo.exit_code == 2
    assert "Did you mean 'plan'?" in typo.output


def test_an_empty_janitor_at_is_no_time_and_not_now() -> None:
    result = CliRunner().invoke(app, ["janitor", "--at", ""])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == ["error: --at: '' is not an ISO time (e.g. 2026-01-01T12:00:00Z)"]
