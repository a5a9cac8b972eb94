"""AWS answers -> the model: the one EC2 call table, and the pure function from `aws ec2 describe-*` answers
(the very dicts boto3 returns and the CLI prints) to nodes, specs and the `aws` namespace.

Live runs and dumps share this half. `CALLS` is the single list of EC2 calls: the live fetch issues them,
dumps are named after them, and the IAM policy lists them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from fabriccheck.catalog import catalog_entry
from fabriccheck.cloud import NVLINK_DOMAIN
from fabriccheck.errors import FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.model import (
    UNKNOWN_ACCOUNT,
    Capability,
    CollectionError,
    FabricKind,
    FlatInterface,
    Node,
    NodeShape,
    NodeSpec,
    Placement,
    fact_key,
)
from fabriccheck.providers.aws import values
from fabriccheck.providers.aws.support import CAPACITY_BLOCK, CAPACITY_RESERVATION, OUTPOST, PLACEMENT_GROUP
from fabriccheck.resources.aws import (
    CapacityReservation,
    PlacementGroup,
    SecurityGroup,
    SecurityRule,
    Subnet,
)
from fabriccheck.sources.common import BAD_RESPONSE, Scope, Shape, describe, unexpected_shape
from fabriccheck.sources.items import INTERFACE_FACTS, ITEM_ERRORS, named, salvage, unknown_because
from fabriccheck.sources.pools import Pools
from fabriccheck.sources.pools import node as node_of


@dataclass(frozen=True)
class Ec2Call:
    operation: str  # EC2 API name, also the IAM action after "ec2:"
    result_key: str  # top-level key of the answer (and of the CLI's JSON)
    fact: str  # what it tells us, recorded in Inventory.collected (model.fact_key)
    required: bool  # missing -> the run is incomplete; optional ones have a fallback or are opt-in

    @property
    def dump_file(self) -> str:
        # DescribeLaunchTemplateVersions -> describe-launch-template-versions.json, as the CLI names it
        return re.sub(r"(?<!^)(?=[A-Z])", "-", self.operation).lower() + ".json"

    @property
    def method(self) -> str:
        return re.sub(r"(?<!^)(?=[A-Z])", "_", self.operation).lower()


INSTANCES = Ec2Call("DescribeInstances", "Reservations", "instances", True)
INSTANCE_TYPES = Ec2Call("DescribeInstanceTypes", "InstanceTypes", "instance_types", False)
PLACEMENT_GROUPS = Ec2Call("DescribePlacementGroups", "PlacementGroups", "placement_groups", True)
SECURITY_GROUPS = Ec2Call("DescribeSecurityGroups", "SecurityGroups", "security_groups", True)
SUBNETS = Ec2Call("DescribeSubnets", "Subnets", "subnets", True)
LAUNCH_TEMPLATES = Ec2Call("DescribeLaunchTemplateVersions", "LaunchTemplateVersions", "launch_templates", True)
CAPACITY_RESERVATIONS = Ec2Call("DescribeCapacityReservations", "CapacityReservations", "capacity_reservations", True)
TOPOLOGY = Ec2Call("DescribeInstanceTopology", "Instances", "topology", False)

CALLS = (
    INSTANCES,
    INSTANCE_TYPES,
    PLACEMENT_GROUPS,
    SECURITY_GROUPS,
    SUBNETS,
    LAUNCH_TEMPLATES,
    CAPACITY_RESERVATIONS,
    TOPOLOGY,
)

# Every region name botocore's partitions use: us-east-1, us-gov-west-1, cn-north-1, us-isob-east-1,
# eu-isoe-west-1, eusc-de-east-1 ... (two to four letters, words, a number). A zone is its region plus a
# letter, or a local / Wavelength zone suffix.
REGION = re.compile(r"^([a-z]{2,4}(?:-[a-z]+)+-\d+)")
ACCOUNT_ID = re.compile(r"^\d{12}$")
_ARN_ACCOUNT = re.compile(r"^arn:[^:]+:[^:]*:[^:]*:(\d{12}):")


def region_of_zone(zone: str | None) -> str | None:
    if not zone:
        return None
    match = REGION.match(zone)
    return match.group(1) if match else None


def _arn_account(arn: Any) -> str | None:
    match = _ARN_ACCOUNT.match(arn) if isinstance(arn, str) else None
    return match.group(1) if match else None


def _tags(raw: Any) -> dict[str, str]:
    return {str(t["Key"]): str(t.get("Value", "")) for t in raw or ()}


# NetworkPerformance as EC2 words it: "3200 Gigabit", "4x 100 Gigabit", "Up to 25 Gigabit", "Moderate".
_PERFORMANCE = re.compile(r"^(?:(\d+)x\s*)?(?:Up to\s+)?(\d+(?:\.\d+)?)\s*Gigabit$")


def _total_gbps(performance: Any) -> float | None:
    match = _PERFORMANCE.match(performance.strip()) if isinstance(performance, str) else None
    return int(match.group(1) or 1) * float(match.group(2)) if match else None


def capability_from_instance_type(item: dict[str, Any], source: str) -> Capability:
    """DescribeInstanceTypes item -> Capability (the same mapping the shipped AWS table was built with).

    Bandwidth as AWS defines it: `NetworkInfo.NetworkPerformance` is the instance's total. The per-card
    `PeakBandwidthInGbps` / `BaselineBandwidthInGbps` figures do not add up to it: on g6e.48xlarge each of the
    4 cards says 400 while the instance has 400 in all (the cards share it), on p6-b200 each of the 8 cards
    says 200 while the instance has 3200. So the fabric's bandwidth is the total (the sum of the cards only
    when the total is not stated), and card 0, which carries the primary ENA interface, gets its own figure
    but never more than an even share of the total.

    Each value read must have the type the API gives it (values.py): an EfaSupported of "yes", a count of "4"
    raise UnreadableValue, and the type's capability is unknown rather than "no EFA"."""
    network = item.get("NetworkInfo") or {}
    cards = network.get("NetworkCards") or []
    efa = bool(values.flag(network, "EfaSupported", "NetworkInfo.EfaSupported"))
    card_gbps = [_card_gbps(card, i) for i, card in enumerate(cards)]
    total = _total_gbps(network.get("NetworkPerformance")) or (sum(card_gbps) or None)
    ethernet = card_gbps[0] if card_gbps and card_gbps[0] else total
    if ethernet and total and len(cards) > 1:
        ethernet = min(ethernet, total / len(cards))
    gpus = (item.get("GpuInfo") or {}).get("Gpus") or []
    neuron = (item.get("NeuronInfo") or {}).get("NeuronDevices") or []
    accelerators = sum(values.count(g, "Count", f"GpuInfo.Gpus[{i}].Count") or 0 for i, g in enumerate(gpus))
    accelerators += sum(
        values.count(n, "Count", f"NeuronInfo.NeuronDevices[{i}].Count") or 0 for i, n in enumerate(neuron)
    )
    name = (gpus[0].get("Name") if gpus else None) or (neuron[0].get("Name") if neuron else None)
    efa_info = network.get("EfaInfo") or {}
    most = values.count(efa_info, "MaximumEfaInterfaces", "NetworkInfo.EfaInfo.MaximumEfaInterfaces", required=efa)
    return Capability(
        instance_type=item["InstanceType"],
        provider="aws",
        fabric=FabricKind.EFA if efa else FabricKind.NONE,
        fabric_interfaces=(most or 0) if efa else 0,
        fabric_gbps=total if efa else None,
        ethernet_gbps=ethernet or None,
        network_cards=values.count(network, "MaximumNetworkCards", "NetworkInfo.MaximumNetworkCards"),
        accelerators=accelerators,
        accelerator_name=name,
        source=source,
    )


