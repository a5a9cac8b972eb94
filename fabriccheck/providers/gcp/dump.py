"""`fabriccheck gcp --from-dump DIR`: the same facts as a live run, from `gcloud compute ... list --format=json`.

Layouts: a folder of gcloud answers (each file named after its command, e.g. `instances-list.json`), or a
folder of project folders (`DIR/<project id>/`), one per project. The project is the folder's name, else
the one each resource's selfLink names.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fabriccheck.compact import Compactor, compacting
from fabriccheck.errors import FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.model import UNKNOWN_ACCOUNT, fact_key
from fabriccheck.providers.gcp.normalize import (
    CALLS,
    INSTANCES,
    PROJECT_ID,
    GcpCall,
    InstanceRead,
    Normalizer,
    project_of,
)
from fabriccheck.resources.gcp import GLOBAL
from fabriccheck.sources import projected
from fabriccheck.sources.common import Scope, Shape, paused_gc
from fabriccheck.sources.stream import walk


def _has_answers(folder: Path) -> bool:
    return any((folder / c.dump_file).exists() for c in CALLS)


def dump_folders(directory: Path) -> list[tuple[Path, str | None]]:
    """(folder of answers, its project if the layout says). A folder that is not a project is an error, never
    skipped: its answers would be silently missing."""
    if not directory.is_dir():
        raise FabricCheckError(f"--from-dump {directory}: not a folder")
    if _has_answers(directory):
        return [(directory, None)]
    found: list[tuple[Path, str | None]] = []
    for sub in sorted(p for p in directory.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if not PROJECT_ID.fullmatch(sub.name) or not _has_answers(sub):
            raise FabricCheckError(
                f"--from-dump: {sub} is not a project folder (a project id holding files such as "
                f"{INSTANCES.dump_file}); move it out of the dump or rename it"
            )
        found.append((sub, sub.name))
    if not found:
        expected = ", ".join(c.dump_file for c in CALLS)
        raise FabricCheckError(
            f"--from-dump {directory}: no gcloud answers found (expected files such as {expected}, "
            "or project folders holding them)"
        )
    return found


_SCOPE = operator.attrgetter("account", "region")


def load_dump(directory: Path) -> Inventory:
    inventory = Inventory(source=f"gcp dump {directory}")
    for folder, project in dump_folders(directory):
        inventory.merge(_load_folder(folder, project))
    return inventory


def _load_folder(folder: Path, project: str | None) -> Inventory:
    part = Inventory()
    present = [c for c in CALLS if (folder / c.dump_file).exists()]
    missing = [c for c in CALLS if c.required and c not in present]

    def where(call: GcpCall) -> str:
        return str(folder / call.dump_file)

    normalizer = Normalizer(part, project, where)
    seen: set[str] = set()
    # CALLS order: policies and networks before the instances that name them. Each file is read as a stream,
    # one resource at a time, and each node compacted as it is made (see aws/dump.py).
    for call in present:
        answer = _Answer(folder / call.dump_file, call)
        with paused_gc():
            flat = answer.projected()
            if flat is not None:  # parsed whole with the fields read, each of the API's type: pools share
                made = len(part.nodes)
                normalizer.named.clear()
                try:
                    normalizer.record(call, normalizer.add_items(call, flat, typed=True))
                except projected.Misread:  # a value left unparsed is of another type: the file is read in full
                    del part.nodes[made:]
                    flat = None
                else:
                    Compactor().nodes(part.nodes, made)
                    answer.projects |= normalizer.named  # the projects this list's items named
            if flat is None:
                normalizer.record(call, normalizer.add_items(call, compacting(answer.items(), part.nodes)))
        seen |= answer.projects
    normalizer.finish()
    # gcloud prints every field the API returns, so a dump shows groupPlacementPolicy.maxDistance when set.
    if any(c.fact == "resource_policies" for c in present):
        scopes_seen = set(map(_SCOPE, part.nodes))  # (project, region) pairs, found in C
        for account in sorted({project} if project else seen or {UNKNOWN_ACCOUNT}):
            regions = {region for owner, region in scopes_seen if owner == account} | {GLOBAL}
            part.collected += [fact_key("gcp", account, r, "max_distance") for r in sorted(regions)]
    scopes = [project] if project else sorted(seen) or [UNKNOWN_ACCOUNT]
    for call in missing:
        for account in scopes:
            part.errors.append(
                Scope("gcp", account, None).missing_dump(
                    folder / call.dump_file,
                    call.fact.replace("_", " "),
                    f"{call.command.replace('PROJECT', account)} > {call.dump_file}",
                )
            )
    return part


class _Answer:
    """One `gcloud compute ... list --format=json` file read as a stream: gcloud's flat list, an API list
    (`{"items": [...]}`) or an API aggregated list (`{"items": {"zones/us-central1-a": {"instances": [...]}}}`),
    as normalize.items_of reads them whole. `projects`: those the items of a flat list name."""

    def __init__(self, path: Path, call: GcpCall) -> None:
        self.path = path
        self.call = call
        self.projects: set[str] = set()
        self.top = ""  # "[" or "{": what the document is

    def _descend(self, at: tuple[str | int, ...], opener: str) -> bool:
        if at == ():
            self.top = opener
            return True
        if at[0] != "items" or self.top != "{":
            return False
        # items: its list, or its scopes; a scope's object, and its list of this call's resources.
        return (
            len(at) == 1
            or (len(at) == 2 and opener == "{")
            or (len(at) == 3 and at[2] == self.call.resource and opener == "[")
        )

    def projected(self) -> list[tuple[str, dict[str, Any]]] | None:
        """gcloud's flat list of instances, read with the fields the normalizer uses only (InstanceRead), or
        None for anything else (an API answer, a file msgspec does not read as that): then `items`."""
        # Instances with the fields read only; the other lists (policies, networks, subnetworks, firewalls) are
        # small and read whole, faster than a stream.
        flat = projected.read(self.path, InstanceRead if self.call is INSTANCES else dict[str, Any])
        if flat is None:
            return None
        self.top = "["
        return list(zip(map("[{}]".format, range(len(flat))), flat, strict=True))  # each item with its path, for errors

    def items(self) -> Iterator[tuple[str, dict[str, Any]]]:
        shape = Shape(str(self.path))
        resource = self.call.resource
        for at, value in walk(self.path, self._descend):
            if self.top == "[" and len(at) == 1:
                path = f"[{at[0]}]"
                item = shape.obj(value, path)
                if project := project_of(item):
                    self.projects.add(project)
                yield path, item
            elif not at or self.top != "{":
                raise FabricCheckError(f"{shape.where}: expected a JSON list of {resource} (gcloud --format=json)")
            elif at[0] != "items":
                continue  # kind, selfLink, nextPageToken ...
            elif len(at) == 1:  # items that is neither a list nor an object of scopes
                shape.items({"items": value}, "items", "")
            elif isinstance(at[1], int):
                yield f"[{at[1]}]", shape.obj(value, f"[{at[1]}]")
            elif len(at) == 2:  # a scope that is not an object
                shape.items(value, resource, f"items.{at[1]}")
            elif at[2] != resource:
                continue  # a scope's warning, or another kind of resource
            elif len(at) == 3:  # the scope's resources are not a list
                shape.items({resource: value}, resource, f"items.{at[1]}")
            else:
                path = f"items.{at[1]}.{resource}[{at[3]}]"
                yield path, shape.obj(value, path)
