"""Azure answers -> the model: the one ARM call table, and the pure function from ARM list answers to nodes,
specs and the `azure` namespace.

Two shapes of the same answer are read alike: ARM's own JSON (what the SDK's `serialize()` and the REST API
give: the settings under `properties`) and the `az ... -o json` output users dump (the same settings
flattened to the top level, and an extension's own type renamed `typePropertiesType`). `CALLS` is the single
list of ARM list calls: the live fetch issues them, dumps are named after the `az` commands, and the custom
role lists their `Microsoft.*/read` actions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from fabriccheck.cloud import resolve
from fabriccheck.errors import DumpShapeError, FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.model import UNKNOWN_ACCOUNT, Node, NodeShape, fact_key
from fabriccheck.providers.azure.fields import NicFields, VmFields
from fabriccheck.providers.azure.items import (
    SCALE_SET_OF_VM,
    config_names,
    extensions_of,
    image_of,
    interface,
    nic_configs,
    props_of,
    ref_id,
    region_name,
    scale_set_spec,
    subscription_of,
    tags_of,
    uniform_interface,
)
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
)
from fabriccheck.resources.azure import (
    AvailabilitySet,
    Nic,
    NicConfig,
    ProximityPlacementGroup,
    ScaleSet,
    VirtualNetwork,
    VmExtensions,
)
from fabriccheck.sources import pools
from fabriccheck.sources.items import INTERFACE_FACTS, ITEM_ERRORS, named, salvage, unknown_because
from fabriccheck.sources.pools import without
from fabriccheck.sources.scope import BAD_RESPONSE, Scope
from fabriccheck.sources.shape import describe, unexpected_shape


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
# The large lists, parsed with the fields fields.py names only.
PROJECTIONS: dict[ArmCall, Any] = {VM_LIST: VmFields, SCALE_SET_VM_LIST: VmFields, NIC_LIST: NicFields}
CALLS = (SKU_LIST, SCALE_SET_LIST, VM_LIST, SCALE_SET_VM_LIST, AVAILABILITY_SET_LIST, PPG_LIST, NIC_LIST, VNET_LIST)
# Listing the subscriptions a credential can see (when no --subscription is given).
SUBSCRIPTIONS_PERMISSION = "Microsoft.Resources/subscriptions/read"


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
        resource_id = raw.lower() if type(raw := item.get("id")) is str else ""  # none: no ARM resource (kinds)
        check(call.name, item, resource_id)
        _READERS[call.name](self, item, props_of(item), account, region_name(item.get("location")), resource_id)

    def _scale_set(self, item: dict[str, Any], props: dict[str, Any], account: str, region: str, rid: str) -> None:
        profile = props.get("virtualMachineProfile") or {}
        scale_set = ScaleSet(
            account=account,
            region=region,
            id=rid,
            name=str(item.get("name") or rid.rsplit("/", 1)[-1]),
            orchestration_mode=str(props.get("orchestrationMode") or "Uniform"),
            single_placement_group=props.get("singlePlacementGroup"),
            platform_fault_domain_count=props.get("platformFaultDomainCount"),
            capacity=(item.get("sku") or {}).get("capacity"),
            size=(item.get("sku") or {}).get("name"),
            image=image_of((profile.get("storageProfile") or {}).get("imageReference")),
            extensions=extensions_of((profile.get("extensionProfile") or {}).get("extensions")),
            nics=nic_configs(profile.get("networkProfile")),
            tags=tags_of(item.get("tags")),
        )
        self.inventory.azure.scale_sets.append(scale_set)
        self._scale_sets[(account, rid)] = scale_set
        # A proximity placement group of the scale set is the VMs' too.
        scale_set_ppg = ref_id(props.get("proximityPlacementGroup"))
        if scale_set_ppg:
            self._scale_set_ppg[(account, rid)] = scale_set_ppg

    def _listed_vm(self, item: dict[str, Any], props: dict[str, Any], account: str, region: str, rid: str) -> None:
        self._vm(item, props, account, region, rid, ref_id(props.get("virtualMachineScaleSet")), False)

    def _scale_set_vm(self, item: dict[str, Any], props: dict[str, Any], account: str, region: str, rid: str) -> None:
        match = SCALE_SET_OF_VM.match(rid)
        self._vm(item, props, account, region, rid, match.group(1) if match else None, True)

    def _availability_set(
        self, item: dict[str, Any], props: dict[str, Any], account: str, region: str, rid: str
    ) -> None:
        self.inventory.azure.availability_sets.append(
            AvailabilitySet(
                account=account,
                region=region,
                id=rid,
                name=str(item.get("name") or ""),
                platform_fault_domain_count=props.get("platformFaultDomainCount"),
                virtual_machines=len(props.get("virtualMachines") or ()),
            )
        )

    def _ppg(self, item: dict[str, Any], props: dict[str, Any], account: str, region: str, rid: str) -> None:
        self.inventory.azure.proximity_placement_groups.append(
            ProximityPlacementGroup(
                account=account,
                region=region,
                id=rid,
                name=str(item.get("name") or ""),
                group_type=props.get("proximityPlacementGroupType"),
            )
        )

    def _nic(self, item: dict[str, Any], props: dict[str, Any], account: str, region: str, rid: str) -> None:
        subnet = None
        for ip in props.get("ipConfigurations") or ():
            subnet = ref_id(props_of(ip).get("subnet"))
            if subnet:
                break
        # The VMs' NICs take their subnet and accelerated networking from these records (support.resolve).
        self.inventory.azure.nics.append(
            Nic(
                account=account,
                region=region,
                id=rid,
                accelerated_networking=props.get("enableAcceleratedNetworking"),
                subnet=subnet,
                virtual_machine=ref_id(props.get("virtualMachine")),
            )
        )

    def _vnet(self, item: dict[str, Any], props: dict[str, Any], account: str, region: str, rid: str) -> None:
        prefixes = [str(p) for p in (props.get("addressSpace") or {}).get("addressPrefixes") or ()]
        for subnet in props.get("subnets") or ():
            sub = props_of(subnet)
            prefixes += [str(p) for p in (sub.get("addressPrefix"), *(sub.get("addressPrefixes") or ())) if p]
        self.inventory.azure.virtual_networks.append(
            VirtualNetwork(
                account=account, region=region, id=rid, name=str(item.get("name") or ""),
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
            names = config_names(props) or [c.name for c in self._scale_set_nics(account, scale_set_id)]
            interface_ids = tuple(f"{resource_id}/networkinterfaces/{name.lower()}" for name in names)
        else:
            refs = (props.get("networkProfile") or {}).get("networkInterfaces") or []
            if self.per_item and not (isinstance(refs, list) and all(ref_id(ref) for ref in refs)):
                # A reference without an id would be skipped: the VM would look as if it had fewer NICs.
                raise TypeError("networkProfile.networkInterfaces is not a list of NIC references with ids")
            interface_ids = tuple(found for ref in refs if (found := ref_id(ref)))
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
        extensions = extensions_of(item.get("resources"))
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
        props = props_of(item)
        region = region_name(item.get("location"))
        scale_set = self._scale_sets.get((account, scale_set_id)) if scale_set_id else None
        placement = []
        if scale_set_id:
            placement.append({"kind": SCALE_SET, "id": scale_set_id})
        availability_set = ref_id(props.get("availabilitySet"))
        if availability_set:
            placement.append({"kind": AVAILABILITY_SET, "id": availability_set})
        ppg = ref_id(props.get("proximityPlacementGroup")) or self._scale_set_ppg.get((account, scale_set_id or ""))
        if ppg:
            placement.append({"kind": PROXIMITY_PLACEMENT_GROUP, "id": ppg})
        size = (props.get("hardwareProfile") or {}).get("vmSize") or (item.get("sku") or {}).get("name")
        if not size and scale_set:
            size = scale_set.size
        zones = item.get("zones") or []
        if uniform:
            configs = nic_configs(props.get("networkProfileConfiguration")) or (scale_set.nics if scale_set else [])
            interfaces = [uniform_interface(config, index) for index, config in enumerate(configs)]
        else:
            refs = (props.get("networkProfile") or {}).get("networkInterfaces") or []
            interfaces = [
                interface(None, None, 0 if props_of(ref).get("primary") else index + 1)
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
                "image": image_of((props.get("storageProfile") or {}).get("imageReference"))
                or (scale_set.image if scale_set else None),
                "tags": tags_of(item.get("tags")),
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


# How each answer's items are read, by the call's name (SKUs are read apart: they name no subscription).
_READERS: dict[str, Callable[[Normalizer, dict[str, Any], dict[str, Any], str, str, str], None]] = {
    SCALE_SET_LIST.name: Normalizer._scale_set,
    VM_LIST.name: Normalizer._listed_vm,
    SCALE_SET_VM_LIST.name: Normalizer._scale_set_vm,
    AVAILABILITY_SET_LIST.name: Normalizer._availability_set,
    PPG_LIST.name: Normalizer._ppg,
    NIC_LIST.name: Normalizer._nic,
    VNET_LIST.name: Normalizer._vnet,
}


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


# A VM's own values (Normalizer._vm): its id and name, power state, NIC references' ids and extensions (kept as
# records of their own); everything else in its answer is its shape's.
_OWN_FIELDS = (
    ("id",), ("name",), ("powerState",), ("instanceView",), ("properties", "instanceView"), ("resources",),
    ("networkProfile", "networkInterfaces", "*", "id"),
    ("properties", "networkProfile", "networkInterfaces", "*", "id"),
)  # fmt: skip
