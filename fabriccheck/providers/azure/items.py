"""What an ARM item says, read the same way by every Azure call: its subscription and region, its references, tags,
image and extensions, a scale set's NIC configurations, and the NICs a VM's shape holds."""

from __future__ import annotations

import re
from typing import Any

from fabriccheck.model import Node
from fabriccheck.providers.azure.support import SCALE_SET, vnet_of_subnet
from fabriccheck.resources.azure import Extension, NicConfig, ScaleSet

_SUBSCRIPTION = re.compile(r"^/subscriptions/([^/]+)/", re.IGNORECASE)
SCALE_SET_OF_VM = re.compile(r"^(.*/virtualmachinescalesets/[^/]+)/virtualmachines/[^/]+$", re.IGNORECASE)


def subscription_of(resource_id: Any) -> str | None:
    match = _SUBSCRIPTION.match(resource_id) if isinstance(resource_id, str) else None
    return match.group(1).lower() if match else None


def region_name(location: Any) -> str:
    """'East US' or 'eastus' -> 'eastus' (ARM answers say eastus; people type the display name)."""
    return location.replace(" ", "").lower() if isinstance(location, str) and location else "unknown"


def props_of(item: dict[str, Any]) -> dict[str, Any]:
    """ARM keeps a resource's settings under `properties`; `az -o json` flattens them to the top level."""
    inner = item.get("properties")
    return inner if isinstance(inner, dict) else item


def ref_id(value: Any) -> str | None:
    """A sub-resource reference ({"id": ...}) -> its id, lower-cased (ARM ids are case-insensitive)."""
    if value is None:
        return None
    found = value.get("id") if isinstance(value, dict) else None
    return found.lower() if isinstance(found, str) and found else None


def tags_of(raw: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


def image_of(reference: Any) -> str | None:
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


def extensions_of(raw: Any) -> list[Extension]:
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


def nic_configs(profile: Any) -> list[NicConfig]:
    configs = []
    for raw in (profile or {}).get("networkInterfaceConfigurations") or ():
        props = props_of(raw)
        subnet = None
        for ip in props.get("ipConfigurations") or ():
            subnet = ref_id(props_of(ip).get("subnet"))
            if subnet:
                break
        accelerated = props.get("enableAcceleratedNetworking")
        configs.append(NicConfig(name=str(raw.get("name") or "nic"), accelerated_networking=accelerated, subnet=subnet))
    return configs


def interface(network: str | None, subnet: str | None, device_index: int) -> dict[str, Any]:
    """A VM's NIC as its shape holds it: the subnet and accelerated networking of a NIC the VM only references
    come from the NIC's own record (support.resolve)."""
    return {"interface_type": "nic", "network": network, "subnet": subnet, "device_index": device_index}


def uniform_interface(config: NicConfig, index: int) -> dict[str, Any]:
    """A Uniform scale-set VM's NIC, from its configuration (absent accelerated networking is ARM's default: off)."""
    made = interface(vnet_of_subnet(config.subnet), config.subnet, index)
    return {**made, "accelerated": bool(config.accelerated_networking)}


def config_names(props: dict[str, Any]) -> list[str]:
    """The names of a VM's own NIC configurations (networkProfileConfiguration), as _nic_configs reads them."""
    configs = (props.get("networkProfileConfiguration") or {}).get("networkInterfaceConfigurations") or ()
    return [str(config.get("name") or "nic") for config in configs]


def scale_set_spec(scale_set: ScaleSet) -> Node:
    """A scale set's model -> the VM it would launch (origin template)."""
    interfaces = [
        {
            "id": f"{scale_set.id}/model/networkinterfaces/{config.name.lower()}",
            **uniform_interface(config, index),
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
