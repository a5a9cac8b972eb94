"""A dump of `kubectl get KIND -A -o json` files, one per kind, named after the plural resource (nodes.json,
pods.json, daemonsets.json, jobsets.json, networks.json ...): one folder per cluster, or one sub-folder per cluster
(named after it). nodes.json and pods.json are required; a missing optional kind leaves unknown only the facts
that need it. Each file is a v1 List (kind: List, or the typed NodeList / PodList the API answers with)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fabriccheck.errors import FabricCheckError
from fabriccheck.gcpause import paused_gc
from fabriccheck.inventory import Inventory
from fabriccheck.jsonfiles import read_json
from fabriccheck.providers.k8s.objects import KINDS, REQUIRED, ClusterObjects, Normalizer
from fabriccheck.sources.dumps import subfolders

LOOP = (
    "for k in nodes pods daemonsets jobs jobsets resourceclaims resourceclaimtemplates; do "
    "kubectl get $k -A -o json > $k.json; done"
)


class NotAList(ValueError):
    """An answer or file that is not the List of the kind asked for: what it is instead, in words."""


def list_items(doc: Any, plural: str) -> list[dict[str, Any]]:
    """The items of one List answer (a `kubectl get PLURAL -o json` file, or the API's answer to a list call), each
    of the kind asked for. The one check both readers share: anything else (`{}`, a JSON array, `items` as an
    object, a failure Status under 200, objects of another kind) is NotAList, never an empty cluster."""
    kind = KINDS[plural]
    if isinstance(doc, dict) and doc.get("kind") == "Status":
        # A Status is what the API answers a failed call with (metav1.Status: status, reason, message, code).
        said = " ".join(_word(doc.get(k)) for k in ("status", "reason", "code") if doc.get(k) not in (None, ""))
        raise NotAList(f"a Status ({said or 'no status'}), not a List of {kind}")
    if not isinstance(doc, dict) or not isinstance(doc.get("items"), list):
        raise NotAList("no items list")
    listed = _word(doc.get("kind") or "List")
    if listed not in ("List", f"{kind}List"):  # kubectl's List, or the typed list the API answers with
        raise NotAList(f"a {listed}, not a List of {kind}")
    items: list[dict[str, Any]] = doc["items"]
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise NotAList(f"items[{index}] is not an object")
        found = item.get("kind")
        if found is not None and found != kind:
            raise NotAList(f"items[{index}] is a {_word(found)}, not a {kind}")
        if not isinstance(item.get("metadata", {}), dict):
            raise NotAList(f"items[{index}].metadata is not an object")
    return items


def _word(value: Any) -> str:
    """A value an answer names something by, shown short: a string or number as it is, anything else by its type
    (a list 1,000 deep has no printable repr)."""
    if isinstance(value, str | int | float):
        return str(value)[:60]
    return f"({type(value).__name__})"


def read_list(path: Path, plural: str) -> list[dict[str, Any]]:
    """The items of one kubectl List file, each of the kind its name says; anything else is one line naming it."""
    doc = read_json(path, dump_file=True)
    try:
        return list_items(doc, plural)
    except NotAList as exc:
        how = f"kubectl get {plural} -A -o json"
        if str(exc) == "no items list":
            raise FabricCheckError(f"{path}: not the output of {how} (no items list)") from None
        raise FabricCheckError(f"{path}: {exc} ({how})") from None


def cluster_folders(directory: Path) -> list[Path]:
    """The folders of a dump that hold one cluster each: the dump itself, or its sub-folders."""
    if not directory.is_dir():
        raise FabricCheckError(f"--from-dump {directory}: not a folder")
    if any((directory / f"{plural}.json").exists() for plural in REQUIRED):
        return [directory]
    subs = subfolders(directory)
    if not subs:
        raise FabricCheckError(f"--from-dump {directory}: no nodes.json or pods.json (make them with: {LOOP})")
    return subs


def read_cluster(folder: Path) -> ClusterObjects:
    """One cluster's files; nodes.json and pods.json must be there."""
    for plural in REQUIRED:
        if not (folder / f"{plural}.json").is_file():
            raise FabricCheckError(
                f"--from-dump {folder}: no {plural}.json (kubectl get {plural} -A -o json > {plural}.json)"
            )
    items = {
        plural: read_list(folder / f"{plural}.json", plural)
        for plural in KINDS
        if (folder / f"{plural}.json").is_file()
    }
    return ClusterObjects(name=folder.resolve().name, items=items)


def load_dump(directory: Path, scope: object = None) -> Inventory:
    """Every cluster of the dump; `scope` (unused) keeps the signature the cloud dumps share."""
    inventory = Inventory(source=f"k8s dump {directory}")
    for folder in cluster_folders(directory):
        # Parsing and normalizing build a great many small objects: the cyclic collector would rescan the parsed
        # files again and again (gcpause.paused_gc).
        with paused_gc():
            part = Normalizer(read_cluster(folder)).inventory(f"k8s dump {folder}")
        inventory.merge(part)
    return inventory
