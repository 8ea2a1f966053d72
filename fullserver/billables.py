"""The network resources an environment is billed for beside its machines, decided once here.

Components used to decide these on their own (a NAT gateway when nodes had no public address, a
load balancer's addresses) and the plan never priced them. Now the core decides them from the
spec (``decide``), the spec carries them (``EnvironmentSpec.billables``), the components build
exactly what it says, and ``network_lines`` prices each one from the network catalog
(``fullserver/catalog/data/network.yaml``) so ``fullserver plan``'s total is the bill.

Design notes: docs/design/core.md.
"""

from __future__ import annotations

from fullserver.platforms import pool_member, rules_for
from fullserver.spec import Billables, EnvironmentSpec


def decide(spec: EnvironmentSpec) -> Billables:
    """The billed network resources of a spec (module docstring); none where the platform bills
    no network of its own (bare metal)."""
    if spec.kube is not None:
        return _kube(spec)
    network = rules_for(spec.platform).network
    if network is None:
        return Billables()
    n = spec.machines
    public = spec.network.public_ip
    serving = spec.serving is not None
    common = {
        "machines": n,
        "nat": not public,
        "node_public_ips": n if public else 0,
        "nat_public_ips": 0 if public else 1,
        "load_balancer": network.load_balancer if serving else "",
        "health_checks": 1 if serving else 0,
    }
    return Billables(**{**common, **network.layout(spec)})  # the cloud's part over the common one


def _kube(spec: EnvironmentSpec) -> Billables:
    """Node pools: nothing of an attached cluster's network is this environment's. A created GKE
    cluster's private nodes pull images through its Cloud NAT (one automatic address); a created
    EKS cluster's nodes run in its own VPC's private subnets, in ``PlatformRules.cluster_zones``
    zones, and reach out through one NAT gateway with its Elastic IP (``components.eks.network``)."""
    kube = spec.kube
    assert kube is not None
    n = spec.machines
    rules = rules_for(kube.platform)
    if not kube.create_cluster:
        pools = Billables(machines=n)
    else:
        # Every VM behind the NAT uses it: Cloud NAT bills each one, the system pool's nodes too.
        _, system = pool_member(kube.provider).system_pool(kube.zone)
        pools = Billables(machines=n + system, nat=True, nat_public_ips=1, zones=rules.cluster_zones)
    if spec.serving is None or rules.network is None:
        return pools
    # Serving: the LoadBalancer Service's load balancer and its health check (fullserver.kube.serve).
    lb = {"load_balancer": rules.network.load_balancer, "health_checks": 1, **rules.network.layout(spec)}
    return pools.model_copy(update=lb)
