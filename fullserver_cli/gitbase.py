"""The base side of ``fullserver diff``: a git ref's files in a temporary directory.

Only what a plan reads is taken from the base commit (the stack configs, the project's profiles,
the catalog data when the repository carries it, ``Pulumi.yaml``), with ``git archive`` into a
directory that is removed whatever happens; the working tree and the repository's state are never
touched (no checkout, no worktree, no stash).
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from fullserver.errors import InputError

# Where the default branch may be found, in order: the remote's HEAD, then the usual names.
DEFAULT_BRANCHES = ("origin/main", "origin/master", "main", "master")
GIT_TIMEOUT_S = 120


@dataclass(frozen=True)
class Base:
    """A resolved base: its commit, how it was chosen, and the repository's top directory."""

    commit: str
    label: str
    top: Path

    @property
    def short(self) -> str:
        return self.commit[:10]


def _run(top: Path | None, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``git args`` in ``top``, bounded in time; git missing or too slow is one line."""
    try:
        return subprocess.run(["git", *args], cwd=top, capture_output=True, timeout=GIT_TIMEOUT_S, check=False)
    except FileNotFoundError:
        raise InputError("--base", "git is not installed", "install git, or give --base-plan plan.json") from None
    except subprocess.TimeoutExpired:
        raise InputError("--base", f"git {args[0]} took over {GIT_TIMEOUT_S} s", "try again") from None


def _text(out: bytes) -> str:
    return out.decode(errors="replace")


def _git(top: Path | None, *args: str, what: str) -> str:
    """Its output; a failure is one line saying ``what`` could not be done, in git's words."""
    done = _run(top, *args)
    if done.returncode != 0:
        err = " ".join(_text(done.stderr).split()) or f"git {args[0]} exited {done.returncode}"
        raise InputError("--base", f"{what}: {err}", "give --base REF or --base-plan plan.json")
    return _text(done.stdout)


def toplevel(cwd: Path) -> Path:
    """The repository holding ``cwd``; one line when there is none."""
    try:
        out = _git(cwd, "rev-parse", "--show-toplevel", what="not in a git repository")
    except InputError:
        raise InputError(
            str(cwd.resolve()),
            "is not in a git repository, so there is no base to compare with",
            "run inside the repository, or give --base-plan plan.json (a saved `fullserver plan --json`)",
        ) from None
    return Path(out.strip()).resolve()


def _commit(top: Path, ref: str) -> str | None:
    done = _run(top, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    commit = _text(done.stdout).strip()
    return commit if done.returncode == 0 and commit else None


def default_branch(top: Path) -> str | None:
    """The default branch: ``origin/HEAD`` where the clone recorded it, else the first of
    ``origin/main``, ``origin/master``, ``main``, ``master`` that exists."""
    head = _run(top, "symbolic-ref", "--quiet", "refs/remotes/origin/HEAD")
    names = [_text(head.stdout).strip().removeprefix("refs/remotes/")] if head.returncode == 0 else []
    return next((n for n in [*names, *DEFAULT_BRANCHES] if n and _commit(top, n)), None)


def resolve(cwd: Path, ref: str | None) -> Base:
    """``ref`` as a commit, or the merge base of ``HEAD`` with the default branch."""
    top = toplevel(cwd)
    if ref is not None:
        commit = _commit(top, ref)
        if commit is None:
            raise InputError(
                "--base", f"'{ref}' is not a commit of {top}", "name a branch, tag or commit (fetch it first in CI)"
            )
        return Base(commit, ref, top)
    branch = default_branch(top)
    if branch is None:
        raise InputError(
            "--base",
            "no default branch to compare with (no origin/HEAD, origin/main, origin/master, main or master)",
            "give --base REF",
        )
    if _commit(top, "HEAD") is None:
        raise InputError("--base", f"{top} has no commit yet", "commit first, or give --base-plan plan.json")
    merge = _git(top, "merge-base", "HEAD", branch, what=f"no merge base of HEAD and {branch}").strip()
    return Base(merge, f"merge base with {branch}", top)


def _existing(top: Path, commit: str, paths: list[str]) -> list[str]:
    """Those of ``paths`` the commit has (a pathspec it lacks would fail ``git archive``)."""
    if not paths:
        return []
    out = _git(top, "ls-tree", "--name-only", commit, "--", *paths, what=f"cannot list {commit[:10]}")
    found = set(out.splitlines())
    return [p for p in paths if p in found]


@contextlib.contextmanager
def snapshot(base: Base, paths: list[Path]) -> Iterator[Path]:
    """A temporary directory holding ``paths`` (files or directories inside the repository) as the
    base commit has them, at the same places relative to the repository's top; removed on exit."""
    rel = sorted({p.resolve().relative_to(base.top).as_posix() for p in paths})
    with tempfile.TemporaryDirectory(prefix="fullserver-diff-") as tmp:
        root = Path(tmp)
        present = _existing(base.top, base.commit, rel)
        if present:
            done = _run(base.top, "archive", "--format=tar", base.commit, "--", *present)
            if done.returncode != 0:
                err = " ".join(_text(done.stderr).split())
                raise InputError("--base", f"git archive {base.short}: {err}", "check the ref")
            with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
                tar.extractall(root, filter="data")
        yield root


def inside(path: Path, top: Path) -> bool:
    try:
        path.resolve().relative_to(top)
    except ValueError:
        return False
    return True
