"""A queued slice's gcloud command, shown to a person (no gcloud here, or a failure), is one line a
shell runs as is: the description's spaces quoted, the ``ssh-keys`` metadata's lines in ``$'...'``."""

from __future__ import annotations

import subprocess

from components.tpu.queued import shell_line


def test_the_line_gives_bash_the_same_arguments() -> None:
    command = ["printf", "%s|", "fullserver slice: v5p-64 (2x2x8)", "it's", "ubuntu:k1 a@b\nubuntu:k2 c\\d", "^;^a=b"]
    line = shell_line(command)
    assert "\n" not in line
    done = subprocess.run(["bash", "-c", line], capture_output=True, text=True, check=True)
    assert done.stdout == "".join(f"{arg}|" for arg in command[2:])
