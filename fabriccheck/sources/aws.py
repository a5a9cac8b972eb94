"""AWS source: fetch EC2 metadata with boto3 (or read `aws ec2 describe-* --output json` dumps) and
normalize it into the inventory model.

Fetch and normalize are separate halves: the live fetch produces, per region, the very dicts the AWS CLI
prints, and `normalize` turns those into the model. Dumps and live runs therefore share one code path.
Only Describe calls are made; `OPERATIONS` is the single list of them, used by the fetch, by the IAM policy
printer and by the test that proves the collector never writes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from fabriccheck.errors import DumpShapeError, FabricCheckError
from fabriccheck.model import (
    Capability,
    CapacityReservation,
    CollectionError,
    FabricKind,
    Inventory,
    LaunchTemplate,
    NetworkInterface,
    Node,
    PlacementGroup,
    SecurityGroup,
    SecurityRule,
    Subnet,
    TemplateInterface,
)


@dataclass(frozen=True)
class Ec2Call:
    operation: str  # EC2 API name, also the IAM action after "ec2:"
    result_key: str  # top-level key of the answer (and of the CLI's JSON)
    fact: str  # what it tells us, recorded in Inventory.collected as "region:fact"
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
# Every EC2 operation the collector may issue. DescribeRegions serves --all-regions.
OPERATIONS = tuple(sorted({c.operation for c in CALLS} | {"DescribeRegions"}))

LIVE_STATES = ("pending", "running", "stopping", "stopped")  # terminated nodes train nothing
_REGION = re.compile(r"^([a-z]{2}(?:-gov|-iso[a-z]*)?-[a-z]+-\d+)")


def iam_policy() -> dict[str, Any]:
    """Least-privilege IAM policy for exactly the calls the collector makes."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "FabricCheckReadOnly",
                "Effect": "Allow",
                "Action": [f"ec2:{op}" for op in OPERATIONS],
                "Resource": "*",
            }
        ],
    }


def region_of_zone(zone: str | None) -> str | None:
    if not zone:
        return None
    match = _REGION.match(zone)
    return match.group(1) if match else None


# ---------------------------------------------------------------------------------------------- normalize


