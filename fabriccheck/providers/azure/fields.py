"""The fields the Azure normalizer reads of a VM and of a NIC, as TypedDicts: a dump's VM, scale-set VM and NIC lists
are parsed with these only (sources/projected.py), each of ARM's type."""

from __future__ import annotations

from typing import Any, TypedDict


# What the normalizer reads of a VM (Normalizer._item, _vm, _nic_configs, _extensions, _image) and of a NIC: a
# dump's VM, scale-set VM and NIC lists are parsed with these fields only (sources/projected.py). ARM answers keep
# settings under `properties`; `az -o json` flattens them to the top level: both are named. A field read must be
# named here; tests/test_projected.py checks that against every VM and NIC the fixtures hold. The fields a VM's
# shape is made of (_VmShape) have the types ARM gives them (a value of another type reads the file in full), so
# equal values read the same.
class _Ref(TypedDict, total=False):
    id: str


class _IpConfigurationProps(TypedDict, total=False):
    subnet: _Ref | None


class _IpConfiguration(_IpConfigurationProps, total=False):
    properties: _IpConfigurationProps | None


class _NicConfigurationProps(TypedDict, total=False):
    ipConfigurations: list[_IpConfiguration] | None
    enableAcceleratedNetworking: bool | None


class _NicConfiguration(_NicConfigurationProps, total=False):
    name: str | None
    properties: _NicConfigurationProps | None


class _NetworkProfileConfiguration(TypedDict, total=False):
    networkInterfaceConfigurations: list[_NicConfiguration] | None


class _NicReferenceProps(TypedDict, total=False):
    primary: Any


class _NicReference(_NicReferenceProps, total=False):
    id: Any
    properties: _NicReferenceProps | None


class _NetworkProfile(TypedDict, total=False):
    networkInterfaces: list[_NicReference] | None


class _ImageReference(TypedDict, total=False):
    publisher: str | None
    offer: str | None
    sku: str | None
    version: str | None
    id: str | None
    sharedGalleryImageId: str | None
    communityGalleryImageId: str | None


class _StorageProfile(TypedDict, total=False):
    imageReference: _ImageReference | None


class _HardwareProfile(TypedDict, total=False):
    vmSize: str | None


class _Sku(TypedDict, total=False):
    name: str | None


class _Status(TypedDict, total=False):
    code: Any


class _InstanceView(TypedDict, total=False):
    statuses: list[_Status] | None


class _VmProps(TypedDict, total=False):
    instanceView: _InstanceView | None  # the power state (states.py)
    virtualMachineScaleSet: _Ref | None
    availabilitySet: _Ref | None
    proximityPlacementGroup: _Ref | None
    hardwareProfile: _HardwareProfile | None
    storageProfile: _StorageProfile | None
    networkProfileConfiguration: _NetworkProfileConfiguration | None
    networkProfile: _NetworkProfile | None


class _Kind(TypedDict, total=False):
    """What an item of another kind is named by (kinds.what_it_is) besides an ARM id: a Compute Engine item's kind,
    an EC2 instance's id."""

    kind: Any
    InstanceId: Any


class VmFields(_VmProps, _Kind, total=False):
    id: Any
    name: Any
    powerState: Any  # `az vm list -d` (states.py)
    location: str | None
    tags: dict[str, str] | None
    zones: list[str] | None
    sku: _Sku | None
    resources: Any  # the VM's extensions
    properties: _VmProps | None


class _NicProps(TypedDict, total=False):
    ipConfigurations: list[_IpConfiguration] | None
    enableAcceleratedNetworking: Any
    virtualMachine: Any


class NicFields(_NicProps, _Kind, total=False):
    id: Any
    name: Any
    location: Any
    properties: _NicProps | None
