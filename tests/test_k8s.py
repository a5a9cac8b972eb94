"""`fabriccheck k8s` from dumps and manifests: the EKS, GKE and AKS fixture clusters (fixtures/demo/k8s, shapes
named in fixtures/k8s/SOURCES.md), each with a right and a wrong training workload, judged through the same engine,
penalty and gate as the clouds; workload grouping, what is never judged, what is unknown, and bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from cli_run import one_clean_line, run

from fabriccheck import flow
from fabriccheck.providers.k8s.dump import load_dump
from fabriccheck.providers.k8s.manifests import load_manifests
from fabriccheck.providers.k8s.objects import ClusterObjects, Normalizer, quantity
from fabriccheck.resources.k8s import PodPart

ROOT = Path(__file__).resolve().parents[1]
CLUSTERS = ROOT / "fixtures" / "demo" / "k8s"
MANIFESTS = ROOT / "fixtures" / "k8s" / "manifests"


def _report(folder: Path) -> dict[str, Any]:
    result = run("k8s", "--from-dump", str(folder), "-f", "json")
    assert result.returncode in (0, 1), result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def _findings(report: dict[str, Any]) -> set[tuple[str, str]]:
    return {(f["rule"], r) for f in report["findings"] for r in f["resources"]}


def test_each_cloud_has_a_right_and_a_wrong_workload() -> None:
    report = _report(CLUSTERS)
    status = {c["id"].split(":", 1)[1]: c["status"] for c in report["clusters"]}
    assert status == {
        "eks-train:us-east-1:kubernetes-workload/default/PyTorchJob/llama3-1-8b-fsdp": "clean",
        "eks-train:us-east-1:kubernetes-workload/default/MPIJob/nccl-tests": "findings",
        "gke-a3mega:us-central1:kubernetes-workload/default/Job/nccl-tcpxo-test": "clean",
        "gke-a3mega:us-central1:kubernetes-workload/default/Job/my-sample-job": "findings",
        "aks-ndv5:eastus:kubernetes-workload/default/MPIJob/nccl-tests": "clean",
        "aks-ndv5:eastus:kubernetes-workload/default/MPIJob/nccl-tests-ipoib": "findings",
    }
    found = _findings(report)
    # EKS: the MPIJob's workers request GPUs but no EFA; its CPU-only launcher is never judged.
    assert ("K8S101", "default/nccl-tests-worker-0") in found
    assert not any("launcher" in resource for _, resource in found)
    # GKE: the Cluster Toolkit sample Job without the interfaces annotation and the TCPXO daemon.
    assert {("K8S101", "default/my-sample-job-0-m2xkd"), ("K8S110", "default/my-sample-job-0-m2xkd")} <= found
    # AKS: no RDMA resource. Its workers' own NCCL_IB_DISABLE=1 is not flagged: an MPIJob's ranks take their
    # variables from the launcher's mpirun -x, not from the worker container's env.
    assert ("K8S101", "default/nccl-tests-ipoib-worker-1") in found
    assert not any(rule == "K8S130" for rule, _ in found)
    assert report["complete"] is True
    assert report["summary"]["nodes"] == 12  # GPU pods only: the launcher is not a node of the report


def test_a_pod_without_the_fabric_costs_a_tcp_fallback_on_its_nodes_fabric() -> None:
    report = _report(CLUSTERS / "eks-train")
    wrong = next(c for c in report["clusters"] if c["id"].endswith("MPIJob/nccl-tests"))
    right = next(c for c in report["clusters"] if c["id"].endswith("llama3-1-8b-fsdp"))
    assert wrong["gpus"] == 16 and wrong["penalty"]["slowdown"]["low"] > 2
    assert right["penalty"]["slowdown"] == {"low": 1.0, "high": 1.0}


def test_exit_codes_follow_the_gate() -> None:
    assert run("k8s", "--from-dump", str(CLUSTERS / "eks-train")).returncode == 1
    assert run("k8s", "--from-dump", str(CLUSTERS / "eks-train"), "--fail-on", "never").returncode == 0
    selected = run("k8s", "--from-dump", str(CLUSTERS / "eks-train"), "--ignore", "K8S101")
    assert selected.returncode == 0, selected.stdout


def _objects(pods: list[dict[str, Any]], nodes: list[dict[str, Any]], **more: Any) -> ClusterObjects:
    return ClusterObjects(name="c1", items={"nodes": nodes, "pods": pods, **more})


def _node(name: str, instance_type: str, zone: str = "us-west-2a", pool: str = "p5") -> dict[str, Any]:
    labels = {"node.kubernetes.io/instance-type": instance_type, "topology.kubernetes.io/zone": zone}
    labels |= {"topology.kubernetes.io/region": "us-west-2", "eks.amazonaws.com/nodegroup": pool}
    allocatable = {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32"}
    return {"kind": "Node", "metadata": {"name": name, "labels": labels}, "status": {"allocatable": allocatable}}


def _pod(name: str, node: str | None, gpus: int = 8, efa: int = 32, **meta: Any) -> dict[str, Any]:
    limits = {"nvidia.com/gpu": str(gpus)} if gpus else {"cpu": "1"}
    if efa:
        limits["vpc.amazonaws.com/efa"] = str(efa)
    limits["hugepages-2Mi"] = "5120Mi"
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "x", "resources": {"limits": limits}}]}
    if node:
        spec["nodeName"] = node
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", **meta},
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def _owned(kind: str, name: str) -> dict[str, Any]:
    return {"ownerReferences": [{"kind": kind, "name": name, "controller": True}]}


def test_pods_group_by_top_owner_and_well_known_labels() -> None:
    nodes = [_node("n1", "p5.48xlarge"), _node("n2", "p5.48xlarge")]
    job = {"kind": "Job", "metadata": {"name": "js-workers-0", "namespace": "ml", **_owned("JobSet", "js")}}
    pods = [
        _pod("a", "n1", **_owned("Job", "js-workers-0")),  # through the Job to its JobSet
        _pod("b", "n2", labels={"jobset.sigs.k8s.io/jobset-name": "js"}, **_owned("Job", "js-workers-1")),
        _pod("c", "n1", labels={"ray.io/cluster": "rc"}),
        _pod("d", "n2", **_owned("StatefulSet", "db")),
        _pod("e", "n2"),
    ]
    inventory = Normalizer(_objects(pods, nodes, jobs=[job])).inventory("test")
    workloads = {n.id: p.workload for n in inventory.nodes if (p := n.shape.part(PodPart))}
    assert workloads == {
        "ml/a": "ml/JobSet/js",
        "ml/b": "ml/JobSet/js",
        "ml/c": "ml/RayCluster/rc",
        "ml/d": "ml/StatefulSet/db",
        "ml/e": "ml/Pod/e",
    }


def test_what_is_never_judged() -> None:
    nodes = [_node("n1", "p5.48xlarge"), _node("n2", "p5.48xlarge")]
    pods = [
        # CPU-only pods are not nodes of the inventory at all.
        _pod("cpu-0", "n1", gpus=0, efa=0, **_owned("Job", "etl")),
        _pod("cpu-1", "n2", gpus=0, efa=0, **_owned("Job", "etl")),
        # An inference Deployment on two nodes, without EFA: skipped, with why.
        _pod("web-0", "n1", efa=0, **_owned("Deployment", "serve")),
        _pod("web-1", "n2", efa=0, **_owned("Deployment", "serve")),
        # Two 4-GPU pods on one node exchange nothing over the fabric.
        _pod("small-0", "n1", gpus=4, efa=0, **_owned("Job", "small")),
        _pod("small-1", "n1", gpus=4, efa=0, **_owned("Job", "small")),
        # Labelled ignore.
        _pod("x-0", "n1", efa=0, labels={"fabriccheck.io/role": "ignore"}, **_owned("Job", "x")),
        _pod("x-1", "n2", efa=0, labels={"fabriccheck.io/role": "ignore"}, **_owned("Job", "x")),
    ]
    inventory = Normalizer(_objects(pods, nodes)).inventory("test")
    assert {n.id for n in inventory.nodes} == {"ml/web-0", "ml/web-1", "ml/small-0", "ml/small-1", "ml/x-0", "ml/x-1"}
    report = flow.run(inventory, flow.Options())
    assert report.findings == []
    assert report.complete
    skipped = {c.id.rsplit("/", 1)[-1]: c.role for c in report.skipped_clusters}
    assert skipped == {"serve": "inference", "x": "ignore"}


def test_a_deployment_labelled_training_is_judged() -> None:
    nodes = [_node("n1", "p5.48xlarge"), _node("n2", "p5.48xlarge")]
    labels = {"fabriccheck.io/role": "training"}
    pods = [_pod(f"w-{i}", f"n{i + 1}", efa=0, labels=labels, **_owned("Deployment", "d")) for i in range(2)]
    report = flow.run(Normalizer(_objects(pods, nodes)).inventory("test"), flow.Options())
    assert {f.rule for f in report.findings} == {"K8S101"}


def test_an_unknown_node_type_leaves_the_workload_incomplete_never_clean() -> None:
    nodes = [_node("n1", "p9.future"), _node("n2", "p9.future")]
    pods = [_pod(f"w-{i}", f"n{i + 1}", **_owned("Job", "j")) for i in range(2)]
    report = flow.run(Normalizer(_objects(pods, nodes)).inventory("test"), flow.Options())
    assert [c.status for c in report.clusters] == ["incomplete"]
    assert report.findings == []


def test_a_pending_pod_is_judged_on_the_nodes_its_selector_allows() -> None:
    nodes = [_node("n1", "p5.48xlarge"), _node("n2", "p5.48xlarge"), _node("cpu", "m5.large")]
    nodes[2]["status"]["allocatable"] = {}
    pods = [_pod(f"w-{i}", None, efa=0, **_owned("Job", "j")) for i in range(2)]
    for pod in pods:
        pod["spec"]["nodeSelector"] = {"node.kubernetes.io/instance-type": "p5.48xlarge"}
    report = flow.run(Normalizer(_objects(pods, nodes)).inventory("test"), flow.Options())
    assert {(f.rule, r) for f in report.findings for r in f.resources} == {("K8S101", "ml/w-0"), ("K8S101", "ml/w-1")}


def test_zone_split_is_found() -> None:
    nodes = [_node("n1", "p5.48xlarge"), _node("n2", "p5.48xlarge", zone="us-west-2b")]
    pods = [_pod(f"w-{i}", f"n{i + 1}", **_owned("Job", "j")) for i in range(2)]
    daemonsets = [{"kind": "DaemonSet", "metadata": {"name": "aws-efa-k8s-device-plugin", "namespace": "kube-system"}}]
    report = flow.run(Normalizer(_objects(pods, nodes, daemonsets=daemonsets)).inventory("test"), flow.Options())
    assert {f.rule for f in report.findings} == {"K8S140"}
    assert report.clusters[0].penalty.cannot_run


def test_a_missing_optional_kind_leaves_only_its_facts_unknown(tmp_path: Path) -> None:
    dump = tmp_path / "eks-train"
    shutil.copytree(CLUSTERS / "eks-train", dump)
    (dump / "daemonsets.json").unlink()
    report = _report(dump)
    # The nodes advertise EFA: nothing needed the DaemonSets, so the right workload is still clean.
    assert {c["id"].rsplit("/", 1)[-1]: c["status"] for c in report["clusters"]} == {
        "llama3-1-8b-fsdp": "clean",
        "nccl-tests": "findings",
    }


def test_manifests_before_apply() -> None:
    inventory = load_manifests([MANIFESTS], CLUSTERS / "eks-train")
    report = flow.run(inventory, flow.Options())
    by_workload = {c.id.split("kubernetes-workload/", 1)[1]: c.status for c in report.clusters}
    assert by_workload == {"default/PyTorchJob/llama3-1-8b-fsdp": "clean", "default/MPIJob/nccl-tests": "findings"}
    assert {f.rule for f in report.findings} == {"K8S101"}
    assert {n.state for n in inventory.nodes} == {"planned"}


def test_manifests_cli(tmp_path: Path) -> None:
    result = run("k8s", "--manifests", str(MANIFESTS), "--nodes-from", str(CLUSTERS / "eks-train"), "-f", "json")
    assert result.returncode == 1, result.stderr
    assert {f["rule"] for f in json.loads(result.stdout)["findings"]} == {"K8S101"}
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: x\n")
    line = one_clean_line(run("k8s", "--manifests", str(bad), "--nodes-from", str(CLUSTERS / "eks-train")))
    assert str(bad) in line and "not valid YAML" in line


def _bad(tmp_path: Path, files: dict[str, Any]) -> str:
    dump = tmp_path / "c"
    dump.mkdir(exist_ok=True)
    for name, content in files.items():
        (dump / name).write_text(content if isinstance(content, str) else json.dumps(content))
    return one_clean_line(run("k8s", "--from-dump", str(dump)))


def test_bad_dumps_are_one_line(tmp_path: Path) -> None:
    empty = {"kind": "List", "items": []}
    assert "no nodes.json" in _bad(tmp_path, {"pods.json": empty})
    assert "pods.json" in _bad(tmp_path, {"nodes.json": empty, "pods.json": "{not json"})
    line = _bad(tmp_path, {"pods.json": {"kind": "List", "items": [{"kind": "Node", "metadata": {}}]}})
    assert "pods.json: items[0] is a Node, not a Pod" in line
    assert "not the output of kubectl get" in _bad(tmp_path, {"pods.json": [1, 2]})


def test_option_mixes_are_one_line(tmp_path: Path) -> None:
    dump = str(CLUSTERS / "eks-train")
    assert "cannot be used together" in one_clean_line(run("k8s", "--from-dump", dump, "--context", "x"))
    assert "needs --nodes-from" in one_clean_line(run("k8s", "--manifests", str(MANIFESTS)))
    assert "need --manifests" in one_clean_line(run("k8s", str(MANIFESTS)))
    assert "--print-role and" in one_clean_line(run("k8s", "--print-role", "--from-dump", dump))


def test_print_role_lists_every_kind_and_only_list() -> None:
    import yaml

    result = run("k8s", "--print-role")
    assert result.returncode == 0, result.stderr
    role = yaml.safe_load(result.stdout)
    assert role["kind"] == "ClusterRole"
    assert {verb for rule in role["rules"] for verb in rule["verbs"]} == {"list"}
    core = next(r for r in role["rules"] if r["apiGroups"] == [""])
    assert core["resources"] == ["configmaps", "nodes", "pods"]  # never secrets: envFrom names them only
    # DRA: the claims, their templates, classes and slices, and NVIDIA's ComputeDomains (claims.py).
    dra = next(r for r in role["rules"] if r["apiGroups"] == ["resource.k8s.io"])
    assert dra["resources"] == ["deviceclasses", "resourceclaims", "resourceclaimtemplates", "resourceslices"]
    nvidia = next(r for r in role["rules"] if r["apiGroups"] == ["resource.nvidia.com"])
    assert nvidia["resources"] == ["computedomains"]


@pytest.mark.parametrize(
    ("text", "expected"), [("8", 8), ("5120Mi", 5120 * 2**20), ("500m", 0), ("1.5Gi", 3 * 2**29), ("x", 0), (4, 4)]
)
def test_quantity(text: object, expected: int) -> None:
    assert quantity(text) == expected


def test_dump_reader_is_the_one_the_cli_uses() -> None:
    inventory = load_dump(CLUSTERS)
    assert {n.account for n in inventory.nodes} == {"eks-train", "gke-a3mega", "aks-ndv5"}
    instances = {p.instance for n in inventory.nodes if (p := n.shape.part(PodPart)) and n.account == "eks-train"}
    assert all(i and i.startswith("i-") for i in instances)  # each pod names its node's EC2 instance


def _jobset(name: str, status: dict[str, Any] | None = None) -> dict[str, Any]:
    """A JobSet of two A3 Mega workers whose pods map eight GPU networks (GoogleCloudPlatform/
    container-engine-accelerators gpudirect-rdma nccl-test JobSet shape, TCPXO annotations)."""
    interfaces = json.dumps(
        [{"interfaceName": "eth0", "network": "default"}]
        + [{"interfaceName": f"eth{i}", "network": f"vpc{i}"} for i in range(1, 9)]
    )
    annotations = {"networking.gke.io/default-interface": "eth0", "networking.gke.io/interfaces": interfaces}
    pod_spec = {
        "nodeSelector": {"cloud.google.com/gke-nodepool": "a3-mega-pool"},
        "containers": [{"name": "main", "image": "megatron", "resources": {"limits": {"nvidia.com/gpu": 8}}}],
        "initContainers": [
            {"name": "tcpxo-daemon", "image": "gpudirect-tcpxo/tcpgpudmarxd-dev:v1.0.21", "restartPolicy": "Always"}
        ],
    }
    job = {"parallelism": 2, "completions": 2, "template": {"metadata": {"annotations": annotations}, "spec": pod_spec}}
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": "train"},
        "spec": {"replicatedJobs": [{"name": "workers", "replicas": 1, "template": {"spec": job}}]},
        "status": status or {},
    }


def test_a_workload_whose_pods_were_rejected_is_judged_from_its_template(tmp_path: Path) -> None:
    dump = tmp_path / "gke-a3mega"
    shutil.copytree(CLUSTERS / "gke-a3mega", dump)
    networks = json.loads((dump / "networks.json").read_text())
    networks["items"] = [n for n in networks["items"] if n["metadata"]["name"] not in ("vpc7", "vpc8")]
    (dump / "networks.json").write_text(json.dumps(networks))
    done = {"conditions": [{"type": "Completed", "status": "True"}], "completionTime": "2026-11-30T10:00:00Z"}
    jobsets = {"kind": "List", "items": [_jobset("rejected"), _jobset("finished", done)]}
    (dump / "jobsets.json").write_text(json.dumps(jobsets))
    report = _report(dump)
    flagged = {(f["rule"], r) for f in report["findings"] for r in f["resources"] if r.startswith("train/")}
    assert flagged == {("K8S112", "train/rejected-workers-0"), ("K8S112", "train/rejected-workers-1")}
    assert any("train/JobSet/rejected" in note and "no pods" in note for note in report["notes"])
    assert not any("finished" in note for note in report["notes"])


def test_an_empty_cluster_is_clean_and_complete(tmp_path: Path) -> None:
    dump = tmp_path / "empty"
    dump.mkdir()
    for plural in ("nodes", "pods"):
        (dump / f"{plural}.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": []}))
    result = run("k8s", "--from-dump", str(dump), "-f", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["complete"] is True and report["findings"] == [] and report["clusters"] == []
    assert any(rule.startswith("K8S") for rule in report["rules"])


def test_manifests_read_from_standard_input() -> None:
    """`helm template ... | fabriccheck k8s --manifests - --nodes-from DIR`: the same findings as from the file, and a
    bad document named as standard input."""
    import subprocess

    nodes = ["--nodes-from", str(CLUSTERS / "eks-train"), "--format", "json"]
    manifest = MANIFESTS / "nccl-tests-mpijob.yaml"
    from_file = json.loads(run("k8s", "--manifests", str(manifest), *nodes).stdout)
    piped = subprocess.run(
        ["fabriccheck", "k8s", "--manifests", "-", *nodes],
        input=manifest.read_bytes(),
        capture_output=True,
        timeout=120,
    )
    report = json.loads(piped.stdout)
    assert piped.returncode == 1 and report["findings"], piped.stderr
    assert [(f["rule"], f["resources"]) for f in report["findings"]] == [
        (f["rule"], f["resources"]) for f in from_file["findings"]
    ]
    bad = subprocess.run(
        ["fabriccheck", "k8s", "--manifests", "-", *nodes], input=b"kind: [\n", capture_output=True, timeout=120
    )
    assert bad.returncode == 2
    assert bad.stderr.decode().startswith("fabriccheck: error: standard input (-): line 2: not valid YAML")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("kind: [\n", "bad.yaml: line 2: not valid YAML"),
        ("- just\n- a list\n", "bad.yaml: document 1 is not a Kubernetes object (no kind)"),
        # `kubectl get -o yaml` writes a List; an item without a kind is no object (was: internal error)
        ("kind: List\nitems:\n  - metadata: {name: x}\n", "bad.yaml: document 1, item 1 is not a Kubernetes object"),
    ],
)
def test_a_manifest_that_is_no_kubernetes_object_is_one_line(tmp_path: Path, text: str, needle: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    result = run("k8s", "--manifests", str(bad), "--nodes-from", str(CLUSTERS / "eks-train"))
    assert result.returncode == 2 and needle in one_clean_line(result)
