"""Azure answers -> the model: the one ARM call table, and the pure function from ARM list answers to nodes,
specs and the `azure` namespace.

Two shapes of the same answer are read alike: ARM's own JSON (what the SDK's `serialize()` and the REST API
give: the settings under `properties`) and the `az ... -o json` output users dump (the same settings
flattened to the top level, and an extension's own type renamed `typePropertiesType`). `CALLS` is the single
list of ARM list calls: the live fetch issues them, dumps are named after the `az` commands, and the custom
role lists their `Microsoft.*/read` actions.
"""

from __future__ import annotations

import functools
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from fabriccheck.cloud import resolve
from fabriccheck.errors import DumpShapeError, FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.model import UNKNOWN_ACCOUNT, Node, NodeShape, fact_key
from fabriccheck.providers.azure.fields import NicFields, VmFields
from fabriccheck.providers.azure.kinds import RESOURCE_TYPES, WrongKind, check, resource_type
from fabriccheck.providers.azure.skus import read_sku, unreadable_errors
from fabriccheck.providers.azure.states import RUNNING, power_state, stateless_note
from fabriccheck.providers.azure.support import (
    AVAILABILITY_SET,
    AVAILABILITY_SETS,
    NICS,
    PROXIMITY_PLACEMENT_GROUP,
    PROXIMITY_PLACEMENT_GROUPS,
    SCALE_SET,
    SCALE_SETS,
    SKUS,
    VIRTUAL_NETWORKS,
    VMS,
    vnet_of_subnet,
)
from fabriccheck.resources.azure import (
    AvailabilitySet,
    Extension,
    Nic,
    NicConfig,
    ProximityPlacementGroup,
    ScaleSet,
    VirtualNetwork,
    VmExtensions,
)
from fabriccheck.sources import pools
from fabriccheck.sources.common import BAD_RESPONSE, Scope, describe, unexpected_shape
from fabriccheck.sources.items import INTERFACE_FACTS, ITEM_ERRORS, named, salvage, unknown_because
from fabriccheck.sources.pools import without


@dataclass(frozen=True)
class ArmCall:
    name: str  # what the progress display and errors call it
    command: str  # the az command whose `-o json` output a dump holds
    fact: str  # what it tells us, recorded in Inventory.collected (model.fact_key)
    permission: str  # the Microsoft.*/read action it needs
    required: bool  # missing -> the run is incomplete; SKUs fall back to the catalog

    @property
    def dump_file(self) -> str:
        # `az vm availability-set list` -> vm-availability-set-list.json
        return self.command.removeprefix("az ").split(" -", 1)[0].replace(" ", "-") + ".json"


SKU_LIST = ArmCall("ResourceSkus.List", "az vm list-skus --resource-type virtualMachines", SKUS,
                   "Microsoft.Compute/skus/read", False)  # fmt: skip
SCALE_SET_LIST = ArmCall("VirtualMachineScaleSets.ListAll", "az vmss list", SCALE_SETS,
                         "Microsoft.Compute/virtualMachineScaleSets/read", True)  # fmt: skip
# `az vm list -d` adds each VM's power state (states.py); a plain `az vm list` is read too.
VM_LIST = ArmCall("VirtualMachines.ListAll", "az vm list -d", VMS, "Microsoft.Compute/virtualMachines/read", True)
# One list call per scale set (ARM has no subscription-wide list of scale-set VMs); the dump concatenates them.
SCALE_SET_VM_LIST = ArmCall("VirtualMachineScaleSetVMs.List", "az vmss list-instances --expand instanceView",
                            SCALE_SETS, "Microsoft.Compute/virtualMachineScaleSets/virtualMachines/read",
                            True)  # fmt: skip
AVAILABILITY_SET_LIST = ArmCall("AvailabilitySets.ListBySubscription", "az vm availability-set list",
                                AVAILABILITY_SETS, "Microsoft.Compute/availabilitySets/read", True)  # fmt: skip
