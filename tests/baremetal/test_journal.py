"""The on-host journal as a typed, versioned model: current, unversioned and newer files (no host)."""

from __future__ import annotations

import json

import pytest

from fullserver.baremetal.errors import Failure, Refusal, StepRefused
from fullserver.baremetal.journal import JOURNAL_VERSION, Journal, parse_journal, read_journal
from fullserver.baremetal.transport import Result
from tests.baremetal.fakehost import FakeHost

PATH = "/var/lib/fullserver/journal.json"

# A journal as the previous (dict-based) code wrote it: ``json.dumps(journal, indent=1)``.
WRITTEN_BEFORE = """{
 "version": 1,
 "steps": {
  "sysctl": {
   "desired": {"values": {"net.core.rmem_max": "268435456"}, "conf": "/etc/sysctl.d/90-fullserver.conf"},
   "undo": {"previous": {"net.core.rmem_max": "212992"}, "conf": null},
   "status": "applied",
   "at": 1718000000.5
  },
  "gpu-persistence": {"desired": {"persistence_mode": true}, "undo": {"was_enabled": false}, "status": "applying", "at": 1718000001.0}
 }
}
"""


def test_no_file_is_an_empty_journal() -> None:
    assert parse_journal("", PATH) == Journal() and Journal().steps == {} and Journal().version == JOURNAL_VERSION


def test_a_journal_written_before_reads_and_writes_back_the_same() -> None:
    j = parse_journal(WRITTEN_BEFORE, PATH)
    assert list(j.steps) == ["sysctl", "gpu-persistence"]  # applied order kept: undo runs newest first
    assert j.steps["sysctl"].undo == {"previous": {"net.core.rmem_max": "212992"}, "conf": None}
    assert j.steps["gpu-persistence"].status == "applying"
    assert json.loads(j.to_json()) == json.loads(WRITTEN_BEFORE)
    assert parse_journal(j.to_json(), PATH) == j


def test_an_unversioned_journal_is_migrated() -> None:
    old = {"steps": {"sysctl": {"desired": {"values": {}}, "undo": {"previous": {"vm.swappiness": "60"}}}}}
    j = parse_journal(json.dumps(old), PATH)
    assert j.version == 1
    entry = j.steps["sysctl"]
    assert entry.undo == {"previous": {"vm.swappiness": "60"}}
    assert entry.status == "applying" and entry.at == 0  # not known to be verified: the next converge re-checks
    assert json.loads(j.to_json())["version"] == 1  # written back as the current version
    kept = {"steps": {"x": {"desired": {}, "undo": {}, "status": "applied", "at": 5}}}
    assert parse_journal(json.dumps(kept), PATH).steps["x"].status == "applied"


def test_a_newer_journal_is_refused_in_one_line() -> None:
    newer = json.dumps({"version": JOURNAL_VERSION + 1, "steps": {}, "hosts": {}})
    with pytest.raises(Refusal) as exc:
        parse_journal(newer, PATH)
    assert exc.value.what == f"the journal {PATH} is version 2, newer than this fullserver reads (up to 1)"
    host = FakeHost({"read journal": [Result(0, newer, "")]})
    with pytest.raises(StepRefused) as refused:
        read_journal(host, host.layout)
    line = refused.value.line()
    assert line.startswith("h: the journal ") and "is version 2, newer than" in line and "upgrade fullserver" in line
    assert "\n" not in line and host.writes == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "is not valid JSON"),
        ("[1, 2]", "is not valid JSON"),
        ('{"version": 1}', "is not valid JSON"),
        ('{"version": "1", "steps": {}}', "has no valid version ('1')"),
        ('{"version": -1, "steps": {}}', "has no valid version (-1)"),
        ('{"version": 1, "steps": {"x": {"desired": {}, "undo": {}, "status": "done", "at": 0}}}', "(steps.x.status:"),
        (
            '{"version": 1, "steps": {"x": {"desired": {}, "status": "applied", "at": 0}}}',
            "(steps.x.undo: Field required)",
        ),
    ],
)
def test_an_unreadable_journal_fails_naming_the_file(text: str, message: str) -> None:
    with pytest.raises(Failure) as exc:
        parse_journal(text, PATH)
    assert exc.value.what.startswith(f"the journal {PATH} ") and message in exc.value.what
    assert "\n" not in exc.value.what and "move it aside" in exc.value.hint
