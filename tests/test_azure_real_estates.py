"""Azure estates as they really are (issue 17, items 9-12), each read from `az ... -o json` files written in the
shape the CLI prints (the source of each shape is named beside it) and judged end to end: a Flexible scale set
has no InfiniBand, CPU and T4 sizes are known without the SKU list, deallocated VMs are counted and not judged,
and a CycleCloud node array over several scale sets is several InfiniBand clusters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fabriccheck import flow, report
from fabriccheck.providers.azure import dump

SUB = "6b3c2a1d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
RG = "hpc-rg"
Item = dict[str, Any]


def _rid(kind: str, name: str, group: str = RG) -> str:
    return f"/subscriptions/{SUB}/resourceGroups/{group}/providers/{kind}/{name}"


SUBNET = _rid("Microsoft.Network/virtualNetworks", "hpc-vnet") + "/subnets/compute"


def vnet() -> Item:
    """`az network vnet list` item (flattened ARM VirtualNetworkListAll.json, azure-rest-api-specs@132b90d1)."""
    return {
        "id": _rid("Microsoft.Network/virtualNetworks", "hpc-vnet"),
        "name": "hpc-vnet",
        "type": "Microsoft.Network/virtualNetworks",
        "location": "eastus",
        "addressSpace": {"addressPrefixes": ["10.20.0.0/16"]},
        "subnets": [{"id": SUBNET, "name": "compute", "addressPrefix": "10.20.0.0/20", "resourceGroup": RG}],
        "resourceGroup": RG,
    }


def flexible_scale_set(name: str, size: str, capacity: int, **extra: Any) -> Item:
    """`az vmss show` of a Flexible scale set as Microsoft's tutorial prints it (orchestrationMode Flexible, no
    singlePlacementGroup): MicrosoftDocs/azure-docs@d2c52b35b024fa99bd090815cb05b94dfb7b9974
    articles/virtual-machine-scale-sets/tutorial-modify-scale-sets-cli.md."""
    return {
        "id": _rid("Microsoft.Compute/virtualMachineScaleSets", name),
        "location": "eastus",
        "name": name,
        "orchestrationMode": "Flexible",
        "platformFaultDomainCount": 1,
        "resourceGroup": RG,
        "sku": {"capacity": capacity, "name": size, "tier": "Standard"},
        "timeCreated": "2022-11-29T22:16:43.250912+00:00",
        "type": "Microsoft.Compute/virtualMachineScaleSets",
        "tags": {},
        **extra,
    }


def vm(name: str, size: str, *, scale_set: str | None = None, tags: dict[str, str] | None = None, **extra: Any) -> Item:
    """`az vm show` / `az vm list` of a VM (the same tutorial's `az vm show` of a Flexible scale set's VM: its
    virtualMachineScaleSet reference carries the resourceGroup the CLI adds), Ubuntu-HPC image."""
    item: Item = {
        "hardwareProfile": {"vmSize": size},
        "id": _rid("Microsoft.Compute/virtualMachines", name),
        "location": "eastus",
        "name": name,
        "networkProfile": {
            "networkInterfaces": [
                {
                    "deleteOption": "Delete",
                    "id": _rid("Microsoft.Network/networkInterfaces", f"{name}-nic"),
                    "primary": True,
                    "resourceGroup": RG,
                }
            ]
        },
        "provisioningState": "Succeeded",
        "resourceGroup": RG,
        "storageProfile": {
            "imageReference": {"offer": "ubuntu-hpc", "publisher": "microsoft-dsvm", "sku": "2204", "version": "latest"}
        },
        "tags": tags or {},
        "timeCreated": "2022-11-29T22:16:44.500895+00:00",
        "type": "Microsoft.Compute/virtualMachines",
        "zones": None,
        **extra,
    }
    if scale_set:
        item["virtualMachineScaleSet"] = {"id": _rid("Microsoft.Compute/virtualMachineScaleSets", scale_set)}
        item["virtualMachineScaleSet"]["resourceGroup"] = RG
    return item


def nic(vm_item: Item, accelerated: bool = True) -> Item:
    """`az network nic list` item (flattened ARM NetworkInterfaceListAll.json, azure-rest-api-specs@f7b84a5c)."""
    nic_id = vm_item["networkProfile"]["networkInterfaces"][0]["id"]
    return {
        "id": nic_id,
        "name": nic_id.rsplit("/", 1)[-1],
        "type": "Microsoft.Network/networkInterfaces",
        "location": "eastus",
        "enableAcceleratedNetworking": accelerated,
        "ipConfigurations": [{"name": "ipconfig1", "subnet": {"id": SUBNET, "resourceGroup": RG}, "primary": True}],
        "virtualMachine": {"id": vm_item["id"], "resourceGroup": RG},
        "resourceGroup": RG,
    }


def write_dump(folder: Path, files: dict[str, list[Item]]) -> Path:
    """A subscription folder of `az ... -o json` files; every list the recipe makes, empty unless given."""
    names = ("vm-list.json", "vmss-list.json", "vmss-list-instances.json", "vm-availability-set-list.json",
             "ppg-list.json", "network-nic-list.json", "network-vnet-list.json")  # fmt: skip
    (folder / SUB).mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / SUB / name).write_text(json.dumps(files.get(name, [])))
    for name, items in files.items():
        (folder / SUB / name).write_text(json.dumps(items))
    vms = files.get("vm-list.json", [])
    if "network-nic-list.json" not in files:
        (folder / SUB / "network-nic-list.json").write_text(json.dumps([nic(v) for v in vms]))
    if "network-vnet-list.json" not in files:
        (folder / SUB / "network-vnet-list.json").write_text(json.dumps([vnet()]))
    return folder


def judge(folder: Path, **options: Any) -> report.Report:
    return flow.run(dump.load_dump(folder), flow.Options(**options))


# ---------------------------------------------------------------------------------------- 9: Flexible scale sets


def test_an_infiniband_size_in_a_flexible_scale_set_has_no_infiniband_and_costs_the_fabric(tmp_path: Path) -> None:
    """Microsoft's orchestration-mode comparison: "Infiniband Networking: Flexible No; Uniform Yes, single placement
    group only" (azure-compute-docs@01e1fb7d articles/virtual-machine-scale-sets/
    virtual-machine-scale-sets-orchestration-modes.md). Whether or not the set asks for a single placement group,
    its ND H100 v5 VMs talk TCP over the Ethernet NIC: an error that costs the fabric, not an uncounted warning."""
    size = "Standard_ND96isr_H100_v5"
    for single in (None, True):
        extra = {} if single is None else {"singlePlacementGroup": single}
        files = {
            "vmss-list.json": [flexible_scale_set("nd-flex", size, 2, **extra)],
            "vm-list.json": [vm(f"nd-flex_{i:08x}", size, scale_set="nd-flex") for i in range(2)],
        }
        report = judge(write_dump(tmp_path / str(single), files))
        assert report.complete, report.errors
        [finding] = report.findings
        assert (finding.rule, finding.severity, finding.category, finding.effect) == (
            "AZ112", "error", "fabric-missing", "tcp-fallback"
        )  # fmt: skip
        assert "nd-flex" in finding.message and "TCP" in finding.message
        [cluster] = report.clusters
        assert cluster.status == "findings"
        assert cluster.penalty.slowdown is not None and cluster.penalty.slowdown.low > 1.0


# ---------------------------------------------------------------------------------------- 10: sizes without SKUs


def availability_set(name: str) -> Item:
    """`az vm availability-set list` item (flattened ARM AvailabilitySet shape)."""
    return {
        "id": _rid("Microsoft.Compute/availabilitySets", name),
        "name": name,
        "type": "Microsoft.Compute/availabilitySets",
        "location": "eastus",
        "platformFaultDomainCount": 2,
        "platformUpdateDomainCount": 5,
        "sku": {"name": "Aligned"},
        "virtualMachines": [],
        "resourceGroup": RG,
    }


def test_cpu_and_t4_sizes_are_known_without_the_sku_list(tmp_path: Path) -> None:
    """README calls vm-list-skus.json optional. Without it a D4s_v5 web tier (a general-purpose family: no GPU, no
    InfiniBand) and an NC4as_T4_v3 inference set (an N-series size without 'r': no InfiniBand; 1 T4 per its size
    page) are judged from their names, so the run is complete and the ND H100 v5 cluster beside them is judged."""
    web = availability_set("web-as")
    h100 = availability_set("train-as")
    vms = [
        *(vm(f"web-{i}", "Standard_D4s_v5", availabilitySet={"id": web["id"], "resourceGroup": RG}) for i in range(3)),
        *(vm(f"t4-{i}", "Standard_NC4as_T4_v3", scale_set="t4-flex") for i in range(2)),
        *(vm(f"nd-{i}", "Standard_ND96isr_H100_v5", availabilitySet={"id": h100["id"]}) for i in range(2)),
    ]
    files = {
        "vm-list.json": vms,
        "vmss-list.json": [flexible_scale_set("t4-flex", "Standard_NC4as_T4_v3", 2)],
        "vm-availability-set-list.json": [web, h100],
    }
    report = judge(write_dump(tmp_path, files))
    assert report.complete, report.errors
    assert report.summary.unknown_instance_types == []
    assert not [c for c in report.clusters if c.status == "incomplete"]
    assert any("size names" in n for n in report.notes)
    assert [(c.id.rsplit("/", 1)[-1], c.status) for c in report.clusters] == [("train-as", "clean")]
    inventory = dump.load_dump(tmp_path)
    from fabriccheck.facts import FactBuilder

    facts = FactBuilder(inventory)
    t4 = facts.type_capability("Standard_NC4as_T4_v3")
    assert t4 is not None and (t4.fabric.value, t4.accelerators, t4.accelerator_name) == ("none", 1, "T4")
    web_cap = facts.type_capability("Standard_D4s_v5")
    assert web_cap is not None and (web_cap.fabric.value, web_cap.accelerators) == ("none", 0)


def test_a_gpu_size_of_unknown_capability_is_not_judged_and_named(tmp_path: Path) -> None:
    """An N-series size whose GPUs no table gives (NCads A10 v4) stays unknown: its cluster is not judged and the
    report names the size, while a D-series tier beside it is judged as usual."""
    a10 = availability_set("a10-as")
    web = availability_set("web-as")
    vms = [
        *(vm(f"a10-{i}", "Standard_NC8ads_A10_v4", availabilitySet={"id": a10["id"]}) for i in range(2)),
        *(vm(f"web-{i}", "Standard_D4s_v5", availabilitySet={"id": web["id"]}) for i in range(2)),
    ]
    report = judge(write_dump(tmp_path, {"vm-list.json": vms, "vm-availability-set-list.json": [a10, web]}))
    assert report.summary.unknown_instance_types == ["Standard_NC8ads_A10_v4"]
    [cluster] = report.clusters
    assert cluster.id.endswith("a10-as") and cluster.status == "incomplete"
    assert cluster.penalty.estimated is False


# ---------------------------------------------------------------------------------------- 11: power states


def shown(item: Item, power: str) -> Item:
    """`az vm list -d`: the VM with the fields get_vm_details adds (Azure/azure-cli vm/custom.py): `powerState` is
    the displayStatus of its PowerState/* status ("VM running", "VM deallocated"), and its addresses."""
    return {**item, "powerState": power, "fqdns": "", "macAddresses": "60-45-BD-12-34-56", "privateIps": "10.20.0.4",
            "publicIps": ""}  # fmt: skip


def scale_set_vm(scale_set: str, index: int, size: str, power_code: str) -> Item:
    """`az vmss list-instances --expand instanceView` item: a Uniform scale set's VM with its instance view, whose
    statuses carry "PowerState/<state>" (azure-rest-api-specs VirtualMachine_Get_InstanceView.json, ba16d1ab)."""
    set_id = _rid("Microsoft.Compute/virtualMachineScaleSets", scale_set)
    vm_id = f"{set_id}/virtualMachines/{index}"
    config = {"name": f"{scale_set}-nic", "primary": True, "enableAcceleratedNetworking": True,
              "ipConfigurations": [{"name": "ipconfig1", "subnet": {"id": SUBNET, "resourceGroup": RG}}]}  # fmt: skip
    statuses = [
        {"code": "ProvisioningState/succeeded", "level": "Info", "displayStatus": "Provisioning succeeded",
         "time": "2026-11-20T08:01:12.1234567+00:00"},
        {"code": power_code, "level": "Info", "displayStatus": "VM " + power_code.split("/")[1]},
    ]  # fmt: skip
    return {
        "id": vm_id,
        "instanceId": str(index),
        "name": f"{scale_set}_{index}",
        "location": "eastus",
        "sku": {"name": size, "tier": "Standard"},
        "type": "Microsoft.Compute/virtualMachineScaleSets/virtualMachines",
        "hardwareProfile": None,
        "latestModelApplied": True,
        "networkProfileConfiguration": {"networkInterfaceConfigurations": [config]},
        "networkProfile": {"networkInterfaces": [{"id": f"{vm_id}/networkInterfaces/{scale_set}-nic"}]},
        "storageProfile": {"imageReference": {"offer": "ubuntu-hpc", "publisher": "microsoft-dsvm", "sku": "2204"}},
        "instanceView": {"platformUpdateDomain": 0, "platformFaultDomain": 0, "statuses": statuses},
        "provisioningState": "Succeeded",
        "resourceGroup": RG,
        "tags": {},
    }


def uniform_scale_set(name: str, size: str, capacity: int) -> Item:
    item = flexible_scale_set(name, size, capacity, orchestrationMode="Uniform", singlePlacementGroup=True)
    config = {"name": f"{name}-nic", "primary": True, "enableAcceleratedNetworking": True,
              "ipConfigurations": [{"name": "ipconfig1", "subnet": {"id": SUBNET}}]}  # fmt: skip
    item["virtualMachineProfile"] = {
        "networkProfile": {"networkInterfaceConfigurations": [config]},
        "storageProfile": {"imageReference": {"offer": "ubuntu-hpc", "publisher": "microsoft-dsvm", "sku": "2204"}},
    }
    return item


def test_deallocated_and_stopped_vms_are_counted_not_judged_or_charged(tmp_path: Path) -> None:
    """`az vm list -d` says "VM deallocated" / "VM stopped"; the instance view says PowerState/deallocated. Such VMs
    are counted by state and never judged or charged, as on AWS and GCP: the parked standalone pair would be AZ110
    and the parked Flexible set AZ112 were they running. The running cluster beside them is judged as usual."""
    h100 = "Standard_ND96isr_H100_v5"
    ppg = {"id": _rid("Microsoft.Compute/proximityPlacementGroups", "parked-ppg"), "resourceGroup": RG}
    parked = [shown(vm(f"parked-{i}", h100, proximityPlacementGroup=ppg), "VM deallocated") for i in range(2)]
    stopped = [shown(vm(f"flex-{i}", h100, scale_set="flex"), "VM stopped") for i in range(2)]
    running = [shown(vm(f"solo-{i}", h100, proximityPlacementGroup=ppg), "VM running") for i in range(2)]
    files = {
        "vm-list.json": [*parked, *stopped],
        "vmss-list.json": [flexible_scale_set("flex", h100, 2), uniform_scale_set("train", h100, 3)],
        "vmss-list-instances.json": [
            scale_set_vm("train", 0, h100, "PowerState/running"),
            scale_set_vm("train", 1, h100, "PowerState/running"),
            scale_set_vm("train", 2, h100, "PowerState/deallocated"),
        ],
    }
    report = judge(write_dump(tmp_path / "parked", files))
    assert report.complete, report.errors
    assert report.summary.nodes_by_state == {"deallocated": 3, "running": 2, "stopped": 2}
    assert report.summary.nodes == 2
    assert not report.findings
    [cluster] = report.clusters
    assert cluster.id.endswith("/train") and len(cluster.nodes) == 2 and cluster.gpus == 16
    assert not [n for n in report.notes if "power states" in n]
    # The same standalone pair running is judged: the states, not the placement, kept them out.
    files["vm-list.json"] = [*running, *stopped]
    assert {f.rule for f in judge(write_dump(tmp_path / "running", files)).findings} == {"AZ110"}


def test_a_vm_list_without_power_states_is_judged_as_running_and_says_how_to_make_it(tmp_path: Path) -> None:
    """A plain `az vm list` (no -d) gives no power state: its VMs are judged as they may run, and the report says
    which file to make with `az vm list -d`."""
    h100 = "Standard_ND96isr_H100_v5"
    ppg = {"id": _rid("Microsoft.Compute/proximityPlacementGroups", "ppg"), "resourceGroup": RG}
    report = judge(write_dump(tmp_path, {"vm-list.json": [vm(f"solo-{i}", h100, proximityPlacementGroup=ppg)
                                                          for i in range(2)]}))  # fmt: skip
    assert {f.rule for f in report.findings} == {"AZ110"}
    [note] = [n for n in report.notes if "power states" in n]
    assert "vm-list.json" in note and "az vm list -d" in note


# ---------------------------------------------------------------------------------------- 12: CycleCloud node arrays


def cyclecloud_tags(array: str = "gpu") -> dict[str, str]:
    """The tags CycleCloud (v8.2 onwards) puts on a node array's VMs and scale sets (learn.microsoft.com/azure/
    cyclecloud/how-to/tag-nodes: CycleCloudNodeArray is /sites/[site_id]/clusters/[cluster_name]/nodearrays/[name])."""
    return {
        "ClusterName": "llm",
        "CycleCloudCluster": "/sites/1a2b3c4d/clusters/llm",
        "CycleCloudNodeArray": f"/sites/1a2b3c4d/clusters/llm/nodearrays/{array}",
        "CycleOwner": "llm(alice@cyclecloud:1a2b3c4d)",
        "LaunchTime": "2026-11-20T08:00:00+00:00",
    }


def test_a_node_array_over_several_scale_sets_is_one_infiniband_cluster_per_set(tmp_path: Path) -> None:
    """CycleCloud backs a node array with several scale sets (one placement group each) and keeps a job inside one:
    `azslurm topology` maps the Slurm topology along scale-set boundaries (Azure/cyclecloud-slurm@00d5f14b README,
    Topology). Each set is judged as its own InfiniBand cluster, clean here, and the report says they belong to one
    node array. Only the user's --cluster-tag, saying the whole array trains together, makes it AZ110."""
    h100 = "Standard_ND96isr_H100_v5"
    sets: list[Item] = []
    members: list[Item] = []
    for name in ("llm-gpu-pg0", "llm-gpu-pg1"):
        scale_set = uniform_scale_set(name, h100, 2)
        scale_set["tags"] = cyclecloud_tags()
        sets.append(scale_set)
        for index in range(2):
            member = scale_set_vm(name, index, h100, "PowerState/running")
            member["tags"] = {**cyclecloud_tags(), "Name": f"llm-gpu-{len(members) + 1}"}
            members.append(member)
    folder = write_dump(tmp_path, {"vmss-list.json": sets, "vmss-list-instances.json": members})
    report = judge(folder)
    assert report.complete and not report.findings
    assert sorted((c.id.rsplit("/", 1)[-1], len(c.nodes), c.status) for c in report.clusters) == [
        ("llm-gpu-pg0", 2, "clean"),
        ("llm-gpu-pg1", 2, "clean"),
    ]
    assert {c.grouped_by for c in report.clusters} == {"CycleCloud node array, one scale set"}
    [note] = [n for n in report.notes if "CycleCloud node array" in n]
    assert "/nodearrays/gpu" in note and "2 scale sets (llm-gpu-pg0, llm-gpu-pg1)" in note
    # The user says the whole node array trains together: then the two sets are two partitions.
    joined = judge(folder, cluster_tag="CycleCloudNodeArray")
    [finding] = joined.findings
    assert finding.rule == "AZ110" and len(finding.resources) == 4
    assert "2 InfiniBand partitions" in finding.message


def test_the_standalone_vms_of_a_node_array_are_one_group_of_partitions(tmp_path: Path) -> None:
    """A node array may also be individual VMs: those of one array share no scale set, so each is a partition of
    its own and together they are AZ110, while the array's scale set beside them is judged on its own."""
    h100 = "Standard_ND96isr_H100_v5"
    scale_set = uniform_scale_set("llm-gpu-pg0", h100, 2)
    scale_set["tags"] = cyclecloud_tags()
    members = [scale_set_vm("llm-gpu-pg0", i, h100, "PowerState/running") | {"tags": cyclecloud_tags()} for i in (0, 1)]
    loose = [vm(f"llm-gpu-{i}", h100, tags=cyclecloud_tags()) for i in (3, 4)]
    files = {"vmss-list.json": [scale_set], "vmss-list-instances.json": members, "vm-list.json": loose}
    report = judge(write_dump(tmp_path, files))
    [finding] = report.findings
    assert finding.rule == "AZ110"
    assert sorted(r.rsplit("/", 1)[-1] for r in finding.resources) == ["llm-gpu-3", "llm-gpu-4"]
    statuses = sorted((c.grouped_by, c.status) for c in report.clusters)
    assert statuses == [("CycleCloud node array", "findings"), ("CycleCloud node array, one scale set", "clean")]
    assert not [n for n in report.notes if "CycleCloud node array" in n]  # one scale set: nothing to say
