"""Azure-only resources: the `azure` namespace of the inventory. Each carries the subscription (`account`) and
region whose answer it came from, and is looked up by that scope with its ARM resource id, lower-cased
(ARM ids are case-insensitive, and the API itself mixes `resourceGroups/RG` and `resourcegroups/rg`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fabriccheck.values import Frozen, Model, ProviderResources, Scoped


class AzureNicPart(Frozen):
    """What only an Azure NIC says, part of a NIC of a node's shape (model.NetworkInterface.extension): whether
    accelerated networking is on (the NIC resource's enableAcceleratedNetworking, read off the NIC's own record when
    the shape is resolved); None: not said, or the record was not seen."""

    provider: Literal["azure"] = "azure"
    accelerated: bool | None = None


class Extension(Model):
    """A VM extension, or an extension in a scale set's VM profile (publisher and type as ARM names them)."""

    publisher: str
    type: str


class NicConfig(Model):
    """A NIC of a scale set's VM profile (networkProfile.networkInterfaceConfigurations[])."""

    name: str
    accelerated_networking: bool | None = None
    subnet: str | None = None  # the subnet's resource id


class ScaleSet(Scoped):
    id: str  # ARM resource id, lower-cased
    name: str
    orchestration_mode: str = "Uniform"  # Uniform | Flexible (ARM's default is Uniform)
    # None: not said (Flexible scale sets leave it out); ARM's default for Uniform is true.
    single_placement_group: bool | None = None
    platform_fault_domain_count: int | None = None
    capacity: int | None = None  # sku.capacity: how many VMs the scale set runs
    size: str | None = None  # sku.name
    image: str | None = None  # publisher:offer:sku:version, or a custom image id
    extensions: list[Extension] = Field(default_factory=list)
    nics: list[NicConfig] = Field(default_factory=list)
    tags: dict[str, str] = Field(default_factory=dict)


class AvailabilitySet(Scoped):
    id: str
    name: str
    platform_fault_domain_count: int | None = None
    virtual_machines: int = 0  # how many VMs the set holds (properties.virtualMachines)


class ProximityPlacementGroup(Scoped):
    id: str
    name: str
    group_type: str | None = None  # Standard | Ultra


class Nic(Scoped):
    """A network interface: the Azure API keeps accelerated networking on the NIC, not the VM."""

    id: str
    accelerated_networking: bool | None = None
    subnet: str | None = None
    virtual_machine: str | None = None  # the VM it belongs to (lower-cased id)


class VirtualNetwork(Scoped):
    id: str
    name: str
    address_prefixes: list[str] = Field(default_factory=list)  # addressSpace.addressPrefixes and subnets'


class VmExtensions(Scoped):
    """The extensions of one VM (from the `resources` of the VM list answer, so no call per VM)."""

    vm: str  # lower-cased VM id
    extensions: list[Extension] = Field(default_factory=list)


class AzureResources(ProviderResources):
    scale_sets: list[ScaleSet] = Field(default_factory=list)
    availability_sets: list[AvailabilitySet] = Field(default_factory=list)
    proximity_placement_groups: list[ProximityPlacementGroup] = Field(default_factory=list)
    nics: list[Nic] = Field(default_factory=list)
    virtual_networks: list[VirtualNetwork] = Field(default_factory=list)
    extensions: list[VmExtensions] = Field(default_factory=list)
