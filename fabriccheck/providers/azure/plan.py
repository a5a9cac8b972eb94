"""Azure resources of a Terraform plan -> the model: the VMs it would launch (origin plan) and the `azure`
namespace, in the shapes a live run or an `az` dump gives, so the same rules judge them.

Arguments as the azurerm provider names them (registry.terraform.io/providers/hashicorp/azurerm:
azurerm_linux_virtual_machine, azurerm_windows_virtual_machine, azurerm_linux_virtual_machine_scale_set,
azurerm_orchestrated_virtual_machine_scale_set, azurerm_availability_set, azurerm_proximity_placement_group,
azurerm_network_interface, azurerm_virtual_machine_extension, azurerm_virtual_network, azurerm_subnet,
azurerm_kubernetes_cluster_node_pool). A scale set of N instances becomes N VMs placed in it. ARM ids are
lower-cased as everywhere in the model; a resource whose id is known only after apply is named by its address.
"""

from __future__ import annotations

from typing import Any

from fabriccheck.inventory import Inventory
from fabriccheck.model import UNKNOWN_ACCOUNT, FlatInterface, Node, NodeSpec, Placement, SourceLocation, fact_key
from fabriccheck.providers.azure.items import region_name, subscription_of
from fabriccheck.providers.azure.support import (
    AKS_CLUSTER_SUFFIX_TAG,
    AKS_POOL_TAG,
    AVAILABILITY_SET,
    AVAILABILITY_SETS,
    NICS,
    PROXIMITY_PLACEMENT_GROUP,
    PROXIMITY_PLACEMENT_GROUPS,
    SCALE_SET,
    SCALE_SETS,
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
from fabriccheck.sources.terraform import Plan
from fabriccheck.sources.terraform_resource import PlanResource, is_unknown, unknown_value, waiting_for

PLAN_FACTS = (VMS, SCALE_SETS, AVAILABILITY_SETS, PROXIMITY_PLACEMENT_GROUPS, NICS, VIRTUAL_NETWORKS)
VM_TYPES = ("azurerm_linux_virtual_machine", "azurerm_windows_virtual_machine")
SCALE_SET_TYPES = ("azurerm_linux_virtual_machine_scale_set", "azurerm_windows_virtual_machine_scale_set")
TYPES = (
    *VM_TYPES,
    *SCALE_SET_TYPES,
    "azurerm_orchestrated_virtual_machine_scale_set",
    "azurerm_availability_set",
    "azurerm_proximity_placement_group",
    "azurerm_network_interface",
    "azurerm_virtual_machine_extension",
    "azurerm_virtual_network",
    "azurerm_subnet",
    "azurerm_kubernetes_cluster_node_pool",
)


def _accelerated(block: dict[str, Any]) -> bool | None:
    """azurerm 4 says accelerated_networking_enabled, azurerm 3 enable_accelerated_networking."""
    for key in ("accelerated_networking_enabled", "enable_accelerated_networking"):
        if isinstance(block.get(key), bool):
            return bool(block[key])
    return None


def _image(res: PlanResource) -> str | None:
    reference = res.known("source_image_reference", 0)
    if isinstance(reference, dict) and reference.get("offer"):
        parts = (reference.get(k) or "" for k in ("publisher", "offer", "sku", "version"))
        return ":".join(str(p) for p in parts)
    image_id = res.known("source_image_id")
    return str(image_id).lower() if image_id else None


def _zone(region: str, res: PlanResource) -> str | None:
    zones = _zones(region, res)
    return zones[0] if zones else None


def _zones(region: str, res: PlanResource) -> list[str]:
    """Every zone a resource names: `zone`, or each of `zones = [...]`. A zone-spanning scale set spreads its VMs
    over all of them ("A zone redundant or zone spanning scale set spreads instances across all selected zones",
    learn.microsoft.com/azure/virtual-machine-scale-sets/virtual-machine-scale-sets-use-availability-zones)."""
    zone = res.known("zone")
    zones = res.known("zones")
    found = [str(zone)] if zone else [str(z) for z in zones if z] if isinstance(zones, list) else []
    return [f"{region}-{z}" for z in found]


class AzurePlan:
    def __init__(self, plan: Plan, inventory: Inventory) -> None:
        self.plan = plan
        self.inventory = inventory
        self.scopes: set[tuple[str, str]] = set()
        self.account = self._subscription()
        self.subnet_vnet: dict[str, str] = {}  # a subnet of this plan -> its virtual network's id

    def _subscription(self) -> str:
        for res in self.plan.resources:
            if res.provider == "azurerm":
                found = subscription_of(res.known("id"))
                if found:
                    return found
                setting = self.plan.provider_setting(res, "subscription_id")
                if isinstance(setting, str) and setting:
                    return setting.lower()
        return UNKNOWN_ACCOUNT

    def id(self, res: PlanResource) -> str:
        return self.plan.attribute(res, "id").lower()

    def ref(self, res: PlanResource, *path: str | int) -> str | None:
        value = self.plan.string(res, *path)
        return value.lower() if value and not is_unknown(value) else value

    def region(self, res: PlanResource) -> str:
        return region_name(res.known("location"))

    def _networks(self) -> None:
        """This plan's virtual networks with their address prefixes, and the network of each of its subnets."""
        plan = self.plan
        azure = self.inventory.azure
        vnets: dict[str, VirtualNetwork] = {}
        for res in plan.of_type("azurerm_virtual_network"):
            prefixes = [str(p) for p in res.known("address_space") or ()]
            for subnet in res.known("subnet") or ():
                if isinstance(subnet, dict):
                    prefixes += [str(p) for p in subnet.get("address_prefixes") or ()]
                    if subnet.get("address_prefix"):
                        prefixes.append(str(subnet["address_prefix"]))
            vnet = VirtualNetwork(
                account=self.account,
                region=self.region(res),
                id=self.id(res),
                name=str(res.known("name") or ""),
                address_prefixes=sorted(set(prefixes)),
            )
            vnets[vnet.id] = vnet
            vnets[vnet.name] = vnet
            azure.virtual_networks.append(vnet)
        for res in plan.of_type("azurerm_subnet"):
            parent = vnets.get((self.ref(res, "virtual_network_name") or "").lower()) or vnets.get(
                str(res.known("virtual_network_name") or "")
            )
            if parent is None:
                continue
            vnet = parent
            vnet.address_prefixes = sorted(
                {*vnet.address_prefixes, *(str(p) for p in res.known("address_prefixes") or ())}
            )
            self.subnet_vnet[self.id(res)] = vnet.id

    def run(self) -> None:
        plan = self.plan
        azure = self.inventory.azure
        for res in plan.of_type("azurerm_proximity_placement_group"):
            azure.proximity_placement_groups.append(
                ProximityPlacementGroup(
                    account=self.account, region=self.region(res), id=self.id(res), name=str(res.known("name") or "")
                )
            )
        for res in plan.of_type("azurerm_availability_set"):
            azure.availability_sets.append(
                AvailabilitySet(
                    account=self.account,
                    region=self.region(res),
                    id=self.id(res),
                    name=str(res.known("name") or ""),
                    platform_fault_domain_count=res.known("platform_fault_domain_count"),
                )
            )
        self._networks()
        nics: dict[str, Nic] = {}
        for res in plan.of_type("azurerm_network_interface"):
            subnet = self.ref(res, "ip_configuration", 0, "subnet_id")
            nic = Nic(
                account=self.account,
                region=self.region(res),
                id=self.id(res),
                accelerated_networking=_accelerated(res.values),
                subnet=subnet,
            )
            nics[nic.id] = nic
            azure.nics.append(nic)
        self.nics = nics
        extensions: dict[str, list[Extension]] = {}
        for res in plan.of_type("azurerm_virtual_machine_extension"):
            vm = self.ref(res, "virtual_machine_id")
            if vm:
                extensions.setdefault(vm, []).append(
                    Extension(publisher=str(res.known("publisher") or ""), type=str(res.known("type") or ""))
                )
        for res in plan.of_type(*VM_TYPES):
            node = self._vm(res)
            self._add(node)
            found = extensions.get(self.id(res))
            if found:
                azure.extensions.append(
                    VmExtensions(account=self.account, region=node.region, vm=node.id.lower(), extensions=found)
                )
        for res in plan.of_type(*SCALE_SET_TYPES):
            self._scale_set(res, "Uniform")
        for res in plan.of_type("azurerm_orchestrated_virtual_machine_scale_set"):
            self._scale_set(res, "Flexible")
        for res in plan.of_type("azurerm_kubernetes_cluster_node_pool"):
            self._node_pool(res)
        self.inventory.collected += sorted(
            {fact_key("azure", a, r, fact) for a, r in self.scopes for fact in PLAN_FACTS}
            - set(self.inventory.collected)
        )

    def _add(self, node: Node) -> None:
        self.inventory.nodes.append(node)
        self.scopes.add((node.account, node.region))

    def _network(self, subnet: str | None) -> str | None:
        """A subnet's virtual network: one of this plan's, or the one its ARM id names; otherwise (a subnet of a
        data source, or of a virtual network the plan does not create) the network is unknown, never none."""
        if subnet is None:
            return None
        found = self.subnet_vnet.get(subnet) or (None if is_unknown(subnet) else vnet_of_subnet(subnet))
        return found or unknown_value(f"the virtual network of {waiting_for(subnet)}")

    def _unknown(self, res: PlanResource, size: Any, key: str) -> dict[str, str]:
        if size:
            return {}
        why = f"{res.address}: {key} is known only after apply"
        return dict.fromkeys(("fabric", "fabric_expected", "accelerators", "accelerator"), why)

    def _vm(self, res: PlanResource) -> Node:
        region = self.region(res)
        node_id = res.address
        placement = []
        scale_set = self.ref(res, "virtual_machine_scale_set_id")
        if scale_set:
            placement.append(Placement(kind=SCALE_SET, id=scale_set))
        availability_set = self.ref(res, "availability_set_id")
        if availability_set:
            placement.append(Placement(kind=AVAILABILITY_SET, id=availability_set))
        ppg = self.ref(res, "proximity_placement_group_id")
        if ppg:
            placement.append(Placement(kind=PROXIMITY_PLACEMENT_GROUP, id=ppg))
        interfaces = []
        for i, nic_id in enumerate(self.plan.strings(res, "network_interface_ids")):
            nic = self.nics.get(nic_id.lower())
            subnet = nic.subnet if nic else None
            interfaces.append(
                FlatInterface(
                    id=nic_id.lower(),
                    interface_type="nic",
                    subnet=subnet,
                    network=self._network(subnet),
                    device_index=i,
                )
            )
        tags = res.known("tags") or {}
        size = res.known("size")
        return Node.flat(
            id=node_id,
            provider="azure",
            account=self.account,
            region=region,
            origin="plan",
            spec=NodeSpec(kind="terraform", name=res.base),
            zone=_zone(region, res),
            instance_type=size,
            state="planned",
            image=_image(res),
            tags={str(k): str(v) for k, v in tags.items()} if isinstance(tags, dict) else {},
            interfaces=interfaces,
            placement=placement,
            source=SourceLocation(address=res.address, cloud_id=res.cloud_id()),
            unknown=self._unknown(res, size, "size"),
        )

    def _scale_set(self, res: PlanResource, mode: str) -> None:
        region = self.region(res)
        scale_set_id = self.id(res)
        configs = []
        for i, block in enumerate(res.known("network_interface") or ()):
            if not isinstance(block, dict):
                continue
            subnet = self.ref(res, "network_interface", i, "ip_configuration", 0, "subnet_id")
            configs.append(
                NicConfig(
                    name=str(block.get("name") or f"nic{i}"), accelerated_networking=_accelerated(block), subnet=subnet
                )
            )
        extensions = [
            Extension(publisher=str(e.get("publisher") or ""), type=str(e.get("type") or ""))
            for e in res.known("extension") or ()
            if isinstance(e, dict)
        ]
        size = res.known("sku") if mode == "Uniform" else res.known("sku_name")
        count = int(res.known("instances") or 0)
        tags = res.known("tags") or {}
        tags = {str(k): str(v) for k, v in tags.items()} if isinstance(tags, dict) else {}
        single = res.known("single_placement_group")
        scale_set = ScaleSet(
            account=self.account,
            region=region,
            id=scale_set_id,
            name=str(res.known("name") or res.address),
            orchestration_mode=mode,
            single_placement_group=single if isinstance(single, bool) else None,
            platform_fault_domain_count=res.known("platform_fault_domain_count"),
            capacity=count,
            size=size,
            image=_image(res),
            extensions=extensions,
            nics=configs,
            tags=tags,
        )
        self._add_scale_set(res, scale_set, count, tags, self.ref(res, "proximity_placement_group_id"))

    def _add_scale_set(
        self, res: PlanResource, scale_set: ScaleSet, count: int, tags: dict[str, str], ppg: str | None
    ) -> None:
        self.inventory.azure.scale_sets.append(scale_set)
        self.scopes.add((scale_set.account, scale_set.region))
        # The scale set's VMs are one spec: the NICs of its model, shared by every VM copied from it.
        interfaces = []
        for j, config in enumerate(scale_set.nics):
            nic_id = f"{res.address}/networkinterfaces/{config.name}".lower()
            self.inventory.azure.nics.append(
                Nic(
                    account=scale_set.account,
                    region=scale_set.region,
                    id=nic_id,
                    accelerated_networking=config.accelerated_networking,
                    subnet=config.subnet,
                )
            )
            interfaces.append(
                FlatInterface(
                    id=nic_id,
                    interface_type="nic",
                    subnet=config.subnet,
                    network=self._network(config.subnet),
                    device_index=j,
                )
            )
        placement = [Placement(kind=SCALE_SET, id=scale_set.id)]
        if ppg:
            placement.append(Placement(kind=PROXIMITY_PLACEMENT_GROUP, id=ppg))
        model = Node.flat(
            id=res.address,
            provider="azure",
            account=scale_set.account,
            region=scale_set.region,
            origin="plan",
            spec=NodeSpec(kind="terraform", name=res.base, role=f"instances {count}"),
            zone=None,
            instance_type=scale_set.size,
            state="planned",
            image=scale_set.image,
            tags=tags,
            interfaces=interfaces,
            placement=placement,
            source=SourceLocation(address=res.address, cloud_id=res.cloud_id()),
            unknown=self._unknown(res, scale_set.size, "the size"),
        )
        # Its VMs spread over every zone it names, as Azure spreads them (best effort, evenly).
        zones: list[str | None] = [*_zones(scale_set.region, res)] or [None]
        for i in range(count):
            shape = model.shape.model_copy(update={"zone": zones[i % len(zones)]})
            self._add(model.model_copy(update={"id": f"{res.address}#{i}", "shape": shape}))

    def _node_pool(self, res: PlanResource) -> None:
        """An AKS node pool is a Uniform scale set that AKS creates (its VMs are not limited to one placement
        group), tagged with the pool's name and the cluster's resource name suffix."""
        cluster_ref = self.plan.string(res, "kubernetes_cluster_id") or res.address
        cluster = self.plan.target(res, "kubernetes_cluster_id")  # by reference, or by the id it already has
        location = self.region(cluster) if cluster is not None else "unknown"
        name = str(res.known("name") or res.address)
        suffix = cluster.address if cluster is not None else cluster_ref
        subnet = self.ref(res, "vnet_subnet_id")
        tags = {AKS_POOL_TAG: name, AKS_CLUSTER_SUFFIX_TAG: suffix}
        count = int(res.known("node_count") or res.known("min_count") or 0)
        size = res.known("vm_size")
        scale_set = ScaleSet(
            account=self.account,
            region=location,
            id=f"{res.address}/vmss".lower(),
            name=f"aks-{name}-vmss",
            orchestration_mode="Uniform",
            single_placement_group=False,
            capacity=count,
            size=size,
            nics=[NicConfig(name=f"aks-{name}-nic", accelerated_networking=True, subnet=subnet)],
            tags=tags,
        )
        self._add_scale_set(res, scale_set, count, tags, self.ref(res, "proximity_placement_group_id"))


def map_plan(plan: Plan, inventory: Inventory) -> None:
    AzurePlan(plan, inventory).run()