def _card_gbps(card: dict[str, Any], index: int) -> float:
    field = f"NetworkInfo.NetworkCards[{index}]"
    peak = values.number(card, "PeakBandwidthInGbps", f"{field}.PeakBandwidthInGbps")
    return peak or values.number(card, "BaselineBandwidthInGbps", f"{field}.BaselineBandwidthInGbps") or 0.0


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


def _node(inst: dict[str, Any], region_hint: str | None, account: str, pools: Pools) -> Node:
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
    unknown = unknown_because(tuple(f for f in _NIC_FACTS if f != "network"), why)
    if not (isinstance(vpc, str) and vpc):
        unknown["network"] = f"EC2 lists neither network interfaces nor a VpcId for {instance_id} ({state})"
    return unknown


def _rules(raw: list[Any]) -> list[SecurityRule]:
    return [
        SecurityRule(
            protocol=str(p.get("IpProtocol", "")),
            group_ids=[g["GroupId"] for g in p.get("UserIdGroupPairs") or () if "GroupId" in g],
            cidrs=[r["CidrIp"] for r in p.get("IpRanges") or () if "CidrIp" in r]
            + [r["CidrIpv6"] for r in p.get("Ipv6Ranges") or () if "CidrIpv6" in r],
        )
        for p in raw
    ]


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


