"""A k8s report names each workload's nodes as their cloud names them (spec.providerID), and `fabriccheck merge`
joins it to the cloud reports of the same estate: the Kubernetes workload is told which cloud cluster its nodes
belong to, and so what the cloud audit found on them.

Shapes: the demo's EKS nodes are the AWS demo's llm-prod instances (tools/build_demo_k8s.py); AKS providerIDs as
`azure:///subscriptions/SUB/resourceGroups/MC_.../virtualMachineScaleSets/aks-POOL-NNNNNNNN-vmss/virtualMachines/N`
(kubernetes/kubernetes #59855, k8s-object-shapes.md in the shared samples), and the Azure demo's AKS scale set
aks-gpu-12345678-vmss.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cli_run import run

from fabriccheck.merge import merge
from fabriccheck.penalty import Penalty
from fabriccheck.report import CloudInstance, ClusterReport, Report

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo"
LLM_PROD = "aws:111122223333:us-east-1:auto-scaling-group/llm-prod"
EKS = "k8s:eks-train:us-east-1:kubernetes-workload/default/"
AKS_POOL = "azure:11111111-2222-3333-4444-555555555555:eastus:aks-node-pool/12345678/gpu"
# The AKS demo's scale set, and the Azure demo's (its resource group in other letters: Azure ids ignore case).
AKS_DEMO_VMSS = (
    "8f1b2c3d-0000-4a5b-9c8d-1234567890ab/resourceGroups/mc_ml_aks-ndv5_eastus/providers/Microsoft.Compute/"
    "virtualMachineScaleSets/aks-gpunp-31415926-vmss"
)
AZURE_DEMO_VMSS = (
    "11111111-2222-3333-4444-555555555555/resourcegroups/MC_aks-rg_llm_eastus/providers/Microsoft.Compute/"
    "virtualMachineScaleSets/aks-gpu-12345678-vmss"
)


def _json(*args: str, out: Path) -> dict[str, Any]:
    result = run(*args, "-f", "json", "-o", str(out), "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    loaded: dict[str, Any] = json.loads(out.read_text())
    return loaded


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("join")
    paths = {name: folder / f"{name}.json" for name in ("aws", "azure", "k8s")}
    for name in ("aws", "azure"):
        _json(name, "--from-dump", str(DEMO / name), out=paths[name])
    _json("k8s", "--from-dump", str(DEMO / "k8s"), out=paths["k8s"])
    return paths


def test_a_k8s_report_names_each_workloads_cloud_instances(reports: dict[str, Path]) -> None:
    report = json.loads(reports["k8s"].read_text())
    clusters = {c["id"]: c for c in report["clusters"]}
    fsdp = clusters[EKS + "PyTorchJob/llama3-1-8b-fsdp"]["cloud_instances"]
    assert [(i["node"], i["cloud"], i["instance"], i["account"], i["pods"]) for i in fsdp] == [
        ("ip-10-0-0-4.ec2.internal", "aws", "i-00000000000000001", None, ["default/llama3-1-8b-fsdp-worker-0"]),
        ("ip-10-0-0-5.ec2.internal", "aws", "i-00000000000000046", None, ["default/llama3-1-8b-fsdp-worker-1"]),
    ]
    gke = clusters["k8s:gke-a3mega:us-central1:kubernetes-workload/default/Job/nccl-tcpxo-test"]["cloud_instances"]
    assert {(i["cloud"], i["account"]) for i in gke} == {("gcp", "ml-prod-4417")}  # gce://PROJECT/zone/name
    assert gke[0]["instance"] == gke[0]["node"]  # a GKE node is named after its GCE instance
    aks = clusters["k8s:aks-ndv5:eastus:kubernetes-workload/default/MPIJob/nccl-tests"]["cloud_instances"]
    assert aks[0]["instance"] == f"/subscriptions/{AKS_DEMO_VMSS}/virtualMachines/0"  # the VM's resource id
    assert aks[0]["account"] == "8f1b2c3d-0000-4a5b-9c8d-1234567890ab"
    assert all(c["cloud_clusters"] == [] for c in report["clusters"])  # joined only by merge


def test_merge_joins_the_eks_workloads_to_the_aws_cluster_of_their_nodes(
    reports: dict[str, Path], tmp_path: Path
) -> None:
    merged = _json("merge", str(reports["aws"]), str(reports["k8s"]), out=tmp_path / "m.json")
    joined = {c["id"]: c["cloud_clusters"] for c in merged["clusters"] if c["provider"] == "k8s"}
    assert joined[EKS + "PyTorchJob/llama3-1-8b-fsdp"] == [LLM_PROD]
    assert joined[EKS + "MPIJob/nccl-tests"] == [LLM_PROD]
    # GKE and AKS nodes are not instances of the AWS report: nothing joined, nothing guessed.
    assert sum(1 for ids in joined.values() if ids) == 2
    assert f"{EKS}MPIJob/nccl-tests runs on 2 of its 2 node(s) in {LLM_PROD} (aws audit: clean)" in (merged["notes"])
    text = run("merge", str(reports["aws"]), str(reports["k8s"]), "--fail-on", "never").stdout
    assert "auto-scaling-group/llm-prod (aws audit: clean)" in " ".join(text.split())


def test_one_demo_run_joins_them_too(tmp_path: Path) -> None:
    """`fabriccheck demo` judges every cloud and the Kubernetes clusters in one run: the same join, no merge."""
    report = _json("demo", out=tmp_path / "demo.json")
    k8s_clusters = [c for c in report["clusters"] if c["provider"] == "k8s"]  # the Slurm ones: tests/test_slurm_demo.py
    joined = {c["id"]: c["cloud_clusters"] for c in k8s_clusters if c["cloud_clusters"]}
    assert joined == {EKS + "PyTorchJob/llama3-1-8b-fsdp": [LLM_PROD], EKS + "MPIJob/nccl-tests": [LLM_PROD]}
    k8s = [n for n in report["notes"] if n.startswith("k8s:")]
    assert sum(1 for n in k8s if f"node(s) in {LLM_PROD} (aws audit: clean)" in n) == 2


def test_merge_joins_an_aks_pool_to_its_scale_set_and_its_placement_finding(
    reports: dict[str, Path], tmp_path: Path
) -> None:
    """AKS nodes that are the Azure demo's aks-gpu-12345678-vmss: the k8s workload learns that the scale set can
    spread its VMs over several placement groups (AZ111), which no Kubernetes object shows."""
    dump = tmp_path / "aks-ndv5"
    shutil.copytree(DEMO / "k8s" / "aks-ndv5", dump)
    nodes = dump / "nodes.json"
    nodes.write_text(nodes.read_text().replace(AKS_DEMO_VMSS, AZURE_DEMO_VMSS))
    k8s = tmp_path / "aks.json"
    _json("k8s", "--from-dump", str(dump), out=k8s)
    merged = _json("merge", str(reports["azure"]), str(k8s), out=tmp_path / "m.json")
    joined = {c["id"].rsplit("/", 1)[-1]: c["cloud_clusters"] for c in merged["clusters"] if c["provider"] == "k8s"}
    assert joined == {"nccl-tests": [AKS_POOL], "nccl-tests-ipoib": [AKS_POOL]}
    notes = [n for n in merged["notes"] if AKS_POOL in n]
    # The Azure demo's scale set has VMs 0-2: the second workload's pod on VM 3 is in no cloud cluster.
    assert any("nccl-tests-ipoib runs on 1 of its 2 node(s)" in n for n in notes)
    assert all(n.endswith("(azure audit: findings): its findings there hold for this workload too") for n in notes)
    assert any(f["rule"] == "AZ111" and f["cluster"] == AKS_POOL for f in merged["findings"])

    other = tmp_path / "other-subscription"
    shutil.copytree(dump, other)
    (other / "nodes.json").write_text(nodes.read_text().replace("11111111-2222", "99999999-2222"))
    _json("k8s", "--from-dump", str(other), out=k8s)
    merged = _json("merge", str(reports["azure"]), str(k8s), out=tmp_path / "m2.json")
    assert all(c["cloud_clusters"] == [] for c in merged["clusters"] if c["provider"] == "k8s")


def _cluster(cid: str, provider: str, account: str, nodes: list[str], **more: Any) -> ClusterReport:
    return ClusterReport(
        id=cid,
        provider=provider,
        account=account,
        grouped_by="x",
        nodes=nodes,
        instance_types=["a3-megagpu-8g"],
        gpus=16,
        findings=0,
        status="clean",
        penalty=Penalty(workload="x", estimated=False),
        **more,
    )


def test_a_gce_name_joins_only_in_its_project(reports: dict[str, Path]) -> None:
    """GCE instance names are unique per project only: a node of another project with the same name is not joined."""
    base = Report.model_validate_json(reports["aws"].read_text())
    pod = CloudInstance(node="a3m-0", cloud="gcp", instance="a3m-0", account="ml-prod-4417", pods=["default/w-0"])
    k8s = _cluster("k8s:gke:us-central1:w", "k8s", "gke", ["default/w-0"], cloud_instances=[pod])
    parts = []
    for project in ("ml-prod-4417", "ml-dev-0001"):
        cloud = _cluster(f"gcp:{project}:us-central1:pool", "gcp", project, ["a3m-0", "a3m-1"])
        parts.append((Path(f"{project}.json"), base.model_copy(update={"clusters": [cloud], "findings": []})))
    merged = merge([*parts, (Path("k8s.json"), base.model_copy(update={"clusters": [k8s], "findings": []}))])
    assert [c.cloud_clusters for c in merged.clusters if c.provider == "k8s"] == [["gcp:ml-prod-4417:us-central1:pool"]]
