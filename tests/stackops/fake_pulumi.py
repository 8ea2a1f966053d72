"""A stand-in ``pulumi`` CLI for the stackops tests (copied to ``<tmp>/bin/pulumi`` by conftest).

It implements the part of the CLI surface that the Automation API (``pulumi.automation`` in the
venv: ``_cmd.py``, ``_local_workspace.py``, ``_stack.py``) calls for the operations stackops uses,
with the flags it passes and the messages its error classifier (``errors.py``) matches:

* ``version`` -> ``v3.272.0`` (``PulumiCommand`` parses it and requires major 3, >= 3.1.0)
* ``stack init NAME [--secrets-provider P]``; ``stack select --stack NAME``
* ``stack ls --json [--all] [--tag name[=value]]`` with ``name`` (``organization/<project>/<name>``
  for another project's stack under ``--all``, as DIY backends print it), ``current``,
  ``lastUpdate`` (RFC 5424 with milliseconds, as ``cmd.FormatTime``), ``resourceCount``, and
  ``updateInProgress: true`` (with no ``lastUpdate``) while an update runs
* ``stack rm --yes [--force] [--preserve-config] NAME`` (refuses while resources remain)
* ``stack tag set|get|rm|ls --json --stack NAME`` (tag names ``[A-Za-z0-9-_.:]{1,40}``)
* ``config set KEY --plaintext|--secret --stack NAME --non-interactive [-- VALUE]`` (no value:
  read from stdin when it is not a terminal, one trailing newline dropped, as the real CLI),
  ``config set-all --stack NAME [--path] (--plaintext|--secret) k=v...``, ``config --json``
* ``up --yes --skip-preview ... --exec-kind auto.local --stack NAME``,
  ``refresh --skip-preview --yes ... --stack NAME``, ``destroy --skip-preview --yes ... --stack NAME``
  (``destroy`` and ``refresh`` refuse a stack of another project and one with an update in progress)
* ``stack output --json [--show-secrets] --stack NAME``; ``stack history --json ...``;
  ``stack export --stack NAME`` (resources and ``pending_operations``)
* and, for the cleanup command stackops prints when teardown fails:
  ``pulumi destroy --yes --remove --stack NAME --cwd DIR``

Interrupts, as the real CLI takes them: the first SIGINT during ``up`` cancels it gracefully (the
create in flight finishes within ``FAKE_PULUMI_CANCEL_SLEEP`` seconds, default 1, or once the file
``FAKE_PULUMI_CANCEL_UNTIL`` names exists (at most 60 s), and is saved in the state; exit 255). A second SIGINT before that terminates at once: the create in flight is
recorded only as a *pending operation* (``creating``), while the resource exists in the "cloud".
The cloud is ``<state>/cloud.json`` (per stack, the resources that really exist): ``destroy``
deletes only what the state lists, so a pending create is leaked, ``refresh`` clears pending
updates and deletes but, non-interactively, keeps pending creates (as the real CLI does).

State is a DIY-like backend directory: ``PULUMI_BACKEND_URL=file://<dir>`` (or
``FAKE_PULUMI_STATE``). Stack config lives in ``Pulumi.<stack>.yaml`` in the working directory,
as the real CLI keeps it. Every call is appended to ``FAKE_PULUMI_LOG`` as one JSON line: argv,
cwd, the ``PULUMI_*``/``FULLSERVER_*`` environment (secret-looking values redacted), the signals
it received, exit code. ``FAKE_PULUMI_STARTED`` (a file) gets each command's words when it starts.

Knobs: ``FAKE_PULUMI_FAIL=destroy:2,stack rm:1,up:always,stack tag ls@ci-old:always`` fails the
first N calls of each command (``@NAME``: only for that stack; counted in the state dir);
``FAKE_PULUMI_FAIL_PENDING=1`` makes an injected ``up`` failure leave a pending create (a provider
crash, a CLI killed outright); ``FAKE_PULUMI_UP_SLEEP=<s>`` / ``FAKE_PULUMI_DESTROY_SLEEP=<s>``
make ``up`` / ``destroy`` slow (for signal tests); ``FAKE_PULUMI_OUTPUTS`` /
``FAKE_PULUMI_SECRET_OUTPUTS`` (JSON objects) replace the default outputs;
``FAKE_PULUMI_VERSION`` changes the version it reports.
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

SUBCOMMANDS: dict[str, set[str]] = {
    "stack": {"init", "select", "ls", "rm", "tag", "output", "history", "export"},
    "config": {"set", "set-all", "get", "rm"},
    "tag": {"set", "get", "rm", "ls"},
}
VALUE_FLAGS = {
    "--stack",
    "-s",
    "--secrets-provider",
    "--tag",
    "-t",
    "--message",
    "-m",
    "--exec-kind",
    "--page-size",
    "--page",
    "--color",
    "--parallel",
    "--client",
    "--event-log",
    "--cwd",
    "-C",
}
SECRETISH = re.compile(r"PASSPHRASE|TOKEN|SECRET|PASSWORD|ACCESS_KEY|PRIVATE", re.I)
TAG_NAME = re.compile(r"^[a-zA-Z0-9-_.:]{1,40}$")


STACK_RESOURCE = "pulumi:pulumi:Stack"
RECEIVED: list[str] = []
"""Signals this process received, in order (logged)."""


class Fail(Exception):
    def __init__(self, message: str, code: int = 255) -> None:
        super().__init__(message)
        self.code = code


class Terminate(BaseException):
    """A second interrupt: the real CLI stops at once, without waiting for operations in flight."""


def on_signal(signum: int, frame: Any) -> None:
    RECEIVED.append(signal.Signals(signum).name)
    if len(RECEIVED) == 1:
        raise KeyboardInterrupt
    raise Terminate


def now_text() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class Args:
    """``argv`` split into the command words, positionals, flags and flag values."""

    def __init__(self, argv: list[str]) -> None:
        self.words: list[str] = []
        self.positional: list[str] = []
        self.flags: set[str] = set()
        self.values: dict[str, list[str]] = {}
        self.after_dashdash: list[str] = []
        i = 0
        while i < len(argv):
            a = argv[i]
            if a == "--":
                self.after_dashdash = argv[i + 1 :]
                break
            if a.startswith("-"):
                name, eq, val = a.partition("=")
                if eq:
                    self.values.setdefault(name, []).append(val)
                elif name in VALUE_FLAGS and i + 1 < len(argv):
                    self.values.setdefault(name, []).append(argv[i + 1])
                    i += 1
                else:
                    self.flags.add(name)
            elif not self.positional and (
                not self.words
                or (self.words[-1] in SUBCOMMANDS and a in SUBCOMMANDS[self.words[-1]])
                or (self.words == ["stack", "tag"] and a in SUBCOMMANDS["tag"])
            ):
                self.words.append(a)
            else:
                self.positional.append(a)
            i += 1

    def value(self, *names: str) -> str | None:
        for n in names:
            if n in self.values:
                return self.values[n][-1]
        return None

    @property
    def key(self) -> str:
        return " ".join(self.words)


class Backend:
    def __init__(self, cwd: Path) -> None:
        url = os.environ.get("PULUMI_BACKEND_URL", "")
        if url.startswith("file://"):
            root = Path(url[len("file://") :]).expanduser()
        elif os.environ.get("FAKE_PULUMI_STATE"):
            root = Path(os.environ["FAKE_PULUMI_STATE"])
        else:
            raise Fail("error: fake pulumi: no backend (set PULUMI_BACKEND_URL=file://<dir>)")
        self.root = root
        self.stacks = root / "stacks"
        self.stacks.mkdir(parents=True, exist_ok=True)
        self.cwd = cwd

    def project(self, required: bool = True) -> str | None:
        path = self.cwd / "Pulumi.yaml"
        if not path.is_file():
            if required:
                raise Fail(f"error: no Pulumi.yaml project file found (searching upwards from {self.cwd})")
            return None
        data = yaml.safe_load(path.read_text())
        return str(data["name"])

    def path(self, name: str) -> Path:
        return self.stacks / f"{name.split('/')[-1]}.json"

    def load(self, name: str) -> dict[str, Any]:
        p = self.path(name)
        if not p.is_file():
            raise Fail(f"error: no stack named '{name}' found")
        data: dict[str, Any] = json.loads(p.read_text())
        return data

    def save(self, data: dict[str, Any]) -> None:
        """Write, then rename into place: a test polling the state never reads half a file."""
        path = self.path(data["name"])
        partial = path.with_name(f".{path.name}.partial")
        partial.write_text(json.dumps(data, indent=2, sort_keys=True))
        os.replace(partial, path)

    def load_for_update(self, name: str) -> dict[str, Any]:
        """A stack an update (refresh, destroy) may run on: this project's, not busy."""
        st = self.load(name)
        project = self.project()
        if st["project"] != project:
            raise Fail(f"error: provided project name {st['project']!r} doesn't match Pulumi.yaml")
        if st.get("updateInProgress"):
            raise Fail("error: [409] Conflict: Another update is currently in progress.")
        return st

    def cloud(self) -> dict[str, list[str]]:
        p = self.root / "cloud.json"
        data: dict[str, list[str]] = json.loads(p.read_text()) if p.is_file() else {}
        return data

    def set_cloud(self, name: str, resources: list[str]) -> None:
        data = self.cloud()
        data[name.split("/")[-1]] = sorted(set(resources))
        (self.root / "cloud.json").write_text(json.dumps(data, indent=2, sort_keys=True))

    def current(self) -> str | None:
        p = self.root / "current"
        return p.read_text().strip() if p.is_file() else None

    def set_current(self, name: str | None) -> None:
        p = self.root / "current"
        if name is None:
            p.unlink(missing_ok=True)
        else:
            p.write_text(name)

    def stack_name(self, a: Args) -> str:
        name = a.value("--stack", "-s") or self.current()
        if not name:
            raise Fail("error: no stack selected; please use `pulumi stack select`")
        return name

    def config_file(self, name: str) -> Path:
        return self.cwd / f"Pulumi.{name.split('/')[-1]}.yaml"

    def read_config(self, name: str) -> dict[str, Any]:
        p = self.config_file(name)
        data = yaml.safe_load(p.read_text()) if p.is_file() else None
        return dict((data or {}).get("config") or {})

    def write_config(self, name: str, config: dict[str, Any]) -> None:
        p = self.config_file(name)
        data = (yaml.safe_load(p.read_text()) if p.is_file() else None) or {}
        data["config"] = config
        p.write_text(yaml.safe_dump(data, sort_keys=True))


