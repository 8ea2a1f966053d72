"""Fleet bench: probe + audit of N real sshd hosts, against Ansible's fact gathering on the same hosts.

Run as root: ``.venv/bin/python bench/fleet.py [--sizes 1,8,32]`` (Ansible part needs
``pip install -e '.[bench]'``; without it those rows are marked missing). Prints:

1. the Python dynamic provider's real concurrency (16 concurrent Creates sent over gRPC to
   ``python -m pulumi.dynamic``, each sleeping 0.5 s);
2. fullserver probe + audit wall time for N = 1, 8, 32 hosts in one run (a thread and a
   connection per host), then ``ansible all -m setup`` with default forks (5) and forks = N on
   the same hosts (same pinned host keys, same user), with ratios;
3. a re-apply with nothing to change on every host: the number of write commands (must be 0).

Hosts are the test bed's sshd processes on 127.0.0.1 (tests/baremetal/testbed.py): every
figure includes real SSH handshakes and real remote shells, all on this one machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fullserver.baremetal.audit import audit_fleet, run_fleet
from fullserver.baremetal.config import HostConfig, HostLayout, ServiceUserConfig
from fullserver.baremetal.engine import converge
from fullserver.baremetal.operations import build_steps
from fullserver.baremetal.ssh import session
from fullserver.catalog import load_catalog
from fullserver.profiles import load_profiles
from tests.baremetal.testbed import H100_SXM, SshdHost, Testbed


def provider_concurrency(calls: int = 16, seconds: float = 0.5) -> tuple[float, int]:
    """Wall time of ``calls`` concurrent Create RPCs, and the implied number of worker threads."""
    import grpc
    from google.protobuf import struct_pb2
    from pulumi.dynamic import CreateResult, ResourceProvider
    from pulumi.dynamic.dynamic import serialize_provider
    from pulumi.runtime import proto, rpc
    from pulumi.runtime.proto import provider_pb2_grpc

    class Sleepy(ResourceProvider):
        def create(self, props: dict[str, Any]) -> CreateResult:
            import time as t

            t.sleep(0.5)
            return CreateResult(id_="x", outs={})

    server = subprocess.Popen(
        [sys.executable, "-m", "pulumi.dynamic"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline().decode().strip())
        stub = provider_pb2_grpc.ResourceProviderStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
        props: struct_pb2.Struct = asyncio.run(
            rpc.serialize_properties({"__provider": serialize_provider(Sleepy())}, {})
        )
        futures = []
        start = time.monotonic()
        for i in range(calls):
            req = proto.CreateRequest(
                urn=f"urn:pulumi:bench::fleet::pulumi-python:dynamic:Resource::r{i}", properties=props
            )
            futures.append(stub.Create.future(req))
        for f in futures:
            f.result(timeout=60)
        wall = time.monotonic() - start
        return wall, round(calls * seconds / wall)
    finally:
        server.kill()
        server.wait()


def ansible_setup(hosts: list[SshdHost], user: str, forks: int | None, work: Path) -> float | None:
    exe = Path(sys.executable).parent / "ansible"
    if not exe.exists():
        return None
    inv = work / "hosts.ini"
    kh = work / "known_hosts"
    kh.write_text("".join(f"[127.0.0.1]:{h.port} {h.host_key_line}\n" for h in hosts))
    lines = []
    for h in hosts:
        key = work / f"{h.name}.key"
        key.write_text(h.user_key)
        key.chmod(0o600)
        lines.append(
            f"{h.name} ansible_host=127.0.0.1 ansible_port={h.port} ansible_user={user} ansible_ssh_private_key_file={key} ansible_python_interpreter=/usr/bin/python3"
        )
    inv.write_text("[fleet]\n" + "\n".join(lines) + "\n")
    env = {
        **os.environ,
        "ANSIBLE_HOST_KEY_CHECKING": "True",
        "ANSIBLE_SSH_ARGS": f"-o UserKnownHostsFile={kh} -o StrictHostKeyChecking=yes -o ControlMaster=no",
        "ANSIBLE_LOCAL_TEMP": str(work / "tmp"),
        "ANSIBLE_NOCOLOR": "1",
    }
    cmd = [str(exe), "all", "-i", str(inv), "-m", "setup"] + (["-f", str(forks)] if forks else [])
    start = time.monotonic()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    wall = time.monotonic() - start
    if r.returncode != 0 or r.stdout.count("SUCCESS") != len(hosts):
        print(f"  ansible failed (exit {r.returncode}): {(r.stdout + r.stderr)[-400:]}")
        return None
    return wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1,8,32")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]

    wall, workers = provider_concurrency()
    print(f"dynamic provider: 16 concurrent Creates of 0.5 s took {wall:.2f} s -> {workers} run at once")

    profile = load_profiles()["dedicated-steady"]
    catalog = load_catalog()
    with Testbed() as bed:
        user = bed.add_user("bench", sudo=True)
        hosts = [bed.add_host(f"gpu-{i:02d}", gpus=[H100_SXM] * 8) for i in range(max(sizes))]
        work = bed.base / "ansible"
        work.mkdir()
        print(
            f"\n{'hosts':>5}  {'fullserver':>10}  {'ansible f=5':>11}  {'ansible f=N':>11}  {'vs f=5':>7}  {'vs f=N':>7}"
        )
        base_time = None
        for n in sizes:
            group = hosts[:n]
            start = time.monotonic()
            audits = audit_fleet([(h.target(user=user), h.user_key) for h in group], profile, catalog)
            ours = time.monotonic() - start
            assert all(a.facts is not None for a in audits), [a.error for a in audits if a.error]
            base_time = base_time or ours
            a5 = ansible_setup(group, user, None, work)
            an = ansible_setup(group, user, n, work)

            def fmt(x: float | None) -> str:
                return f"{x:.2f} s" if x is not None else "missing"

            def ratio(x: float | None, ours: float = ours) -> str:
                return f"{x / ours:.1f}x" if x is not None else "-"

            print(f"{n:>5}  {fmt(ours):>10}  {fmt(a5):>11}  {fmt(an):>11}  {ratio(a5):>7}  {ratio(an):>7}")
        print(
            f"\n{max(sizes)} hosts vs 1 host: {ours / (base_time or ours):.1f}x the time (target <= 2x; all hosts share this machine's {os.cpu_count()} cores)"
        )

        # Re-apply with nothing to change: configure every host once, then again.
        def cfg(h: SshdHost) -> HostConfig:
            for key in (
                "net.core.rmem_max",
                "net.core.wmem_max",
                "net.ipv4.tcp_rmem",
                "net.ipv4.tcp_wmem",
                "net.core.netdev_max_backlog",
                "net.ipv4.tcp_mtu_probing",
            ):
                p = h.root / "proc/sys" / key.replace(".", "/")
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(Path("/proc/sys", key.replace(".", "/")).read_text())
            layout = HostLayout(str(h.root), str(h.root / "proc/sys"))
            return HostConfig(
                network_tuning=True,
                gpu_persistence=True,
                service_user=ServiceUserConfig(name=f"svc{h.port % 100000}", authorized_keys=[h.user_pub]),
                root=layout.root,
                sysctl_dir=layout.sysctl_dir,
            )

        def apply(h: SshdHost) -> tuple[int, list[str]]:
            c = cfg(h) if not (h.root / "proc/sys/net").exists() else HostConfig.model_validate(CONFIGS[h.name])
            CONFIGS[h.name] = c.model_dump()
            with session(h.target(user=user), h.user_key) as s:
                out = converge(s, c.layout, build_steps(c))
            return out.writes, out.changed

        CONFIGS: dict[str, dict[str, Any]] = {}
        group = hosts[: max(sizes)]
        start = time.monotonic()
        first = run_fleet(group, lambda h: h.name, apply)
        t1 = time.monotonic() - start
        start = time.monotonic()
        second = run_fleet(group, lambda h: h.name, apply)
        t2 = time.monotonic() - start
        w1 = sum(r[0] for r in first.values() if isinstance(r, tuple))
        w2 = sum(r[0] for r in second.values() if isinstance(r, tuple))
        errors = [str(r) for r in [*first.values(), *second.values()] if not isinstance(r, tuple)]
        print(
            f"\nconfigure {len(group)} hosts: {t1:.2f} s, {w1} write commands; re-apply with nothing to change: {t2:.2f} s, {w2} write commands"
        )
        if errors:
            print("errors:", *errors[:3], sep="\n  ")
        for h in group:  # remove the service users this bench created
            subprocess.run(["userdel", f"svc{h.port % 100000}"], capture_output=True)
            shutil.rmtree(h.root / "home", ignore_errors=True)


if __name__ == "__main__":
    main()
