"""AWS compute nodes from a stack's resources: instances, spot instance requests, Auto Scaling
groups and spot fleets, each read together with the launch template it launches from."""

from __future__ import annotations

from collections.abc import Sequence

from pulumi_policy import PolicyResource

from fullserver.platform import Platform
from fullserver.platforms.aws import AMI_VOLUME_KIND, ROOT_DEVICES, UNSET_VOLUME_KIND
from policy.labels import labels_of
from policy.nodes import Disk, DiskReader, Node, NodeReader, TemplateOf, disks_gib, referenced
from policy.offers import offer as offer_of
from policy.resources import (
    AWS_ASG,
    AWS_INSTANCE,
    AWS_LAUNCH_TEMPLATE,
    AWS_SPOT_FLEET,
    AWS_SPOT_REQUEST,
    AWS_VOLUME,
    AWS_VOLUME_ATTACHMENT,
    as_list,
    number,
    plain,
    prop,
)


def aws_region(resource: PolicyResource, *more: PolicyResource) -> str | None:
    """The region a resource's own ``region`` (or the first of ``more`` that has one) names, else its provider's."""
    for r in (resource, *more):
        region = plain(r.props.get("region"))
        if isinstance(region, str) and region:
            return region
    prov = resource.provider
    region = plain(prov.props.get("region")) if prov is not None else None
    return region if isinstance(region, str) and region else None


def launch_template_disks(lt: PolicyResource | None) -> tuple[list[Disk], float]:
    """A launch template's EBS volumes (each launched machine gets them) and its non-root GiB."""
    if lt is None:
        return [], 0.0
    disks: list[Disk] = []
    attached = 0.0
    for m in as_list(lt.props.get("blockDeviceMappings")):
        ebs = prop(m, "ebs")
        if ebs is None or prop(m, "virtualName"):
            continue
        gib = number(prop(ebs, "volumeSize")) or 0.0
        disks.append(
            Disk(
                "aws",
                str(prop(ebs, "volumeType") or AMI_VOLUME_KIND),
                gib,
                number(prop(ebs, "iops")) or 0.0,
                number(prop(ebs, "throughput")) or 0.0,
            )
        )
        if prop(m, "deviceName") not in ROOT_DEVICES:  # a root volume is not attached storage
            attached += gib
    return disks, attached


def aws_volume(r: PolicyResource) -> Disk:
    """A standalone EBS volume (``aws:ebs/volume:Volume``) as the budget prices it."""
    return Disk(
        "aws",
        str(plain(r.props.get("type")) or UNSET_VOLUME_KIND),
        number(r.props.get("size")) or 0.0,
        number(r.props.get("iops")) or 0.0,
        number(r.props.get("throughput")) or 0.0,
    )


def launch_template_of(resource: PolicyResource, resources: Sequence[PolicyResource]) -> PolicyResource | None:
    """The launch template an instance, spot request or Auto Scaling group launches from, if any."""
    for key in ("launchTemplate", "mixedInstancesPolicy"):
        found = referenced(resource, key, (AWS_LAUNCH_TEMPLATE,), resources)
        if found:
            return found[0]
    return None