PPG_LIST = ArmCall("ProximityPlacementGroups.ListBySubscription", "az ppg list", PROXIMITY_PLACEMENT_GROUPS,
                   "Microsoft.Compute/proximityPlacementGroups/read", True)  # fmt: skip
NIC_LIST = ArmCall("NetworkInterfaces.ListAll", "az network nic list", NICS,
                   "Microsoft.Network/networkInterfaces/read", True)  # fmt: skip
VNET_LIST = ArmCall("VirtualNetworks.ListAll", "az network vnet list", VIRTUAL_NETWORKS,
                    "Microsoft.Network/virtualNetworks/read", True)  # fmt: skip

# In reading order: sizes and scale-set models before the VMs that use them, NICs after the VMs they fill in.
CALLS = (SKU_LIST, SCALE_SET_LIST, VM_LIST, SCALE_SET_VM_LIST, AVAILABILITY_SET_LIST, PPG_LIST, NIC_LIST, VNET_LIST)
# Listing the subscriptions a credential can see (when no --subscription is given).
SUBSCRIPTIONS_PERMISSION = "Microsoft.Resources/subscriptions/read"

_SUBSCRIPTION = re.compile(r"^/subscriptions/([^/]+)/", re.IGNORECASE)
_SCALE_SET_OF_VM = re.compile(r"^(.*/virtualmachinescalesets/[^/]+)/virtualmachines/[^/]+$", re.IGNORECASE)


# The large lists, parsed with the fields fields.py names only.
PROJECTIONS: dict[ArmCall, Any] = {VM_LIST: VmFields, SCALE_SET_VM_LIST: VmFields, NIC_LIST: NicFields}


def subscription_of(resource_id: Any) -> str | None:
    match = _SUBSCRIPTION.match(resource_id) if isinstance(resource_id, str) else None
    return match.group(1).lower() if match else None


def region_name(location: Any) -> str:
    """'East US' or 'eastus' -> 'eastus' (ARM answers say eastus; people type the display name)."""
    return _region(location) if isinstance(location, str) and location else "unknown"


@functools.lru_cache(maxsize=1024)
def _region(location: str) -> str:
    # Every VM names its region: one string object per region, for all of them.
    return sys.intern(location.replace(" ", "").lower())


def _props(item: dict[str, Any]) -> dict[str, Any]:
    """ARM keeps a resource's settings under `properties`; `az -o json` flattens them to the top level."""
    inner = item.get("properties")
    return inner if isinstance(inner, dict) else item


def _id(value: Any) -> str | None:
    """A sub-resource reference ({"id": ...}) -> its id, lower-cased (ARM ids are case-insensitive)."""
    if value is None:
        return None
    found = value.get("id") if isinstance(value, dict) else None
    return found.lower() if isinstance(found, str) and found else None


