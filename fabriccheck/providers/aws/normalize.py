"""AWS answers -> the model: the one EC2 call table, and the pure function from `aws ec2 describe-*` answers
(the very dicts boto3 returns and the CLI prints) to nodes, specs and the `aws` namespace.

Live runs and dumps share this half. `CALLS` is the single list of EC2 calls: the live fetch issues them,
dumps are named after them, and the IAM policy lists them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from fabriccheck.catalog import catalog_entry
from fabriccheck.errors import FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.model import (
    UNKNOWN_ACCOUNT,
    CollectionError,
    Node,
    Topology,
    fact_key,
)
from fabriccheck.providers.aws import values
from fabriccheck.providers.aws.instance_types import capability_from_instance_type
from fabriccheck.providers.aws.instances import NIC_FACTS, instance_node, region_of_zone, template_spec
from fabriccheck.resources.aws import (
    CapacityReservation,
    PlacementGroup,
    SecurityGroup,
    SecurityRule,
    Subnet,
)
from fabriccheck.sources.items import ITEM_ERRORS, named, salvage, unknown_because
from fabriccheck.sources.pools import Pools
from fabriccheck.sources.scope import BAD_RESPONSE, Scope
from fabriccheck.sources.shape import Shape, describe, unexpected_shape


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
# Where pending or active Capacity Reservations sit, before anything is launched into them (EC2 API reference,
# DescribeCapacityReservationTopology: CapacityReservations[] of CapacityReservationId, CapacityBlockId, State,
# InstanceType, GroupName, NetworkNodes, AvailabilityZone(Id)); opt-in with the instance topology.
RESERVATION_TOPOLOGY = Ec2Call(
    "DescribeCapacityReservationTopology", "CapacityReservations", "reservation_topology", False
)


def instance_topology(item: dict[str, Any], source: str = "DescribeInstanceTopology") -> Topology | None:
    """An InstanceTopology (or a CapacityReservationTopology: the same fields) as the node's topology: its
    NetworkNodes, top layer first ("How Amazon EC2 instance topology works": three or four layers, layer 1 the top),
    and its CapacityBlockId, which "is only supported for UltraServer instances and identifies instances within the
    UltraServer domain" (EC2 API reference, InstanceTopology): the UltraServer's NVLink domain. None: neither told
    (a type without topology support answers an empty list)."""
    levels = tuple(str(n) for n in item.get("NetworkNodes") or ())
    block = item.get("CapacityBlockId")
    if not levels and not block:
        return None
    names = tuple(f"layer-{i}" for i in range(1, len(levels) + 1))
    return Topology(source=source, levels=levels, level_names=names, nvlink_domain=str(block) if block else None)


CALLS = (
    INSTANCES,
    INSTANCE_TYPES,
    PLACEMENT_GROUPS,
    SECURITY_GROUPS,
    SUBNETS,
    LAUNCH_TEMPLATES,
    CAPACITY_RESERVATIONS,
    TOPOLOGY,
    RESERVATION_TOPOLOGY,
)

ACCOUNT_ID = re.compile(r"^\d{12}$")
_ARN_ACCOUNT = re.compile(r"^arn:[^:]+:[^:]*:[^:]*:(\d{12}):")


def _arn_account(arn: Any) -> str | None:
    match = _ARN_ACCOUNT.match(arn) if isinstance(arn, str) else None
    return match.group(1) if match else None


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
        kept = salvage(lambda trimmed: instance_node(trimmed, self.region, owner, self._pools), inst, _NIC_FIELDS)
        if kept is None:
            self.inventory.errors.append(
                scope.error(INSTANCES.operation, BAD_RESPONSE, f"{where}: {what}: {describe(exc)}")
            )
            return None
        node, field = kept
        why = f"field {field} of the answer could not be read ({describe(exc)})"
        node.unknown.update(unknown_because(NIC_FACTS, why))
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
        """One answer's items into the inventory; the (account, region) scopes its fact counts for."""
        if call is INSTANCES:
            return self._instances(items, shape)
        if call is INSTANCE_TYPES:
            return self._instance_types(items, shape)
        if call is TOPOLOGY:
            return self._topology(items)
        if call is RESERVATION_TOPOLOGY:
            return self._reservation_topology(items)
        region = self.region or "unknown"
        if call is LAUNCH_TEMPLATES:
            owned = self._templates(items, region)
        else:
            read = _RESOURCES[call.operation]
            owned = set()
            for path, item in items:
                owned.add(read(self, item, path, shape, region))
        if self.account:
            return {(self.account, region)}
        # Several accounts in one answer: a fact counts only for the accounts it names.
        return {(a, region) for a in owned}

    def _instances(self, items: Iterable[tuple[str, dict[str, Any]]], shape: Shape) -> set[tuple[str, str]]:
        scopes: set[tuple[str, str]] = set()
        for path, reservation in items:
            owner = self._owner(reservation)
            # A reservation "describes a launch request for one or more instances" (EC2 API Reference, Reservation:
            # https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_Reservation.html): one without its
            # Instances (`{"Reservations": [{}]}`) is a damaged answer, not an account without instances.
            listed = shape.items(reservation, "Instances", path, required="a reservation lists its instances")
            for i, inst in enumerate(listed):
                where = f"{path}.Instances[{i}]"
                try:
                    node: Node | None = instance_node(shape.obj(inst, where), self.region, owner, self._pools)
                except ITEM_ERRORS as exc:
                    if not self.per_item:
                        if isinstance(exc, (KeyError, TypeError, AttributeError, ValidationError)):
                            raise FabricCheckError(f"{shape.where}: {where}: {describe(exc)}") from None
                        raise
                    node = self._unreadable(inst, where, owner, shape.where, exc)
                if node is not None:
                    self.inventory.nodes.append(node)
                    scopes.add((owner, node.region))
        return scopes or {(self.account or UNKNOWN_ACCOUNT, self.region or "unknown")}

    def _instance_types(self, items: Iterable[tuple[str, dict[str, Any]]], shape: Shape) -> set[tuple[str, str]]:
        for path, item in items:
            try:
                cap = capability_from_instance_type(item, "EC2 DescribeInstanceTypes (live answer)")
            except values.UnreadableValue as exc:
                self.inventory.errors.append(self._unreadable_type(path, item, exc, shape.where))
                continue
            self.inventory.capabilities[cap.instance_type] = cap
        return self._node_scopes()  # type facts are the same for every account

    def _topology(self, items: Iterable[tuple[str, dict[str, Any]]]) -> set[tuple[str, str]]:
        region = self.region or "unknown"
        topology = {item["InstanceId"]: instance_topology(item) for _, item in items}  # items arrive once
        for node in self.inventory.nodes:
            if node.region == region and node.id in topology:
                node.topology = topology[node.id]
        return self._node_scopes()

    def _reservation_topology(self, items: Iterable[tuple[str, dict[str, Any]]]) -> set[tuple[str, str]]:
        """Each reservation's topology onto its CapacityReservation (read before, in CALLS order); one the
        reservations answer did not list is recorded with what its topology says of it."""
        region = self.region or "unknown"
        scopes = self._node_scopes()
        listed = {(r.region, r.id): r for r in self.inventory.aws.capacity_reservations}
        for _, item in items:
            topology = instance_topology(item, RESERVATION_TOPOLOGY.operation)
            found = listed.get((region, str(item["CapacityReservationId"])))
            if found is None:
                account = next(iter(sorted(scopes)))[0]
                found = CapacityReservation(
                    account=account, region=region, id=str(item["CapacityReservationId"]),
                    instance_type=item.get("InstanceType"),
                )  # fmt: skip
                self.inventory.aws.capacity_reservations.append(found)
            found.topology = topology
        return scopes

    def _templates(self, items: Iterable[tuple[str, dict[str, Any]]], region: str) -> set[str]:
        versions = [item for _, item in items]
        latest: dict[str, int] = {}
        for item in versions:
            template_id = item["LaunchTemplateId"]
            latest[template_id] = max(latest.get(template_id, 0), int(item.get("VersionNumber") or 0))
        seen: set[str] = set()
        owned: set[str] = set()
        for item in versions:  # $Latest and $Default may be the same version: judge it once
            version = int(item.get("VersionNumber") or 0)
            key = f"{item['LaunchTemplateId']}:{version}"
            is_latest = version == latest[item["LaunchTemplateId"]]
            if key in seen or not (is_latest or item.get("DefaultVersion")):
                continue  # a dump of every version: only the default and the latest launch anything
            seen.add(key)
            owner = self._owner(item, "CreatedBy")
            self.inventory.specs.append(template_spec(item, region, owner, is_latest))
            owned.add(owner)
        return owned

    def _placement_group(self, item: dict[str, Any], path: str, shape: Shape, region: str) -> str:
        group = PlacementGroup(
            account=self._owner(item, "GroupArn"),
            region=region,
            name=item["GroupName"],
            strategy=item.get("Strategy", "unknown"),
            state=item.get("State", "available"),
            id=item.get("GroupId"),
        )
        self.inventory.aws.placement_groups.append(group)
        return group.account

    def _security_group(self, item: dict[str, Any], path: str, shape: Shape, region: str) -> str:
        group = SecurityGroup(
            account=self._owner(item),
            region=region,
            id=item["GroupId"],
            name=item.get("GroupName"),
            vpc_id=item.get("VpcId"),
            ingress=_rules(shape.items(item, "IpPermissions", path)),
            egress=_rules(shape.items(item, "IpPermissionsEgress", path)),
        )
        self.inventory.aws.security_groups.append(group)
        return group.account

    def _subnet(self, item: dict[str, Any], path: str, shape: Shape, region: str) -> str:
        subnet = Subnet(
            account=self._owner(item),
            region=region_of_zone(item.get("AvailabilityZone")) or region,
            id=item["SubnetId"],
            vpc_id=item.get("VpcId"),
            zone=item.get("AvailabilityZone"),
            map_public_ip_on_launch=bool(item.get("MapPublicIpOnLaunch")),
        )
        self.inventory.aws.subnets.append(subnet)
        return subnet.account

    def _capacity_reservation(self, item: dict[str, Any], path: str, shape: Shape, region: str) -> str:
        capacity = CapacityReservation(
            account=self._owner(item, "CapacityReservationArn"),
            region=region,
            id=item["CapacityReservationId"],
            reservation_type=item.get("ReservationType"),
            instance_type=item.get("InstanceType"),
            placement_group_arn=item.get("PlacementGroupArn"),
        )
        self.inventory.aws.capacity_reservations.append(capacity)
        return capacity.account


# How each other answer's items are read, by its operation: each returns the account that owns the item.
_RESOURCES: dict[str, Callable[[Normalizer, dict[str, Any], str, Shape, str], str]] = {
    PLACEMENT_GROUPS.operation: Normalizer._placement_group,
    SECURITY_GROUPS.operation: Normalizer._security_group,
    SUBNETS.operation: Normalizer._subnet,
    CAPACITY_RESERVATIONS.operation: Normalizer._capacity_reservation,
}


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
