"""`fabriccheck slurm --cloud-dump AZURE_DUMP`: an Azure CycleCloud Workspace for Slurm cluster joined to its VMs.

The Slurm side is shaped as Slurm's data_parser writes it (the nodes of fixtures/slurm/pcluster, renamed); the names
are CycleCloud's: `CLUSTER-NODEARRAY-N` (ccw-gpu-7 in `azslurm topology` output, Azure/cyclecloud-slurm@049346f6
README.md "Topology"), and azslurmd sets a started node's NodeAddr to its VM's private IP (and back to the node name
when it stops: azure-slurm/test/slurmcc_test/azslurmd_test.py, test_one_ready_node_with_ip_internal_dns;
azure-slurm/slurmcc/cli.py `NodeAddr={name}`). The Azure side is the demo's dump (fixtures/demo/azure, the `az ...
-o json` shapes of docs/dump-formats.md) with ND H100 v5 VMs of Flexible scale sets added, copied from the demo's own
Flexible scale set (nd-h200-flex): a Flexible scale set's VMs are in `az vm list` and their NICs in `az network nic
list`, which is where a private IP joins them. Their VM names (`SCALESET_xxxxxxxx`) are not the nodes', so the join is
by NodeAddr.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

from cli_run import run

from fabriccheck.providers.slurm.dump import load_dump

ROOT = Path(__file__).resolve().parents[1]
SLURM = ROOT / "fixtures" / "slurm" / "pcluster"
AZURE = ROOT / "fixtures" / "demo" / "azure"
SUB = "11111111-2222-3333-4444-555555555555"
SIZE = "Standard_ND96isr_H100_v5"


def _load(path: Path) -> Any:
    return json.loads(path.read_text())


def _azure(tmp_path: Path, vms: dict[str, tuple[str, str, str]]) -> Path:
    """The demo's Azure dump plus one VM per entry: name -> (scale set, zone, private IP)."""
    cloud = tmp_path / "azure"
    shutil.copytree(AZURE, cloud)
    folder = cloud / SUB
    vm_list, nic_list, vmss_list = (
        _load(folder / f) for f in ("vm-list.json", "network-nic-list.json", "vmss-list.json")
    )
    vm_model = next(v for v in vm_list if v["name"] == "nd-h200-flex-0")
    nic_model = next(n for n in nic_list if n["name"] == "nd-h200-flex-0-nic")
    set_model = next(s for s in vmss_list if s["name"] == "nd-h200-flex")
    group = f"/subscriptions/{SUB}/resourceGroups/ccw-rg/providers"
    for scale_set in sorted({ss for ss, _, _ in vms.values()}):
        made = copy.deepcopy(set_model)
        made.update(id=f"{group}/Microsoft.Compute/virtualMachineScaleSets/{scale_set}", name=scale_set)
        made["sku"] = {**made["sku"], "name": SIZE}
        vmss_list.append(made)
    for name, (scale_set, zone, address) in vms.items():
        vm, nic = copy.deepcopy(vm_model), copy.deepcopy(nic_model)
        vm_id, nic_id = (
            f"{group}/Microsoft.Compute/virtualMachines/{name}",
            f"{group}/Microsoft.Network/networkInterfaces/{name}-nic",
        )
        vm.update(id=vm_id, name=name, zones=[zone], privateIps=address)
        vm["hardwareProfile"] = {"vmSize": SIZE}
        vm["virtualMachineScaleSet"] = {"id": f"{group}/Microsoft.Compute/virtualMachineScaleSets/{scale_set}"}
        vm["networkProfile"] = {"networkInterfaces": [{"id": nic_id, "primary": True}]}
        vm["osProfile"] = {**vm["osProfile"], "computerName": name}
        nic.update(id=nic_id, name=f"{name}-nic", virtualMachine={"id": vm_id})
        nic["ipConfigurations"] = [{**nic["ipConfigurations"][0], "id": f"{nic_id}/ipConfigurations/ipconfig1",
                                    "privateIPAddress": address}]  # fmt: skip
        vm_list.append(vm)
        nic_list.append(nic)
    for file, value in (("vm-list.json", vm_list), ("network-nic-list.json", nic_list), ("vmss-list.json", vmss_list)):
        (folder / file).write_text(json.dumps(value))
    return cloud


def _slurm(tmp_path: Path, nodes: dict[str, str], jobs: dict[int, str] | None = None) -> Path:
    """A CycleCloud Slurm dump: node name -> NodeAddr, all in partition gpu (8 GPUs each, no topology plugin, as
    cyclecloud-slurm 3.0+ writes by default: README "Transitioning from 2.7 to 3.0", item 6), and running jobs."""
    dump = tmp_path / "slurm"
    dump.mkdir(parents=True)
    doc = _load(SLURM / "nodes.json")
    model = doc["nodes"][0]
    doc["nodes"] = [
        {
            **model,
            "name": name,
            "address": address,
            "hostname": name,
            "partitions": ["gpu"],
            "gres": "gpu:8",
            "state": ["IDLE"],
            "instance_id": "",
            "instance_type": "",
        }
        for name, address in nodes.items()
    ]
    doc["meta"]["slurm"]["cluster"] = "ccw"
    (dump / "nodes.json").write_text(json.dumps(doc))
    (dump / "slurm.conf").write_text("ClusterName=ccw\nSlurmctldHost=ccw-scheduler\n")
    if jobs is not None:
        listed = _load(SLURM / "jobs.json")
        job = next(j for j in listed["jobs"] if "RUNNING" in j["job_state"])
        listed["jobs"] = [{**job, "job_id": i, "partition": "gpu", "nodes": hosts} for i, hosts in jobs.items()]
        (dump / "jobs.json").write_text(json.dumps(listed))
    return dump


