"""``verify: {on_up: true}`` in a profile: ``pulumi up`` (the provider's create) measures each host
after configuring it and reports one that does not deliver, without failing the host."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.bare_metal.provider import BareMetalProvider, verify_warnings
from tests.baremetal.conftest import private_proc_sys
from tests.baremetal.testbed import H100_SXM, SshdHost

GOLDEN = Path(__file__).parent / "golden" / "verify"


def _props(host: SshdHost, profile: str) -> dict[str, object]:
    layout = private_proc_sys(host)
    return {
        "hosts": [{"name": host.name, "address": "127.0.0.1", "port": host.port, "hostKeys": [host.host_key_line]}],
        "private_key": host.user_key,
        "profile": profile,
        "config": {"networkTuning": True, "root": layout.root, "sysctlDir": layout.sysctl_dir},
    }


@pytest.fixture
def team_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Pulumi project whose own profile turns verify on (capped for the test)."""
    (tmp_path / "Pulumi.yaml").write_text("name: team\nruntime: python\n")
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "verified-tuning.yaml").write_text(
        "extends: fine-tuning\n"
        "description: fine-tuning, and every host measured after pulumi up\n"
        "verify: {on_up: true, fio_seconds: 1, fio_size_mib: 16}\n"
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_up_reports_a_host_whose_gpu_runs_below_its_pcie_width(host: SshdHost, team_project: Path) -> None:
    host.set_gpus([H100_SXM] * 8)
    host.set_gpu_report((GOLDEN / "dgx-h100.xml").read_text(), (GOLDEN / "dgx-h100-topo.txt").read_text())
    p = BareMetalProvider()
    props = _props(host, "verified-tuning")
    assert p.check({}, props).failures == []
    outs = p.create(props).outs
    assert outs is not None and outs["failed_hosts"] == {}  # configured; the shortfall is reported, not failed
    status = outs["host_status"][host.name]
    assert status["changed"] == ["sysctl"]
    v = status["verify"]
    assert v["status"] == "short", v
    assert "GPU 3 (00000000:5D:00.0) at x8 of x16" in v["summary"]
    assert v["lines"]["gpu pcie width"] == {"promised": 16.0, "delivered": 8.0, "ratio": 0.5}
    [warning] = verify_warnings(outs["host_status"])  # what the component logs with pulumi.log.warn
    assert warning.startswith(f"verify: short: {host.name}: ") and "at x8 of x16" in warning
    p.delete("x", outs)


def test_up_does_not_measure_unless_the_profile_asks(host: SshdHost) -> None:
    p = BareMetalProvider()
    outs = p.create(_props(host, "fine-tuning")).outs
    assert outs is not None and "verify" not in outs["host_status"][host.name]
    assert verify_warnings(outs["host_status"]) == []
    p.delete("x", outs)