class _Shape:
    """Typed access to a parsed answer, with errors that name the file and field."""

    def __init__(self, where: str) -> None:
        self.where = where

    def items(self, obj: Any, key: str, path: str) -> list[Any]:
        value = obj.get(key) if isinstance(obj, dict) else None
        if value is None:
            if not isinstance(obj, dict):
                raise DumpShapeError(self.where, path, "an object")
            return []
        if not isinstance(value, list):
            raise DumpShapeError(self.where, f"{path}.{key}" if path else key, "a list")
        return value

    def obj(self, value: Any, path: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise DumpShapeError(self.where, path, "an object")
        return value


def _tags(raw: Any) -> dict[str, str]:
    return {str(t["Key"]): str(t.get("Value", "")) for t in raw or ()}


def capability_from_instance_type(item: dict[str, Any], source: str) -> Capability:
    """DescribeInstanceTypes item -> Capability (the same mapping the shipped AWS table was built with)."""
    network = item.get("NetworkInfo") or {}
    cards = network.get("NetworkCards") or []
    efa = bool(network.get("EfaSupported"))
    card_gbps = [float(c.get("BaselineBandwidthInGbps") or c.get("PeakBandwidthInGbps") or 0) for c in cards]
    gpus = (item.get("GpuInfo") or {}).get("Gpus") or []
    neuron = (item.get("NeuronInfo") or {}).get("NeuronDevices") or []
    accelerators = sum(int(g.get("Count", 0)) for g in gpus) + sum(int(n.get("Count", 0)) for n in neuron)
    name = (gpus[0].get("Name") if gpus else None) or (neuron[0].get("Name") if neuron else None)
    return Capability(
        instance_type=item["InstanceType"],
        provider="aws",
        fabric=FabricKind.EFA if efa else FabricKind.NONE,
        fabric_interfaces=int((network.get("EfaInfo") or {}).get("MaximumEfaInterfaces") or 0) if efa else 0,
        fabric_gbps=(sum(card_gbps) or None) if efa else None,
        ethernet_gbps=card_gbps[0] if card_gbps and card_gbps[0] else None,
        network_cards=network.get("MaximumNetworkCards"),
        accelerators=accelerators,
        accelerator_name=name,
        source=source,
    )


def _node(inst: dict[str, Any], region_hint: str | None, account: str | None) -> Node | None:
    state = (inst.get("State") or {}).get("Name", "running")
    if state not in LIVE_STATES:
        return None
    placement = inst.get("Placement") or {}
    zone = placement.get("AvailabilityZone")
    interfaces = []
    for nic in inst.get("NetworkInterfaces") or ():
        attachment = nic.get("Attachment") or {}
        interfaces.append(
            NetworkInterface(
                id=nic["NetworkInterfaceId"],
                interface_type=nic.get("InterfaceType") or "interface",
                network_card_index=attachment.get("NetworkCardIndex") or 0,
                device_index=attachment.get("DeviceIndex") or 0,
                subnet_id=nic.get("SubnetId"),
                security_group_ids=[g["GroupId"] for g in nic.get("Groups") or ()],
                public_ip=bool((nic.get("Association") or {}).get("PublicIp")),
            )
        )
    return Node(
        id=inst["InstanceId"],
        provider="aws",
        account=account,
        region=region_of_zone(zone) or region_hint or "unknown",
        zone=zone,
        vpc_id=inst.get("VpcId"),
        subnet_id=inst.get("SubnetId"),
        instance_type=inst["InstanceType"],
        state=state,
        image_id=inst.get("ImageId"),
        tags=_tags(inst.get("Tags")),
        interfaces=interfaces,
        placement_group=placement.get("GroupName") or None,
        capacity_reservation_id=inst.get("CapacityReservationId"),
        capacity_block_id=inst.get("CapacityBlockId"),
    )


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


def _template(item: dict[str, Any], region: str) -> LaunchTemplate:
    data = item.get("LaunchTemplateData") or {}
    return LaunchTemplate(
        id=item["LaunchTemplateId"],
        name=item.get("LaunchTemplateName") or item["LaunchTemplateId"],
        version=int(item.get("VersionNumber") or 0),
        region=region,
        is_default=bool(item.get("DefaultVersion")),
        instance_type=data.get("InstanceType"),
        interfaces=[
            TemplateInterface(
                interface_type=n.get("InterfaceType") or "interface",
                network_card_index=n.get("NetworkCardIndex") or 0,
                device_index=n.get("DeviceIndex") or 0,
                associate_public_ip=n.get("AssociatePublicIpAddress"),
                subnet_id=n.get("SubnetId"),
            )
            for n in data.get("NetworkInterfaces") or ()
        ],
        placement_group=(data.get("Placement") or {}).get("GroupName") or None,
    )


def _each(shape: _Shape, doc: Any, call: Ec2Call) -> Iterator[tuple[str, dict[str, Any]]]:
    for i, item in enumerate(shape.items(shape.obj(doc, "(top level)"), call.result_key, "")):
        yield f"{call.result_key}[{i}]", shape.obj(item, f"{call.result_key}[{i}]")


def normalize(
    answers: dict[Ec2Call, Any],
    region: str | None,
    where: Callable[[Ec2Call], str],
    account: str | None = None,
    into: Inventory | None = None,
) -> Inventory:
    """Turn one region's EC2 answers (CLI-shaped dicts) into an Inventory (or add them to `into`).

    `where(call)` names the answer's origin for error messages (a dump file path, or the API call).
    Answers are read in CALLS order, so topology meets the nodes it describes.
    """
    inventory = into if into is not None else Inventory(source="aws")
    for call in sorted(answers, key=CALLS.index):
        doc = answers[call]
        shape = _Shape(where(call))
        try:
            _normalize_one(inventory, call, doc, shape, region, account)
        except FabricCheckError:
            raise
        except (KeyError, TypeError, AttributeError, ValueError, ValidationError) as exc:
            # The safety net for shapes _Shape does not check field by field: still one line, file named.
            raise FabricCheckError(f"{shape.where}: unexpected shape: {_describe(exc)}") from None
    return inventory


def _describe(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        return f"field {'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    if isinstance(exc, KeyError):
        return f"missing field {exc}"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _normalize_one(
    inventory: Inventory, call: Ec2Call, doc: Any, shape: _Shape, region: str | None, account: str | None
) -> None:
    if call is INSTANCES:
        regions: set[str] = set()
        for path, reservation in _each(shape, doc, call):
            owner = reservation.get("OwnerId") or account
            for i, inst in enumerate(shape.items(reservation, "Instances", path)):
                try:
                    node = _node(shape.obj(inst, f"{path}.Instances[{i}]"), region, owner)
                except (KeyError, TypeError, AttributeError, ValidationError) as exc:
                    raise FabricCheckError(f"{shape.where}: {path}.Instances[{i}]: {_describe(exc)}") from None
                if node is not None:
                    inventory.nodes.append(node)
                    regions.add(node.region)
        if not regions:
            regions.add(region or "unknown")
        inventory.collected += [f"{r}:instances" for r in sorted(regions)]
        return
    where_region = region or "unknown"
    if call is INSTANCE_TYPES:
        for _, item in _each(shape, doc, call):
            cap = capability_from_instance_type(item, "EC2 DescribeInstanceTypes (live answer)")
            inventory.capabilities[cap.instance_type] = cap
    elif call is PLACEMENT_GROUPS:
        for _, item in _each(shape, doc, call):
            inventory.placement_groups.append(
                PlacementGroup(
                    name=item["GroupName"],
                    region=where_region,
                    strategy=item.get("Strategy", "unknown"),
                    state=item.get("State", "available"),
                    id=item.get("GroupId"),
                )
            )
    elif call is SECURITY_GROUPS:
        for path, item in _each(shape, doc, call):
            inventory.security_groups.append(
                SecurityGroup(
                    id=item["GroupId"],
                    region=where_region,
                    name=item.get("GroupName"),
                    vpc_id=item.get("VpcId"),
                    ingress=_rules(shape.items(item, "IpPermissions", path)),
                    egress=_rules(shape.items(item, "IpPermissionsEgress", path)),
                )
            )
    elif call is SUBNETS:
        for _, item in _each(shape, doc, call):
            inventory.subnets.append(
                Subnet(
                    id=item["SubnetId"],
                    region=region_of_zone(item.get("AvailabilityZone")) or where_region,
                    vpc_id=item.get("VpcId"),
                    zone=item.get("AvailabilityZone"),
                    map_public_ip_on_launch=bool(item.get("MapPublicIpOnLaunch")),
                )
            )
    elif call is LAUNCH_TEMPLATES:
        templates: dict[tuple[str, int], LaunchTemplate] = {}
        latest: dict[str, int] = {}
        for _, item in _each(shape, doc, call):
            template = _template(item, where_region)
            templates[(template.id, template.version)] = template
            latest[template.id] = max(latest.get(template.id, 0), template.version)
        for template in templates.values():
            template.is_latest = template.version == latest[template.id]
            inventory.launch_templates.append(template)
    elif call is CAPACITY_RESERVATIONS:
        for _, item in _each(shape, doc, call):
            inventory.capacity_reservations.append(
                CapacityReservation(
                    id=item["CapacityReservationId"],
                    region=where_region,
                    reservation_type=item.get("ReservationType"),
                    instance_type=item.get("InstanceType"),
                    placement_group_arn=item.get("PlacementGroupArn"),
                )
            )
    elif call is TOPOLOGY:
        topology = {
            item["InstanceId"]: [str(n) for n in item.get("NetworkNodes") or ()] for _, item in _each(shape, doc, call)
        }
        for node in inventory.nodes:
            node.network_nodes = topology.get(node.id, node.network_nodes)
    inventory.collected.append(f"{where_region}:{call.fact}")


# ---------------------------------------------------------------------------------------------- dumps


def _dump_dirs(directory: Path) -> list[tuple[Path, str | None]]:
    """A dump is a folder of CLI answers; a folder of region-named folders holds one per region."""
    if not directory.is_dir():
        raise FabricCheckError(f"--from-dump {directory}: not a folder")
    if any((directory / c.dump_file).exists() for c in CALLS):
        return [(directory, None)]
    regional: list[tuple[Path, str | None]] = sorted(
        (p, p.name) for p in directory.iterdir() if p.is_dir() and _REGION.fullmatch(p.name)
    )
    if not regional:
        expected = ", ".join(c.dump_file for c in CALLS if c.required)
        raise FabricCheckError(f"--from-dump {directory}: no EC2 answers found (expected files such as {expected})")
    return regional


def _read_json(path: Path) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise FabricCheckError(f"{path}: not valid JSON ({exc})") from None
    except OSError as exc:
        raise FabricCheckError(f"{path}: cannot read ({exc.strerror})") from None


def load_dump(directory: Path, region: str | None = None) -> Inventory:
    inventory = Inventory(source=f"aws dump {directory}")
    for folder, folder_region in _dump_dirs(directory):
        answers: dict[Ec2Call, Any] = {}
        missing: list[Ec2Call] = []
        # The large describe-instances answer is parsed and normalized first and then dropped, so the
        # peak memory is one parsed file plus the model, not every file at once.
        for call in CALLS:
            path = folder / call.dump_file
            if path.exists():
                answers[call] = None
            elif call.required:
                missing.append(call)
        region_here = folder_region or region
        part = Inventory()

        def where(c: Ec2Call, folder: Path = folder) -> str:
            return str(folder / c.dump_file)

        for call in answers:  # CALLS order: instances first
            doc = _read_json(folder / call.dump_file)
            normalize({call: doc}, region_here, where, into=part)
            del doc
            if call is INSTANCES and region_here is None:
                found = sorted({n.region for n in part.nodes} - {"unknown"})
                region_here = found[0] if len(found) == 1 else None
        _relabel_region(part, region_here)
        for call in missing:
            part.errors.append(
                CollectionError(
                    region=region_here,
                    call=call.dump_file,
                    code="MissingDump",
                    message=f"{folder / call.dump_file} is missing, so {call.fact.replace('_', ' ')} "
                    f"were not collected (make it with: aws ec2 {call.dump_file[:-5]} --output json)",
                )
            )
        inventory.merge(part)
    return inventory


def _relabel_region(part: Inventory, region: str | None) -> None:
    """Answers read before the region was known were filed under 'unknown'; file them under it now."""
    if not region:
        return
    for items in (
        part.placement_groups,
        part.security_groups,
        part.subnets,
        part.capacity_reservations,
        part.launch_templates,
    ):
        for item in items:
            if item.region == "unknown":
                item.region = region
    for node in part.nodes:
        if node.region == "unknown":
            node.region = region
    part.collected = sorted({c.replace("unknown:", f"{region}:") for c in part.collected})


# ---------------------------------------------------------------------------------------------- live

ACCESS_DENIED = {
    "UnauthorizedOperation",
    "AccessDenied",
    "AccessDeniedException",
    "AuthFailure",
    "InvalidClientTokenId",
    "UnrecognizedClientException",
    "OptInRequired",
}
THROTTLED = {"RequestLimitExceeded", "Throttling", "ThrottlingException", "TooManyRequestsException"}


@dataclass
class Progress:
    """What the CLI shows while collecting; the collector only calls it."""

    step: Callable[[str, str], None] = lambda region, what: None


def _paged(client: Any, call: Ec2Call, **params: Any) -> dict[str, Any]:
    paginator = client.get_paginator(call.method)
    result: dict[str, Any] = paginator.paginate(**params).build_full_result()
    result.pop("NextToken", None)
    return result


def _answer(client: Any, call: Ec2Call, used_types: Iterable[str] = ()) -> dict[str, Any]:
    if call is INSTANCES:
        return _paged(
            client,
            call,
            Filters=[{"Name": "instance-state-name", "Values": list(LIVE_STATES)}],
            PaginationConfig={"PageSize": 1000},
        )
    if call is INSTANCE_TYPES:
        # The types in use, plus every EFA-capable type (for the instance-choice rule's "this family has
        # an EFA type"): both a fixed number of calls, whatever the fleet size.
        found: dict[str, Any] = {}
        names = sorted(set(used_types))
        for start in range(0, len(names), 100):
            batch = _paged(client, call, InstanceTypes=names[start : start + 100])
            found.update({t["InstanceType"]: t for t in batch.get("InstanceTypes", [])})
        efa = _paged(
            client,
            call,
            Filters=[{"Name": "network-info.efa-supported", "Values": ["true"]}],
            PaginationConfig={"PageSize": 100},
        )
        found.update({t["InstanceType"]: t for t in efa.get("InstanceTypes", [])})
        return {"InstanceTypes": list(found.values())}
    if call is PLACEMENT_GROUPS:
        answer: dict[str, Any] = client.describe_placement_groups()
        return answer
    if call is LAUNCH_TEMPLATES:
        return _paged(client, call, Versions=["$Latest", "$Default"], PaginationConfig={"PageSize": 200})
    if call is TOPOLOGY:
        return _paged(client, call, PaginationConfig={"PageSize": 100})
    return _paged(client, call, PaginationConfig={"PageSize": 1000})


def _error(call: Ec2Call, region: str, exc: Exception) -> CollectionError:
    from botocore.exceptions import ClientError

    if isinstance(exc, ClientError):
        code = str(exc.response.get("Error", {}).get("Code", "ClientError"))
        message = str(exc.response.get("Error", {}).get("Message", "")).splitlines()[0:1]
        text = message[0] if message else code
        if code in ACCESS_DENIED:
            return CollectionError(
                region=region,
                call=call.operation,
                code="AccessDenied",
                message=f"{code}: {text}",
                permission=f"ec2:{call.operation}",
            )
        if code in THROTTLED:
            return CollectionError(
                region=region,
                call=call.operation,
                code="Throttled",
                message=f"{code}: still throttled after retries with backoff",
            )
        return CollectionError(region=region, call=call.operation, code=code, message=text)
    from botocore.parsers import ResponseParserError

    if isinstance(exc, ResponseParserError):
        return CollectionError(
            region=region,
            call=call.operation,
            code="BadResponse",
            message="the endpoint answered with something that is not an EC2 response",
        )
    return CollectionError(
        region=region,
        call=call.operation,
        code="Unreachable",
        message=str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
    )


def collect_region(client: Any, region: str, topology: bool = False, progress: Progress | None = None) -> Inventory:
    """Every answer for one region through one EC2 client, normalized. Failures become CollectionErrors."""
    from botocore.exceptions import BotoCoreError, ClientError
    from botocore.parsers import ResponseParserError

    progress = progress or Progress()
    answers: dict[Ec2Call, Any] = {}
    errors: list[CollectionError] = []
    used_types: set[str] = set()
    for call in CALLS:
        if call is TOPOLOGY and not topology:
            continue
        progress.step(region, call.operation)
        try:
            answers[call] = _answer(client, call, used_types)
        except (ClientError, BotoCoreError, ResponseParserError) as exc:
            error = _error(call, region, exc)
            errors.append(error)
            if error.code == "Unreachable" or (
                call is INSTANCES and error.code == "AccessDenied" and "AuthFailure" in error.message
            ):
                break  # the region (or the credentials) fail every call alike; one line says it
            continue
        if call is INSTANCES:
            used_types = {
                i["InstanceType"]
                for r in answers[call].get("Reservations", [])
                for i in r.get("Instances", [])
                if "InstanceType" in i
            }
    inventory = normalize(answers, region, lambda c: f"EC2 {c.operation} in {region}")
    inventory.errors.extend(errors)
    return inventory


def _session(profile: str | None) -> Any:
    import boto3
    from botocore.exceptions import ProfileNotFound

    try:
        return boto3.Session(profile_name=profile)
    except ProfileNotFound:
        raise FabricCheckError(f"--profile {profile}: no such AWS profile") from None


def _client(session: Any, region: str, endpoint_url: str | None) -> Any:
    from botocore.config import Config

    # Standard retry mode backs off exponentially on RequestLimitExceeded and other throttling codes.
    config = Config(
        retries={"mode": "standard", "max_attempts": 8},
        connect_timeout=5,
        read_timeout=60,
        user_agent_extra="fabriccheck/0.1",
    )
    return session.client("ec2", region_name=region, endpoint_url=endpoint_url, config=config)


def all_regions(session: Any, endpoint_url: str | None, home: str) -> list[str]:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        answer = _client(session, home, endpoint_url).describe_regions(AllRegions=False)
    except (ClientError, BotoCoreError) as exc:
        raise FabricCheckError(f"--all-regions: DescribeRegions failed: {str(exc).splitlines()[0]}") from None
    return sorted(r["RegionName"] for r in answer.get("Regions", []))


def collect_live(
    regions: list[str],
    *,
    profile: str | None = None,
    endpoint_url: str | None = None,
    every_region: bool = False,
    topology: bool = False,
    progress: Progress | None = None,
    session: Any = None,
) -> Inventory:
    from botocore.exceptions import NoCredentialsError, NoRegionError

    session = session or _session(profile)
    if session.get_credentials() is None:
        raise FabricCheckError(
            "no AWS credentials found in the standard chain (environment, --profile, config files, SSO, "
            "instance role); set them or use --from-dump DIR"
        )
    if every_region:
        regions = all_regions(session, endpoint_url, regions[0] if regions else "us-east-1")
    if not regions:
        regions = [session.region_name] if session.region_name else []
    if not regions:
        raise FabricCheckError("no region: pass --region REGION (repeatable) or --all-regions")
    try:
        # Clients are made here, in one thread (botocore sessions are not thread-safe); clients are.
        clients = {region: _client(session, region, endpoint_url) for region in regions}
    except NoRegionError:
        raise FabricCheckError("no region: pass --region REGION") from None
    inventory = Inventory(source=f"aws live ({', '.join(regions)})")
    try:
        with ThreadPoolExecutor(max_workers=min(8, len(regions))) as pool:
            for part in pool.map(lambda r: collect_region(clients[r], r, topology, progress), regions):
                inventory.merge(part)
    except NoCredentialsError:
        raise FabricCheckError("no AWS credentials found; set them or use --from-dump DIR") from None
    return inventory
