"""Resource SKUs (`az vm list-skus`, GET .../providers/Microsoft.Compute/skus) -> the capability of a VM size.

ARM gives each capability as a {"name", "value"} pair whose value is a string: `RdmaEnabled` "True" or "False"
(InfiniBand; LISA-IB), `GPUs` a count such as "8" (Azure/azure-rest-api-specs@73ffaaf29baa8432cd244621c6339429ab3d6c7f
specification/compute/resource-manager/Microsoft.Compute/Skus/stable/2021-07-01/examples/skus/
ListAvailableResourceSkus.json shows the form). A value in any other form ("Yes", 1, {"value":
"True"}, "eight") is not read as "no InfiniBand" or "no GPUs": the SKU answer for that size is unreadable, the
size's capability is left to the shipped catalog and the size name (or unknown, not judged), and the collection
records the value it could not read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fabriccheck import catalog
from fabriccheck.model import MAX_COUNT, Capability, CollectionError, FabricKind
from fabriccheck.sources.scope import BAD_RESPONSE, Scope

if TYPE_CHECKING:
    from fabriccheck.inventory import Inventory

SOURCE = "Azure Resource SKUs (live answer)"
_BOOLEANS = {"true": True, "false": False}


def _flag(caps: dict[str, Any], name: str) -> bool | None:
    value = caps.get(name)
    return _BOOLEANS.get(value.lower()) if isinstance(value, str) else None


def _count(caps: dict[str, Any], name: str) -> int | None:
    value = caps.get(name)
    if isinstance(value, str) and value.isascii() and value.isdigit() and int(value) <= MAX_COUNT:
        return int(value)
    return None


def read_sku(item: dict[str, Any]) -> tuple[Capability | None, str | None]:
    """(the size's capability, or None for an item that is no VM size or says nothing of InfiniBand; why the item
    could not be read, or None). The catalog row, when there is one, adds what the SKU does not say (ports,
    bandwidth, the GPU's name)."""
    kind = item.get("resourceType", "virtualMachines")
    if not isinstance(kind, str) or kind.lower() != "virtualmachines" or not isinstance(item.get("name"), str):
        return None, None
    caps: dict[str, Any] = {}
    for pair in item.get("capabilities") or ():
        if isinstance(pair, dict) and isinstance(pair.get("name"), str):
            caps[pair["name"]] = pair.get("value")
    name = item["name"]
    if "RdmaEnabled" not in caps:
        return None, None  # the answer does not say: the catalog or the name does, or it is unknown
    rdma = _flag(caps, "RdmaEnabled")
    gpus = _count(caps, "GPUs") if "GPUs" in caps else 0
    unreadable = [f"{key} {caps[key]!r}" for key, value in (("RdmaEnabled", rdma), ("GPUs", gpus)) if value is None]
    if rdma is None or gpus is None:
        return None, f"size {name}: capability {', '.join(unreadable)} is not a value Azure gives"
    table = catalog.catalog_entry(name)
    ports = table.fabric_interfaces if table and table.fabric is FabricKind.INFINIBAND else (gpus or 1)
    return (
        Capability(
            instance_type=name,
            provider="azure",
            fabric=FabricKind.INFINIBAND if rdma else FabricKind.NONE,
            fabric_interfaces=ports if rdma else 0,
            accelerators=gpus,
            accelerator_name=table.accelerator_name if table else None,
            source=SOURCE,
        ),
        None,
    )


def unreadable_errors(inventory: Inventory, unreadable: dict[str, str], call: str) -> list[CollectionError]:
    """One error per scope whose VMs run a size whose SKU answer could not be read (a size no VM runs does not
    matter), unless another item of the answer gave that size's capability."""
    scopes: dict[str, set[tuple[str, str]]] = {}
    for node in [*inventory.nodes, *inventory.specs]:
        size = node.instance_type
        if size in unreadable and size not in inventory.capabilities:
            scopes.setdefault(size, set()).add((node.account, node.region))
    how = "its InfiniBand and GPUs are read from the shipped catalog or the size name where they have it, else unknown"
    return [
        Scope("azure", account, region).error(call, BAD_RESPONSE, f"{unreadable[size]}; {how}")
        for size, where in sorted(scopes.items())
        for account, region in sorted(where)
    ]
