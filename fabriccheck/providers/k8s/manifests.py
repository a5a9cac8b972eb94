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
from fabriccheck.providers.k8s.objects import KINDS, ClusterObjects, Normalizer
from fabriccheck.providers.k8s.templates import pods_of, templates

SUFFIXES = (".yaml", ".yml", ".json")
# Objects in the manifests that the judging reads besides pods: applied with them.
_APPLIED = {k.kind: k.plural for k in role.KINDS if not (k.required or k.owner)}


def _documents(path: Path) -> Iterator[dict[str, Any]]:
    """The objects of one file (a List's items one by one); anything but objects is one line naming the file."""
    text = textfiles.read_text(path, stdin=True)
    where = STDIN_NAME if str(path) == "-" else path
    try:
        docs = textfiles.load_yaml_all(text)
    except yaml.YAMLError as exc:
        raise textfiles.yaml_error(where, exc) from None
    for index, doc in enumerate(docs):
        if doc is None:
            continue  # an empty document (`---` at the end, a Helm template that renders nothing)
        items = doc.get("items") if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") else None
        for number, item in enumerate(items if isinstance(items, list) else [doc]):
            if not isinstance(item, dict) or not isinstance(item.get("kind"), str):
                which = f"document {index + 1}" + (f", item {number + 1}" if isinstance(items, list) else "")
                raise FabricCheckError(f"{where}: {which} is not a Kubernetes object (no kind)")
            yield item


def manifest_files(paths: list[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if str(path) == "-":  # standard input: `helm template ... | fabriccheck k8s --manifests - --nodes-from DIR`
            found.append(path)
        elif path.is_dir():
            found += sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
        elif path.is_file():
            found.append(path)
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
    for doc in workloads:
        if doc["kind"] == "MPIJob":  # its launcher's mpirun -x reaches the workers' ranks
            meta = doc.get("metadata") or {}
            normalizer.launchers.add(str(meta.get("namespace") or "default"), str(meta.get("name") or ""), doc)
    inventory = normalizer.inventory(f"k8s manifests {' '.join(map(str, paths))} on nodes of {nodes_from}")
    for doc in workloads:
        for pod_id, pod in pods_of(doc):
            node = normalizer.pod(pod, pod_id, state="planned")
            if node is not None:
                inventory.nodes.append(node)
    inventory.nodes, grouped = bare_pods.grouped(inventory.nodes)
    later = normalizer.notes + normalizer.config_maps.notes(objects.name)
    inventory.notes += grouped + [n for n in later if n not in inventory.notes]
    if not workloads:
        inventory.notes.append("the manifests hold no workload with a pod template (nothing to judge)")
    return inventory
