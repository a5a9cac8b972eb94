"""An EC2 instance, or a launch template version, as the model's node: its own values (id, state, NIC ids) apart,
its shape read from the rest once per pool (sources/pools.py)."""

from __future__ import annotations

import functools
import re
from typing import Any

from fabriccheck.model import FlatInterface, Node, NodeShape, NodeSpec, Placement
from fabriccheck.providers.aws.support import CAPACITY_BLOCK, CAPACITY_RESERVATION, OUTPOST, PLACEMENT_GROUP
from fabriccheck.sources.items import INTERFACE_FACTS, unknown_because
from fabriccheck.sources.pools import Pools
from fabriccheck.sources.pools import node as node_of

# Every region name botocore's partitions use: us-east-1, us-gov-west-1, cn-north-1, us-isob-east-1,
# eu-isoe-west-1, eusc-de-east-1 ... (two to four letters, words, a number). A zone is its region plus a
# letter, or a local / Wavelength zone suffix.
REGION = re.compile(r"^([a-z]{2,4}(?:-[a-z]+)+-\d+)")


def region_of_zone(zone: str | None) -> str | None:
    if not zone:
        return None
    match = REGION.match(zone)
    return match.group(1) if match else None


def _tags(raw: Any) -> dict[str, str]:
    return {str(t["Key"]): str(t.get("Value", "")) for t in raw or ()}


# The node facts made from an instance's NICs (its EFA security reads their groups).
NIC_FACTS = (*INTERFACE_FACTS, "efa_security", "efa_security_groups")


def _placement(placement: dict[str, Any], inst: dict[str, Any]) -> list[dict[str, str]]:
    found = []
    if placement.get("GroupName"):
        found.append({"kind": PLACEMENT_GROUP, "id": placement["GroupName"]})
    if inst.get("CapacityBlockId"):
        found.append({"kind": CAPACITY_BLOCK, "id": inst["CapacityBlockId"]})
    elif inst.get("InstanceLifecycle") == "capacity-block":
        # A Capacity Block instance says so itself, even when its reservation is not listed.
        found.append({"kind": CAPACITY_BLOCK, "id": inst.get("CapacityReservationId") or inst["CapacityBlockOf"]})
    if inst.get("CapacityReservationId"):
        found.append({"kind": CAPACITY_RESERVATION, "id": inst["CapacityReservationId"]})
    if inst.get("OutpostArn"):
        found.append({"kind": OUTPOST, "id": inst["OutpostArn"]})
    return found


def instance_node(inst: dict[str, Any], region_hint: str | None, account: str, pools: Pools) -> Node:
    """An instance: its id, state and NIC ids are its own; its shape is read from what else the normalizer reads of
    it (`_shape_source`), once per pool (sources/pools.py)."""
    instance_id = _text(inst["InstanceId"], "InstanceId")
    state = _text((inst.get("State") or {}).get("Name", "running"), "State.Name")
    nics = inst.get("NetworkInterfaces") or ()
    interface_ids = tuple(_text(nic["NetworkInterfaceId"], "NetworkInterfaceId") for nic in nics)
    read = functools.partial(_shape, region_hint=region_hint, account=account)
    shape = pools.shape(_shape_source(inst), read, (account, region_hint))
    unknown = {} if nics else _unlisted_interfaces(instance_id, state, inst.get("VpcId"))
    return node_of(instance_id, shape, state=state, interface_ids=interface_ids, unknown=unknown)


def _text(value: Any, field: str) -> str:
    if type(value) is not str:
        raise TypeError(f"field {field} is {type(value).__name__}, not a string")
    return value


def _shape_source(inst: dict[str, Any]) -> dict[str, Any]:
    """What an instance's shape is read from: the fields `_shape` reads, a public address only as whether there is
    one (the address itself is the instance's own)."""
    nics = inst.get("NetworkInterfaces")
    source = {
        "InstanceType": inst["InstanceType"],
        "ImageId": inst.get("ImageId"),
        "VpcId": inst.get("VpcId"),
        "Placement": _placement_source(inst.get("Placement")),
        "Tags": inst.get("Tags"),
        "CapacityBlockId": inst.get("CapacityBlockId"),
        "InstanceLifecycle": inst.get("InstanceLifecycle"),
        "CapacityReservationId": inst.get("CapacityReservationId"),
        "OutpostArn": inst.get("OutpostArn"),
        "NetworkInterfaces": [_nic_source(nic) for nic in nics] if isinstance(nics, list) else nics,
    }
    if inst.get("InstanceLifecycle") == "capacity-block" and not inst.get("CapacityReservationId"):
        source["CapacityBlockOf"] = inst["InstanceId"]  # a Capacity Block that names no reservation: its own
    return source


