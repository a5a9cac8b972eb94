"""What a live run lists, kind by kind, and the least-privilege ClusterRole that allows exactly that: `list` on
each kind (one call per kind, plus `limit`/`continue` pages), nothing else. Imports no Kubernetes client."""

from __future__ import annotations

from dataclasses import dataclass

import yaml


@dataclass(frozen=True)
class Kind:
    plural: str  # as the dump files are named
    group: str  # "" for the core API group
    version: str
    namespaced: bool = True
    required: bool = False  # the run cannot judge anything without it


# The order a live run lists them in. Custom resources that are not installed are skipped (404), not errors.
KINDS: tuple[Kind, ...] = (
    Kind("nodes", "", "v1", namespaced=False, required=True),
    Kind("pods", "", "v1", required=True),
    Kind("daemonsets", "apps", "v1"),
    Kind("deployments", "apps", "v1"),
    Kind("replicasets", "apps", "v1"),
    Kind("statefulsets", "apps", "v1"),
    Kind("jobs", "batch", "v1"),
    Kind("jobsets", "jobset.x-k8s.io", "v1alpha2"),
    Kind("pytorchjobs", "kubeflow.org", "v1"),
    Kind("mpijobs", "kubeflow.org", "v2beta1"),
    Kind("tfjobs", "kubeflow.org", "v1"),
    Kind("trainjobs", "trainer.kubeflow.org", "v1alpha1"),
    Kind("leaderworkersets", "leaderworkerset.x-k8s.io", "v1"),
    Kind("rayclusters", "ray.io", "v1"),
    Kind("rayjobs", "ray.io", "v1"),
    Kind("vcjobs", "batch.volcano.sh", "v1alpha1"),
    Kind("networks", "networking.gke.io", "v1", namespaced=False),
    Kind("gkenetworkparamsets", "networking.gke.io", "v1", namespaced=False),
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