def inject_failure(state: Path, key: str, stack: str | None = None) -> None:
    spec = os.environ.get("FAKE_PULUMI_FAIL", "")
    for part in filter(None, (p.strip() for p in spec.split(","))):
        cmd, _, limit = part.rpartition(":")
        cmd, at, only = cmd.partition("@")
        if cmd != key or (at and (stack or "").split("/")[-1] != only):
            continue
        key = f"{key}@{only}" if at else key
        counts_path = state / "fail-counts.json"
        counts = json.loads(counts_path.read_text()) if counts_path.is_file() else {}
        n = counts.get(key, 0) + 1
        counts[key] = n
        counts_path.write_text(json.dumps(counts))
        if limit == "always" or n <= int(limit):
            raise Fail(f"error: injected failure of '{key}' (call {n}, limit {limit})")


def history_entry(kind: str, message: str, changes: dict[str, int], version: int) -> dict[str, Any]:
    start = now_text()
    return {
        "kind": kind,
        "startTime": start,
        "message": message,
        "environment": {"exec.kind": "auto.local"},
        "config": {},
        "result": "succeeded",
        "endTime": now_text(),
        "version": version,
        "resourceChanges": changes,
    }


def default_outputs(name: str, config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    plain = os.environ.get("FAKE_PULUMI_OUTPUTS")
    secret = os.environ.get("FAKE_PULUMI_SECRET_OUTPUTS")
    if plain is not None or secret is not None:
        return json.loads(plain or "{}"), json.loads(secret or "{}")
    return (
        {
            "platform": config.get("fullserver:platform", "unknown"),
            "connect": f"ssh ubuntu@{name}.example.invalid",
            "publicIps": ["198.51.100.7"],
            "cost": {"usdPerHour": 0.53},
        },
        {"apiToken": "s3cr3t-" + name},
    )


def pending_create(project: str, name: str, resource: str) -> dict[str, Any]:
    urn = f"urn:pulumi:{name.split('/')[-1]}::{project}::{resource}::{resource.rsplit(':', 1)[-1].lower()}"
    return {"resource": {"urn": urn, "type": resource}, "type": "creating"}


def finish_in_flight() -> None:
    """The create in flight during a graceful cancel: a fixed time, or until the test releases it
    (so a test can deliver every further signal inside the cancel, however loaded the machine)."""
    until = os.environ.get("FAKE_PULUMI_CANCEL_UNTIL")
    if not until:
        time.sleep(float(os.environ.get("FAKE_PULUMI_CANCEL_SLEEP", "1") or 0))
        return
    deadline = time.monotonic() + 60
    while not os.path.exists(until) and time.monotonic() < deadline:
        time.sleep(0.05)


def cmd_up(b: Backend, a: Args) -> int:
    if "--yes" not in a.flags and "-y" not in a.flags:
        raise Fail("error: --yes or --skip-preview must be passed in to proceed when running in non-interactive mode")
    name = b.stack_name(a)
    st = b.load(name)
    project = b.project() or ""
    config = b.read_config(name)
    ttl = config.get("fullserver:ttlHours")
    in_flight = "fullserver:index:Resource-1"
    print(f"Updating ({name}):")
    print(f"    pulumi:pulumi:Stack {project}-{name} creating")
    print(f"    {in_flight} creating")
    delay = float(os.environ.get("FAKE_PULUMI_UP_SLEEP", "0") or 0)
    try:
        if delay:
            sys.stdout.flush()
            time.sleep(delay)
        inject_failure(b.root, "up", name)
    except KeyboardInterrupt:
        print("^C received; cancelling. If you would like to terminate immediately, press ^C again.", flush=True)
        try:
            finish_in_flight()  # the create in flight finishes
        except Terminate:
            print("^C received; terminating", flush=True)
            st["resources"] = [STACK_RESOURCE]
            st["pending_operations"] = [pending_create(project, name, in_flight)]
            b.set_cloud(name, [in_flight])  # it exists, but the state has no id for it
            b.save(st)
            raise Fail("error: update terminated; 1 operation was left pending") from None
        st["resources"] = [STACK_RESOURCE, in_flight]
        b.set_cloud(name, [in_flight])
        b.save(st)
        raise Fail("error: update canceled") from None
    except Fail:
        st["resources"] = [STACK_RESOURCE]  # a failed update leaves what it created
        if os.environ.get("FAKE_PULUMI_FAIL_PENDING"):
            st["pending_operations"] = [pending_create(project, name, in_flight)]
            b.set_cloud(name, [in_flight])
        b.save(st)
        raise
    count = int(os.environ.get("FAKE_PULUMI_RESOURCES", "3"))
    st["resources"] = [STACK_RESOURCE] + [f"fullserver:index:Resource-{i}" for i in range(1, count)]
    b.set_cloud(name, [r for r in st["resources"] if r != STACK_RESOURCE])
    plain, secret = default_outputs(name, config)
    st["outputs"] = {k: {"value": v, "secret": False} for k, v in plain.items()}
    st["outputs"].update({k: {"value": v, "secret": True} for k, v in secret.items()})
    st["config"] = config
    st["version"] = st.get("version", 0) + 1
    st["history"].insert(0, history_entry("update", a.value("--message", "-m") or "", {"create": count}, st["version"]))
    st["lastUpdate"] = now_text()
    b.save(st)
    print(f"    fullserver:index:Environment {name} created (ttlHours={ttl})")
    print(f"Resources:\n    + {count} created\n\nDuration: 1s")
    return 0


def warn_pending(st: dict[str, Any]) -> None:
    ops = st.get("pending_operations") or []
    if ops:
        print(
            f"warning: Attempting to deploy or update resources with {len(ops)} pending operations from previous deployment."
        )
        for op in ops:
            print(f"  * {op['resource']['urn']}, interrupted while {op['type']}")


def cmd_refresh(b: Backend, a: Args) -> int:
    if "--yes" not in a.flags and "-y" not in a.flags:
        raise Fail("error: --yes or --skip-preview must be passed in to proceed when running in non-interactive mode")
    name = b.stack_name(a)
    st = b.load_for_update(name)
    print(f"Refreshing ({name}):")
    warn_pending(st)
    inject_failure(b.root, "refresh", name)
    exists = set(b.cloud().get(name.split("/")[-1], []))
    st["resources"] = [r for r in st["resources"] if r == STACK_RESOURCE or r in exists]
    # Non-interactively, pending creates stay: the CLI cannot know the id of what was created.
    st["pending_operations"] = [op for op in st.get("pending_operations") or [] if op["type"] == "creating"]
    st["version"] = st.get("version", 0) + 1
    st["history"].insert(0, history_entry("refresh", a.value("--message", "-m") or "", {}, st["version"]))
    st["lastUpdate"] = now_text()
    b.save(st)
    return 0


def cmd_destroy(b: Backend, a: Args) -> int:
    if "--yes" not in a.flags and "-y" not in a.flags:
        raise Fail("error: --yes or --skip-preview must be passed in to proceed when running in non-interactive mode")
    name = b.stack_name(a)
    st = b.load_for_update(name)
    print(f"Destroying ({name}):")
    warn_pending(st)
    try:
        time.sleep(float(os.environ.get("FAKE_PULUMI_DESTROY_SLEEP", "0") or 0))
    except (KeyboardInterrupt, Terminate):
        raise Fail("error: destroy canceled") from None
    inject_failure(b.root, "destroy", name)
    count = len(st["resources"])
    b.set_cloud(name, sorted(set(b.cloud().get(name.split("/")[-1], [])) - set(st["resources"])))
    st["resources"] = []
    st["outputs"] = {}
    st["version"] = st.get("version", 0) + 1
    st["history"].insert(
        0, history_entry("destroy", a.value("--message", "-m") or "", {"delete": count}, st["version"])
    )
    st["lastUpdate"] = now_text()
    b.save(st)
    print(f"Resources:\n    - {count} deleted\n\nDuration: 1s")
    if "--remove" in a.flags:  # `pulumi destroy --remove`: also remove the stack and its config file
        b.path(name).unlink()
        b.config_file(name).unlink(missing_ok=True)
        print(f"The resources in the stack have been deleted, and the stack '{name}' has been removed.")
    return 0


def cmd_stack(b: Backend, a: Args) -> int:
    sub = a.words[1] if len(a.words) > 1 else ""
    if sub == "init":
        if not a.positional:
            raise Fail("error: a stack name is required")
        name = a.positional[0]
        project = b.project()
        if b.path(name).is_file():
            raise Fail(f"error: stack '{name}' already exists")
        b.save(
            {
                "name": name,
                "project": project,
                "tags": {"pulumi:project": project},
                "resources": [],
                "outputs": {},
                "history": [],
                "lastUpdate": None,
                "secretsProvider": a.value("--secrets-provider") or "default",
            }
        )
        b.set_current(name)
        print(f"Created stack '{name}'")
        return 0
    if sub == "select":
        name = a.value("--stack", "-s") or (a.positional[0] if a.positional else "")
        b.load(name)
        b.set_current(name)
        return 0
    if sub == "ls":
        here = b.project(required=False)
        project = None if "--all" in a.flags or "-a" in a.flags else b.project()
        tag = a.value("--tag", "-t")
        current = b.current()
        rows = []
        for p in sorted(b.stacks.glob("*.json")):
            st = json.loads(p.read_text())
            if project is not None and st["project"] != project:
                continue
            if tag:
                tname, eq, tval = tag.partition("=")
                if tname not in st["tags"] or (eq and st["tags"][tname] != tval):
                    continue
            shown = st["name"] if st["project"] == here else f"organization/{st['project']}/{st['name']}"
            row: dict[str, Any] = {"name": shown, "current": st["name"] == current}
            if st.get("updateInProgress"):
                row["updateInProgress"] = True
            elif st.get("lastUpdate"):
                row["lastUpdate"] = st["lastUpdate"]
                row["resourceCount"] = len(st["resources"])
            rows.append(row)
        print(json.dumps(rows, indent=4))
        return 0
    if sub == "rm":
        if "--yes" not in a.flags and "-y" not in a.flags:
            raise Fail("error: non-interactive mode requires --yes flag")
        name = a.positional[0] if a.positional else b.stack_name(a)
        st = b.load(name)
        inject_failure(b.root, "stack rm")
        if st["resources"] and "--force" not in a.flags and "-f" not in a.flags:
            raise Fail(
                f"error: '{name}' still has resources; removal rejected. Possible actions:\n"
                "- Make sure that it is the stack that you want to destroy\n"
                "- Run `pulumi destroy` to delete the resources, then run `pulumi stack rm`\n"
                "- Run `pulumi stack rm --force` to override this error"
            )
        b.path(name).unlink()
        if "--preserve-config" not in a.flags:
            b.config_file(name).unlink(missing_ok=True)
        if b.current() == name:
            b.set_current(None)
        print(f"Stack '{name}' has been removed!")
        return 0
    if sub == "tag":
        op = a.words[2] if len(a.words) > 2 else ""
        name = b.stack_name(a)
        st = b.load(name)
        if op == "set":
            tname, tval = a.positional[0], a.positional[1]
            if not TAG_NAME.match(tname):
                raise Fail(
                    "error: stack tag names may only contain alphanumerics, hyphens, underscores, periods, or colons"
                )
            if len(tval) > 256:
                raise Fail(f"error: stack tag {tname!r} value is too long (max length 256 characters)")
            st["tags"][tname] = tval
            b.save(st)
            return 0
        if op == "rm":
            st["tags"].pop(a.positional[0], None)
            b.save(st)
            return 0
        if op == "get":
            if a.positional[0] not in st["tags"]:
                raise Fail(f"error: stack tag '{a.positional[0]}' not found for stack '{name}'")
            print(st["tags"][a.positional[0]])
            return 0
        if op == "ls" and "--json" in a.flags:
            print(json.dumps(st["tags"], indent=4))
            return 0
    if sub == "output" and "--json" in a.flags:
        st = b.load(b.stack_name(a))
        show = "--show-secrets" in a.flags
        out = {k: (v["value"] if show or not v["secret"] else "[secret]") for k, v in st["outputs"].items()}
        print(json.dumps(out, indent=4))
        return 0
    if sub == "export":
        st = b.load(b.stack_name(a))
        project = st["project"]
        resources = [
            {"urn": pending_create(project, st["name"], r)["resource"]["urn"], "type": r} for r in st["resources"]
        ]
        deployment = {"resources": resources, "pending_operations": st.get("pending_operations") or []}
        print(json.dumps({"version": 3, "deployment": deployment}, indent=4))
        return 0
    if sub == "history" and "--json" in a.flags:
        st = b.load(b.stack_name(a))
        entries = st["history"]
        size = a.value("--page-size")
        if size:
            page = int(a.value("--page") or 1)
            entries = entries[(page - 1) * int(size) : page * int(size)]
        print(json.dumps(entries, indent=4))
        return 0
    raise Fail(f"error: fake pulumi does not implement 'stack {' '.join(a.words[1:])}' with these flags", 2)


def cmd_config(b: Backend, a: Args) -> int:
    sub = a.words[1] if len(a.words) > 1 else ""
    name = b.stack_name(a)
    b.load(name)
    config = b.read_config(name)

    def put(key: str, value: str, secret: bool) -> None:
        config[key] = {"secure": "v1:" + base64.b64encode(value.encode()).decode()} if secret else value

    if sub == "set":
        key = a.positional[0]
        if a.after_dashdash:
            value = a.after_dashdash[0]
        elif len(a.positional) > 1:
            value = a.positional[1]
        elif not sys.stdin.isatty():
            value = sys.stdin.read()
            value = value[:-1] if value.endswith("\n") else value
        else:
            raise Fail("error: config value must be specified in non-interactive mode")
        put(key, value, "--secret" in a.flags)
        b.write_config(name, config)
        return 0
    if sub == "set-all":
        # set-all interleaves --plaintext/--secret with key=value; replay argv to keep the pairing.
        argv = sys.argv[1:]
        for i, tok in enumerate(argv):
            if tok in ("--plaintext", "--secret") and i + 1 < len(argv):
                k, _, v = argv[i + 1].partition("=")
                put(k, v, tok == "--secret")
        b.write_config(name, config)
        return 0
    if sub == "" and "--json" in a.flags:
        out = {}
        for k, v in config.items():
            if isinstance(v, dict) and set(v) == {"secure"}:
                out[k] = {"value": base64.b64decode(v["secure"][3:]).decode(), "secret": True}
            else:
                out[k] = {"value": v if isinstance(v, str) else json.dumps(v), "secret": False}
        print(json.dumps(out, indent=4))
        return 0
    raise Fail(f"error: fake pulumi does not implement 'config {sub}'", 2)


def main(argv: list[str]) -> int:
    a = Args([x for x in argv if x != "--non-interactive"])
    cwd = Path(a.value("--cwd", "-C") or Path.cwd()).resolve()
    started = os.environ.get("FAKE_PULUMI_STARTED")
    if started:
        with open(started, "a", encoding="utf-8") as fh:
            fh.write(a.key + "\n")
    if a.key == "version":
        print(os.environ.get("FAKE_PULUMI_VERSION", "v3.272.0"))
        return 0
    if a.key == "whoami":
        print("fake-user")
        return 0
    b = Backend(cwd)
    head = a.words[0] if a.words else ""
    if head == "up":
        return cmd_up(b, a)
    if head == "destroy":
        return cmd_destroy(b, a)
    if head == "refresh":
        return cmd_refresh(b, a)
    if head == "stack":
        key = a.key
        if key in (
            "stack init",
            "stack ls",
            "stack select",
            "stack tag set",
            "stack tag ls",
            "stack output",
            "stack export",
        ):
            inject_failure(b.root, key, a.value("--stack", "-s") or (a.positional[0] if a.positional else None))
        return cmd_stack(b, a)
    if head == "config":
        inject_failure(b.root, a.key)
        return cmd_config(b, a)
    raise Fail(f"error: fake pulumi does not implement {argv!r}", 2)


def log(argv: list[str], code: int) -> None:
    path = os.environ.get("FAKE_PULUMI_LOG")
    if not path:
        return
    env = {
        k: ("<redacted>" if SECRETISH.search(k) else v)
        for k, v in sorted(os.environ.items())
        if k.startswith(("PULUMI_", "FULLSERVER_"))
    }
    entry = {"argv": argv, "cwd": os.getcwd(), "env": env, "exit": code, "pid": os.getpid(), "signals": RECEIVED}
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry) + "\n")


if __name__ == "__main__":
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    args = sys.argv[1:]
    code = 1
    try:
        code = main(args)
    except Fail as exc:
        sys.stderr.write(str(exc) + "\n")
        code = exc.code
    finally:
        log(args, code)
    sys.exit(code)