def _nic_source(nic: Any) -> Any:
    """What a NIC's part of the shape is read from, in `_shape`'s order: type, VPC, subnet, groups, whether it has a
    public address, network card and device (its id, addresses and attachment id are its own)."""
    if not isinstance(nic, dict):
        return nic
    association = nic.get("Association")
    attachment = nic.get("Attachment") or {}
    get = attachment.get if isinstance(attachment, dict) else {}.get
    return (
        nic.get("InterfaceType"),
        nic.get("VpcId"),
        nic.get("SubnetId"),
        nic.get("Groups"),
        bool(association.get("PublicIp")) if association else False,
        get("NetworkCardIndex"),
        get("DeviceIndex"),
    )


def _placement_source(placement: Any) -> Any:
    """Where an instance is placed (its zone and placement group); a dedicated host's id is its own."""
    if not isinstance(placement, dict):
        return placement
    return {"AvailabilityZone": placement.get("AvailabilityZone"), "GroupName": placement.get("GroupName")}


def _shape(source: dict[str, Any], region_hint: str | None, account: str) -> NodeShape:
    placement = source.get("Placement") or {}
    zone = placement.get("AvailabilityZone")
    vpc = source.get("VpcId")
    interfaces = []
    for nic in source.get("NetworkInterfaces") or ():
        if not isinstance(nic, tuple):
            raise TypeError(f"a network interface is {type(nic).__name__}, not an object")
        interface_type, nic_vpc, subnet, groups, public, card, device = nic
        interfaces.append(
            {
                "interface_type": interface_type or "interface",
                "network": nic_vpc or vpc,
                "subnet": subnet,
                "security_groups": [g["GroupId"] for g in groups] if groups else [],
                "public_ip": public,
                "network_card_index": card or 0,
                "device_index": device or 0,
            }
        )
    # One validation of the whole shape (pydantic-core checks the nested interfaces in one pass).
    return NodeShape.model_validate(
        {
            "provider": "aws",
            "account": account,
            "region": region_of_zone(zone) or region_hint or "unknown",
            "zone": zone,
            "instance_type": source["InstanceType"],
            "image": source.get("ImageId"),
            "tags": _tags(source.get("Tags")),
            "interfaces": interfaces,
            "placement": _placement(placement, source),
            # An instance listed without interfaces (a pending launch) keeps its own VpcId: its primary
            # interface's, which the interfaces it would name will have.
            "network": None if interfaces or not isinstance(vpc, str) or not vpc else vpc,
        }
    )


def _unlisted_interfaces(instance_id: Any, state: Any, vpc: Any) -> dict[str, str]:
    """What is unknown of an instance EC2 lists without network interfaces (a pending launch before they attach,
    `NetworkInterfaces` absent or []): which EFA interfaces and security groups it will have, so the rules that
    read them are not judged rather than "no EFA". Its VPC is the instance's own VpcId (the primary interface's;
    the normalizer keeps it); with none, the network is unknown too, never a VPC of its own."""
    why = f"EC2 lists no network interfaces for {instance_id} ({state}), so its EFA interfaces are not known yet"
    unknown = unknown_because(tuple(f for f in NIC_FACTS if f != "network"), why)
    if not (isinstance(vpc, str) and vpc):
        unknown["network"] = f"EC2 lists neither network interfaces nor a VpcId for {instance_id} ({state})"
    return unknown


def template_spec(item: dict[str, Any], region: str, account: str, is_latest: bool) -> Node:
    """A launch template version -> the node it would launch (the same NIC mapping as a running node)."""
    data = item.get("LaunchTemplateData") or {}
    template_id = item["LaunchTemplateId"]
    version = int(item.get("VersionNumber") or 0)
    is_default = bool(item.get("DefaultVersion"))
    role = "default and latest" if is_default and is_latest else "default" if is_default else "latest"
    group = (data.get("Placement") or {}).get("GroupName")
    return Node.flat(
        id=f"{template_id}:{version}",
        provider="aws",
        account=account,
        region=region,
        origin="template",
        spec=NodeSpec(
            kind="launch-template",
            name=item.get("LaunchTemplateName") or template_id,
            version=str(version),
            role=role,
        ),
        instance_type=data.get("InstanceType"),
        image=data.get("ImageId"),
        tags={},
        interfaces=[
            FlatInterface(
                id=f"{template_id}:{version}/nic{i}",
                interface_type=n.get("InterfaceType") or "interface",
                subnet=n.get("SubnetId"),
                security_groups=list(n.get("Groups") or ()),
                # Unset means "the subnet decides": not a request for a public address.
                public_ip=n.get("AssociatePublicIpAddress"),
                network_card_index=n.get("NetworkCardIndex") or 0,
                device_index=n.get("DeviceIndex") or 0,
            )
            for i, n in enumerate(data.get("NetworkInterfaces") or ())
        ],
        placement=[Placement(kind=PLACEMENT_GROUP, id=group)] if group else [],
    )
