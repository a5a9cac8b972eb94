"""The pods a workload object would create: its pod templates and how many of each, by kind. Manifests before
apply are judged as these pods (manifests.py); so are the workloads of a dump whose pods do not exist (rejected at
admission, or not created yet: objects.py).

Where each kind keeps its pod templates: the Kubernetes API reference (Pod, Deployment, ReplicaSet, StatefulSet,
Job, CronJob), kubernetes-sigs/jobset (spec.replicatedJobs[].template), kubeflow training-operator
(spec.pytorchReplicaSpecs / mpiReplicaSpecs / tfReplicaSpecs), kubernetes-sigs/lws
(spec.leaderWorkerTemplate), ray-project/kuberay (headGroupSpec, workerGroupSpecs[]), volcano (spec.tasks[]).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

MAX_PODS = 10_000  # per workload: a replicas field past this is a typo, not a plan


Template = tuple[str, dict[str, Any], int]  # (role, pod template, how many pods)


def _replicas(value: Any, default: int = 1) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def _job_template(job_spec: dict[str, Any], role: str, times: int) -> list[Template]:
    template = job_spec.get("template") or {}
    return [(role, template, times * _replicas(job_spec.get("parallelism")))]


def _replica_specs(specs: Any) -> list[Template]:
    return [
        (role.lower(), spec.get("template") or {}, _replicas(spec.get("replicas")))
        for role, spec in (specs or {}).items()
        if isinstance(spec, dict)
    ]


def templates(doc: dict[str, Any]) -> list[Template]:
    """The pod templates a workload object would create pods from, with how many of each."""
    kind, spec = doc.get("kind"), doc.get("spec") or {}
    api = str(doc.get("apiVersion") or "")
    if kind == "Pod":
        return [("pod", {"metadata": doc.get("metadata") or {}, "spec": spec}, 1)]
    if kind in ("Deployment", "ReplicaSet", "StatefulSet"):
        return [("replica", spec.get("template") or {}, _replicas(spec.get("replicas")))]
    if kind == "Job" and api.startswith("batch.volcano.sh"):
        tasks = [t for t in spec.get("tasks") or () if isinstance(t, dict)]
        return [(str(t.get("name", "task")), t.get("template") or {}, _replicas(t.get("replicas"))) for t in tasks]
    if kind == "Job":
        return _job_template(spec, "job", 1)
    if kind == "CronJob":
        return _job_template(((spec.get("jobTemplate") or {}).get("spec")) or {}, "job", 1)
    if kind == "JobSet":
        found: list[Template] = []
        for replicated in spec.get("replicatedJobs") or ():
            job_spec = ((replicated.get("template") or {}).get("spec")) or {}
            found += _job_template(job_spec, str(replicated.get("name", "job")), _replicas(replicated.get("replicas")))
        return found
    if kind == "PyTorchJob":
        return _replica_specs(spec.get("pytorchReplicaSpecs"))
    if kind == "MPIJob":
        return _replica_specs(spec.get("mpiReplicaSpecs"))
    if kind == "TFJob":
        return _replica_specs(spec.get("tfReplicaSpecs"))
    if kind == "LeaderWorkerSet":
        lws = spec.get("leaderWorkerTemplate") or {}
        groups, size = _replicas(spec.get("replicas")), _replicas(lws.get("size"))
        leader = lws.get("leaderTemplate") or lws.get("workerTemplate") or {}
        return [("leader", leader, groups), ("worker", lws.get("workerTemplate") or {}, groups * max(size - 1, 0))]
    if kind == "RayCluster":
        head = (spec.get("headGroupSpec") or {}).get("template") or {}
        workers = [
            (str(g.get("groupName", "worker")), g.get("template") or {}, _replicas(g.get("replicas")))
            for g in spec.get("workerGroupSpecs") or ()
            if isinstance(g, dict)
        ]
        return [("head", head, 1), *workers]
    return []


def pods_of(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(pod id, pod object) for each pod the workload would create, owned by it."""
    meta = doc.get("metadata") or {}
    name, namespace = str(meta.get("name") or "unnamed"), str(meta.get("namespace") or "default")
    owner = [{"kind": doc["kind"], "name": name, "controller": True}]
    for role, template, times in templates(doc):
        template_meta = template.get("metadata") or {}
        for index in range(min(times, MAX_PODS)):
            pod_name = name if doc["kind"] == "Pod" else f"{name}-{role}-{index}"
            pod_meta = {**template_meta, "name": pod_name, "namespace": namespace}
            if doc["kind"] != "Pod":
                pod_meta["ownerReferences"] = owner
            yield f"{namespace}/{pod_name}", {"metadata": pod_meta, "spec": template.get("spec") or {}}


