"""Rebuild the demo subscription under fixtures/demo/azure: what `az ... -o json` would print for a subscription
with one correctly configured InfiniBand cluster and one misconfigured cluster per Azure rule category.

Resources are built in ARM's own JSON shape (the REST API's, with settings under `properties`, which the
collector tests serve from 127.0.0.1) and written for the demo in the `az -o json` shape (settings flattened to
the top level, an extension's type as `typePropertiesType`), so both shapes are exercised.
Run: python tools/build_demo_azure.py   (also used by benchmarks/bench_azure.py to build large fleets)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fabriccheck.builders import checkout

ROOT = checkout()

SUBSCRIPTION = "11111111-2222-3333-4444-555555555555"
LOCATION = "eastus"
Item = dict[str, Any]

HPC_IMAGE = {"publisher": "microsoft-dsvm", "offer": "ubuntu-hpc", "sku": "2204", "version": "latest"}
IB_DRIVER = ("Microsoft.HpcCompute", "InfiniBandDriverLinux")
MONITOR = ("Microsoft.Azure.Monitor", "AzureMonitorLinuxAgent")


def rid(subscription: str, group: str, kind: str, name: str) -> str:
    return f"/subscriptions/{subscription}/resourceGroups/{group}/providers/{kind}/{name}"


class Subscription:
    """Builds one subscription's answers, ARM-shaped, by file name."""

    def __init__(self, subscription: str = SUBSCRIPTION, location: str = LOCATION) -> None:
        self.sub = subscription
        self.location = location
        self.files: dict[str, list[Item]] = {
            "vm-list.json": [],
            "vmss-list.json": [],
            "vmss-list-instances.json": [],
            "vm-availability-set-list.json": [],
            "ppg-list.json": [],
            "network-nic-list.json": [],
            "network-vnet-list.json": [],
            "vm-list-skus.json": [],
        }
        self._skus: set[str] = set()

    # ------------------------------------------------------------------------------------ resources

    def vnet(self, group: str, name: str, prefix: str) -> str:
        vnet_id = rid(self.sub, group, "Microsoft.Network/virtualNetworks", name)
        self.files["network-vnet-list.json"].append(
            {
                "id": vnet_id,
                "name": name,
                "type": "Microsoft.Network/virtualNetworks",
                "location": self.location,
                "properties": {
                    "addressSpace": {"addressPrefixes": [prefix]},
                    "subnets": [{"id": f"{vnet_id}/subnets/compute", "name": "compute",
                                 "properties": {"addressPrefix": prefix}}],
                },
            }
        )  # fmt: skip
        return f"{vnet_id}/subnets/compute"

    def sku(self, size: str, gpus: int, rdma: bool) -> None:
        if size in self._skus:
            return
        self._skus.add(size)
        self.files["vm-list-skus.json"].append(
            {
                "resourceType": "virtualMachines",
                "name": size,
                "locations": [self.location],
                "capabilities": [
                    {"name": "vCPUs", "value": "96"},
                    {"name": "GPUs", "value": str(gpus)},
                    {"name": "RdmaEnabled", "value": "True" if rdma else "False"},
                    {"name": "AcceleratedNetworkingEnabled", "value": "True"},
                ],
            }
        )

    def availability_set(self, group: str, name: str) -> str:
        set_id = rid(self.sub, group, "Microsoft.Compute/availabilitySets", name)
        self.files["vm-availability-set-list.json"].append(
            {"id": set_id, "name": name, "location": self.location, "sku": {"name": "Aligned"},
             "properties": {"platformFaultDomainCount": 2, "virtualMachines": []}}
        )  # fmt: skip
        return set_id

    def ppg(self, group: str, name: str) -> str:
        ppg_id = rid(self.sub, group, "Microsoft.Compute/proximityPlacementGroups", name)
        self.files["ppg-list.json"].append(
            {"id": ppg_id, "name": name, "location": self.location,
             "properties": {"proximityPlacementGroupType": "Standard"}}
        )  # fmt: skip
        return ppg_id

    def vms(
        self,
        group: str,
        prefix: str,
        count: int,
        size: str,
        subnet: str,
        *,
        image: Item | None = None,
        extensions: tuple[tuple[str, str], ...] = (),
        accelerated: bool = True,
        tags: dict[str, str] | None = None,
        power: str = "running",
        availability_set: str | None = None,
        ppg: str | None = None,
        scale_set: str | None = None,
    ) -> None:
        """Standalone VMs, VMs of an availability set, or of a Flexible scale set: all in `az vm list`."""
        for i in range(count):
            name = f"{prefix}-{i}"
            vm_id = rid(self.sub, group, "Microsoft.Compute/virtualMachines", name)
            nic_id = rid(self.sub, group, "Microsoft.Network/networkInterfaces", f"{name}-nic")
            props: Item = {
                "vmId": _guid(vm_id),
                "hardwareProfile": {"vmSize": size},
                "storageProfile": {
                    "imageReference": image or HPC_IMAGE,
                    "osDisk": _os_disk(group, name),
                    "dataDisks": [],
                    "diskControllerType": "SCSI",
                },
                "osProfile": _os_profile(name),
                "securityProfile": {"uefiSettings": {"secureBootEnabled": False, "vTpmEnabled": True},
                                    "securityType": "TrustedLaunch"},
                "networkProfile": {"networkInterfaces": [{"id": nic_id, "properties": {"primary": True}}]},
                "diagnosticsProfile": {"bootDiagnostics": {"enabled": True}},
                "provisioningState": "Succeeded",
                "timeCreated": "2026-11-02T09:14:07.1234567+00:00",
                "instanceView": _instance_view(power),
            }  # fmt: skip
            for key, ref in (("availabilitySet", availability_set), ("proximityPlacementGroup", ppg),
                             ("virtualMachineScaleSet", scale_set)):  # fmt: skip
                if ref:
                    props[key] = {"id": ref}
            self.files["vm-list.json"].append(
                {
                    "id": vm_id,
                    "name": name,
                    "type": "Microsoft.Compute/virtualMachines",
                    "location": self.location,
                    "zones": ["1"],
                    "tags": tags or {},
                    "properties": props,
                    "resources": [_extension(vm_id, p, t) for p, t in extensions],
                }
            )
            self.files["network-nic-list.json"].append(
                _nic(nic_id, f"{name}-nic", vm_id, f"10.0.{i // 250}.{i % 250 + 4}", subnet, accelerated, self.location)
            )

    def scale_set(
        self,
        group: str,
        name: str,
        count: int,
        size: str,
        subnet: str,
        *,
        mode: str = "Uniform",
        single_placement_group: bool | None = True,
        image: Item | None = None,
        extensions: tuple[tuple[str, str], ...] = (),
        accelerated: bool = True,
        tags: dict[str, str] | None = None,
        vm_tags: dict[str, str] | None = None,
        power: str = "running",
    ) -> str:
        set_id = rid(self.sub, group, "Microsoft.Compute/virtualMachineScaleSets", name)
        nic_config = {
            "name": f"{name}-nic",
            "properties": {
                "primary": True,
                "enableAcceleratedNetworking": accelerated,
                "ipConfigurations": [{"name": "ipconfig1", "properties": {"subnet": {"id": subnet}}}],
            },
        }
        profile: Item = {
            "storageProfile": {"imageReference": image or HPC_IMAGE},
            "extensionProfile": {
                "extensions": [{"name": t, "properties": {"publisher": p, "type": t}} for p, t in extensions]
            },
        }
        if mode == "Uniform":
            profile["networkProfile"] = {"networkInterfaceConfigurations": [nic_config]}
        props: Item = {"orchestrationMode": mode, "virtualMachineProfile": profile, "platformFaultDomainCount": 1}
        if single_placement_group is not None:
            props["singlePlacementGroup"] = single_placement_group
        self.files["vmss-list.json"].append(
            {
                "id": set_id,
                "name": name,
                "type": "Microsoft.Compute/virtualMachineScaleSets",
                "location": self.location,
                "sku": {"name": size, "tier": "Standard", "capacity": count},
                "tags": tags or {},
                "properties": props,
            }
        )
        if mode == "Flexible":
            self.vms(group, name, count, size, subnet, image=image, extensions=extensions, accelerated=accelerated,
                     tags=vm_tags or tags, scale_set=set_id, power=power)  # fmt: skip
            return set_id
        for i in range(count):
            self.files["vmss-list-instances.json"].append(
                self._uniform_instance(
                    set_id, group, name, i, size, nic_config, image, extensions, vm_tags or tags, power
                )
            )
        return set_id

    def _uniform_instance(
        self,
        set_id: str,
        group: str,
        name: str,
        i: int,
        size: str,
        nic_config: Item,
        image: Item | None,
        extensions: tuple[tuple[str, str], ...],
        tags: dict[str, str] | None,
        power: str,
    ) -> Item:
        """Instance `i` of a Uniform scale set, as `az vmss list-instances --expand instanceView` lists it."""
        vm_id = f"{set_id}/virtualMachines/{i}"
        return {
            "id": vm_id,
            "name": f"{name}_{i}",
            "instanceId": str(i),
            "location": self.location,
            "zones": ["1"],
            "sku": {"name": size, "tier": "Standard"},
            "tags": tags or {},
            "properties": {
                "latestModelApplied": True,
                "vmId": _guid(vm_id),
                "hardwareProfile": {},
                "storageProfile": {
                    "imageReference": image or HPC_IMAGE,
                    "osDisk": _os_disk(group, f"{name}_{i}"),
                    "dataDisks": [],
                },
                "osProfile": _os_profile(f"{name}{i:06x}"),
                "networkProfileConfiguration": {"networkInterfaceConfigurations": [nic_config]},
                "networkProfile": {"networkInterfaces": [{"id": f"{vm_id}/networkInterfaces/{name}-nic"}]},
                "provisioningState": "Succeeded",
                "instanceView": _instance_view(power),
            },
            "resources": [_extension(vm_id, p, t) for p, t in extensions],
        }


