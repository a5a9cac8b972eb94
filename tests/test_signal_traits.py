"""A grouping signal's typed traits (cloud.TagSignal / PlacementSignal `network_path`, declared beside the signal
in each provider's support.py): the penalty reads the trait, never the signal's label (issue 30 item 2).

NCCL's socket count follows the NIC's PCI vendor, read from /sys/class/net/<dev>/device, which a pod's veth does
not have (NVIDIA/nccl src/transport/net_socket.cc, ncclNetSocketGetPciPath and ncclNetSocketGetNsockNthread): so
the path a cluster's sockets take changes its TCP-fallback price, and that path must not hang on wording.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from fabriccheck import clusters, flow
from fabriccheck.cli.scans import demo_inventory
from fabriccheck.cloud import support
from fabriccheck.model import PROVIDERS, NetworkPath
from fabriccheck.report import Report
from fabriccheck.reports import busbw
from fabriccheck.reports.outline import findings_by_cluster

REWORDED = " (reworded)"


def _penalties(report: Report) -> dict[tuple[str, ...], dict[str, Any]]:
    """Each cluster's penalty, keyed by its nodes (not its id, which the label may word)."""
    return {
        tuple(sorted(c.nodes)): c.penalty.model_dump(mode="json", exclude={"reason"})
        | {"path": c.network_path, "reason": c.penalty.reason}
        for c in report.clusters
    }


@pytest.fixture(scope="module")
def demo() -> Report:
    return flow.run(demo_inventory(), flow.Options())


@pytest.fixture
def reworded(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every provider's signals with every label reworded ("GKE node pool" -> "GKE-node-pool (reworded)")."""
    for provider in PROVIDERS:
        cloud = support(provider)
        signals = tuple(dataclasses.replace(s, label=s.label.replace(" ", "-") + REWORDED) for s in cloud.signals)
        monkeypatch.setattr(cloud, "signals", signals)
    # The grouping stage looks each provider's signals up once: look them up again, now and after the test.
    clusters._signals.cache_clear()
    clusters._grouping.cache_clear()
    yield
    clusters._signals.cache_clear()
    clusters._grouping.cache_clear()


def test_rewording_every_signal_label_leaves_every_demo_penalty_unchanged(demo: Report, reworded: None) -> None:
    """The whole demo (every cloud, Kubernetes, Slurm) judged again with every label reworded: every cluster is
    priced as before (slowdown, step seconds, inter-node bandwidths, reason), on the same network path. Before
    the trait, rewording "GKE node pool" to "GKE node-pool" moved a GKE cluster from 5.6-10.9x to 1.8-3.1x."""
    again = flow.run(demo_inventory(), flow.Options())
    relabelled = [c for c in again.clusters if c.grouped_by.endswith(REWORDED) or f"{REWORDED}, one " in c.grouped_by]
    assert len(relabelled) == len(again.clusters) > 20  # the rewording took: every cluster carries a new label
    before, after = _penalties(demo), _penalties(again)
    assert after == before
    pods = [nodes for nodes, p in after.items() if p["path"] == NetworkPath.POD]
    assert len(pods) >= 10  # the Kubernetes clusters (EKS, Karpenter, AKS, GKE, workloads) kept their pod path


def test_the_declared_path_is_what_the_penalty_reads(demo: Report, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same demo with every signal declared on the host path (labels untouched): the Kubernetes clusters on
    TCP sockets are priced differently (NCCL's host NIC defaults instead of one socket per channel on a veth), and
    every other cluster as before."""
    for provider in PROVIDERS:
        cloud = support(provider)
        hosts = tuple(dataclasses.replace(s, network_path=NetworkPath.HOST) for s in cloud.signals)
        monkeypatch.setattr(cloud, "signals", hosts)
    clusters._signals.cache_clear()
    clusters._grouping.cache_clear()
    try:
        again = flow.run(demo_inventory(), flow.Options())
    finally:
        monkeypatch.undo()
        clusters._signals.cache_clear()
        clusters._grouping.cache_clear()
    before, after = _penalties(demo), _penalties(again)
    moved = {nodes for nodes in before if before[nodes]["slowdown"] != after[nodes]["slowdown"]}
    assert moved and all(before[nodes]["path"] == NetworkPath.POD for nodes in moved)
    gke = next(c for c in demo.clusters if c.id.endswith("gke-node-pool/train/hostonly"))
    assert tuple(sorted(gke.nodes)) in moved


def test_kubernetes_signals_declare_the_pod_network_and_others_the_host() -> None:
    """The declared traits: a Kubernetes node group's (and workload's) pods run on the pod network, as every
    published Kubernetes fallback of the calibration table did (EKS p4d and g4dn, skypilot examples/aws_efa and
    aws-samples/aws-do-eks; GKE a3-megagpu-8g, NVIDIA/aicr); every other signal groups VMs on their own NICs."""
    declared = {(p, s.label): s.network_path for p in PROVIDERS for s in support(p).signals}
    pods = {key for key, path in declared.items() if path is NetworkPath.POD}
    assert pods == {
        ("aws", "EKS node group"),
        ("aws", "Karpenter node pool"),
        ("azure", "AKS node pool"),
        ("gcp", "GKE node pool"),
        ("k8s", "Kubernetes workload"),
    }
    assert set(declared.values()) == {NetworkPath.POD, NetworkPath.HOST}


def test_the_report_records_each_clusters_network_path(demo: Report) -> None:
    paths = {c.id.split(":")[3].split("/")[0]: c.network_path for c in demo.clusters}
    assert paths["gke-node-pool"] is NetworkPath.POD and paths["eks-node-group"] is NetworkPath.POD
    assert paths["scale-set"] is NetworkPath.HOST and paths["auto-scaling-group"] is NetworkPath.HOST
    dumped = next(c for c in demo.clusters if c.id.endswith("gke-node-pool/train/hostonly")).model_dump(mode="json")
    assert dumped["network_path"] == "pod"


def test_a_busbw_chart_reads_the_recorded_path_and_an_older_report_the_one_that_was_priced(demo: Report) -> None:
    """A GKE pool on TCP sockets over its pod network: the chart draws the pod path the report records; a report
    written before network_path was recorded draws the path whose links are the priced ones (the same); a report
    that recorded the host path (wrongly, here) draws nothing rather than another cluster."""
    cluster = next(c for c in demo.clusters if c.id.endswith("gke-node-pool/train/hostonly"))
    findings = findings_by_cluster(demo)[cluster.id]
    drawn = busbw.curves(cluster, findings)
    assert not isinstance(drawn, str) and drawn.state == "TCP sockets instead of the fabric"
    assert drawn.command is not None and drawn.command.endswith("--state tcp,pod")
    older = busbw.curves(cluster.model_copy(update={"network_path": None}), findings)
    assert older == drawn
    host = busbw.curves(cluster.model_copy(update={"network_path": NetworkPath.HOST}), findings)
    assert host == "the model's links for its type and findings are not those its penalty recorded"
