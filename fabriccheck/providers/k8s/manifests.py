"""Manifests judged before apply: YAML or JSON files or folders, multi-document, Helm-rendered (`helm template`),
against the nodes of a dump folder (`--nodes-from DIR`, holding nodes.json). The pod template of every workload
kind is judged as the pods it would create, as many as its replicas say; DaemonSets, Networks and
GKENetworkParamSets in the manifests count as applied with them.

Where each kind keeps its pod templates: the Kubernetes API reference (Pod, Deployment, ReplicaSet, StatefulSet,
Job, CronJob), kubernetes-sigs/jobset (spec.replicatedJobs[].template), kubeflow training-operator
(spec.pytorchReplicaSpecs / mpiReplicaSpecs / tfReplicaSpecs), kubernetes-sigs/lws
(spec.leaderWorkerTemplate), ray-project/kuberay (headGroupSpec, workerGroupSpecs[]), volcano (spec.tasks[]).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from fabriccheck import textfiles
from fabriccheck.errors import FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.providers.k8s.dump import read_list
from fabriccheck.providers.k8s.objects import KINDS, ClusterObjects, Normalizer

SUFFIXES = (".yaml", ".yml", ".json")
# Objects in the manifests that the judging reads besides pods: applied with them.
_APPLIED = {"DaemonSet": "daemonsets", "Network": "networks", "GKENetworkParamSet": "gkenetworkparamsets"}
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


def _documents(path: Path) -> Iterator[dict[str, Any]]:
    """The objects of one file (a List's items one by one); anything but objects is one line naming the file."""
    text = textfiles.read_text(path)
    try:
        docs = list(yaml.load_all(text, Loader=textfiles._Loader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        raise FabricCheckError(f"{path}: {where}not valid YAML ({getattr(exc, 'problem', exc)})") from None
    except RecursionError:
        raise FabricCheckError(f"{path}: nested too deeply") from None
    for index, doc in enumerate(docs):
        if doc is None:
            continue  # an empty document (`---` at the end, a Helm template that renders nothing)
        if not isinstance(doc, dict) or not isinstance(doc.get("kind"), str):
            raise FabricCheckError(f"{path}: document {index + 1} is not a Kubernetes object (no kind)")
        if doc["kind"].endswith("List") and isinstance(doc.get("items"), list):
            yield from (item for item in doc["items"] if isinstance(item, dict))
        else:
            yield doc


def manifest_files(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
        elif path.is_file():
            found.append(path)
        else:
            raise FabricCheckError(f"--manifests {path}: no such file or folder")
    if not found:
        raise FabricCheckError(f"--manifests {' '.join(map(str, paths))}: no .yaml, .yml or .json file")
    return found


def _pods(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
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


def load_manifests(paths: list[Path], nodes_from: Path) -> Inventory:
    """The pods the manifests would create, judged against the nodes (and DaemonSets, networks) of `nodes_from`."""
    if not (nodes_from / "nodes.json").is_file():
        raise FabricCheckError(f"--nodes-from {nodes_from}: no nodes.json (kubectl get nodes -A -o json > nodes.json)")
    items = {
        plural: read_list(nodes_from / f"{plural}.json", plural)
        for plural in KINDS
        if plural != "pods" and (nodes_from / f"{plural}.json").is_file()
    }
    workloads: list[dict[str, Any]] = []
    for path in manifest_files(paths):
        for doc in _documents(path):
            plural = _APPLIED.get(doc["kind"])
            if plural is not None:
                items.setdefault(plural, []).append(doc)
            elif templates(doc):
                workloads.append(doc)
    objects = ClusterObjects(name=nodes_from.resolve().name, items=items, origin="plan")
    normalizer = Normalizer(objects)
    inventory = normalizer.inventory(f"k8s manifests {' '.join(map(str, paths))} on nodes of {nodes_from}")
    for doc in workloads:
        for pod_id, pod in _pods(doc):
            node = normalizer.pod(pod, pod_id, state="planned")
            if node is not None:
                inventory.nodes.append(node)
    if not workloads:
        inventory.notes.append("the manifests hold no workload with a pod template (nothing to judge)")
    return inventory