def _nic(nic_id: str, name: str, vm_id: str, address: str, subnet: str, accelerated: bool, location: str) -> Item:
    """A standalone VM's network interface, as `az network nic list` lists it: one IP configuration on `subnet`."""
    return {
        "id": nic_id,
        "name": name,
        "location": location,
        "etag": 'W/"00000000-0000-0000-0000-000000000001"',
        "type": "Microsoft.Network/networkInterfaces",
        "properties": {
            "provisioningState": "Succeeded",
            "resourceGuid": _guid(nic_id),
            "ipConfigurations": [
                {
                    "name": "ipconfig1",
                    "id": f"{nic_id}/ipConfigurations/ipconfig1",
                    "type": "Microsoft.Network/networkInterfaces/ipConfigurations",
                    "properties": {
                        "provisioningState": "Succeeded",
                        "privateIPAddress": address,
                        "privateIPAllocationMethod": "Dynamic",
                        "subnet": {"id": subnet},
                        "primary": True,
                        "privateIPAddressVersion": "IPv4",
                    },
                }
            ],
            "dnsSettings": {
                "dnsServers": [],
                "appliedDnsServers": [],
                "internalDomainNameSuffix": "x1y2z3.bx.internal.cloudapp.net",
            },
            "macAddress": "60-45-BD-00-00-00",
            "vnetEncryptionSupported": False,
            "enableIPForwarding": False,
            "enableAcceleratedNetworking": accelerated,
            "primary": True,
            "virtualMachine": {"id": vm_id},
            "hostedWorkloads": [],
            "tapConfigurations": [],
            "nicType": "Standard",
            "allowPort25Out": False,
            "auxiliaryMode": "None",
            "auxiliarySku": "None",
        },
    }


