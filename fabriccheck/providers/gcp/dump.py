"""`fabriccheck gcp --from-dump DIR`: the same facts as a live run, from `gcloud compute ... list --format=json`.

Layouts: a folder of gcloud answers (each file named after its command, e.g. `instances-list.json`), or a
folder of project folders (`DIR/<project id>/`), one per project. The project is the folder's name, else
the one each resource's selfLink names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fabriccheck.errors import FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.model import UNKNOWN_ACCOUNT, fact_key
from fabriccheck.providers.gcp.normalize import CALLS, INSTANCES, PROJECT_ID, GcpCall, Normalizer, project_of
from fabriccheck.resources.gcp import GLOBAL
from fabriccheck.sources.common import Scope, paused_gc, read_json


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
    for call in present:  # CALLS order: policies and networks before the instances that name them
        with paused_gc():
            doc: Any = read_json(folder / call.dump_file)
            if isinstance(doc, list):
                seen |= {p for item in doc if isinstance(item, dict) and (p := project_of(item))}
            normalizer.add(call, doc)
            del doc
    normalizer.finish()
    # gcloud prints every field the API returns, so a dump shows groupPlacementPolicy.maxDistance when set.
    if any(c.fact == "resource_policies" for c in present):
        for account in sorted({project} if project else seen or {UNKNOWN_ACCOUNT}):
            regions = {n.region for n in part.nodes if n.account == account} | {GLOBAL}
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
