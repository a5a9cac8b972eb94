"""AKS: the scale set behind each node (spec.providerID) is the InfiniBand partition (K8S142); the scale set's
placement group setting is not in any Kubernetes object, and is left to `fabriccheck azure` (joined by merge).

Shapes: the demo's AKS cluster (tools/build_demo_k8s.py), whose providerIDs are
`azure:///subscriptions/S/resourceGroups/MC_.../virtualMachineScaleSets/aks-gpunp-31415926-vmss/virtualMachines/N`
with `agentpool` / `kubernetes.azure.com/agentpool` labels (kubernetes/kubernetes #59855, k8s-object-shapes.md in
the shared samples).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cli_run import run

AKS = Path(__file__).resolve().parents[1] / "fixtures" / "demo" / "k8s" / "aks-ndv5"
VMSS = "aks-gpunp-31415926-vmss"
WORKERS = {"default/nccl-tests-worker-0", "default/nccl-tests-worker-1"}  # on the first two nodes


def _second_node_elsewhere(tmp_path: Path, pool: str) -> Path:
    """The demo cluster with its second node (worker-1's) in another scale set, labelled agent pool `pool`."""
    dump = tmp_path / "aks-ndv5"
    shutil.copytree(AKS, dump)
    nodes = json.loads((dump / "nodes.json").read_text())
    node = nodes["items"][1]
    node["spec"]["providerID"] = node["spec"]["providerID"].replace(VMSS, "aks-gpunp2-27182818-vmss")
    node["metadata"]["labels"] |= {"agentpool": pool, "kubernetes.azure.com/agentpool": pool}
    (dump / "nodes.json").write_text(json.dumps(nodes))
    return dump


def _flagged(dump: Path) -> dict[str, set[str]]:
    result = run("k8s", "--from-dump", str(dump), "-f", "json", "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    found: dict[str, set[str]] = {}
    for finding in report["findings"]:
        found.setdefault(finding["rule"], set()).update(r for r in finding["resources"] if r in WORKERS)
    return found


def test_one_scale_set_is_one_partition() -> None:
    assert "K8S142" not in _flagged(AKS) and "K8S141" not in _flagged(AKS)


@pytest.mark.parametrize("pool", ["gpunp2", "gpunp"])
def test_two_scale_sets_cannot_reach_each_other_whatever_the_pool_labels(tmp_path: Path, pool: str) -> None:
    """Two agent pools (two scale sets), or two scale sets whose nodes carry one pool name: K8S142, an error, and not
    K8S141's looser-placement warning besides."""
    flagged = _flagged(_second_node_elsewhere(tmp_path, pool))
    assert flagged.get("K8S142") == WORKERS
    assert not flagged.get("K8S141")


def test_the_message_names_the_scale_sets(tmp_path: Path) -> None:
    result = run("k8s", "--from-dump", str(_second_node_elsewhere(tmp_path, "gpunp2")), "-f", "json")
    finding = next(f for f in json.loads(result.stdout)["findings"] if f["rule"] == "K8S142")
    assert f"2 scale sets ({VMSS}, aks-gpunp2-27182818-vmss)" in finding["message"]
    assert finding["effect"] == "unreachable"