def aws_node(r: PolicyResource, resources: Sequence[PolicyResource]) -> Node:
    """An instance or a spot instance request (one machine), an Auto Scaling group
    (``desiredCapacity`` machines), each with the launch template it launches from, or a launch
    template nothing in the stack launches yet (no machines: judged for balance, costs nothing)."""
    lt = r if r.resource_type == AWS_LAUNCH_TEMPLATE else launch_template_of(r, resources)
    itype = plain(r.props.get("instanceType")) or (plain(lt.props.get("instanceType")) if lt is not None else None)
    if r.resource_type == AWS_ASG and not itype:
        overrides = as_list(prop(r.props, "mixedInstancesPolicy", "launchTemplate", "overrides"))
        itype = prop(overrides[0], "instanceType") if overrides else None
    offer = offer_of(Platform.AWS_GPU, str(itype)) if itype else None
    disks, attached = launch_template_disks(lt)
    labels = {**(labels_of(lt.props) if lt is not None else {}), **labels_of(r.props)}
    region = aws_region(r, *([lt] if lt is not None else []))
    shape = str(itype) if itype else "no instanceType"
    node = Node(r, Platform.AWS_GPU, shape, offer, region, labels, disks=disks, attached_gib=attached)
    if r.resource_type == AWS_LAUNCH_TEMPLATE:
        node.count = 0.0
        return node
    if r.resource_type in (AWS_INSTANCE, AWS_SPOT_REQUEST):
        market = prop(r.props, "instanceMarketOptions", "marketType") or (
            prop(lt.props, "instanceMarketOptions", "marketType") if lt is not None else None
        )
        spot = r.resource_type == AWS_SPOT_REQUEST or str(market or "").lower() == "spot"
        node.spot_count = 1.0 if spot else 0.0
        root = prop(r.props, "rootBlockDevice")
        if root is not None:
            node.disks.append(
                Disk("aws", str(prop(root, "volumeType") or AMI_VOLUME_KIND), number(prop(root, "volumeSize")) or 0.0)
            )
        for ebs in as_list(r.props.get("ebsBlockDevices")):
            gib = number(prop(ebs, "volumeSize")) or 0.0
            node.disks.append(Disk("aws", str(prop(ebs, "volumeType") or UNSET_VOLUME_KIND), gib))
            node.attached_gib += gib
        for att in resources:
            if att.resource_type == AWS_VOLUME_ATTACHMENT and r in referenced(
                att, "instanceId", (AWS_INSTANCE, AWS_SPOT_REQUEST), resources
            ):
                node.attached_gib += disks_gib(referenced(att, "volumeId", (AWS_VOLUME,), resources))
        return node
    desired = number(r.props.get("desiredCapacity"))
    node.count = desired if desired is not None else (number(r.props.get("minSize")) or 0.0)
    if prop(r.props, "targetGroupArns"):
        # A serving group scales with its load up to maxSize: budgets hold to the most it can run,
        # as fullserver plan does (CostEstimate.usd_month_peak).
        node.count = max(node.count, number(r.props.get("maxSize")) or 0.0)
    mixed = prop(r.props, "mixedInstancesPolicy")
    if mixed is not None:
        dist = prop(mixed, "instancesDistribution")
        base = number(prop(dist, "onDemandBaseCapacity")) or 0.0
        pct = number(prop(dist, "onDemandPercentageAboveBaseCapacity"))
        pct = 100.0 if pct is None else pct
        node.spot_count = node.count - (min(node.count, base) + max(0.0, node.count - base) * pct / 100)
    return node


def spot_fleet_node(r: PolicyResource) -> Node:
    """A spot fleet: ``targetCapacity`` units of a mix of types the fleet picks at launch time,
    which a list price per type cannot settle: never priced."""
    types = sorted(
        {str(t) for spec in as_list(r.props.get("launchSpecifications")) if (t := prop(spec, "instanceType"))}
    )
    count = number(r.props.get("targetCapacity")) or 1.0
    shape = f"spot fleet of {', '.join(types) or 'launch template configs'}"
    node = Node(r, Platform.AWS_GPU, shape, None, aws_region(r), labels_of(r.props), count=count, spot_count=count)
    node.why_unpriced = (
        "a spot fleet's cost depends on the types and weights it picks, which this policy does not model"
    )
    return node


def _launched(r: PolicyResource, resources: Sequence[PolicyResource], used_templates: set[str]) -> list[Node]:
    """An instance, a spot request or a group, or a launch template nothing launches (a launch
    template something launches is read with what launches it)."""
    if r.resource_type == AWS_LAUNCH_TEMPLATE and r.urn in used_templates:
        return []
    return [aws_node(r, resources)]


def _fleet(r: PolicyResource, resources: Sequence[PolicyResource], used_templates: set[str]) -> list[Node]:
    return [spot_fleet_node(r)]


NODE_READERS: dict[str, NodeReader] = {
    **dict.fromkeys((AWS_INSTANCE, AWS_SPOT_REQUEST, AWS_ASG, AWS_LAUNCH_TEMPLATE), _launched),
    AWS_SPOT_FLEET: _fleet,
}
"""The resources that run EC2 machines (``policy.stack_nodes``)."""
LAUNCHERS: dict[str, TemplateOf] = dict.fromkeys((AWS_INSTANCE, AWS_SPOT_REQUEST, AWS_ASG), launch_template_of)
"""The resources whose launch template is read with them, not as a node of its own."""
DISK_READERS: dict[str, DiskReader] = {AWS_VOLUME: lambda r: (aws_volume(r), aws_region(r))}
"""An EBS volume and its region (``policy.budget``)."""
