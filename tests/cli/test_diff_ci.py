"""The CI examples of ``fullserver diff`` in docs/ci.md: valid for their platforms (their vendored
JSON schemas, then the keys each job needs), and working: each job's script runs in a real clone
of a pull request, and its comment step talks to a stand-in of the platform's API (GitHub's
github-script under node with a fake ``github`` client; GitLab's notes API on a local server)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import jsonschema
import pytest
import yaml
from check_jsonschema.builtin_schemas import get_builtin_schema

from fullserver.errors import EXIT_BUDGET
from fullserver_cli.diff_render import COMMENT_MARKER
from tests.cli.test_diff import GIT_ENV, ROOT, Repo, git

CI_DOC = ROOT / "docs" / "ci.md"
VENV_BIN = Path(sys.executable).parent


def ci_example(first_line: str) -> tuple[str, dict[Any, Any]]:
    """The YAML block of docs/ci.md whose first line names ``first_line``: its text and data."""
    text = CI_DOC.read_text(encoding="utf-8")
    for block in re.findall(r"^```yaml\n(.*?)^```$", text, re.S | re.M):
        if first_line in block.splitlines()[0]:
            data = yaml.safe_load(block)
            assert isinstance(data, dict)
            return block, data
    raise AssertionError(f"docs/ci.md has no YAML block starting with {first_line}")


def schema_errors(schema_name: str, data: Any) -> list[str]:
    validator = jsonschema.Draft7Validator(get_builtin_schema(schema_name))
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(data)]


def github_workflow() -> dict[str, Any]:
    _, data = ci_example(".github/workflows/fullserver-diff.yml")
    # YAML 1.1 reads the key `on` as true; GitHub reads it as "on".
    return {("on" if k is True else str(k)): v for k, v in data.items()}


def test_the_github_actions_job_is_a_valid_workflow_that_comments_on_pull_requests() -> None:
    workflow = github_workflow()
    assert schema_errors("vendor.github-workflows", workflow) == []
    assert schema_errors("vendor.github-workflows", {**workflow, "jobs": {"diff": {"steps": []}}}) != []  # it can fail
    assert "pull_request" in workflow["on"]
    [job] = workflow["jobs"].values()
    assert job["permissions"]["pull-requests"] == "write"
    checkout = next(s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0
    run = next(s["run"] for s in job["steps"] if "fullserver diff" in s.get("run", ""))
    assert "fullserver diff --base origin/${{ github.base_ref }} --format markdown" in run and "> diff.md" in run
    script = next(s["with"]["script"] for s in job["steps"] if "github-script" in str(s.get("uses", "")))
    assert COMMENT_MARKER in script and "updateComment" in script and "createComment" in script


def test_the_gitlab_job_is_valid_gitlab_ci_for_merge_requests() -> None:
    _, pipeline = ci_example(".gitlab-ci.yml")
    assert schema_errors("vendor.gitlab-ci", pipeline) == []
    assert schema_errors("vendor.gitlab-ci", {"fullserver-diff": {"script": 3}}) != []
    job = pipeline["fullserver-diff"]
    assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    assert job["variables"]["GIT_DEPTH"] == "0"
    script = "\n".join(job["script"])
    assert 'fullserver diff --base "$CI_MERGE_REQUEST_DIFF_BASE_SHA" --format markdown' in script
    assert COMMENT_MARKER in script and "FULLSERVER_GITLAB_TOKEN" in script


def pull_request(tmp_path: Path) -> tuple[Path, str]:
    """A clone on a feature branch whose commit changes a stack, with the default branch on the
    remote (as actions/checkout with fetch-depth 0 and GitLab's GIT_DEPTH 0 leave it); the
    merge base's commit."""
    origin = Repo(tmp_path / "origin")
    origin.stack("exp", source="exp-aws-spot")
    origin.stack("serve", source="serve-gcp-realtime")
    base = origin.commit("base")
    clone = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", str(origin.path), str(clone))
    git(clone, "checkout", "-q", "-b", "feature")
    work = Repo.__new__(Repo)
    work.path = clone
    work.edit_stack("exp", datasetGib=120)  # a larger data disk: a rise of a few percent
    work.commit("a larger dataset")
    (clone / ".venv").symlink_to(VENV_BIN.parent)
    return clone, base


def bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join([str(VENV_BIN), os.environ.get("PATH", "/usr/bin:/bin")])
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env={**os.environ, **GIT_ENV, "PATH": path, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )


FAKE_GITHUB = """
const calls = [];
const comments = JSON.parse(process.env.COMMENTS);
const github = {
  rest: { issues: {
    listComments: 'listComments',
    createComment: async (a) => { calls.push(['create', a]); },
    updateComment: async (a) => { calls.push(['update', a]); },
  } },
  paginate: async (what, a) => { calls.push(['list', a]); return comments; },
};
const context = { repo: { owner: 'o', repo: 'r' }, issue: { number: 7 } };
(async () => {
SCRIPT
})().then(() => console.log(JSON.stringify(calls)));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node runs the github-script step")
def test_the_github_job_diffs_the_pull_request_and_updates_one_comment(tmp_path: Path) -> None:
    clone, _ = pull_request(tmp_path)
    [job] = github_workflow()["jobs"].values()
    steps = job["steps"]
    run = next(s for s in steps if "fullserver diff" in s.get("run", ""))
    output = tmp_path / "github-output"
    r = bash(run["run"].replace("${{ github.base_ref }}", "main"), clone, {"GITHUB_OUTPUT": str(output)})
    assert r.returncode == 0, r.stderr
    assert output.read_text().splitlines() == ["code=0"], (clone / "diff.err").read_text()
    body = (clone / "diff.md").read_text()
    assert body.startswith(COMMENT_MARKER) and "| exp | changed |" in body and "| serve |" not in body

    script = next(s["with"]["script"] for s in steps if "github-script" in str(s.get("uses", "")))
    program = tmp_path / "comment.js"
    program.write_text(FAKE_GITHUB.replace("SCRIPT", script))
    others = [{"id": 1, "user": {"type": "User"}, "body": "looks good"}]
    first = subprocess.run(
        ["node", str(program)],
        cwd=clone,
        env={**os.environ, "COMMENTS": json.dumps(others)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    [listed, created] = json.loads(first.stdout)
    assert listed[0] == "list" and created[0] == "create"
    assert created[1]["issue_number"] == 7 and created[1]["body"] == body
    ours = [*others, {"id": 2, "user": {"type": "Bot"}, "body": body}]
    second = subprocess.run(
        ["node", str(program)],
        cwd=clone,
        env={**os.environ, "COMMENTS": json.dumps(ours)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    [_, updated] = json.loads(second.stdout)
    assert updated[0] == "update" and updated[1]["comment_id"] == 2


class _Notes(BaseHTTPRequestHandler):
    """GitLab's merge request notes API, as far as the job uses it."""

    notes: ClassVar[list[dict[str, Any]]] = []
    calls: ClassVar[list[tuple[str, str, str]]] = []

    def _reply(self, data: Any) -> None:
        raw = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self) -> None:
        self.calls.append(("GET", self.path, self.headers.get("PRIVATE-TOKEN", "")))
        page = int(self.path.rsplit("page=", 1)[-1])
        self._reply(self.notes[(page - 1) * 100 : page * 100])

    def _body(self) -> str:
        return str(json.loads(self.rfile.read(int(self.headers["Content-Length"])))["body"])

    def do_POST(self) -> None:
        self.calls.append(("POST", self.path, self.headers.get("PRIVATE-TOKEN", "")))
        note = {"id": 500 + len(self.notes), "body": self._body()}
        self.notes.append(note)
        self._reply(note)

    def do_PUT(self) -> None:
        self.calls.append(("PUT", self.path, self.headers.get("PRIVATE-TOKEN", "")))
        note_id = int(self.path.rsplit("/", 1)[-1])
        note = next(n for n in self.notes if n["id"] == note_id)
        note["body"] = self._body()
        self._reply(note)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_the_gitlab_job_diffs_the_merge_request_and_updates_one_note(tmp_path: Path) -> None:
    clone, base = pull_request(tmp_path)
    _, pipeline = ci_example(".gitlab-ci.yml")
    script = next(line for line in pipeline["fullserver-diff"]["script"] if "fullserver diff" in line)
    _Notes.notes = [{"id": i, "body": f"note {i}"} for i in range(1, 131)]  # two pages of others
    _Notes.calls = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Notes)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {
        "CI_MERGE_REQUEST_DIFF_BASE_SHA": base,
        "CI_API_V4_URL": f"http://127.0.0.1:{server.server_address[1]}/api/v4",
        "CI_PROJECT_ID": "42",
        "CI_MERGE_REQUEST_IID": "7",
        "FULLSERVER_GITLAB_TOKEN": "glpat-test",
    }
    try:
        first = bash(script, clone, env)
        assert first.returncode == 0, first.stderr
        assert [c[0] for c in _Notes.calls] == ["GET", "GET", "GET", "POST"]
        second = bash(script, clone, env)
        assert second.returncode == 0, second.stderr
    finally:
        server.shutdown()
    assert [c[0] for c in _Notes.calls[4:]] == ["GET", "GET", "PUT"]
    assert all(
        c[1].startswith("/api/v4/projects/42/merge_requests/7/notes") and c[2] == "glpat-test" for c in _Notes.calls
    )
    ours = [n for n in _Notes.notes if n["body"].startswith(COMMENT_MARKER)]
    assert len(ours) == 1 and ours[0]["body"] == (clone / "diff.md").read_text()
    assert "exp" in ours[0]["body"]


def test_a_job_whose_diff_exits_3_still_comments_then_fails(tmp_path: Path) -> None:
    clone, base = pull_request(tmp_path)
    _, pipeline = ci_example(".gitlab-ci.yml")
    script = next(line for line in pipeline["fullserver-diff"]["script"] if "fullserver diff" in line)
    _Notes.notes, _Notes.calls = [], []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Notes)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {
        "CI_MERGE_REQUEST_DIFF_BASE_SHA": base,
        "CI_API_V4_URL": f"http://127.0.0.1:{server.server_address[1]}/api/v4",
        "CI_PROJECT_ID": "42",
        "CI_MERGE_REQUEST_IID": "7",
        "FULLSERVER_GITLAB_TOKEN": "glpat-test",
    }
    try:
        r = bash(script.replace("--max-increase-pct 25", "--max-increase-pct 0"), clone, env)
    finally:
        server.shutdown()
    assert r.returncode == EXIT_BUDGET
    [note] = _Notes.notes
    assert "error: fullserver diff: the monthly estimate rises by" in note["body"]
