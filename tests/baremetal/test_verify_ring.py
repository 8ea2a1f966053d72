"""verify's iperf3 ring targets each server at its peer address (issue 12: hosts behind a proxy).

A host reached through IAP or Session Manager has a node name as ``address``, which only the
proxy understands; the other hosts reach it at its ``peerAddress``."""

from __future__ import annotations

import json
from pathlib import Path

from fullserver.baremetal.inventory import Target, inventory_from_data
from fullserver.baremetal.measure import Caps
from fullserver.baremetal.verify import Leg, Promise, ring, verify_fleet
from fullserver.catalog import load_catalog
from fullserver.profiles import get_profile, load_profiles
from tests.baremetal.testbed import Testbed

CAPS = Caps(fio_seconds=1, fio_size_mib=16, iperf_seconds=1, iperf_streams=2, gpu_seconds=10)
PROXY = ("gcloud", "compute", "start-iap-tunnel")


def _node(name: str, peer: str = "", address: str = "") -> Target:
    return Target(name, address or f"node-{name}", proxy=PROXY, peer_address=peer)


def test_the_client_goes_to_the_servers_peer_address_never_its_node_name() -> None:
    hosts = [_node("a", "10.128.0.7"), _node("b", "10.128.0.8"), _node("c", "10.128.0.9")]
    assert ring(hosts, ["a", "b", "c"], CAPS) == [
        Leg("a", "b", "10.128.0.8", CAPS.iperf_port),
        Leg("b", "c", "10.128.0.9", CAPS.iperf_port),
        Leg("c", "a", "10.128.0.7", CAPS.iperf_port),
    ]


def test_without_a_peer_address_the_address_is_the_peer() -> None:
    hosts = [Target("a", "203.0.113.10"), Target("b", "203.0.113.11")]
    assert [(leg.dst, leg.address) for leg in ring(hosts, ["a", "b"], CAPS)] == [
        ("b", "203.0.113.11"),
        ("a", "203.0.113.10"),
    ]


def test_ports_are_told_apart_by_peer_address_not_by_address() -> None:
    # one address (a proxy's node name reused, or the test bed's loopback) but two peer addresses:
    # two machines, one port each is enough
    same_address = [_node("a", "10.0.0.1", "gw"), _node("b", "10.0.0.2", "gw")]
    assert {leg.port for leg in ring(same_address, ["a", "b"], CAPS)} == {CAPS.iperf_port}
    # two node names behind one peer address (ports forwarded to one machine): servers must not collide
    same_peer = [_node("a", "10.0.0.1"), _node("b", "10.0.0.1"), _node("c", "10.0.0.3")]
    legs = ring(same_peer, ["a", "b", "c"], CAPS)
    assert [(leg.dst, leg.port) for leg in legs] == [
        ("b", CAPS.iperf_port + 0),
        ("c", CAPS.iperf_port),
        ("a", CAPS.iperf_port + 2),
    ]


def test_only_reachable_hosts_are_in_the_ring() -> None:
    hosts = [_node("a", "10.0.0.1"), _node("b", "10.0.0.2"), _node("c", "10.0.0.3")]
    assert ring(hosts, ["a", "c"], CAPS) == [
        Leg("a", "c", "10.0.0.3", CAPS.iperf_port),
        Leg("c", "a", "10.0.0.1", 5201),
    ]
    assert ring(hosts, ["b"], CAPS) == []


def test_iperf3_through_proxies_reaches_each_host_at_its_peer_address(bed: Testbed, tmp_path: Path) -> None:
    """Two namespace hosts known by node names only their proxy resolves; iperf3 runs between
    their real addresses (the ring would fail to resolve ``node-verify-pa`` if it used it)."""
    a, b = bed.add_netns_host("verify-pa"), bed.add_netns_host("verify-pb")
    log = tmp_path / "proxy.log"
    hosts = [
        {
            "name": h.name,
            "address": f"node-{h.name}",
            "proxyCommand": h.proxy_command(log),
            "peerAddress": h.address,
            "hostKeys": [h.host_key_line],
        }
        for h in (a, b)
    ]
    inv = inventory_from_data({"hosts": hosts}, tmp_path, "inv.yaml")
    plain = tmp_path / "not-a-mount"
    plain.mkdir()
    promise = Promise(profile=get_profile("fine-tuning", load_profiles()), catalog=load_catalog(), scratch=str(plain))
    try:
        results = verify_fleet(
            [(inv.target(e), h.user_key) for e, h in zip(inv.entries, (a, b), strict=True)], promise, CAPS
        )
    finally:
        a.stop()
        b.stop()
    by = {r.name: r for r in results}
    for src, dst in (("verify-pa", "verify-pb"), ("verify-pb", "verify-pa")):
        nets = [x for x in by[src].lines if x.dimension == "network iperf3"]
        assert len(nets) == 1, by[src].problems  # not "iperf3 to ... failed: cannot resolve node-..."
        net = nets[0]
        assert net.delivered is not None and net.delivered > 0, by[src]
        assert net.detail.startswith(f"to {dst}, 2 streams")
        assert by[src].address == f"node-{src}:22"  # the host as the inventory names it
    runs = [json.loads(line) for line in log.read_text().splitlines()]
    # every session went through a proxy: one per host to measure, then a server's and a client's per leg
    assert sorted(r["argv"][-4] for r in runs) == ["node-verify-pa"] * 3 + ["node-verify-pb"] * 3
