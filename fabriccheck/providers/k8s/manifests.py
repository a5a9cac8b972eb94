"""Manifests judged before apply: YAML or JSON files or folders, multi-document, Helm-rendered (`helm template`),
against the nodes of a dump folder (`--nodes-from DIR`, holding nodes.json). The pod template of every workload
kind is judged as the pods it would create, as many as its replicas say; DaemonSets, Networks and
GKENetworkParamSets in the manifests count as applied with them (templates.py: where each kind keeps its pod
templates).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from fabriccheck import textfiles
from fabriccheck.errors import STDIN_NAME, FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.providers.k8s import bare_pods, role
from fabriccheck.providers.k8s.dump import read_list
from fabriccheck.providers.k8s.objects import KINDS, ClusterObjects, Normalizer, read_shape
from fabriccheck.providers.k8s.templates import RUNTIME_KINDS, BadField, Runtimes, pods_of, runtime_of, templates
from fabriccheck.sources.scope import Scope

SUFFIXES = (".yaml", ".yml", ".json")
# Objects in the manifests that the judging reads besides pods: applied with them.
_APPLIED = {k.kind: k.plural for k in role.KINDS if not (k.required or k.owner)}
# Kinds that create pods (templates.py): one without a pod template is cut short, not a plan with nothing to judge.
_WORKLOADS = frozenset({"Pod", "CronJob", *(k.kind for k in role.KINDS if k.owner)})
# The API groups of those kinds, and every kind of theirs that creates no pod of its own: any other kind there (a
# PaddleJob, a misspelt PyTorchJob) creates pods that are not judged, and the run says so (incomplete).
_WORKLOAD_GROUPS = frozenset({"apps", "batch", *(k.group for k in role.KINDS if k.owner)})
_NO_PODS = frozenset({"DaemonSet", "ControllerRevision", *RUNTIME_KINDS})


def _documents(path: Path, named: bool) -> Iterator[tuple[str, dict[str, Any]]]:
    """The objects of one file (a List's items one by one), each with where it is; anything but objects is one line
    naming the file. A file named on the command line (or standard input) that holds none is one line too: an empty
    `helm template` output is a failed render, not a plan with nothing to judge."""
    text = textfiles.read_text(path, stdin=True)
    where = STDIN_NAME if str(path) == "-" else path
    try:
        docs = textfiles.load_yaml_all(text)
    except yaml.YAMLError as exc:
        raise textfiles.yaml_error(where, exc) from None
    read = 0
    for index, doc in enumerate(docs):
        if doc is None:
            continue  # an empty document (`---` at the end, a Helm template that renders nothing)
        items = doc.get("items") if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") else None
        for number, item in enumerate(items if isinstance(items, list) else [doc]):
            which = f"document {index + 1}" + (f", item {number + 1}" if isinstance(items, list) else "")
            if not isinstance(item, dict) or not isinstance(item.get("kind"), str):
                raise FabricCheckError(f"{where}: {which} is not a Kubernetes object (no kind)")
            read += 1
            yield f"{where}: {which}", item
    if named and not read:
        raise FabricCheckError(f"--manifests {where}: nothing read (no Kubernetes object in it): nothing to judge")


def manifest_files(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if str(path) == "-":  # standard input: `helm template ... | fabriccheck k8s --manifests - --nodes-from DIR`
            found.append(path)
        elif path.is_dir():
            found += sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
        elif path.is_file():
            found.append(path)
        elif path.exists():  # /dev/null reads as nothing, a FIFO may never end: neither is a manifest file
            raise FabricCheckError(f"--manifests {path}: not a file or folder: nothing read")
        else:
            raise FabricCheckError(f"--manifests {path}: no such file or folder")
    if not found:
        raise FabricCheckError(f"--manifests {' '.join(map(str, paths))}: no .yaml, .yml or .json file")
    return found


def load_manifests(paths: list[Path], nodes_from: Path) -> Inventory:
    """The pods the manifests would create, judged against the nodes (and DaemonSets, networks) of `nodes_from`."""
    if not (nodes_from / "nodes.json").is_file():
        raise FabricCheckError(f"--nodes-from {nodes_from}: no nodes.json (kubectl get nodes -A -o json > nodes.json)")
    items = {
        plural: read_list(nodes_from / f"{plural}.json", plural)
        for plural in KINDS
        if plural != "pods" and (nodes_from / f"{plural}.json").is_file()
    }
    named = {str(p) for p in paths}
    documents = [found for path in manifest_files(paths) for found in _documents(path, str(path) in named)]
    if not documents:
        raise FabricCheckError(f"--manifests {' '.join(map(str, paths))}: nothing read (no Kubernetes object in them)")
    # The TrainingRuntimes a TrainJob may name, wherever they are in the manifests (templates.runtime_of).
    runtimes = {(d["kind"], _name(d)): d for _, d in documents if d["kind"] in RUNTIME_KINDS}
    workloads: list[tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]] = []
    unread: list[str] = []
    notes: list[str] = []
    for which, doc in documents:
        plural = _APPLIED.get(doc["kind"])
        if plural is not None:
            items.setdefault(plural, []).append(doc)
        elif (pods := _pods(which, doc, runtimes)) is not None:
            workloads.append((doc, pods))
            notes += _runtime_note(which, doc, runtimes)
        elif _unknown_workload(doc):
            unread.append(f"{which}: {doc.get('apiVersion')} {doc['kind']} is a kind fabriccheck does not read")
    objects = ClusterObjects(name=nodes_from.resolve().name, items=items, origin="plan")
    normalizer = Normalizer(objects)
    for doc, _ in workloads:
        if doc["kind"] == "MPIJob":  # its launcher's mpirun -x reaches the workers' ranks
            meta = doc.get("metadata") or {}
            normalizer.launchers.add(str(meta.get("namespace") or "default"), str(meta.get("name") or ""), doc)
    inventory = normalizer.inventory(f"k8s manifests {' '.join(map(str, paths))} on nodes of {nodes_from}")
    for doc, pods in workloads:
        with read_shape(f"--manifests: {doc['kind']} {pods[0][0] if pods else ''}"):
            for pod_id, pod in pods:
                node = normalizer.pod(pod, pod_id, state="planned")
                if node is not None:
                    inventory.nodes.append(node)
    inventory.nodes, grouped = bare_pods.grouped(inventory.nodes)
    later = normalizer.notes + normalizer.config_maps.notes(objects.name)
    inventory.notes += grouped + [n for n in later if n not in inventory.notes]
    scope = Scope("k8s", objects.name, normalizer.region)
    inventory.errors += [
        scope.error("read manifests", "UnknownKind", f"{why}: its pods were not judged") for why in unread
    ]
    inventory.notes += notes
    if not workloads:
        inventory.notes.append("the manifests hold no workload with a pod template (nothing to judge)")
    return inventory


def _pods(which: str, doc: dict[str, Any], runtimes: Runtimes) -> list[tuple[str, dict[str, Any]]] | None:
    """The pods a workload would create (None: not a workload); a field the API would refuse is one line naming the
    file, the document, the object and the field."""
    try:
        found = templates(doc, runtimes)
        if not found and doc["kind"] in _WORKLOADS:  # a workload the API would refuse: nothing to create pods from
            raise BadField("spec", f"no pod template (a {doc['kind']} has one: is the manifest cut short?)")
        return list(pods_of(doc, runtimes=runtimes)) if found else None
    except BadField as exc:
        raise FabricCheckError(f"{which} ({doc['kind']} {_name(doc) or 'unnamed'}): {exc}") from None


def _name(doc: dict[str, Any]) -> str:
    meta = doc.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else ""


def _runtime_note(which: str, doc: dict[str, Any], runtimes: Runtimes) -> list[str]:
    """What a TrainJob whose runtime is not in the manifests is judged on, in words."""
    if doc["kind"] != "TrainJob":
        return []
    kind, name, runtime = runtime_of(doc.get("spec") or {}, runtimes)
    if runtime is not None:
        return []
    return [
        f"{which}: TrainJob {_name(doc)} names {kind} {name or '(none)'}, not in the manifests: judged on its "
        "spec.trainer alone (the runtime's pod template, its node selector and network annotations, not known)"
    ]


def _unknown_workload(doc: dict[str, Any]) -> bool:
    """A kind of a workload API group (batch, kubeflow.org, ray.io ...) that is neither judged nor known to create
    no pods."""
    group = str(doc.get("apiVersion") or "").rpartition("/")[0]
    return group in _WORKLOAD_GROUPS and doc["kind"] not in _WORKLOADS | _NO_PODS
