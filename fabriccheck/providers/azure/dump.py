"""`fabriccheck azure --from-dump DIR`: the same facts as a live run, from `az ... -o json` files.

Each file is named after its command (`az vm list -o json` > vm-list.json; normalize.CALLS lists them all).
Layouts: a folder of answers, or one folder per subscription named after its id (`DIR/<subscription id>/`).
The subscription of a flat folder is the one its resources' ids name.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

from fabriccheck.errors import DumpShapeError, FabricCheckError
from fabriccheck.gcpause import paused_gc
from fabriccheck.inventory import Inventory
from fabriccheck.jsonfiles import reading
from fabriccheck.model import UNKNOWN_ACCOUNT
from fabriccheck.providers.azure.kinds import what_the_document_is
from fabriccheck.providers.azure.normalize import CALLS, PROJECTIONS, ArmCall, Normalizer
from fabriccheck.sources import dumps, projected
from fabriccheck.sources.stream import walk

SUBSCRIPTION_ID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


LAYOUT: dumps.Layout[ArmCall] = dumps.Layout(
    provider="azure",
    calls=CALLS,
    answers="Azure answers",
    scope_folder=SUBSCRIPTION_ID,
    not_a_scope="is not a subscription folder (named after the subscription id, e.g. "
    "00000000-0000-0000-0000-000000000000)",
    scope_folders="or subscription folders holding them",
    page_token="nextLink",
    cut_note="",
    remake=lambda call, _account: f"{call.command} -o json",
    lower=True,
)


def load_dump(directory: Path, subscriptions: list[str] | None = None) -> Inventory:
    """Every subscription of the dump, or only `subscriptions` (an unknown one is an error)."""
    inventory = Inventory(source=f"azure dump {directory}")
    folders = [(f.path, f.account) for f in dumps.folders(directory, LAYOUT)]
    wanted = {s.lower() for s in subscriptions or ()}
    parts = [_load_folder(folder, subscription) for folder, subscription in folders]
    if wanted:
        present = {n.account for p in parts for n in [*p.nodes, *p.specs]} | {s for _, s in folders if s is not None}
        unknown = sorted(wanted - present)
        if unknown:
            raise FabricCheckError(
                f"--subscription {unknown[0]}: not in the dump {directory} "
                f"(it holds {', '.join(sorted(present)) or 'no subscription'})"
            )
    for part in parts:
        if wanted:
            part = _only(part, wanted)
        inventory.merge(part)
    return inventory


def _only(part: Inventory, wanted: set[str]) -> Inventory:
    data = part.model_dump()
    data["nodes"] = [n for n in data["nodes"] if n["account"] in wanted]
    data["specs"] = [n for n in data["specs"] if n["account"] in wanted]
    data["collected"] = [c for c in data["collected"] if c.split(":")[1] in wanted]
    data["errors"] = [e for e in data["errors"] if e["account"] in wanted]
    return Inventory.model_validate(data)


def _load_folder(folder: Path, subscription: str | None) -> Inventory:
    part = Inventory()
    present, missing = LAYOUT.present(folder)

    def where(call: ArmCall) -> str:
        return str(folder / call.dump_file)

    normalizer = Normalizer(part, subscription, where)
    truncated: list[ArmCall] = []
    # Each file parsed with the fields read (a projection), else read as a stream, one item at a time.
    for call in present:
        answer = _Answer(folder / call.dump_file, PROJECTIONS.get(call), call.command)
        with paused_gc(), reading(answer.path):  # an error while reading this file names it
            flat = answer.projected()
            accounts = normalizer.add_items(call, flat if flat is not None else answer.items())
        if answer.rest.get("nextLink"):
            truncated.append(call)
        else:
            normalizer.record(call, accounts)
    normalizer.finish()
    scopes = [subscription] if subscription else sorted({n.account for n in part.nodes}) or [UNKNOWN_ACCOUNT]
    dumps.record_gaps(part, LAYOUT, folder, scopes, None, truncated, missing)
    return part


class _Answer:
    """One `az ... -o json` file read as a stream: a list of resources, or an ARM page (`{"value": [...]}`)
    whose other members (`rest`: a nextLink) are kept."""

    def __init__(self, path: Path, fields: Any = None, command: str = "") -> None:
        self.path = path
        self.fields = fields  # the projection the normalizer needs of each item (sources/projected.py)
        self.command = command  # what makes the file, for the line that says it holds something else
        self.rest: dict[str, Any] = {}
        self.listed = False  # the document is a list, or holds one under "value"

    def _descend(self, at: tuple[str | int, ...], opener: str) -> bool:
        if (at == () and opener == "[") or (at == ("value",) and opener == "["):
            self.listed = True
            return True
        return at == () and opener == "{"

    def projected(self) -> list[tuple[str, dict[str, Any]]] | None:
        """az's list, read with the fields the normalizer uses only (`fields`), or None for anything else (an
        ARM page, a file msgspec does not read as that): then `items`."""
        flat = projected.read(self.path, self.fields) if self.fields is not None else None
        if flat is None:
            return None
        self.listed = True
        return [(f"[{position}]", item) for position, item in enumerate(flat)]

    def items(self) -> Iterator[tuple[str, dict[str, Any]]]:
        where = str(self.path)
        for at, value in walk(self.path, self._descend):
            index = at[-1] if at and isinstance(at[-1], int) else None
            if index is None:
                if not at:  # a scalar document
                    self._holds(f"a JSON {type(value).__name__}")
                if at == ("value",):
                    self._holds(f"an object whose value is a JSON {type(value).__name__}, not a list")
                self.rest[str(at[0])] = value
                continue
            if not isinstance(value, dict):
                raise DumpShapeError(where, f"[{index}]", "an object")
            yield f"[{index}]", value
        if not self.listed:  # an object without a value list: a file without its list is no empty list
            self._holds(what_the_document_is(list(self.rest)))

    def _holds(self, what: str) -> NoReturn:
        raise FabricCheckError(
            f"{self.path}: holds {what}, not what {self.command} -o json prints (a list, or an ARM page with a "
            "value list); make it again with that command"
        )