def _each(shape: Shape, doc: Any, call: Ec2Call) -> Iterator[tuple[str, dict[str, Any]]]:
    for i, item in enumerate(shape.items(shape.obj(doc, "(top level)"), call.result_key, "")):
        yield f"{call.result_key}[{i}]", shape.obj(item, f"{call.result_key}[{i}]")


def owners(call: Ec2Call, doc: Any) -> set[str]:
    """The accounts an answer names as owners (OwnerId, or the account in an ARN), for dumps that hold
    several accounts in one file."""
    found: set[str] = set()
    if not isinstance(doc, dict) or not isinstance(doc.get(call.result_key), list):
        return found
    for item in doc[call.result_key]:
        if not isinstance(item, dict):
            continue
        owner = (
            item.get("OwnerId")
            or _arn_account(item.get("GroupArn"))
            or _arn_account(item.get("CreatedBy"))
            or _arn_account(item.get("CapacityReservationArn"))
        )
        if isinstance(owner, str) and owner:
            found.add(owner)
    return found


# Where an instance's fabric is read, and the node facts made from it (EFA security reads the NICs' groups).
_NIC_FIELDS = (("NetworkInterfaces",),)
_NIC_FACTS = (*INTERFACE_FACTS, "efa_security", "efa_security_groups")