def _instance_view(power: str) -> Item:
    """The instance view's statuses, as ARM gives them with statusOnly=true or $expand=instanceView
    (azure-rest-api-specs VirtualMachine_Get_InstanceView.json): the provisioning state and the power state."""
    return {
        "statuses": [
            {"code": "ProvisioningState/succeeded", "level": "Info", "displayStatus": "Provisioning succeeded",
             "time": "2026-11-02T09:16:40.1234567+00:00"},
            {"code": f"PowerState/{power}", "level": "Info", "displayStatus": f"VM {power}"},
        ]
    }  # fmt: skip


def _guid(seed: str) -> str:
    import hashlib

    digest = hashlib.sha1(seed.encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def _os_disk(group: str, name: str) -> Item:
    return {
        "osType": "Linux",
        "name": f"{name}_OsDisk_1",
        "createOption": "FromImage",
        "caching": "ReadWrite",
        "managedDisk": {
            "storageAccountType": "Premium_LRS",
            "id": rid(SUBSCRIPTION, group, "Microsoft.Compute/disks", f"{name}_OsDisk_1"),
        },
        "deleteOption": "Delete",
        "diskSizeGB": 256,
    }


def _os_profile(name: str) -> Item:
    return {
        "computerName": name,
        "adminUsername": "azureuser",
        "linuxConfiguration": {
            "disablePasswordAuthentication": True,
            "ssh": {"publicKeys": [{"path": "/home/azureuser/.ssh/authorized_keys",
                                    "keyData": "ssh-rsa " + "A" * 372 + " azureuser@build"}]},
            "provisionVMAgent": True,
            "patchSettings": {"patchMode": "ImageDefault", "assessmentMode": "ImageDefault"},
        },
        "secrets": [],
        "allowExtensionOperations": True,
        "requireGuestProvisionSignal": True,
    }  # fmt: skip


def _extension(vm_id: str, publisher: str, kind: str) -> Item:
    return {
        "id": f"{vm_id}/extensions/{kind}",
        "name": kind,
        "type": "Microsoft.Compute/virtualMachines/extensions",
        "location": LOCATION,
        "properties": {"publisher": publisher, "type": kind, "typeHandlerVersion": "1.2"},
    }


# ---------------------------------------------------------------------------------------- the demo


def demo(subscription: str = SUBSCRIPTION) -> Subscription:
    """One correct cluster, and one per Azure rule category (and the issue's fixture list)."""
    s = Subscription(subscription)
    ok = s.vnet("hpc-rg", "hpc-vnet", "10.10.0.0/16")
    for size, gpus, rdma in (
        ("Standard_ND96isr_H100_v5", 8, True),
        ("Standard_ND96isr_H200_v5", 8, True),
        ("Standard_ND96amsr_A100_v4", 8, True),
        ("Standard_ND96asr_v4", 8, True),
        ("Standard_NC96ads_A100_v4", 4, False),
        ("Standard_HB120rs_v3", 0, True),
    ):
        s.sku(size, gpus, rdma)
    # Correct: an ND H100 v5 Uniform scale set, one placement group, HPC image, accelerated networking.
    s.scale_set("hpc-rg", "nd-h100-train", 4, "Standard_ND96isr_H100_v5", ok, extensions=(MONITOR,))
    # fabric-isolated: the same VMs as standalone VMs (sharing only a proximity placement group).
    s.vms("solo-rg", "nd-solo", 2, "Standard_ND96isr_H100_v5", ok, ppg=s.ppg("solo-rg", "solo-ppg"))
    # Clean: a CycleCloud node array backed by two scale sets, each its own InfiniBand cluster (CycleCloud keeps a
    # job inside one; the report notes that they belong to one node array).
    array = {"CycleCloudNodeArray": "/sites/hpc/clusters/llm/nodearrays/gpu"}
    s.scale_set("cc-rg", "cc-gpu-a", 2, "Standard_ND96isr_H100_v5", ok, tags=array)
    s.scale_set("cc-rg", "cc-gpu-b", 2, "Standard_ND96isr_H100_v5", ok, tags=array)
    # fabric-isolated: an AKS GPU node pool (singlePlacementGroup false, AKS's own node image).
    aks_tags = {"aks-managed-poolName": "gpu", "aks-managed-resourceNameSuffix": "12345678"}
    gallery = "/subscriptions/109a5e88-712a-48ae-9078-9ca8b3c81345/resourceGroups/AKS-Ubuntu/providers"
    aks_image = {"id": f"{gallery}/Microsoft.Compute/galleries/AKSUbuntu/images/2204gen2containerd/versions/1"}
    s.scale_set("mc_aks-rg_llm_eastus", "aks-gpu-12345678-vmss", 3, "Standard_ND96isr_H100_v5", ok,
                single_placement_group=False, image=aks_image, extensions=(IB_DRIVER,), tags=aks_tags)  # fmt: skip
    # fabric-isolated (warning): a Flexible scale set.
    s.scale_set("flex-rg", "nd-h200-flex", 2, "Standard_ND96isr_H200_v5", ok, mode="Flexible",
                single_placement_group=None)  # fmt: skip
    # instance-choice: an NC A100 v4 cluster, where ND A100 v4 has InfiniBand.
    s.scale_set("nc-rg", "nc-a100-train", 2, "Standard_NC96ads_A100_v4", ok)
    # network-config: an HPC availability set in a virtual network that overlaps 172.16.0.0/16.
    overlap = s.vnet("cfd-rg", "cfd-vnet", "172.16.0.0/12")
    s.vms(
        "cfd-rg", "hb-cfd", 2, "Standard_HB120rs_v3", overlap, availability_set=s.availability_set("cfd-rg", "cfd-as")
    )
    # software: a custom image without the InfiniBand driver extension.
    custom = {"id": rid(subscription, "img-rg", "Microsoft.Compute/images", "llm-base-2026")}
    s.scale_set("img-rg", "nd-a100-custom", 2, "Standard_ND96amsr_A100_v4", ok, image=custom)
    # Counted, not judged or charged: a parked pair of ND H100 v5 VMs, deallocated (`az vm list -d` says so); were
    # they running, sharing only a proximity placement group would split them (AZ110).
    s.vms("parked-rg", "nd-parked", 2, "Standard_ND96isr_H100_v5", ok, ppg=s.ppg("parked-rg", "parked-ppg"),
          power="deallocated")  # fmt: skip
    # network-config (warning): accelerated networking off on GPU VMs' NICs.
    s.vms("an-rg", "nd-slow-nic", 2, "Standard_ND96asr_v4", ok, accelerated=False,
          availability_set=s.availability_set("an-rg", "ndv4-as"))  # fmt: skip
    return s


def fleet(vms: int, subscription: str = SUBSCRIPTION) -> Subscription:
    """A large fleet for benchmarks: `vms` VMs in scale sets of 100 (some standalone, some in sets)."""
    s = Subscription(subscription)
    subnet = s.vnet("fleet-rg", "fleet-vnet", "10.0.0.0/8")
    s.sku("Standard_ND96isr_H100_v5", 8, True)
    s.sku("Standard_NC96ads_A100_v4", 4, False)
    sets = vms // 100
    for i in range(sets):
        if i % 2:
            s.scale_set("fleet-rg", f"ss-{i}", 100, "Standard_ND96isr_H100_v5", subnet)
        else:
            s.vms("fleet-rg", f"vm-{i}", 100, "Standard_ND96isr_H100_v5" if i % 4 else "Standard_NC96ads_A100_v4",
                  subnet, availability_set=s.availability_set("fleet-rg", f"as-{i}"))  # fmt: skip
    return s


# ---------------------------------------------------------------------------------------- shapes


def flatten(item: Any, top: bool = True) -> Any:
    """ARM JSON -> `az -o json`: every `properties` merged into its object (an extension's own `type` becomes
    `typePropertiesType`, as the CLI's serializer names it), recursively."""
    if isinstance(item, list):
        return [flatten(x, False) for x in item]
    if not isinstance(item, dict):
        return item
    out: Item = {}
    for key, value in item.items():
        if key == "properties" and isinstance(value, dict):
            for inner, inner_value in value.items():
                name = "typePropertiesType" if inner == "type" else inner
                out[name] = flatten(inner_value, False)
        else:
            out[key] = flatten(value, False)
    return out


def shown_with_details(vm: Item) -> Item:
    """`az vm list -d`: the VM with `powerState`, the displayStatus of its PowerState/* status, in place of its
    instance view (Azure/azure-cli vm/custom.py get_vm_details), and its addresses."""
    shown = {k: v for k, v in vm.items() if k != "instanceView"}
    statuses = (vm.get("instanceView") or {}).get("statuses") or []
    shown["powerState"] = ",".join(s["displayStatus"] for s in statuses if s["code"].startswith("PowerState/"))
    shown.update({"fqdns": "", "macAddresses": "60-45-BD-00-00-00", "privateIps": "10.0.0.4", "publicIps": ""})
    return shown


def write(s: Subscription, folder: Path, cli_shape: bool = True) -> None:
    """The dump recipe's files: `az vm list -d`, `az vmss list-instances --expand instanceView` and the other lists
    as `az -o json` prints them (cli_shape), or as ARM pages with the instance views a live run asks for."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, items in s.files.items():
        doc: Any = {"value": items}
        if cli_shape:
            doc = [shown_with_details(vm) for vm in flatten(items)] if name == "vm-list.json" else flatten(items)
        (folder / name).write_text(json.dumps(doc, indent=1) + "\n")


def main() -> None:
    root = ROOT / "fixtures" / "demo" / "azure"
    write(demo(), root / SUBSCRIPTION)
