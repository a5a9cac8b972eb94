"""A grouping signal's typed traits (cloud.TagSignal / PlacementSignal `network_path`, declared beside the signal
in each provider's support.py): the penalty reads the trait, never the signal's label (issue 30 item 2).

NCCL's socket count follows the NIC's PCI vendor, read from /sys/class/net/<dev>/device, which a pod's veth does
not have (NVIDIA/nccl src/transport/net_socket.cc, ncclNetSocketGetPciPath and ncclNetSocketGetNsockNthread): so
the path a cluster's sockets take changes its TCP-fallback price, and that path must not hang on wording.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fabriccheck import baseline as baselines
from fabriccheck import clusters, flow
from fabriccheck import waivers as waiving
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


def _forget_signals() -> None:
    """The grouping stage looks each provider's signals up once: look them up again (a test changed them)."""
    for cache in (clusters._signals, clusters._grouping, clusters._renamed):
        cache.cache_clear()


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
    _forget_signals()
    yield
    _forget_signals()


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
    _forget_signals()
    try:
        again = flow.run(demo_inventory(), flow.Options())
    finally:
        monkeypatch.undo()
        _forget_signals()
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


# Every signal's slug as shipped: the part of a cluster id that names the signal, which baselines, waivers and
# config roles key on. A slug is never reworded; a renamed one moves here and keeps its old slug in former_slugs.
SLUGS = {
    "aws": {
        "parallelcluster-compute-resource",
        "parallelcluster-queue",
        "aws-pcs-node-group",
        "eks-node-group",
        "karpenter-node-pool",
        "auto-scaling-group",
        "placement-group",
        "capacity-block",
        "capacity-reservation",
    },
    "azure": {"cyclecloud-node-array", "aks-node-pool", "scale-set", "availability-set", "proximity-placement-group"},
    "gcp": {
        "gke-node-pool",
        "slurm-job",
        "slurm-nodeset",
        "cluster-toolkit-deployment",
        "managed-instance-group",
        "compact-placement-policy",
    },
    "k8s": {"kubernetes-workload"},
    "slurm": {"slurm-job", "slurm-partition"},
}


def test_every_signals_slug_is_the_one_shipped_and_unique() -> None:
    for provider in PROVIDERS:
        signals = support(provider).signals
        slugs = [s.slug for s in signals]
        assert set(slugs) == SLUGS[provider] and len(slugs) == len(set(slugs)), provider
        former = {old for s in signals for old in s.former_slugs}
        assert not former & set(slugs), provider  # a former slug never names another signal now
        assert all(slug.replace("-", "").isalnum() and slug == slug.lower() for slug in slugs)


def test_cluster_ids_come_from_the_slug_not_the_label(demo: Report, reworded: None) -> None:
    again = flow.run(demo_inventory(), flow.Options())
    assert [c.id for c in again.clusters] == [c.id for c in demo.clusters]
    assert {c.grouped_by for c in again.clusters}.isdisjoint({c.grouped_by for c in demo.clusters})


EKS = "aws:111122223333:us-east-1:eks-node-group/research/h200"
EKS_NOW = "aws:111122223333:us-east-1:eks-managed-node-group/research/h200"


def _rename_eks(monkeypatch: pytest.MonkeyPatch, keep_former: bool) -> None:
    """AWS's EKS signal with its slug renamed to eks-managed-node-group (its former slug kept, or not)."""
    cloud = support("aws")
    former = ("eks-node-group",) if keep_former else ()
    signals = tuple(
        dataclasses.replace(s, slug="eks-managed-node-group", former_slugs=former) if s.slug == "eks-node-group" else s
        for s in cloud.signals
    )
    monkeypatch.setattr(cloud, "signals", signals)
    _forget_signals()


