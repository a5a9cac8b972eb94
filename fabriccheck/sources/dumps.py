"""What the three clouds' `--from-dump` readers share: the folder layouts, which answers a folder holds or lacks,
and the errors a missing or cut-short answer makes. Each provider declares its layout (a `Layout`) and keeps
only what is its own: how one answer file is read (its `_Answer`) and whose account a folder is.

A dump is a folder of answers, or a folder of scope folders (an AWS account or region, a GCP project, an Azure
subscription), each named after its scope. A folder that is not a scope is an error, never skipped: its
answers would be silently missing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from fabriccheck.errors import FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.model import Provider
from fabriccheck.sources.scope import TRUNCATED, Scope


class DumpCall(Protocol):
    """One call whose answer a dump holds in a file of its own."""

    @property
    def dump_file(self) -> str: ...
    @property
    def fact(self) -> str: ...
    @property
    def required(self) -> bool: ...


C = TypeVar("C", bound=DumpCall)


@dataclass(frozen=True)
class Layout(Generic[C]):
    """How one provider's dump is laid out, and what its answers say when cut short or missing."""

    provider: Provider
    calls: Sequence[C]
    answers: str  # what the files are, for "no ... found": "EC2 answers", "gcloud answers"
    scope_folder: re.Pattern[str]  # the name of an account / project / subscription folder
    not_a_scope: str  # what a folder that is none is not: "is not a project folder (...)"
    scope_folders: str  # for "no ... found": "or project folders holding them"
    page_token: str  # the member that says an answer is one page of more: NextToken, nextPageToken, nextLink
    cut_note: str  # after "so the answer is cut short": where such a file comes from
    remake: Callable[[C, str], str]  # the command that makes a call's file again, for an account
    region_folder: re.Pattern[str] | None = None  # AWS: region folders, at the top or inside account folders
    scope_needs_answers: bool = False  # GCP: a project folder without any answer is no project folder
    lower: bool = False  # Azure: subscription ids are compared in lower case

    def has_answers(self, folder: Path) -> bool:
        return any((folder / c.dump_file).exists() for c in self.calls)

    def present(self, folder: Path) -> tuple[list[C], list[C]]:
        """The calls whose answers the folder holds, in the provider's order, and the required ones it lacks."""
        present = [c for c in self.calls if (folder / c.dump_file).exists()]
        return present, [c for c in self.calls if c.required and c not in present]


@dataclass(frozen=True)
class Folder:
    """A folder of answers, with the account and region its place in the layout names (None: it does not)."""

    path: Path
    account: str | None = None
    region: str | None = None


def subfolders(directory: Path) -> list[Path]:
    """A dump folder's sub-folders, in order; hidden ones (.git, .cache) are not part of a dump."""
    return sorted(p for p in directory.iterdir() if p.is_dir() and not p.name.startswith("."))


def folders(directory: Path, layout: Layout[C]) -> list[Folder]:
    """The folders of answers in a dump: the folder itself, or its scope folders (and region folders)."""
    if not directory.is_dir():
        raise FabricCheckError(f"--from-dump {directory}: not a folder")
    if layout.has_answers(directory):
        return [Folder(directory)]
    found: list[Folder] = []
    for sub in subfolders(directory):
        if layout.region_folder is not None and layout.region_folder.fullmatch(sub.name):
            found.append(Folder(sub, region=sub.name))
        elif layout.scope_folder.fullmatch(sub.name) and (layout.has_answers(sub) or not layout.scope_needs_answers):
            found += _scope_folder(sub, layout)
        else:
            raise _not_a_dump_folder(sub, layout, "")
    if not found:
        expected = ", ".join(c.dump_file for c in layout.calls if c.required)
        raise FabricCheckError(
            f"--from-dump {directory}: no {layout.answers} found (expected files such as {expected}, "
            f"{layout.scope_folders})"
        )
    return found


def _scope_folder(sub: Path, layout: Layout[C]) -> list[Folder]:
    account = sub.name.lower() if layout.lower else sub.name
    if layout.region_folder is None:
        return [Folder(sub, account)]
    found = [Folder(sub, account)] if layout.has_answers(sub) else []
    for region in subfolders(sub):
        if not layout.region_folder.fullmatch(region.name):
            raise _not_a_dump_folder(region, layout, f" inside account folder {sub.name}")
        found.append(Folder(region, account, region.name))
    return found


def _not_a_dump_folder(folder: Path, layout: Layout[C], within: str) -> FabricCheckError:
    return FabricCheckError(f"--from-dump: {folder} {layout.not_a_scope}{within}; move it out of the dump or rename it")


def record_gaps(
    part: Inventory,
    layout: Layout[C],
    folder: Path,
    scopes: Sequence[str],
    region: str | None,
    truncated: Sequence[C],
    missing: Sequence[C],
) -> None:
    """Errors for the answers a folder holds only in part (a page of more) or not at all, for each of its
    accounts: their facts were not collected, so the run is incomplete, never clean."""
    for call in truncated:
        for account in scopes:
            part.errors.append(
                Scope(layout.provider, account, region).error(
                    call.dump_file,
                    TRUNCATED,
                    f"{folder / call.dump_file} ends with a {layout.page_token}, so the answer is cut short"
                    f"{layout.cut_note}; make it again with: {layout.remake(call, account)}",
                )
            )
    for call in missing:
        for account in scopes:
            part.errors.append(
                Scope(layout.provider, account, region).missing_dump(
                    folder / call.dump_file, call.fact.replace("_", " "), layout.remake(call, account)
                )
            )
