"""Benchmark: `fabriccheck k8s --from-dump` on a large cluster against plain `json.load` of the same files, and
`fabriccheck k8s --help` start-up (the kubernetes client must not be imported).

Cluster (default): 5,000 nodes (4,000 p5.48xlarge in node groups of 80 with 32 EFAs each, 1,000 CPU nodes) and
50,000 pods: 4,000 training pods of 250 PyTorchJobs of 16 (every other job without its EFA request: findings to
report), the rest CPU pods of Deployments and DaemonSets, each in the shape `kubectl get pods -A -o json` writes
(fixtures/demo/k8s). Both sides run as fresh processes; the fabriccheck time is the whole command (interpreter,
imports, read, normalize, judge, penalty, JSON report), the baseline json.load alone inside its process.

Targets: at most 1.5x json.load's time; `k8s --help` under 0.3 s.

    python benchmarks/bench_k8s.py [--nodes 5000 --pods 50000 --repeat 3 --keep /tmp/k8s50k]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_dump import JSON_LOAD, measure

GPU_NODES_SHARE = 0.8
GROUP = 80  # nodes per node group
JOB = 16  # pods per PyTorchJob


def _node(index: int, gpu: bool) -> dict[str, Any]:
    name = f"ip-10-{index // 250}-{index % 250}-{index % 7}.us-west-2.compute.internal"
    instance_type = "p5.48xlarge" if gpu else "m6i.4xlarge"
    zone = "us-west-2a"
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/instance-type": instance_type,
        "beta.kubernetes.io/os": "linux",
        "eks.amazonaws.com/capacityType": "ON_DEMAND",
        "eks.amazonaws.com/nodegroup": f"{'p5' if gpu else 'cpu'}-{index // GROUP}",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": instance_type,
        "topology.k8s.aws/zone-id": "usw2-az1",
        "topology.kubernetes.io/region": "us-west-2",
        "topology.kubernetes.io/zone": zone,
    }
    allocatable = {"cpu": "191450m", "ephemeral-storage": "95551679124", "memory": "2045679484Ki", "pods": "100"}
    if gpu:
        allocatable |= {"nvidia.com/gpu": "8", "vpc.amazonaws.com/efa": "32", "hugepages-2Mi": "21Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"labels": labels, "name": name, "uid": f"uid-node-{index}", "resourceVersion": "4410721"},
        "spec": {"providerID": f"aws:///{zone}/i-{index:017x}"},
        "status": {
            "allocatable": allocatable,
            "capacity": allocatable,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "nodeInfo": {"kubeletVersion": "v1.31.2-eks-7f9249a", "osImage": "Amazon Linux 2023"},
        },
    }


def _pod(
    name: str, owner: tuple[str, str], node: str, limits: dict[str, str], labels: dict[str, str]
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "labels": labels,
            "name": name,
            "namespace": "ml" if "nvidia.com/gpu" in limits else "web",
            "ownerReferences": [{"apiVersion": "v1", "kind": owner[0], "name": owner[1], "controller": True}],
            "uid": f"uid-{name}",
            "resourceVersion": "4410900",
        },
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "111122223333.dkr.ecr.us-west-2.amazonaws.com/app:1.0",
                    "env": [{"name": "NCCL_DEBUG", "value": "WARN"}, {"name": "LOGLEVEL", "value": "INFO"}],
                    "resources": {"limits": limits, "requests": limits},
                    "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
                }
            ],
            "nodeName": node,
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory"}}],
        },
        "status": {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]},
    }


def build(folder: Path, nodes: int, pods: int) -> None:
    gpu_nodes = int(nodes * GPU_NODES_SHARE)
    node_items = [_node(i, i < gpu_nodes) for i in range(nodes)]
    names = [n["metadata"]["name"] for n in node_items]
    pod_items = []
    for i in range(gpu_nodes):
        job = i // JOB
        limits = {"nvidia.com/gpu": "8", "hugepages-2Mi": "5120Mi", "memory": "32000Mi"}
        if job % 2 == 0:
            limits["vpc.amazonaws.com/efa"] = "32"
        labels = {"training.kubeflow.org/job-name": f"train-{job}", "training.kubeflow.org/replica-type": "worker"}
        pod_items.append(
            _pod(f"train-{job}-worker-{i % JOB}", ("PyTorchJob", f"train-{job}"), names[i], limits, labels)
        )
    for i in range(pods - gpu_nodes):
        labels = {"app": f"web-{i // 50}", "pod-template-hash": "7d67fbc7d4"}
        owner = ("ReplicaSet", f"web-{i // 50}-7d67fbc7d4")
        pod_items.append(_pod(f"web-{i}", owner, names[gpu_nodes + i % (nodes - gpu_nodes)], {"cpu": "1"}, labels))
    folder.mkdir(parents=True, exist_ok=True)
    for plural, items in (("nodes", node_items), ("pods", pod_items)):
        with open(folder / f"{plural}.json", "w") as file:
            json.dump({"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}, file)
    daemonset = {"kind": "DaemonSet", "metadata": {"name": "aws-efa-k8s-device-plugin", "namespace": "kube-system"}}
    with open(folder / "daemonsets.json", "w") as file:
        json.dump({"apiVersion": "v1", "kind": "List", "items": [daemonset]}, file)


def help_time(fabriccheck: str) -> tuple[float, bool]:
    """(median seconds of `k8s --help`, whether the kubernetes client was imported)."""
    runs = []
    for _ in range(10):
        start = time.perf_counter()
        subprocess.run([fabriccheck, "k8s", "--help"], capture_output=True, check=True)
        runs.append(time.perf_counter() - start)
    probe = "import sys\nfrom fabriccheck.cli import main\nmain(['k8s','--help'])\nprint('kubernetes' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return statistics.median(runs), out.strip().endswith("True")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=5_000)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="build the dump here and keep it")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="fabriccheck-k8s-bench-"))
    if not (folder / "pods.json").exists():
        build(folder, args.nodes, args.pods)
    files = sorted(str(p) for p in folder.glob("*.json"))
    print(f"dump: {sum(os.path.getsize(f) for f in files) / 1e6:.0f} MB in {len(files)} files ({folder})")
    fabriccheck = shutil.which("fabriccheck") or "fabriccheck"
    load_times, run_times = [], []
    out = ""
    for _ in range(args.repeat):
        _, _, loaded = measure([sys.executable, "-c", JSON_LOAD, *files])
        load_times.append(float(loaded.strip()))
        wall, _, out = measure([fabriccheck, "k8s", "--from-dump", str(folder), "-f", "json", "--fail-on", "never"])
        run_times.append(wall)
    report = json.loads(out)
    load_t, run_t = min(load_times), min(run_times)
    print(f"json.load of the files: best {load_t:.2f} s, median {statistics.median(load_times):.2f} s")
    print(
        f"fabriccheck k8s --from-dump (whole command): best {run_t:.2f} s, median {statistics.median(run_times):.2f} s"
    )
    summary = report["summary"]
    print(f"  {len(report['findings'])} findings in {summary['clusters']} workloads, {summary['nodes']} GPU pods")
    print(f"time ratio (fabriccheck / json.load): best {run_t / load_t:.2f}  (target <= 1.5)")
    median, imported = help_time(fabriccheck)
    print(f"fabriccheck k8s --help: median {median * 1000:.0f} ms (target < 300 ms); kubernetes imported: {imported}")
    if not args.keep:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