def _report(slurm: Path, cloud: Path) -> tuple[int, dict[str, Any]]:
    result = run("slurm", "--from-dump", str(slurm), "--cloud-dump", str(cloud), "-f", "json")
    assert result.returncode in (0, 1, 2) and result.stdout, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return result.returncode, report


def _findings(report: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f["rule"], r) for f in report["findings"] for r in f["resources"]}


NODES = {f"ccw-gpu-{n}": f"10.8.0.{10 + n}" for n in range(1, 5)}


def test_ccw_nodes_join_their_vms_by_nodeaddr(tmp_path: Path) -> None:
    vms = {f"ccw-gpu-a_{n:08x}": ("ccw-gpu-a", "1", f"10.8.0.{10 + n}") for n in range(1, 5)}
    inventory = load_dump(_slurm(tmp_path, NODES), None, _azure(tmp_path, vms))
    joined = {i.node: (i.cloud, i.instance.rsplit("/", 1)[-1]) for i in inventory.slurm.instances}
    assert joined == {f"ccw-gpu-{n}": ("azure", f"ccw-gpu-a_{n:08x}") for n in range(1, 5)}
    node = next(n for n in inventory.nodes if n.id == "ccw-gpu-1")
    assert node.shape.slurm is not None and node.shape.slurm.joined_by == "address"
    scale_set = (
        f"/subscriptions/{SUB}/resourceGroups/ccw-rg/providers/Microsoft.Compute/virtualMachineScaleSets/ccw-gpu-a"
    )
    assert (node.instance_type, node.placed_by("scale-set")) == (SIZE, scale_set.lower())  # ARM ids: any case


def test_a_partition_over_two_scale_sets_is_split_and_one_scale_set_is_clean(tmp_path: Path) -> None:
    """Each scale set is its own InfiniBand fabric (setup-infiniband): the gpu partition over two of them is SLURM122
    on every node; over one it is clean and fully judged."""
    sets = {n: "ccw-gpu-a" if n <= 2 else "ccw-gpu-b" for n in range(1, 5)}
    split = {f"{sets[n]}_{n:08x}": (sets[n], "1", f"10.8.0.{10 + n}") for n in range(1, 5)}
    code, report = _report(_slurm(tmp_path / "x", NODES), _azure(tmp_path / "x", split))
    assert code == 1 and report["complete"] is True
    assert _findings(report) == {("SLURM122", name) for name in NODES}
    finding = next(f for f in report["findings"] if f["rule"] == "SLURM122")
    assert "Partition gpu holds VMs of 2 scale sets" in finding["message"]
    one = {f"ccw-gpu-a_{n:08x}": ("ccw-gpu-a", "1", f"10.8.0.{10 + n}") for n in range(1, 5)}
    code, report = _report(_slurm(tmp_path / "y", NODES, {7: "ccw-gpu-[1-4]"}), _azure(tmp_path / "y", one))
    assert (code, report["complete"], _findings(report)) == (0, True, set())
    assert {c["id"].rsplit(":", 1)[-1]: c["status"] for c in report["clusters"]} == {
        "slurm-partition/gpu": "clean",
        "slurm-job/7": "clean",
    }


def test_one_cause_one_finding_two_causes_two(tmp_path: Path) -> None:
    """A scale set in each of two zones: the zone split (SLURM120) is the one cause, and one partition per zone fixes
    it, so the scale sets are not told again (SLURM122). Two scale sets in zone 1 beside one in zone 2: two causes,
    two findings."""
    one = {"ccw-a_1": ("ccw-gpu-a", "1", "10.8.0.11"), "ccw-a_2": ("ccw-gpu-a", "1", "10.8.0.12"),
           "ccw-c_3": ("ccw-gpu-c", "2", "10.8.0.13"), "ccw-c_4": ("ccw-gpu-c", "2", "10.8.0.14")}  # fmt: skip
    _, report = _report(_slurm(tmp_path / "x", NODES), _azure(tmp_path / "x", one))
    assert {rule for rule, _ in _findings(report)} == {"SLURM120"}
    two = {**one, "ccw-b_2": ("ccw-gpu-b", "1", "10.8.0.12")}
    del two["ccw-a_2"]
    _, report = _report(_slurm(tmp_path / "y", NODES), _azure(tmp_path / "y", two))
    assert {rule for rule, _ in _findings(report)} == {"SLURM120", "SLURM122"}


def test_a_private_ip_two_vnets_share_joins_no_vm(tmp_path: Path) -> None:
    """10.0.0.4 is the private IP of several demo VMs, each in its own VNet or resource group (nd-solo-0,
    nd-h200-flex-0, hb-cfd-0, ...): a node whose NodeAddr it is names none of them, and is not joined to the first."""
    dump = _slurm(tmp_path, {"ccw-gpu-1": "10.0.0.4", "ccw-gpu-2": "10.0.0.5"})
    inventory = load_dump(dump, None, _azure(tmp_path, {}))
    assert inventory.slurm.instances == []
    assert all(n.shape.slurm is not None and n.shape.slurm.joined_by is None for n in inventory.nodes)
