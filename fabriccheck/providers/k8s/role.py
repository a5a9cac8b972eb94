"""What a live run lists, kind by kind, and the least-privilege ClusterRole that allows exactly that: `list` on
each kind (one call per kind, plus `limit`/`continue` pages), nothing else. Imports no Kubernetes client."""

from __future__ import annotations

from dataclasses import dataclass

import yaml


@dataclass(frozen=True)
class Kind:
    plural: str  # as the dump files are named
    kind: str  # the objects' `kind`
    group: str  # "" for the core API group
    version: str
    namespaced: bool = True
    required: bool = False  # the run cannot judge anything without it (nodes.json, pods.json)
    owner: bool = False  # a workload controller: pods are grouped by it, its pod template judged before apply


# Every kind read, in the order a live run lists them. Custom resources that are not installed are skipped (404),
# not errors. The kinds neither required nor owners are the objects the judging reads besides pods (the device
# plugin and NCCL installer DaemonSets, GKE's networks), which manifests apply along with their workloads.
KINDS: tuple[Kind, ...] = (
    Kind("nodes", "Node", "", "v1", namespaced=False, required=True),
    Kind("pods", "Pod", "", "v1", required=True),
    Kind("daemonsets", "DaemonSet", "apps", "v1"),
    Kind("deployments", "Deployment", "apps", "v1", owner=True),
    Kind("replicasets", "ReplicaSet", "apps", "v1", owner=True),
    Kind("statefulsets", "StatefulSet", "apps", "v1", owner=True),
    Kind("jobs", "Job", "batch", "v1", owner=True),
    Kind("jobsets", "JobSet", "jobset.x-k8s.io", "v1alpha2", owner=True),
    Kind("pytorchjobs", "PyTorchJob", "kubeflow.org", "v1", owner=True),
    Kind("mpijobs", "MPIJob", "kubeflow.org", "v2beta1", owner=True),
    Kind("tfjobs", "TFJob", "kubeflow.org", "v1", owner=True),
    Kind("trainjobs", "TrainJob", "trainer.kubeflow.org", "v1alpha1", owner=True),
    Kind("leaderworkersets", "LeaderWorkerSet", "leaderworkerset.x-k8s.io", "v1", owner=True),
    Kind("rayclusters", "RayCluster", "ray.io", "v1", owner=True),
    Kind("rayjobs", "RayJob", "ray.io", "v1", owner=True),
    Kind("vcjobs", "Job", "batch.volcano.sh", "v1alpha1", owner=True),  # Volcano's Job
    Kind("networks", "Network", "networking.gke.io", "v1", namespaced=False),
    Kind("gkenetworkparamsets", "GKENetworkParamSet", "networking.gke.io", "v1", namespaced=False),
    # NVIDIA's GPU DRA driver: which NVLink clique each node of a multi-node NVLink domain joined (topology.py).
    Kind("computedomains", "ComputeDomain", "resource.nvidia.com", "v1beta1"),
)
ROLE_NAME = "fabriccheck-reader"


def resource_of(kind: Kind) -> str:
    """The resource name RBAC uses: Volcano's Job is `jobs` in its group."""
    return "jobs" if kind.plural == "vcjobs" else kind.plural


def rule_for(kind: Kind) -> str:
    """The RBAC rule a forbidden list needed, in one line."""
    group = kind.group or '""'
    return f"apiGroups: [{group}], resources: [{resource_of(kind)}], verbs: [list]"


def cluster_role() -> dict[str, object]:
    groups: dict[str, list[str]] = {}
    for kind in KINDS:
        groups.setdefault(kind.group, []).append(resource_of(kind))
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": ROLE_NAME},
        "rules": [
            {"apiGroups": [group], "resources": sorted(set(resources)), "verbs": ["list"]}
            for group, resources in groups.items()
        ],
    }


def cluster_role_yaml() -> str:
    return yaml.safe_dump(cluster_role(), sort_keys=False)
