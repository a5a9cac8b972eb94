"""What a live run lists, kind by kind, and the least-privilege ClusterRole that allows exactly that: `list` on
each kind (one call per kind, plus `limit`/`continue` pages), nothing else: the DRA kinds too (the reader never gets
one object by name). Imports no Kubernetes client."""

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
    # Older versions a live run lists when the API server serves not `version` (404): DRA went v1beta1 (1.32),
    # v1beta2 (1.33), v1 (1.34) (kubernetes.io/docs/concepts/scheduling-eviction/dynamic-resource-allocation/).
    fallback: tuple[str, ...] = ()


_DRA_OLDER = ("v1beta2", "v1beta1")

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
    # The NCCL_* / FI_* keys of the ConfigMaps a pod's env refers to (rankenv.py); Secrets are never read.
    Kind("configmaps", "ConfigMap", "", "v1"),
    Kind("networks", "Network", "networking.gke.io", "v1", namespaced=False),
    Kind("gkenetworkparamsets", "GKENetworkParamSet", "networking.gke.io", "v1", namespaced=False),
    # Dynamic Resource Allocation: what a pod's claims give it (claims.py).
    Kind("resourceclaims", "ResourceClaim", "resource.k8s.io", "v1", fallback=_DRA_OLDER),
    Kind("resourceclaimtemplates", "ResourceClaimTemplate", "resource.k8s.io", "v1", fallback=_DRA_OLDER),
    Kind("deviceclasses", "DeviceClass", "resource.k8s.io", "v1", namespaced=False, fallback=_DRA_OLDER),
    Kind("resourceslices", "ResourceSlice", "resource.k8s.io", "v1", namespaced=False, fallback=_DRA_OLDER),
    # NVIDIA's ComputeDomain names the IMEX channel template its controller makes, and which NVLink clique each
    # node of a multi-node NVLink domain joined (NVIDIA/k8s-dra-driver-gpu; claims.py, topology.py).
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
