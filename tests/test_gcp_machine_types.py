"""Machine types outside the GPU tables: Cloud TPU node pools, H4D with Cloud RDMA over Falcon, CPU series the
table does not name, and GPU types fabriccheck has no figures for. None of them makes a run incomplete unless a fact
is truly unknown, and then it is named.

Shapes: GKE TPU node VMs are Compute Engine instances of a TPU machine type (ct5lp-hightpu-4t, ...; GKE "Plan
TPUs in GKE") labelled with their cluster and node pool like any GKE node. H4D takes one IRDMA NIC on a VPC network
with the ZONE-vpc-falcon RDMA network profile besides its gVNIC (VPC "RDMA network profiles": Falcon VPC network,
IRDMA, H4D; GKE "Run HPC workloads with H4D": up to 200 Gbps between nodes, no multi-zone node pool with RDMA). An
instance lists its accelerators in guestAccelerators as [{"acceleratorType": ".../acceleratorTypes/nvidia-l4",
"acceleratorCount": 1}] (Compute API Instance.guestAccelerators; a g2-standard-8 recorded in a public test,
code-index excerpt 63137923283). The resources are the demo builder's, in the Compute API's JSON shape.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_run import run

from fabriccheck import flow
from fabriccheck.builders.demo_gcp import Project, gke, slurm
from fabriccheck.clusters import build_clusters
from fabriccheck.facts import FactBuilder, fact_key_of
from fabriccheck.providers.gcp.dump import load_dump
from fabriccheck.providers.gcp.machines import accelerator_count, named_capability

ZONE = "us-central1-a"


def report_of(project: Project, tmp_path: Path) -> tuple[int, dict[str, Any]]:
    project.write(tmp_path / "dump")
    result = run("gcp", "--from-dump", str(tmp_path / "dump"), "-f", "json")
    assert "Traceback" not in result.stderr
    return result.returncode, json.loads(result.stdout)


def h4d_project(falcon: bool = True) -> Project:
    """A Slurm nodeset of four H4D nodes, each with its gVNIC and one IRDMA NIC on a Falcon VPC of its zone."""
    project = Project()
    project.network("h4d-host", mtu=8896)
    project.network("h4d-rdma", mtu=8896, profile_zone=ZONE, profile="falcon" if falcon else "roce")
    project.policy("h4d-compact", vm_count=4)
    for i in range(4):
        project.instance(
            f"h4d-{i}",
            "h4d-highmem-192",
            [("h4d-host", "GVNIC"), ("h4d-rdma", "IRDMA")],
            slurm("hpc", "h4d"),
            ["h4d-compact"],
        )
    return project


def test_a_gke_tpu_node_pool_is_no_gpu_cluster_and_the_run_is_complete(tmp_path: Path) -> None:
    project = Project()
    project.network("gke-net")
    for i in range(4):
        project.instance(f"gke-tpu-{i}", "ct5lp-hightpu-4t", [("gke-net", "GVNIC")], gke("tpu", "v5e-pool"))
    for i in range(2):
        project.instance(f"gke-v6e-{i}", "ct6e-standard-8t", [("gke-net", "GVNIC")], gke("tpu", "v6e-pool"))
    code, report = report_of(project, tmp_path)
    assert (code, report["complete"]) == (0, True)
    assert report["findings"] == [] and report["errors"] == []
    # No GPU, no fabric: no cluster to report, and no type left unknown.
    assert (report["summary"]["nodes"], report["summary"]["unknown_instance_types"]) == (6, [])
    assert report["clusters"] == []


def test_h4d_with_its_irdma_nic_on_a_falcon_vpc_is_a_clean_rdma_cluster(tmp_path: Path) -> None:
    inventory_folder = tmp_path / "dump"
    h4d_project().write(inventory_folder)
    report = flow.run(load_dump(inventory_folder), flow.Options())
    [cluster] = report.clusters
    assert (cluster.status, report.complete, report.findings) == ("clean", True, [])


def test_h4d_on_a_roce_vpc_or_without_its_irdma_nic_is_found_in_the_h4d_words(tmp_path: Path) -> None:
    code, report = report_of(h4d_project(falcon=False), tmp_path / "roce")
    assert code == 1
    assert {f["rule"] for f in report["findings"]} == {"GCP122"}
    assert "IRDMA NICs on h4d-rdma, a roce profile" in report["findings"][0]["message"]
    project = h4d_project()
    for instance in project.instances:
        instance["networkInterfaces"] = instance["networkInterfaces"][:1]
    code, report = report_of(project, tmp_path / "gvnic")
    assert {f["rule"] for f in report["findings"]} == {"GCP120"}
    assert "takes 1 IRDMA NIC(s) for RDMA" in report["findings"][0]["message"]


def test_h4d_across_zones_cannot_run_its_falcon_vpc_is_zonal(tmp_path: Path) -> None:
    project = h4d_project()
    project.instances[3]["zone"] = project.url("zones/us-central1-b")
    code, report = report_of(project, tmp_path)
    assert code == 1 and "GCP111" in {f["rule"] for f in report["findings"]}


def test_a_cpu_series_the_table_does_not_name_is_no_gpu_when_its_instances_list_no_accelerators(
    tmp_path: Path,
) -> None:
    project = Project()
    project.network("default", mtu=None)
    for i in range(3):
        project.instance(
            f"web-{i}", "c9-standard-8", [("default", "GVNIC")], {"ghpc_deployment": "w", "ghpc_role": "x"}
        )
    code, report = report_of(project, tmp_path)
    assert (code, report["complete"]) == (0, True)
    assert (report["summary"]["nodes"], report["summary"]["unknown_instance_types"]) == (3, [])


def test_a_g4_type_is_judged_as_rtx_pro_6000_over_its_ethernet(tmp_path: Path) -> None:
    """g4-standard-48 was outside the tables (an unknown type, not judged); Google's GPU machine types page gives it
    one RTX PRO 6000 and 50 Gbps on one NIC (catalog source GCP-GPU-TYPES-BW): it is judged now."""
    project = Project()
    project.network("default", mtu=None)
    gpus = [
        {"acceleratorType": project.url(f"zones/{ZONE}/acceleratorTypes/nvidia-rtx-pro-6000"), "acceleratorCount": 1}
    ]
    for i in range(2):
        project.instance(f"g4-{i}", "g4-standard-48", [("default", "GVNIC")], gke("c", "g4"), accelerators=gpus)
    code, report = report_of(project, tmp_path)
    assert code == 0 and report["complete"] is True  # was 2: collected in full, not judged
    assert report["summary"]["unknown_instance_types"] == []
    assert all(c["status"] != "incomplete" for c in report["clusters"])


def test_a_gpu_named_type_outside_the_tables_is_unknown_whatever_it_lists(tmp_path: Path) -> None:
    project = Project()
    project.network("default", mtu=None)
    for i in range(2):
        project.instance(f"a9-{i}", "a9-highgpu-8g", [("default", "GVNIC")], gke("c", "a9"))
    code, report = report_of(project, tmp_path)
    assert code == 2 and report["clusters"][0]["status"] == "incomplete"


@pytest.mark.parametrize("count", ["eight", -1, True, None])
def test_an_accelerator_count_that_is_no_count_is_unknown_never_no_fabric(tmp_path: Path, count: object) -> None:
    """Issue 18.5: an unrecognised capability value is unknown (not judged), never 'no fabric'."""
    project = Project()
    project.network("default", mtu=None)
    gpus = [{"acceleratorType": project.url(f"zones/{ZONE}/acceleratorTypes/nvidia-l4"), "acceleratorCount": count}]
    for i in range(2):
        project.instance(f"x-{i}", "c9-standard-8", [("default", "GVNIC")], gke("c", "x"), accelerators=gpus)
    code, report = report_of(project, tmp_path)
    assert (code, report["complete"]) == (2, False)
    assert report["clusters"][0]["status"] == "incomplete"
    [error] = [e for e in report["errors"] if e["code"] == "BadResponse"]
    assert "x-0" in error["message"] and "guestAccelerators" in error["message"]
    assert "whether c9-standard-8 has GPUs is unknown" in error["message"]


def test_names_and_counts() -> None:
    for tpu in ("ct5lp-hightpu-4t", "ct5p-hightpu-4t", "ct4p-hightpu-4t", "ct6e-standard-8t", "tpu7x-standard-4t"):
        cap = named_capability(tpu)
        assert cap is not None and cap.fabric.value == "none" and cap.accelerators == 0, tpu
    assert named_capability("n2-custom-8-16384") is not None
    assert named_capability("a3-highgpu-8g") is None and named_capability("g4-standard-48") is None
    assert accelerator_count(None) == 0 and accelerator_count([]) == 0
    assert accelerator_count([{"acceleratorCount": 8}, {"acceleratorCount": "2"}]) == 10
    assert accelerator_count({"acceleratorCount": 8}) is None and accelerator_count([{"acceleratorType": "x"}]) is None


def test_a_nic_type_the_api_does_not_define_is_unknown_never_no_fabric(tmp_path: Path) -> None:
    """Issue 18.5 for nicType: an A3 Ultra whose GPU NICs say "RDMA" (no Compute API value) is not judged as
    having no MRDMA NIC; it is not judged, with the value named."""
    project = Project()
    project.network("u-host", mtu=8896)
    project.network("u-host2", mtu=8896)
    project.network("roce-a", mtu=8896, profile_zone=ZONE)
    for i in range(2):
        nics = [("u-host", "GVNIC"), ("u-host2", "GVNIC")] + [("roce-a", "RDMA")] * 8
        project.instance(f"u-{i}", "a3-ultragpu-8g", nics, gke("t", "ultra"), reservation="r")
    code, report = report_of(project, tmp_path)
    assert code == 2 and "GCP120" not in {f["rule"] for f in report["findings"]}
    [cluster] = report["clusters"]
    reasons = {u["rule"]: u["reason"] for u in cluster["not_judged"]}
    assert "nicType 'RDMA' is none the Compute API defines" in reasons["GCP120"]


def n1_gpus(project: Project, count: Any, kind: str = "nvidia-tesla-v100") -> list[dict[str, Any]]:
    """An N1 instance's attached GPUs as the Compute API lists them (Instance.guestAccelerators; an n1-standard-8
    with 4 x nvidia-tesla-v100 in a recorded answer of a public test, code-index excerpt 43591357074)."""
    return [{"acceleratorType": project.url(f"zones/{ZONE}/acceleratorTypes/{kind}"), "acceleratorCount": count}]


def test_n1_nodes_with_attached_gpus_are_gpu_nodes_from_their_answer_and_n1_without_stays_cpu(tmp_path: Path) -> None:
    """Issue 17, item 5: an N1 type is a CPU series by name, but each instance attaches its own GPUs: the node's
    GPUs are what its guestAccelerators lists. Two N1 pools of one type, one with 4 x V100 each, one with none."""
    project = Project()
    project.network("default", mtu=None)
    for i in range(2):
        gpus = n1_gpus(project, 4)
        project.instance(f"train-{i}", "n1-standard-32", [("default", "GVNIC")], gke("c", "v100"), accelerators=gpus)
        project.instance(f"web-{i}", "n1-standard-32", [("default", "GVNIC")], gke("c", "web"))
    project.write(tmp_path / "dump")
    inventory = load_dump(tmp_path / "dump")
    shapes = {n.id: (n.shape.accelerators, n.shape.accelerator) for n in inventory.nodes}
    assert shapes == {"train-0": (4, "V100"), "train-1": (4, "V100"), "web-0": (None, None), "web-1": (None, None)}
    facts = FactBuilder(inventory)
    node_gpus = {
        n.id: (facts.of(fact_key_of(n))["accelerators"], facts.of(fact_key_of(n))["accelerator"])
        for n in inventory.nodes
    }
    assert node_gpus == {"train-0": (4, "V100"), "train-1": (4, "V100"), "web-0": (0, ""), "web-1": (0, "")}
    [train] = [c for c in build_clusters(inventory, None) if {n.id for n in c.nodes} == {"train-0", "train-1"}]
    assert facts.cluster(train)["gpus"] == 8
    report = flow.run(inventory, flow.Options())
    assert (report.complete, report.summary.unknown_instance_types, report.errors) == (True, [], [])


def test_n1_guest_accelerators_survive_a_saved_inventory_and_an_unreadable_count_is_refused(tmp_path: Path) -> None:
    project = Project()
    project.network("default", mtu=None)
    for i in range(2):
        gpus = n1_gpus(project, 2, "nvidia-tesla-t4")
        project.instance(f"t4-{i}", "n1-highmem-8", [("default", "GVNIC")], gke("c", "t4"), accelerators=gpus)
    project.write(tmp_path / "dump")
    saved = tmp_path / "inventory.json"
    assert run("gcp", "--from-dump", str(tmp_path / "dump"), "--save-inventory", str(saved)).returncode in (0, 1)
    node = json.loads(saved.read_text())["nodes"][0]
    assert (node["accelerators"], node["accelerator"]) == (2, "T4")
    project.instances[0]["guestAccelerators"] = n1_gpus(project, "two")
    project.write(tmp_path / "bad")
    result = run("gcp", "--from-dump", str(tmp_path / "bad"), "-f", "json")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "instances-list.json" in result.stderr and "guestAccelerators" in result.stderr
