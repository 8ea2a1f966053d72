"""How nodes are reached and how they reach out: the access decisions every cloud shares.

Each environment gets its own network rather than the project's ``default`` one, because the
default network's firewall opens SSH (and RDP, ICMP) to 0.0.0.0/0 and the default VPC gives
every instance a public address. The networks themselves are each cloud's
(``components.aws.network``, ``components.gcp.network``); what they decide alike is here.
"""

from __future__ import annotations

from components.args import AccessArgs


def direct_ssh(access: AccessArgs) -> bool:
    """Nodes are reached directly over SSH: they have an external address and SSH is open to the
    configured ranges (a person's machine is in one of them). Otherwise through IAP (GCP) or
    Session Manager (AWS)."""
    return access["public_ip"] and bool(access["ssh_source_ranges"])


def nat_egress(access: AccessArgs) -> bool:
    """Nodes reach the internet through NAT: the core's decision (``billables.nat``, priced in the
    plan), or, for args written by hand, whenever nodes have no public address."""
    return access.get("nat", not access["public_ip"])
