"""`fabriccheck aws --from-dump DIR`: the same facts as a live run, from `aws ec2 describe-* --output json` files.

Layouts: a folder of CLI answers; a folder of region-named folders; a folder of account folders
(`DIR/<12-digit account>/`) each holding answers or region folders. The account is the folder's name, else the
one account the instances name (OwnerId); a file that holds several accounts files each item under its owner.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fabriccheck.errors import FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.model import UNKNOWN_ACCOUNT
from fabriccheck.providers.aws.normalize import (
    ACCOUNT_ID,
    CALLS,
    INSTANCES,
    REGION,
    SECURITY_GROUPS,
    Ec2Call,
    Normalizer,
    owners,
)
from fabriccheck.sources.common import TRUNCATED, Scope, paused_gc, read_json


def _has_answers(folder: Path) -> bool:
    return any((folder / c.dump_file).exists() for c in CALLS)


def _folders(directory: Path) -> list[Path]:
    # Hidden folders (.git, .cache) are not part of a dump.
    return sorted(p for p in directory.iterdir() if p.is_dir() and not p.name.startswith("."))


def _not_a_dump_folder(folder: Path, within: str) -> FabricCheckError:
    return FabricCheckError(
        f"--from-dump: {folder} is neither a region (e.g. us-east-1) nor a 12-digit account folder{within}; "
        "move it out of the dump or rename it"
    )


def dump_folders(directory: Path) -> list[tuple[Path, str | None, str | None]]:
    """(folder of answers, its account if the layout says, its region if the layout says). A folder that is
    neither a region nor an account is an error, never skipped: its answers would be silently missing."""
    if not directory.is_dir():
        raise FabricCheckError(f"--from-dump {directory}: not a folder")
    if _has_answers(directory):
        return [(directory, None, None)]
    found: list[tuple[Path, str | None, str | None]] = []
    for sub in _folders(directory):
        if REGION.fullmatch(sub.name):
            found.append((sub, None, sub.name))
        elif ACCOUNT_ID.fullmatch(sub.name):
            if _has_answers(sub):
                found.append((sub, sub.name, None))
            for region in _folders(sub):
                if not REGION.fullmatch(region.name):
                    raise _not_a_dump_folder(region, f" inside account folder {sub.name}")
                found.append((region, sub.name, region.name))
        else:
            raise _not_a_dump_folder(sub, "")
    if not found:
        expected = ", ".join(c.dump_file for c in CALLS if c.required)
        raise FabricCheckError(
            f"--from-dump {directory}: no EC2 answers found (expected files such as {expected}, "
            "or region or 12-digit account folders holding them)"
        )
    return found


def _single(accounts: set[str]) -> str | None:
    return next(iter(accounts)) if len(accounts) == 1 else None


def load_dump(directory: Path, region: str | None = None) -> Inventory:
    inventory = Inventory(source=f"aws dump {directory}")
    for folder, account, folder_region in dump_folders(directory):
        inventory.merge(_load_folder(folder, account, folder_region or region))
    return inventory


def _load_folder(folder: Path, account: str | None, region: str | None) -> Inventory:
    part = Inventory()
    present = [c for c in CALLS if (folder / c.dump_file).exists()]
    missing = [c for c in CALLS if c.required and c not in present]

    def where(call: Ec2Call) -> str:
        return str(folder / call.dump_file)

    normalizer = Normalizer(part, region, account, where)
    truncated: list[Ec2Call] = []
    # One file at a time, instances first: the peak memory is one parsed file plus the model, not every file.
    for call in present:
        with paused_gc():
            doc: Any = read_json(folder / call.dump_file)
            if call is INSTANCES and account is None:
                normalizer.account = _single(owners(INSTANCES, doc)) or _security_group_owner(folder, present)
            if isinstance(doc, dict) and doc.get("NextToken"):
                # Written under --max-items or --no-paginate: the rest of the answer is not in the file, so
                # what it holds is read but the facts do not count as collected.
                truncated.append(call)
            normalizer.add(call, doc, collected=call not in truncated)
            del doc
        if call is INSTANCES and normalizer.region is None:
            regions = sorted({n.region for n in part.nodes} - {"unknown"})
            normalizer.region = regions[0] if len(regions) == 1 else None
    if INSTANCES not in present and account is None:
        normalizer.account = _security_group_owner(folder, present)
    scopes = [normalizer.account] if normalizer.account else sorted({n.account for n in part.nodes})
    for call in truncated:
        for scope_account in scopes or [UNKNOWN_ACCOUNT]:
            part.errors.append(
                Scope("aws", scope_account, normalizer.region).error(
                    call.dump_file,
                    TRUNCATED,
                    f"{folder / call.dump_file} ends with a NextToken, so the answer is cut short (the CLI "
                    f"writes one under --max-items or --no-paginate); make it again with: "
                    f"aws ec2 {call.dump_file[:-5]} --output json",
                )
            )
    for call in missing:
        for scope_account in scopes or [UNKNOWN_ACCOUNT]:
            part.errors.append(
                Scope("aws", scope_account, normalizer.region).missing_dump(
                    folder / call.dump_file,
                    call.fact.replace("_", " "),
                    f"aws ec2 {call.dump_file[:-5]} --output json",
                )
            )
    return part


def _security_group_owner(folder: Path, present: list[Ec2Call]) -> str | None:
    """Every VPC has a default security group, so an account's groups name it when no instance does."""
    if SECURITY_GROUPS not in present:
        return None
    return _single(owners(SECURITY_GROUPS, read_json(folder / SECURITY_GROUPS.dump_file)))