def _tags(raw: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


def _image(reference: Any) -> str | None:
    """storageProfile.imageReference -> publisher:offer:sku:version, or the custom image's id."""
    if not isinstance(reference, dict):
        return None
    publisher, offer = reference.get("publisher"), reference.get("offer")
    if publisher and offer:
        return f"{publisher!s}:{offer!s}:{reference.get('sku') or ''!s}:{reference.get('version') or ''!s}"
    for key in ("id", "sharedGalleryImageId", "communityGalleryImageId"):
        if reference.get(key):
            return str(reference[key])
    return None


def _extensions(raw: Any) -> list[Extension]:
    found = []
    for ext in raw or ():
        if not isinstance(ext, dict):
            continue
        inner: dict[str, Any] = ext["properties"] if isinstance(ext.get("properties"), dict) else {}
        publisher = ext.get("publisher") or inner.get("publisher")
        kind = ext.get("typePropertiesType") or inner.get("type")
        if not kind and "/" not in str(ext.get("type") or "/"):
            kind = ext.get("type")  # a flattened extension whose own type kept its name
        if publisher and kind:
            found.append(Extension(publisher=str(publisher), type=str(kind)))
        elif isinstance(ext.get("id"), str) and "/extensions/" in ext["id"].lower():
            # A VM list may name an extension by id only: its name (which `az vm extension set --name` makes
            # the extension's type) is all there is; the publisher is left unknown.
            found.append(Extension(publisher="", type=ext["id"].rstrip("/").rsplit("/", 1)[-1]))
    return found


def _nic_configs(profile: Any) -> list[NicConfig]:
    configs = []
    for raw in (profile or {}).get("networkInterfaceConfigurations") or ():
        props = _props(raw)
        subnet = None
        for ip in props.get("ipConfigurations") or ():
            subnet = _id(_props(ip).get("subnet"))
            if subnet:
                break
        accelerated = props.get("enableAcceleratedNetworking")
        configs.append(NicConfig(name=str(raw.get("name") or "nic"), accelerated_networking=accelerated, subnet=subnet))
    return configs


def _each(raw: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The items of an answer: a list (az -o json) or an ARM page ({"value": [...]})."""
    items = raw.get("value") if isinstance(raw, dict) else raw
    if not isinstance(items, list):
        raise DumpShapeError(where, "(top level)", "a list, or an object with a value list")
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise DumpShapeError(where, f"[{i}]", "an object")
        yield f"[{i}]", item


def _printed_by(item: Any) -> str:
    """The command whose answer holds resources of the item's type, if one of the dump's: ' (what az ... prints)'."""
    found = resource_type(item["id"]) if isinstance(item, dict) and isinstance(item.get("id"), str) else None
    for call in CALLS:
        if found is not None and RESOURCE_TYPES.get(call.name) == found:
            return f" (what {call.command} prints)"
    return ""


def is_truncated(raw: Any) -> bool:
    """An ARM page saved on its own: its nextLink says the rest was never read."""
    return isinstance(raw, dict) and bool(raw.get("nextLink"))


# Where a VM's NICs are read, and the node facts made from them.
_NIC_FIELDS = (("properties", "networkProfile"), ("properties", "networkProfileConfiguration"))
_NIC_FACTS = (*INTERFACE_FACTS, "accelerated_networking", "nics_without_acceleration")


class Normalizer:
    """Turns one subscription's answers into the inventory, in CALLS order. `subscription` is the scope of
    every answer when known (a live run, a dump's subscription folder); otherwise each item is filed under
    the subscription its own id names. `where(call)` names an answer's origin for error messages."""

    def __init__(self, inventory: Inventory, subscription: str | None, where: Callable[[ArmCall], str]) -> None:
        self.inventory = inventory
        self.subscription = subscription
        self.where = where
        # A live answer is read item by item: a misshapen VM is recorded and the others stand.
        self.per_item = False
        self._salvaging = False
        self.answered: dict[str, set[str]] = {}  # fact -> subscriptions whose answer was read in full
        self.unreadable_sizes: dict[str, str] = {}  # VM size -> why its SKU answer could not be read
        self._stateless: set[ArmCall] = set()  # the VM lists with a VM whose answer gave no power state
        self._scale_sets: dict[tuple[str, str], ScaleSet] = {}
        self._scale_sets_with_vms: set[tuple[str, str]] = set()
        self._scale_set_ppg: dict[tuple[str, str], str] = {}
        self._pools = pools.Pools()

    def _account(self, item: dict[str, Any]) -> str:
        return self.subscription or subscription_of(item.get("id")) or UNKNOWN_ACCOUNT

    def add(self, call: ArmCall, raw: Any, collected: bool = True) -> None:
        accounts = self.add_items(call, _each(raw, self.where(call)))
        if collected:
            self.record(call, accounts)

    def add_items(self, call: ArmCall, items: Iterable[tuple[str, dict[str, Any]]]) -> set[str]:
        """One answer's items as they arrive, each with its path for error messages (a dump file read as a
        stream hands them over one at a time).
        Returns the subscriptions the items belong to."""
        where = self.where(call)
        with unexpected_shape(where):
            return self._add(call, items, where)

    def record(self, call: ArmCall, accounts: set[str]) -> None:
        """The answer was read in full: its fact counts as collected for these subscriptions."""
        if self.subscription:
            accounts = {self.subscription}
        self.answered.setdefault(call.fact, set()).update(accounts)

    def _add(self, call: ArmCall, items: Iterable[tuple[str, dict[str, Any]]], where: str) -> set[str]:
        inventory = self.inventory
        accounts: set[str] = set()
        if call is SKU_LIST:
            for path, item in items:
                cap, why = read_sku(item)
                if cap is not None:
                    inventory.capabilities[cap.instance_type] = cap
                elif why:
                    self.unreadable_sizes.setdefault(str(item["name"]), f"{where}: {path}: {why}")
            return accounts
        for path, item in items:
            account = self._account(item)
            accounts.add(account)
            try:
                self._item(call, item, account)
            except WrongKind as exc:  # a file or page of another kind: never read as this call's resources
                message = f"{where}: {path}: holds {exc.what}{_printed_by(item)}, not what {call.command} prints"
                if not self.per_item:
                    raise FabricCheckError(message) from None
                self.inventory.errors.append(Scope("azure", account).error(call.name, BAD_RESPONSE, message))
            except ITEM_ERRORS as exc:
                if not (self.per_item and call in (VM_LIST, SCALE_SET_VM_LIST)):
                    if isinstance(exc, (KeyError, TypeError, AttributeError, ValidationError)):
                        raise FabricCheckError(f"{where}: {path}: {describe(exc)}") from None
                    raise
                self._unreadable(call, item, path, account, where, describe(exc))
        return accounts

    def _unreadable(self, call: ArmCall, item: Any, path: str, account: str, where: str, what_was_wrong: str) -> None:
        """A live VM that cannot be read: an error names it and the field; when the fault is in its network
        profile, the VM is kept without it, its interface facts unknown."""
        vm = named(item, "id")
        what = f"VM {vm} ({path})" if vm else path
        region = region_name(item.get("location")) if isinstance(item, dict) else None
        scope = Scope("azure", account, region)
        before = len(self.inventory.nodes)
        self._salvaging = True
        try:
            kept = salvage(lambda trimmed: self._item(call, trimmed, account), item, _NIC_FIELDS)
        finally:
            self._salvaging = False
        if kept is None or len(self.inventory.nodes) == before:
            self.inventory.errors.append(scope.error(call.name, BAD_RESPONSE, f"{where}: {what}: {what_was_wrong}"))
            return
        why = f"field {kept[1]} of the answer could not be read ({what_was_wrong})"
        self.inventory.nodes[-1].unknown.update(unknown_because(_NIC_FACTS, why))
        self.inventory.errors.append(
            scope.error(call.name, BAD_RESPONSE, f"{where}: {what}: {why}; its fabric facts are unknown")
        )

    def _item(self, call: ArmCall, item: dict[str, Any], account: str) -> None:
        azure = self.inventory.azure
        props = _props(item)
        region = region_name(item.get("location"))
        resource_id = raw.lower() if type(raw := item.get("id")) is str else ""  # none: no ARM resource (kinds)
        check(call.name, item, resource_id)
        if call is SCALE_SET_LIST:
            profile = props.get("virtualMachineProfile") or {}
            scale_set = ScaleSet(
                account=account,
                region=region,
                id=resource_id,
                name=str(item.get("name") or resource_id.rsplit("/", 1)[-1]),
                orchestration_mode=str(props.get("orchestrationMode") or "Uniform"),
                single_placement_group=props.get("singlePlacementGroup"),
                platform_fault_domain_count=props.get("platformFaultDomainCount"),
                capacity=(item.get("sku") or {}).get("capacity"),
                size=(item.get("sku") or {}).get("name"),
                image=_image((profile.get("storageProfile") or {}).get("imageReference")),
                extensions=_extensions((profile.get("extensionProfile") or {}).get("extensions")),
                nics=_nic_configs(profile.get("networkProfile")),
                tags=_tags(item.get("tags")),
            )
            # A proximity placement group of the scale set is the VMs' too.
            scale_set_ppg = _id(props.get("proximityPlacementGroup"))
            azure.scale_sets.append(scale_set)
            self._scale_sets[(account, resource_id)] = scale_set
            if scale_set_ppg:
                self._scale_set_ppg[(account, resource_id)] = scale_set_ppg
        elif call is VM_LIST:
            self._vm(item, props, account, region, resource_id, _id(props.get("virtualMachineScaleSet")), False)
        elif call is SCALE_SET_VM_LIST:
            match = _SCALE_SET_OF_VM.match(resource_id)
            self._vm(item, props, account, region, resource_id, match.group(1) if match else None, True)
        elif call is AVAILABILITY_SET_LIST:
            azure.availability_sets.append(
                AvailabilitySet(
                    account=account,
                    region=region,
                    id=resource_id,
                    name=str(item.get("name") or ""),
                    platform_fault_domain_count=props.get("platformFaultDomainCount"),
                    virtual_machines=len(props.get("virtualMachines") or ()),
                )
            )
        elif call is PPG_LIST:
            azure.proximity_placement_groups.append(
                ProximityPlacementGroup(
                    account=account,
                    region=region,
                    id=resource_id,
                    name=str(item.get("name") or ""),
                    group_type=props.get("proximityPlacementGroupType"),
                )
            )
        elif call is NIC_LIST:
            subnet = None
            for ip in props.get("ipConfigurations") or ():
                subnet = _id(_props(ip).get("subnet"))
                if subnet:
                    break
            # The VMs' NICs take their subnet and accelerated networking from these records (support.resolve).
            azure.nics.append(
                Nic(
                    account=account,
                    region=region,
                    id=resource_id,
                    accelerated_networking=props.get("enableAcceleratedNetworking"),
                    subnet=subnet,
                    virtual_machine=_id(props.get("virtualMachine")),
                )
            )
        elif call is VNET_LIST:
            prefixes = [str(p) for p in (props.get("addressSpace") or {}).get("addressPrefixes") or ()]
            for subnet in props.get("subnets") or ():
                sub = _props(subnet)
                prefixes += [str(p) for p in (sub.get("addressPrefix"), *(sub.get("addressPrefixes") or ())) if p]
            azure.virtual_networks.append(
                VirtualNetwork(
                    account=account, region=region, id=resource_id, name=str(item.get("name") or ""),
                    address_prefixes=sorted(set(prefixes)),
                )
            )  # fmt: skip

    def _vm(
        self,
        item: dict[str, Any],
        props: dict[str, Any],
        account: str,
        region: str,
        resource_id: str,
        scale_set_id: str | None,
        uniform: bool,
    ) -> None:
        """A VM: its id, power state and NIC ids are its own; its shape is read from the rest of its answer, once per
        pool (sources/pools.py), with its scale set's model; its NICs' records and its extensions are copied onto
        the shape when every answer is read (support.resolve)."""
        if scale_set_id:
            self._scale_sets_with_vms.add((account, scale_set_id))
        state = power_state(item, props)
        if uniform:
            # A Uniform scale set's VM: its NICs live under the scale set, not in the subscription's NIC list;
            # their settings are the VM's networkProfileConfiguration, else the scale set's model.
            names = _config_names(props) or [c.name for c in self._scale_set_nics(account, scale_set_id)]
            interface_ids = tuple(f"{resource_id}/networkinterfaces/{name.lower()}" for name in names)
        else:
            refs = (props.get("networkProfile") or {}).get("networkInterfaces") or []
            if self.per_item and not (isinstance(refs, list) and all(_id(ref) for ref in refs)):
                # A reference without an id would be skipped: the VM would look as if it had fewer NICs.
                raise TypeError("networkProfile.networkInterfaces is not a list of NIC references with ids")
            interface_ids = tuple(ref_id for ref in refs if (ref_id := _id(ref)))
        shape = self._pools.shape(
            without(item, _OWN_FIELDS),
            lambda rest: self._vm_shape(rest, account, scale_set_id, uniform),
            (account, scale_set_id, uniform, self._scale_set_ppg.get((account, scale_set_id or ""))),
        )
        node = pools.node(str(item["id"]), shape, state=state or RUNNING, interface_ids=interface_ids)
        if self.per_item and not uniform and props.get("networkProfile") is None and not self._salvaging:
            self._without_network_profile(node)
        if state is None:
            self._stateless.add(SCALE_SET_VM_LIST if uniform else VM_LIST)
        self.inventory.nodes.append(node)
        extensions = _extensions(item.get("resources"))
        if extensions:
            self.inventory.azure.extensions.append(
                VmExtensions(account=account, region=region, vm=resource_id, extensions=extensions)
            )

    def _scale_set_nics(self, account: str, scale_set_id: str | None) -> list[NicConfig]:
        scale_set = self._scale_sets.get((account, scale_set_id)) if scale_set_id else None
        return scale_set.nics if scale_set else []

    def _without_network_profile(self, node: Node) -> None:
        """A live VM's answer always holds its network profile: without it, its NICs are unknown, not absent."""
        why = "field properties.networkProfile is missing from the answer"
        node.unknown.update(unknown_because(_NIC_FACTS, why))
        self.inventory.errors.append(
            Scope("azure", node.account, node.region).error(
                VM_LIST.name, BAD_RESPONSE, f"{self.where(VM_LIST)}: VM {node.id}: {why}; its fabric facts are unknown"
            )
        )

    def _vm_shape(self, item: dict[str, Any], account: str, scale_set_id: str | None, uniform: bool) -> NodeShape:
        """What a VM's answer says that the other VMs of its scale set or availability set say alike."""
        props = _props(item)
        region = region_name(item.get("location"))
        scale_set = self._scale_sets.get((account, scale_set_id)) if scale_set_id else None
        placement = []
        if scale_set_id:
            placement.append({"kind": SCALE_SET, "id": scale_set_id})
        availability_set = _id(props.get("availabilitySet"))
        if availability_set:
            placement.append({"kind": AVAILABILITY_SET, "id": availability_set})
        ppg = _id(props.get("proximityPlacementGroup")) or self._scale_set_ppg.get((account, scale_set_id or ""))
        if ppg:
            placement.append({"kind": PROXIMITY_PLACEMENT_GROUP, "id": ppg})
        size = (props.get("hardwareProfile") or {}).get("vmSize") or (item.get("sku") or {}).get("name")
        if not size and scale_set:
            size = scale_set.size
        zones = item.get("zones") or []
        if uniform:
            configs = _nic_configs(props.get("networkProfileConfiguration")) or (scale_set.nics if scale_set else [])
            interfaces = [_uniform_interface(config, index) for index, config in enumerate(configs)]
        else:
            refs = (props.get("networkProfile") or {}).get("networkInterfaces") or []
            interfaces = [
                _interface(None, None, 0 if _props(ref).get("primary") else index + 1)
                for index, ref in enumerate(refs)
                if isinstance(ref, dict)
            ]
        return NodeShape.model_validate(
            {
                "provider": "azure",
                "account": account,
                "region": region,
                "zone": f"{region}-{zones[0]}" if zones else None,
                "instance_type": size,
                "image": _image((props.get("storageProfile") or {}).get("imageReference"))
                or (scale_set.image if scale_set else None),
                "tags": _tags(item.get("tags")),
                "interfaces": interfaces,
                "placement": placement,
            }
        )

    def finish(self) -> None:
        """Scale sets with no VMs seen become specs (an AKS GPU pool scaled to zero still launches what its
        model says), and each fact read in full counts as collected for every region of its subscription."""
        for key, scale_set in self._scale_sets.items():
            if key in self._scale_sets_with_vms:
                continue
            self.inventory.specs.append(scale_set_spec(scale_set))
        resolve(self.inventory)
        self.inventory.errors += unreadable_errors(self.inventory, self.unreadable_sizes, SKU_LIST.name)
        if not self.per_item:  # a dump: say how to make it with power states (a live run asks for them itself)
            self.inventory.notes += [stateless_note(self.where(c), c is VM_LIST) for c in CALLS if c in self._stateless]
        regions: dict[str, set[str]] = {}
        for node in [*self.inventory.nodes, *self.inventory.specs]:
            regions.setdefault(node.account, set()).add(node.region)
        for fact, accounts in self.answered.items():
            # SKUs name no subscription: they count for every subscription whose VMs were read with them.
            for account in accounts or set(regions):
                for region in sorted(regions.get(account) or {"unknown"}):
                    recorded = fact_key("azure", account, region, fact)
                    if recorded not in self.inventory.collected:
                        self.inventory.collected.append(recorded)


def scale_set_spec(scale_set: ScaleSet) -> Node:
    """A scale set's model -> the VM it would launch (origin template)."""
    interfaces = [
        {
            "id": f"{scale_set.id}/model/networkinterfaces/{config.name.lower()}",
            **_uniform_interface(config, index),
        }
        for index, config in enumerate(scale_set.nics)
    ]
    return Node.model_validate(
        {
            "id": scale_set.id,
            "provider": "azure",
            "account": scale_set.account,
            "region": scale_set.region,
            "origin": "template",
            "spec": {"kind": "scale-set-model", "name": scale_set.name, "role": f"{scale_set.orchestration_mode} "
                     "scale set with no VMs running"},
            "instance_type": scale_set.size,
            "image": scale_set.image,
            "tags": scale_set.tags,
            "interfaces": interfaces,
            "placement": [{"kind": SCALE_SET, "id": scale_set.id}],
        }
    )  # fmt: skip


def normalize(
    answers: dict[ArmCall, Any],
    subscription: str | None,
    where: Callable[[ArmCall], str],
    into: Inventory | None = None,
) -> Inventory:
    inventory = into if into is not None else Inventory(source="azure")
    normalizer = Normalizer(inventory, subscription, where)
    for call in sorted(answers, key=CALLS.index):
        normalizer.add(call, answers[call])
    normalizer.finish()
    return inventory


def role_definition() -> dict[str, Any]:
    """A least-privilege custom role with exactly the read actions the collector uses."""
    actions = sorted({c.permission for c in CALLS} | {SUBSCRIPTIONS_PERMISSION})
    return {
        "Name": "fabriccheck reader",
        "IsCustom": True,
        "Description": "Read what fabriccheck needs to audit InfiniBand clusters: VMs, scale sets, availability "
        "sets, proximity placement groups, NICs, virtual networks and resource SKUs.",
        "Actions": actions,
        "NotActions": [],
        "DataActions": [],
        "NotDataActions": [],
        "AssignableScopes": ["/subscriptions/SUBSCRIPTION_ID"],
    }


def _interface(network: str | None, subnet: str | None, device_index: int) -> dict[str, Any]:
    """A VM's NIC as its shape holds it: the subnet and accelerated networking of a NIC the VM only references
    come from the NIC's own record (support.resolve)."""
    return {"interface_type": "nic", "network": network, "subnet": subnet, "device_index": device_index}


def _uniform_interface(config: NicConfig, index: int) -> dict[str, Any]:
    """A Uniform scale-set VM's NIC, from its configuration (absent accelerated networking is ARM's default: off)."""
    interface = _interface(vnet_of_subnet(config.subnet), config.subnet, index)
    return {**interface, "accelerated": bool(config.accelerated_networking)}


def _config_names(props: dict[str, Any]) -> list[str]:
    """The names of a VM's own NIC configurations (networkProfileConfiguration), as _nic_configs reads them."""
    configs = (props.get("networkProfileConfiguration") or {}).get("networkInterfaceConfigurations") or ()
    return [str(config.get("name") or "nic") for config in configs]


# A VM's own values (Normalizer._vm): its id and name, power state, NIC references' ids and extensions (kept as
# records of their own); everything else in its answer is its shape's.
_OWN_FIELDS = (
    ("id",), ("name",), ("powerState",), ("instanceView",), ("properties", "instanceView"), ("resources",),
    ("networkProfile", "networkInterfaces", "*", "id"),
    ("properties", "networkProfile", "networkInterfaces", "*", "id"),
)  # fmt: skip
