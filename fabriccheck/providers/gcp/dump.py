"""`fabriccheck gcp --from-dump DIR`: the same facts as a live run, from `gcloud compute ... list --format=json`.

Layouts: a folder of gcloud answers (each file named after its command, e.g. `instances-list.json`), or a
folder of project folders (`DIR/<project id>/`), one per project. The project is the folder's name (or, for a flat
folder, --project), else the one each resource's selfLink names. Each file is gcloud's flat list or a Compute API
list page (listing.py says what a file holds); a page that ends with a nextPageToken is cut short: what it holds is
read, but its fact does not count as collected (exit 2), as an AWS answer with a NextToken.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fabriccheck.errors import FabricCheckError
from fabriccheck.gcpause import paused_gc
from fabriccheck.inventory import Inventory
from fabriccheck.jsonfiles import reading
from fabriccheck.model import UNKNOWN_ACCOUNT, fact_key
from fabriccheck.providers.gcp import effective, listing
from fabriccheck.providers.gcp.listing import CALLS, INSTANCES, GcpCall
from fabriccheck.providers.gcp.normalize import PROJECT_ID, InstanceFields, Normalizer, project_of
from fabriccheck.resources.gcp import GLOBAL
from fabriccheck.sources import dumps, projected
from fabriccheck.sources.shape import Shape
from fabriccheck.sources.stream import walk

LAYOUT: dumps.Layout[GcpCall] = dumps.Layout(
    provider="gcp",
    calls=CALLS,
    answers="gcloud answers",
    scope_folder=PROJECT_ID,
    not_a_scope=f"is not a project folder (a project id holding files such as {INSTANCES.dump_file})",
    scope_folders="or project folders holding them",
    page_token="nextPageToken",
    cut_note=" (an API page, not the whole list)",
    remake=lambda call, account: f"{call.command.replace('PROJECT', account)} > {call.dump_file}",
    scope_needs_answers=True,
)


def load_dump(directory: Path, project: str | None = None) -> Inventory:
    """Every project folder of `directory`; `project` (--project) names the project of a flat folder, whose files
    may not say it (a list with no resource names no project)."""
    inventory = Inventory(source=f"gcp dump {directory}")
    folders = dumps.folders(directory, LAYOUT)
    if project is not None and folders[0].account is not None:
        raise FabricCheckError(
            f"--project {project}: {directory} holds project folders, each named for its project; --project names "
            "the project of a flat folder of gcloud answers"
        )
    if project is not None and not PROJECT_ID.fullmatch(project):
        raise FabricCheckError(f"--project {project}: not a Google Cloud project id")
    for folder in folders:
        inventory.merge(_load_folder(folder.path, folder.account or project))
    return inventory


def _load_folder(folder: Path, project: str | None) -> Inventory:
    part = Inventory()
    present, missing = LAYOUT.present(folder)

    def where(call: GcpCall) -> str:
        return str(folder / call.dump_file)

    normalizer = Normalizer(part, project, where)
    seen: set[str] = set()
    read: list[tuple[GcpCall, set[str]]] = []  # answers read in full, each with the projects its items name
    truncated: list[GcpCall] = []
    # CALLS order: policies and networks before the instances that name them. Each file is parsed with the fields
    # read (a projection), else read as a stream, one resource at a time.
    for call in present:
        answer = _Answer(folder / call.dump_file, call)
        with paused_gc(), reading(answer.path):  # an error while reading this file names it
            projects = _read(normalizer, answer, part)
        seen |= projects | answer.projects
        if answer.rest.get("nextPageToken"):
            truncated.append(call)  # the rest of the answer is not in the file: read, but not collected
        else:
            read.append((call, projects))
    # A folder holds one project's answers: an answer with no resource (a project without placement policies)
    # is complete for that project, named by the folder, --project, or the one project the other files name.
    owners = {project} if project else seen
    for call, projects in read:
        normalizer.record(call, projects or (owners if len(owners) == 1 else set()))
    normalizer.finish()
    # gcloud prints every field the API returns, so a dump shows groupPlacementPolicy.maxDistance when set.
    if any(c.fact == "resource_policies" for c, _ in read):
        scopes_seen = {(n.account, n.region) for n in part.nodes}  # (project, region) pairs
        for account in sorted(owners or {UNKNOWN_ACCOUNT}):
            regions = {region for owner, region in scopes_seen if owner == account} | {GLOBAL}
            part.collected += [fact_key("gcp", account, r, "max_distance") for r in sorted(regions)]
    _effective(folder, part, owners)
    dumps.record_gaps(part, LAYOUT, folder, sorted(owners) or [UNKNOWN_ACCOUNT], None, truncated, missing)
    return part


def _effective(folder: Path, part: Inventory, owners: set[str]) -> None:
    """The effective firewall policies of the GPU networks (optional; effective.py). The file speaks for every
    region the folder's nodes are in: a GPU network it leaves out there is not judged, named."""
    path = folder / effective.DUMP_FILE
    if not path.exists():
        return
    with reading(path):
        found = effective.load_dump(path, next(iter(owners)) if len(owners) == 1 else None)
    effective.record(part, found)
    for account, region in sorted({(n.account, n.region) for n in part.nodes if n.account in owners}):
        part.collected.append(fact_key("gcp", account, region, effective.FACT))


