"""What an answer holds, when it is not what the call gives: a dump file of another kind (a NIC list saved as
vm-list.json, a gcloud or aws answer in an Azure dump) or a list item that is no resource of the call's type.

Every ARM resource names its type in its id: /subscriptions/{s}/resourceGroups/{rg}/providers/{namespace}/{type}/
{name}[/{child type}/{child name}] (ARM's resource id format, as every azure-rest-api-specs example shows). Compute
Engine items carry "kind": "compute#instance" (the Compute API's), EC2 instances an "InstanceId".
"""

from __future__ import annotations

import re
from typing import Any

from fabriccheck.errors import FabricCheckError

# ArmCall.name -> the ARM resource type of its items (lower-cased, as ids are compared).
RESOURCE_TYPES = {
    "VirtualMachines.ListAll": "microsoft.compute/virtualmachines",
    "VirtualMachineScaleSets.ListAll": "microsoft.compute/virtualmachinescalesets",
    "VirtualMachineScaleSetVMs.List": "microsoft.compute/virtualmachinescalesets/virtualmachines",
    "AvailabilitySets.ListBySubscription": "microsoft.compute/availabilitysets",
    "ProximityPlacementGroups.ListBySubscription": "microsoft.compute/proximityplacementgroups",
    "NetworkInterfaces.ListAll": "microsoft.network/networkinterfaces",
    "VirtualNetworks.ListAll": "microsoft.network/virtualnetworks",
}
_PROVIDER = re.compile(r"/providers/([^/]+)/([^/]+)/[^/]+((?:/[^/]+/[^/]+)*)/?$", re.IGNORECASE)


class WrongKind(FabricCheckError):
    """An item that is no resource of the call's type; `what` says what it is."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


def resource_type(resource_id: str, lower: bool = True) -> str | None:
    """'/subscriptions/s/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/ss/virtualMachines/0'
    -> 'microsoft.compute/virtualmachinescalesets/virtualmachines' (as the id spells it unless `lower`)."""
    match = _PROVIDER.search(resource_id)
    if match is None:
        return None
    children = match[3].strip("/").split("/")[0::2] if match[3] else []
    found = "/".join([match[1], match[2], *children])
    return found.lower() if lower else found


def _shape(resource_type: str) -> tuple[str, list[str]]:
    """How a lower-cased id of that type reads: /providers/ns/type/, its name, then [child/ and its name]."""
    namespace, kind, *children = resource_type.split("/")
    return f"/providers/{namespace}/{kind}/", [f"{child}/" for child in children]


_SHAPES = {name: _shape(kind) for name, kind in RESOURCE_TYPES.items()}


def check(call_name: str, item: dict[str, Any], resource_id: str) -> None:
    """Raise WrongKind when `item`, whose lower-cased id is `resource_id`, is not of the call's resource type (a
    few finds in the id per item, no copy: the VM lists of a large dump are read at close to json.load's speed)."""
    shape = _SHAPES.get(call_name)
    if shape is None:
        return
    marker, children = shape
    at = resource_id.find(marker)
    if at > 0:
        at = resource_id.find("/", at + len(marker))  # after the resource's name
        for child in children:  # "type/" of each child, then its name
            if at < 0 or not resource_id.startswith(child, at + 1):
                break
            at = resource_id.find("/", at + 1 + len(child))
        else:
            if at < 0:
                return
    raise WrongKind(what_it_is(item))


def what_it_is(item: Any) -> str:
    """What a list item is, said plainly: an ARM resource of some type, a Compute Engine or EC2 item, or else."""
    if not isinstance(item, dict):
        return f"{type(item).__name__} values, not objects"
    kind = item.get("kind")
    if isinstance(kind, str) and kind.startswith("compute#"):
        return f"Compute Engine {kind} items (a gcloud or Compute API answer)"
    if "InstanceId" in item or "Instances" in item:
        return "EC2 instances (an aws ec2 answer)"
    found = resource_type(item["id"], lower=False) if isinstance(item.get("id"), str) else None
    if found is None:
        return "objects that are no ARM resource (no /subscriptions/.../providers/... id)"
    return f"{found} resources"


def what_the_document_is(keys: list[str]) -> str:
    """What a file whose top level is an object without a `value` list holds."""
    if not keys:
        return "an empty object (a list that holds no resources is saved as [])"
    if "Reservations" in keys:
        return "an aws ec2 describe-instances answer (Reservations)"
    if "items" in keys or "kind" in keys:
        return "a Compute Engine list page (items, kind: a gcloud or Compute API answer)"
    return "an object with keys " + ", ".join(sorted(keys)[:6])