@pytest.fixture
def old_files(demo: Report, tmp_path: Path) -> Iterator[tuple[Path, Path, str]]:
    """A baseline (--write-baseline) and a waivers file written while the EKS cluster was `eks-node-group/...`:
    the waiver names the cluster's id, for a rule that flags the cluster as a whole."""
    finding = next(f for f in demo.findings if f.cluster == EKS and len(f.resources) > 1)
    written = tmp_path / "baseline.json"
    written.write_bytes(baselines.dump(demo.findings))
    waivers_file = tmp_path / "waivers.yaml"
    waivers_file.write_text(
        f"waivers:\n  - rule: {finding.rule}\n    resources: ['{EKS}']\n    reason: research pool, accepted\n"
    )
    yield written, waivers_file, finding.rule
    _forget_signals()


def _run_with(baseline: Path, waivers_file: Path) -> Report:
    options = flow.Options(
        baseline=baselines.load(baseline),
        baseline_file=str(baseline),
        waivers=waiving.load(waivers_file),
        waivers_file=str(waivers_file),
    )
    return flow.run(demo_inventory(), options)


def test_an_old_baseline_and_waivers_file_still_match_a_renamed_slug_with_a_note(
    old_files: tuple[Path, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a slug rename that keeps its former slug, the cluster has its new id, and the baseline and waivers
    written with the old one still hold: nothing new, nothing fixed, the waiver active; a note names the new id."""
    baseline, waivers_file, rule = old_files
    _rename_eks(monkeypatch, keep_former=True)
    report = _run_with(baseline, waivers_file)
    assert EKS_NOW in {c.id for c in report.clusters} and EKS not in {c.id for c in report.clusters}
    assert report.baseline is not None and (report.baseline.new, report.baseline.fixed) == (0, 0)
    on_eks = [f for f in report.findings if f.cluster == EKS_NOW]
    assert on_eks and all(f.baseline == "existing" for f in on_eks)
    waived = [f for f in on_eks if f.rule == rule and len(f.resources) > 1]
    assert waived and all(f.waiver is not None for f in waived)
    assert [w.status for w in report.waivers] == ["active"]
    assert (
        f"waiver 1 in {waivers_file} names cluster {EKS}, which is now {EKS_NOW}: read as both; write the new id there"
        in report.notes
    )
    assert any(n.startswith(f"baseline {baseline} records cluster {EKS}, now {EKS_NOW}:") for n in report.notes)


def test_without_the_former_slug_the_old_files_no_longer_match(
    old_files: tuple[Path, Path, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same rename without former_slugs: the old baseline calls the cluster's findings new (and fixed), and the
    waiver is stale. This is what the migration prevents."""
    baseline, waivers_file, _ = old_files
    _rename_eks(monkeypatch, keep_former=False)
    report = _run_with(baseline, waivers_file)
    assert report.baseline is not None and report.baseline.new > 0 and report.baseline.fixed > 0
    assert [w.status for w in report.waivers] == ["stale"]
    assert not any("which is now" in n or "records cluster" in n for n in report.notes)


def test_current_id_maps_only_a_former_slug(monkeypatch: pytest.MonkeyPatch) -> None:
    _rename_eks(monkeypatch, keep_former=True)
    try:
        assert clusters.current_id(EKS) == EKS_NOW
        assert clusters.current_id("aws:111122223333:us-east-1:eks-node-group/*") == EKS_NOW.rsplit("/", 2)[0] + "/*"
        assert clusters.current_id(EKS_NOW) is None
        assert clusters.current_id("aws:111122223333:tag/job=a:eks-node-group/x") is None  # a --cluster-tag id
        assert clusters.current_id("aws:111122223333:us-east-1:i-0abc") is None  # one node alone
        assert clusters.current_id("nope:1:r:eks-node-group/x") is None
    finally:
        monkeypatch.undo()
        _forget_signals()


def test_a_config_role_for_an_old_id_still_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    """[roles] "aws:*:eks-node-group/research/*" = "ignore", written before the rename: the renamed cluster is
    still skipped, by the role the config gives it."""
    _rename_eks(monkeypatch, keep_former=True)
    try:
        report = flow.run(demo_inventory(), flow.Options(roles={"aws:*:eks-node-group/research/*": "ignore"}))
    finally:
        monkeypatch.undo()
        _forget_signals()
    skipped = {c.id: c.reason for c in report.skipped_clusters}
    assert EKS_NOW in skipped and EKS_NOW not in {c.id for c in report.clusters}
