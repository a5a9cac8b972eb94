"""`fabriccheck aws --from-dump DIR`: the same facts as a live run, from `aws ec2 describe-* --output json` files.

Layouts: a folder of CLI answers; a folder of region-named folders; a folder of account folders
(`DIR/<12-digit account>/`) each holding answers or region folders. The account is the folder's name, else the
one account the instances name (OwnerId); a file that holds several accounts files each item under its owner.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fabriccheck.errors import DumpShapeError, FabricCheckError
from fabriccheck.gcpause import paused_gc
from fabriccheck.inventory import Inventory
from fabriccheck.jsonfiles import read_json
from fabriccheck.model import UNKNOWN_ACCOUNT
from fabriccheck.providers.aws.fields import ReservationFields
from fabriccheck.providers.aws.instances import REGION
from fabriccheck.providers.aws.normalize import (
    ACCOUNT_ID,
    CALLS,
    INSTANCES,
    RESERVATION_TOPOLOGY,
    SECURITY_GROUPS,
    TOPOLOGY,
    Ec2Call,
    Normalizer,
    owners,
)
from fabriccheck.providers.aws.values import shown
from fabriccheck.sources import dumps
from fabriccheck.sources.shape import Shape
from fabriccheck.sources.stream import walk

LAYOUT: dumps.Layout[Ec2Call] = dumps.Layout(
    provider="aws",
    calls=CALLS,
    answers="EC2 answers",
    scope_folder=ACCOUNT_ID,
    not_a_scope="is neither a region (e.g. us-east-1) nor a 12-digit account folder",
    scope_folders="or region or 12-digit account folders holding them",
    page_token="NextToken",
    cut_note=" (the CLI writes one under --max-items or --no-paginate)",
    remake=lambda call, _account: f"aws ec2 {call.dump_file[:-5]} --output json",
    region_folder=REGION,
)


def _single(accounts: set[str]) -> str | None:
    return next(iter(accounts)) if len(accounts) == 1 else None


def load_dump(directory: Path, region: str | None = None) -> Inventory:
    inventory = Inventory(source=f"aws dump {directory}")
    for folder in dumps.folders(directory, LAYOUT):
        inventory.merge(_load_folder(folder.path, folder.account, folder.region or region))
    return inventory


def _load_folder(folder: Path, account: str | None, region: str | None) -> Inventory:
    part = Inventory()
    present, missing = LAYOUT.present(folder)

    def where(call: Ec2Call) -> str:
        return str(folder / call.dump_file)

    normalizer = Normalizer(part, region, account, where)
    truncated: list[Ec2Call] = []
    # One file at a time, instances first, each read as a stream: one item is held in memory as JSON at a
    # time, so memory follows the model rather than the file.
    for call in present:
        answer = _Answer(folder / call.dump_file, call)
        with paused_gc():
            answered = normalizer.add_items(call, answer.items())
        if call is INSTANCES and account is None:
            # The one account the instances name (or, when none does, the one of the security groups) is the
            # folder's; nodes that did not say are its too.
            found = _single(answer.owners) or _security_group_owner(folder, present)
            if found:
                normalizer.account = found
                for node in part.nodes:
                    if node.account == UNKNOWN_ACCOUNT:
                        node.shape = node.shape.model_copy(update={"account": found})
                answered = {(found if a == UNKNOWN_ACCOUNT else a, r) for a, r in answered}
        if answer.rest.get("NextToken"):
            # Written under --max-items or --no-paginate: the rest of the answer is not in the file, so what it
            # holds is read but the facts do not count as collected.
            truncated.append(call)
        else:
            normalizer.record(call, answered)
        if call is INSTANCES and normalizer.region is None:
            regions = sorted({n.region for n in part.nodes} - {"unknown"})
            normalizer.region = regions[0] if len(regions) == 1 else None
    if INSTANCES not in present and account is None:
        normalizer.account = _security_group_owner(folder, present)
    scopes = [normalizer.account] if normalizer.account else sorted({n.account for n in part.nodes})
    dumps.record_gaps(part, LAYOUT, folder, scopes or [UNKNOWN_ACCOUNT], normalizer.region, truncated, missing)
    return part


class _Answer:
    """One `aws ec2 describe-*` file read as a stream: its items one at a time, then what stood beside them
    (`rest`: a NextToken) and the accounts the items named as owners. The file must hold its list, even empty:
    a file without it (`{}`, a misspelt key, another call's answer) is an error naming the file and what it holds,
    never an empty answer."""

    def __init__(self, path: Path, call: Ec2Call) -> None:
        self.path = path
        self.call = call
        self.rest: dict[str, Any] = {}
        self.owners: set[str] = set()
        self.listed = False  # the list was there (a present, empty list is a complete empty answer)

    def _descend(self, at: tuple[str | int, ...], opener: str) -> bool:
        if at == (self.call.result_key,) and opener == "[":
            self.listed = True
            return True
        return at == () and opener == "{"

    def items(self) -> Iterator[tuple[str, dict[str, Any]]]:
        shape = Shape(str(self.path))
        key = self.call.result_key
        # Reservations are parsed with the fields the normalizer reads (fields.py); other answers are small.
        projection = ReservationFields if self.call is INSTANCES else None
        for at, value in walk(self.path, self._descend, projection):
            if not at:
                raise self._not_the_answer(_what_it_holds(value, key))
            if at[0] != key:
                self.rest[str(at[0])] = value
            elif len(at) == 1:
                if value is None:
                    raise FabricCheckError(f"{self.path}: {key} is null, not a list (the CLI writes [] for none)")
                raise DumpShapeError(shape.where, key, "a list")
            else:
                path = f"{key}[{at[1]}]"
                item = shape.obj(value, path)
                self.owners |= owners(self.call, {key: [item]})
                yield path, item
        if not self.listed:
            raise self._not_the_answer(_what_it_holds(self.rest, key))

    def _not_the_answer(self, holds: str) -> FabricCheckError:
        command = f"aws ec2 {self.call.dump_file[:-5]} --output json"
        return FabricCheckError(
            f"{self.path}: holds {holds}, not the answer of {command} (an object with its {self.call.result_key} list)"
        )


# Lists of other AWS answers a file may hold by mistake, and the command that writes each.
# (Topology answers are left out: theirs share a key with the instances' and the reservations' own answers.)
_NAMED = [c for c in CALLS if c not in (TOPOLOGY, RESERVATION_TOPOLOGY)]
_OTHER_ANSWERS = {c.result_key: f"aws ec2 {c.dump_file[:-5]}" for c in _NAMED} | {
    "Vpcs": "aws ec2 describe-vpcs",
    "NetworkInterfaces": "aws ec2 describe-network-interfaces",
    "InstanceStatuses": "aws ec2 describe-instance-status",
    "Images": "aws ec2 describe-images",
    "AutoScalingGroups": "aws autoscaling describe-auto-scaling-groups",
}


_JSON_KINDS = {str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


def _what_it_holds(doc: Any, key: str) -> str:
    """What a file that is not the expected answer holds, in a few words (another cloud's list, another call's
    answer, one reservation, a misspelt key)."""
    if isinstance(doc, list):
        first = next((item for item in doc if isinstance(item, dict)), {})
        if str(first.get("kind", "")).startswith("compute#"):
            return f"a Google Cloud list of {first['kind'].removeprefix('compute#')} items (gcloud --format=json)"
        if str(first.get("id", "")).startswith("/subscriptions/") or "resourceGroup" in first:
            return "an Azure list (az ... -o json)"
        if "InstanceId" in first:
            return "a list of instances (an --query output?)"
        return f"a JSON list of {len(doc)} values" if doc else "an empty JSON list"
    if not isinstance(doc, dict):
        return f"a JSON {_JSON_KINDS.get(type(doc), 'value')}"
    if str(doc.get("kind", "")).startswith("compute#"):
        return f"a Google Cloud answer of kind {shown(doc['kind'])}"
    if isinstance(doc.get("value"), list):
        return "an Azure Resource Manager list page (value)"
    if "ReservationId" in doc:
        return "one reservation (what aws ec2 run-instances prints)"
    for found in doc:
        if found.lower() == key.lower():
            return f"a key {shown(found)} (keys are case-sensitive)"
        if found in _OTHER_ANSWERS:
            return f"the answer of {_OTHER_ANSWERS[found]} ({found})"
    if not doc:
        return "an empty object"
    return "an object with " + ", ".join(shown(k) for k in list(doc)[:4]) + (" ..." if len(doc) > 4 else "")


def _security_group_owner(folder: Path, present: list[Ec2Call]) -> str | None:
    """Every VPC has a default security group, so an account's groups name it when no instance does."""
    if SECURITY_GROUPS not in present:
        return None
    return _single(owners(SECURITY_GROUPS, read_json(folder / SECURITY_GROUPS.dump_file, dump_file=True)))


def add_reservation_topology(inventory: Inventory, path: str) -> Inventory:
    """`plan --reservation-topology FILE`: where the Capacity Reservations (and Blocks) the plan's instances name sit
    before apply, from `aws ec2 describe-capacity-reservation-topology --output json`; each becomes the topology of
    the planned nodes that name it (AwsSupport.resolve). A reservation no planned node names is left out."""
    from fabriccheck.providers.aws.instances import region_of_zone
    from fabriccheck.providers.aws.normalize import instance_topology
    from fabriccheck.resources.aws import CapacityReservation

    doc = read_json(Path(path))
    items = doc.get(RESERVATION_TOPOLOGY.result_key) if isinstance(doc, dict) else None
    if not isinstance(items, list):
        command = f"aws ec2 {RESERVATION_TOPOLOGY.dump_file[:-5]} --output json"
        raise FabricCheckError(
            f"{path}: holds {_what_it_holds(doc, RESERVATION_TOPOLOGY.result_key)}, not the answer of {command} "
            f"(an object with its {RESERVATION_TOPOLOGY.result_key} list)"
        )
    naming: dict[str, set[tuple[str, str]]] = {}  # reservation id -> (account, region) of the nodes naming it
    for node in [*inventory.nodes, *inventory.specs]:
        for placement in node.placement:
            naming.setdefault(placement.id, set()).add((node.account, node.region))
    for index, item in enumerate(items):
        reservation = item.get("CapacityReservationId") if isinstance(item, dict) else None
        if not isinstance(reservation, str) or not reservation:
            raise FabricCheckError(f"{path}: {RESERVATION_TOPOLOGY.result_key}[{index}] has no CapacityReservationId")
        region = region_of_zone(item.get("AvailabilityZone"))
        for account, node_region in sorted(naming.get(reservation, ())):
            if region in (None, node_region):
                inventory.aws.capacity_reservations.append(
                    CapacityReservation(
                        account=account,
                        region=node_region,
                        id=reservation,
                        instance_type=item.get("InstanceType"),
                        topology=instance_topology(item, RESERVATION_TOPOLOGY.operation),
                    )
                )
    return inventory