def _read(normalizer: Normalizer, answer: _Answer, part: Inventory) -> set[str]:
    """One file's resources into the inventory; the projects they belong to."""
    call = answer.call
    flat = answer.projected()
    if flat is not None:  # parsed whole with the fields read
        normalizer.named.clear()
        projects = normalizer.add_items(call, flat)
        answer.projects |= normalizer.named  # the projects this list's items named
        return projects
    return normalizer.add_items(call, answer.items())


class _Answer:
    """One `gcloud compute ... list --format=json` file read as a stream: gcloud's flat list, an API list page
    (`{"kind": ..., "items": [...], "nextPageToken"?}`) or an API aggregated list (`{"items": {"zones/us-central1-a":
    {"instances": [...]}}}`), as listing.items_of reads them whole. `projects`: those the items of a flat list name;
    `rest`: the page's members beside its items (kind, nextPageToken)."""

    def __init__(self, path: Path, call: GcpCall) -> None:
        self.path = path
        self.call = call
        self.projects: set[str] = set()
        self.rest: dict[str, Any] = {}
        self.top = ""  # "[" or "{": what the document is
        self.items_opener = ""  # "[" or "{": the page's items are a list, or an object of scopes
        self.scopes = 0

    def _descend(self, at: tuple[str | int, ...], opener: str) -> bool:
        if at == ():
            self.top = opener
            return True
        if at[0] != "items" or self.top != "{":
            return False
        if len(at) == 1:
            self.items_opener = opener
            return True
        # items: its list, whose resources are read whole, or its scopes; a scope's object, and its list of this
        # call's resources.
        if len(at) == 2:
            if isinstance(at[1], int) or opener != "{":
                return False
            self.scopes += 1
            return True
        return len(at) == 3 and at[2] == self.call.resource and opener == "["

    def projected(self) -> list[tuple[str, dict[str, Any]]] | None:
        """gcloud's flat list of instances, read with the fields the normalizer uses only (InstanceFields), or
        None for anything else (an API answer, a file msgspec does not read as that, resources that do not say
        their kind): then `items`."""
        # Instances with the fields read only; the other lists (policies, networks, subnetworks, firewalls) are
        # small and read whole, faster than a stream.
        flat = projected.read(self.path, InstanceFields if self.call is INSTANCES else dict[str, Any])
        if flat is None:
            return None
        kinds = {kind if isinstance(kind := item.get("kind"), str) else None for item in flat}
        if None in kinds:
            return None  # gcloud prints every resource's kind as a string: read in full, where its other keys tell
        if kinds != {listing.item_kind(self.call)}:
            for i, item in enumerate(flat):
                listing.checked(str(self.path), f"[{i}]", item, self.call)  # names the first of another kind
        self.top = "["
        return list(zip(map("[{}]".format, range(len(flat))), flat, strict=True))  # each item with its path, for errors

    def items(self) -> Iterator[tuple[str, dict[str, Any]]]:
        shape = Shape(str(self.path))
        resource = self.call.resource
        for at, value in walk(self.path, self._descend):
            if self.top == "[" and len(at) == 1:
                path = f"[{at[0]}]"
                item = listing.checked(shape.where, path, shape.obj(value, path), self.call)
                if project := project_of(item):
                    self.projects.add(project)
                yield path, item
            elif not at or self.top != "{":
                raise FabricCheckError(f"{shape.where}: expected a JSON list of {resource} (gcloud --format=json)")
            elif at[0] != "items":
                self.rest[str(at[0])] = value  # kind, selfLink, nextPageToken ...
                if at[0] == "kind" and (holds := listing.foreign_page({"kind": value}, self.call)):
                    raise listing.not_a_list(shape.where, self.call, holds)
            elif len(at) == 1:  # items that is neither a list nor an object of scopes
                shape.items({"items": value}, "items", "")
            elif isinstance(at[1], int):
                path = f"[{at[1]}]"
                yield path, listing.checked(shape.where, path, shape.obj(value, path), self.call)
            elif len(at) == 2:  # a scope that is not an object
                shape.items(value, resource, f"items.{at[1]}")
            elif at[2] != resource:
                continue  # a scope's warning, or another kind of resource
            elif len(at) == 3:  # the scope's resources are not a list
                shape.items({resource: value}, resource, f"items.{at[1]}")
            else:
                path = f"items.{at[1]}.{resource}[{at[3]}]"
                yield path, listing.checked(shape.where, path, shape.obj(value, path), self.call)
        if self.top == "{":
            self._check_page(shape.where)

    def _check_page(self, where: str) -> None:
        """An object that is no list of this call's resources is an error naming what it holds."""
        seen = {**self.rest, **({"items": None} if self.items_opener else {})}
        holds = listing.foreign_page(seen, self.call)
        aggregated = self.rest.get("kind") == listing.page_kinds(self.call)[1]
        if holds is None and self.items_opener == "{" and not self.scopes and not aggregated:
            holds = "an items object without scopes or kind"
        if holds is not None:
            raise listing.not_a_list(where, self.call, holds)
