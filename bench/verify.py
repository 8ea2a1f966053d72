"""Verify bench: ``fullserver verify`` of N test-bed hosts with the measurements capped.

Run as root: ``.venv/bin/python bench/verify.py [--sizes 1,8,32]``. Every host is a real sshd in
a network namespace of its own (tests/baremetal/testbed.py) with a stand-in nvidia-smi (8 x H100,
one at x8) and a real ext4 on a loop device mounted as its scratch. Each run measures every host
(probe, GPUs, fio: three 1 s runs on a 16 MiB file) and then the iperf3 ring (1 s, 2 streams per
pair, all pairs at once). Prints the wall time of each run and per host. All hosts share this
machine's CPUs, so the figures bound the tool's own overhead, not a fleet's hardware.

Each size runs twice: direct, and with every connection through a proxy command (the test bed's
stand-in, a process pumping the SSH stream as ``gcloud compute start-iap-tunnel --listen-on-stdin``
does; iperf3 still goes to the hosts' own addresses, as to cloud nodes' private ones). The ratio
is the cost of starting and pumping one proxy process per connection, measured in the same run.
"""

from __future__ import annotations

import argparse
import dataclasses
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fullserver.baremetal.inventory import Target, expand_proxy
from fullserver.baremetal.measure import Caps
from fullserver.baremetal.verify import HostVerify, Promise, verify_fleet
from fullserver.catalog import load_catalog
from fullserver.profiles import get_profile, load_profiles
from tests.baremetal.testbed import H100_SXM, SshdHost, Testbed

GOLDEN = Path(__file__).resolve().parent.parent / "tests" / "baremetal" / "golden" / "verify"
CAPS = Caps(fio_seconds=1, fio_size_mib=16, iperf_seconds=1, iperf_streams=2, gpu_seconds=10)


def host_with_scratch(bed: Testbed, name: str) -> SshdHost:
    h = bed.add_netns_host(name, [H100_SXM] * 8)
    h.set_gpu_report((GOLDEN / "dgx-h100.xml").read_text(), (GOLDEN / "dgx-h100-topo.txt").read_text())
    mnt = h.dir / "scratch"
    mnt.mkdir()
    dev = bed.loop_device(f"{name}-scratch", 48)
    subprocess.run(["mkfs.ext4", "-q", dev], check=True, capture_output=True)
    h.mount(dev, mnt)
    return h


def proxied(h: SshdHost, log: Path) -> Target:
    """The host reached through the stand-in proxy, as verify reaches a node behind IAP."""
    t = h.target()
    argv = expand_proxy(h.proxy_command(log), address=t.address, port=t.port, user=t.user, name=t.name)
    return dataclasses.replace(t, proxy=argv, peer_address=t.address)


def med(values: list[float]) -> str:
    return f"{values[len(values) // 2]:.0f}" if values else "-"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1,8,32")
    sizes = [int(x) for x in ap.parse_args().sizes.split(",")]
    profile = get_profile("fine-tuning", load_profiles())
    catalog = load_catalog()
    with Testbed() as bed:
        hosts = [host_with_scratch(bed, f"v{i:02d}") for i in range(max(sizes))]
        print(
            f"verify bench: fio {CAPS.fio_seconds}s x 3 on {CAPS.fio_size_mib} MiB, iperf3 {CAPS.iperf_seconds}s "
            f"x {CAPS.iperf_streams} streams; hosts in their own netns"
        )
        print(
            f"{'hosts':>5} {'via':>6} {'wall s':>8} {'per host s':>11} {'delivers/short/unverified/error':>32} "
            f"{'median fio read MB/s':>21} {'median iperf3 Gbps':>19}"
        )
        log = Path(tempfile.mkdtemp(prefix="verify-bench-")) / "proxy.log"
        for n in sizes:
            group = hosts[:n]
            walls = {}
            for via in ("direct", "proxy"):
                targets = [h.target() if via == "direct" else proxied(h, log) for h in group]
                start = time.monotonic()
                results = verify_fleet(
                    [(t, h.user_key) for t, h in zip(targets, group, strict=True)],
                    Promise(profile=profile, catalog=catalog),
                    CAPS,
                    scratch={h.name: str(h.dir / "scratch") for h in group},  # mounted in each host's namespace
                )
                walls[via] = wall = time.monotonic() - start
                report(n, via, wall, results)
            print(f"{n:>5} {'ratio':>6} {walls['proxy'] / walls['direct']:>8.2f}  (proxy / direct wall time)")


def report(n: int, via: str, wall: float, results: list[HostVerify]) -> None:
    counts = [sum(1 for r in results if r.status == s) for s in ("delivers", "short", "unverified", "error")]
    reads = sorted(x.delivered for r in results for x in r.lines if x.dimension == "scratch seq read" and x.delivered)
    nets = sorted(x.delivered for r in results for x in r.lines if x.dimension == "network iperf3" and x.delivered)
    print(
        f"{n:>5} {via:>6} {wall:>8.1f} {wall / n:>11.2f} {'/'.join(map(str, counts)):>32} "
        f"{med(reads):>21} {med(nets):>19}"
    )
    for r in results:  # what kept a host from a full measurement, by name
        missing = [p for p in r.problems if "not measured" in p and "no other reachable" not in p]
        if r.error or missing:
            print(f"      {r.name}: {r.error or '; '.join(missing)}")


if __name__ == "__main__":
    main()