class Normalizer:
    """Turns one region's answers (CLI-shaped dicts) into the inventory, in CALLS order.

    `account` is the scope of every answer when known (a live session's account, a dump's account folder, or
    the one account a dump's instances name). When it is None (one dump holding several accounts), each item
    is filed under its own owner, and a fact counts as collected only for the accounts its answer names.
    `where(call)` names the answer's origin for error messages (a dump file path, or the API call).
    """

    def __init__(
        self, inventory: Inventory, region: str | None, account: str | None, where: Callable[[Ec2Call], str]
    ) -> None:
        self.inventory = inventory
        self.region = region
        self.account = account
        self.where = where
        # A live answer is read item by item: a misshapen instance is recorded and the others stand.
        self.per_item = False
        self._pools = Pools()

    def add(self, call: Ec2Call, doc: Any, collected: bool = True) -> None:
        shape = Shape(self.where(call))
        scopes = self.add_items(call, _each(shape, doc, call))
        if collected:
            self.record(call, scopes)

    def add_items(self, call: Ec2Call, items: Iterable[tuple[str, dict[str, Any]]]) -> set[tuple[str, str]]:
        """One answer's items as they arrive, each with its path for error messages (a dump file read as a
        stream hands them over one at a time). Returns the (account, region) scopes the answer covers."""
        shape = Shape(self.where(call))
        with unexpected_shape(shape.where):
            return self._add(call, items, shape)

    def record(self, call: Ec2Call, scopes: set[tuple[str, str]]) -> None:
        """The answer was read in full: its fact counts as collected for these scopes."""
        self.inventory.collected += [fact_key("aws", a, r, call.fact) for a, r in sorted(scopes)]

    def _owner(self, item: dict[str, Any], *arns: str) -> str:
        if self.account:
            return self.account
        owner = item.get("OwnerId") or next((_arn_account(item.get(k)) for k in arns if item.get(k)), None)
        return str(owner) if owner else UNKNOWN_ACCOUNT

    def _unreadable(self, inst: Any, path: str, owner: str, where: str, exc: Exception) -> Node | None:
        """A live instance that cannot be read: an error names it and the field; when the fault is in its
        NICs, the node is kept without them, its interface facts unknown."""
        instance = named(inst, "InstanceId")
        what = f"instance {instance} ({path})" if instance else path
        scope = Scope("aws", owner, self.region)
        kept = salvage(lambda trimmed: _node(trimmed, self.region, owner, self._pools), inst, _NIC_FIELDS)
        if kept is None:
            self.inventory.errors.append(
                scope.error(INSTANCES.operation, BAD_RESPONSE, f"{where}: {what}: {describe(exc)}")
            )
            return None
        node, field = kept
        why = f"field {field} of the answer could not be read ({describe(exc)})"
        node.unknown.update(unknown_because(_NIC_FACTS, why))
        self.inventory.errors.append(
            scope.error(INSTANCES.operation, BAD_RESPONSE, f"{where}: {what}: {why}; its fabric facts are unknown")
        )
        return node

    def _unreadable_type(
        self, path: str, item: dict[str, Any], exc: values.UnreadableValue, where: str
    ) -> CollectionError:
        """A type whose capability cannot be read: its live answer is not used (the shipped catalog's row stands in
        where there is one; else the type is unknown and its clusters not judged), and the run is incomplete."""
        name = named(item, "InstanceType")
        fallback = (
            "the shipped catalog's row is used instead" if name and catalog_entry(name) else "its capability is unknown"
        )
        return Scope("aws", self.account or UNKNOWN_ACCOUNT, self.region).error(
            INSTANCE_TYPES.operation, BAD_RESPONSE, f"{where}: {path} ({name or 'no InstanceType'}): {exc}; {fallback}"
        )

    def _node_scopes(self) -> set[tuple[str, str]]:
        here = self.region or "unknown"
        scopes = {(n.account, n.region) for n in self.inventory.nodes if n.region == here}
        return scopes or {(self.account or UNKNOWN_ACCOUNT, here)}

    def _add(self, call: Ec2Call, items: Iterable[tuple[str, dict[str, Any]]], shape: Shape) -> set[tuple[str, str]]:
        region = self.region or "unknown"
        inventory = self.inventory
        if call is INSTANCES:
            scopes: set[tuple[str, str]] = set()
            for path, reservation in items:
                owner = self._owner(reservation)
                for i, inst in enumerate(shape.items(reservation, "Instances", path)):
                    try:
                        node = _node(shape.obj(inst, f"{path}.Instances[{i}]"), self.region, owner, self._pools)
                    except ITEM_ERRORS as exc:
                        if not self.per_item:
                            if isinstance(exc, (KeyError, TypeError, AttributeError, ValidationError)):
                                raise FabricCheckError(
                                    f"{shape.where}: {path}.Instances[{i}]: {describe(exc)}"
                                ) from None
                            raise
                        kept = self._unreadable(inst, f"{path}.Instances[{i}]", owner, shape.where, exc)
                        if kept is None:
                            continue
                        node = kept
                    inventory.nodes.append(node)
                    scopes.add((owner, node.region))
            return scopes or {(self.account or UNKNOWN_ACCOUNT, region)}
        if call is INSTANCE_TYPES:
            for path, item in items:
                try:
                    cap = capability_from_instance_type(item, "EC2 DescribeInstanceTypes (live answer)")
                except values.UnreadableValue as exc:
                    inventory.errors.append(self._unreadable_type(path, item, exc, shape.where))
                    continue
                inventory.capabilities[cap.instance_type] = cap
            return self._node_scopes()  # type facts are the same for every account
        if call is TOPOLOGY:
            read = [item for _, item in items]  # items arrive once
            topology = {item["InstanceId"]: [str(n) for n in item.get("NetworkNodes") or ()] for item in read}
            # An UltraServer instance's topology names its Capacity Block, which "identifies instances within the
            # UltraServer domain" (EC2 API reference, InstanceTopology.capacityBlockId): its NVLink domain.
            domains = {i["InstanceId"]: str(i["CapacityBlockId"]) for i in read if i.get("CapacityBlockId")}
            placed: dict[tuple[NodeShape, str], NodeShape] = {}  # the nodes of a pool in one domain share a shape
            for node in inventory.nodes:
                if node.region == region and node.id in topology:
                    node.network_nodes = topology[node.id]
                    if node.id in domains:
                        pooled = (node.shape, domains[node.id])
                        if pooled not in placed:
                            placement = (*node.placement, Placement(kind=NVLINK_DOMAIN, id=domains[node.id]))
                            placed[pooled] = node.shape.model_copy(update={"placement": placement})
                        node.shape = placed[pooled]
            return self._node_scopes()
        owned: set[str] = set()
        if call is PLACEMENT_GROUPS:
            for _, item in items:
                group = PlacementGroup(
                    account=self._owner(item, "GroupArn"),
                    region=region,
                    name=item["GroupName"],
                    strategy=item.get("Strategy", "unknown"),
                    state=item.get("State", "available"),
                    id=item.get("GroupId"),
                )
                inventory.aws.placement_groups.append(group)
                owned.add(group.account)
        elif call is SECURITY_GROUPS:
            for path, item in items:
                security_group = SecurityGroup(
                    account=self._owner(item),
                    region=region,
                    id=item["GroupId"],
                    name=item.get("GroupName"),
                    vpc_id=item.get("VpcId"),
                    ingress=_rules(shape.items(item, "IpPermissions", path)),
                    egress=_rules(shape.items(item, "IpPermissionsEgress", path)),
                )
                inventory.aws.security_groups.append(security_group)
                owned.add(security_group.account)
        elif call is SUBNETS:
            for _, item in items:
                subnet = Subnet(
                    account=self._owner(item),
                    region=region_of_zone(item.get("AvailabilityZone")) or region,
                    id=item["SubnetId"],
                    vpc_id=item.get("VpcId"),
                    zone=item.get("AvailabilityZone"),
                    map_public_ip_on_launch=bool(item.get("MapPublicIpOnLaunch")),
                )
                inventory.aws.subnets.append(subnet)
                owned.add(subnet.account)
        elif call is LAUNCH_TEMPLATES:
            versions = [item for _, item in items]
            latest: dict[str, int] = {}
            for item in versions:
                template_id = item["LaunchTemplateId"]
                latest[template_id] = max(latest.get(template_id, 0), int(item.get("VersionNumber") or 0))
            seen: set[str] = set()
            for item in versions:  # $Latest and $Default may be the same version: judge it once
                version = int(item.get("VersionNumber") or 0)
                key = f"{item['LaunchTemplateId']}:{version}"
                is_latest = version == latest[item["LaunchTemplateId"]]
                if key in seen or not (is_latest or item.get("DefaultVersion")):
                    continue  # a dump of every version: only the default and the latest launch anything
                seen.add(key)
                owner = self._owner(item, "CreatedBy")
                inventory.specs.append(template_spec(item, region, owner, is_latest))
                owned.add(owner)
        elif call is CAPACITY_RESERVATIONS:
            for _, item in items:
                capacity = CapacityReservation(
                    account=self._owner(item, "CapacityReservationArn"),
                    region=region,
                    id=item["CapacityReservationId"],
                    reservation_type=item.get("ReservationType"),
                    instance_type=item.get("InstanceType"),
                    placement_group_arn=item.get("PlacementGroupArn"),
                )
                inventory.aws.capacity_reservations.append(capacity)
                owned.add(capacity.account)
        if self.account:
            return {(self.account, region)}
        # Several accounts in one answer: a fact counts only for the accounts it names.
        return {(a, region) for a in owned}


def normalize(
    answers: dict[Ec2Call, Any],
    region: str | None,
    where: Callable[[Ec2Call], str],
    account: str | None = None,
    into: Inventory | None = None,
) -> Inventory:
    """One region's EC2 answers into an Inventory (or added to `into`), read in CALLS order so that topology
    meets the nodes it describes."""
    inventory = into if into is not None else Inventory(source="aws")
    normalizer = Normalizer(inventory, region, account, where)
    for call in sorted(answers, key=CALLS.index):
        normalizer.add(call, answers[call])
    return inventory
