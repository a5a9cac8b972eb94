"""Saved inventories: `--save-inventory FILE` writes one, `fabriccheck check FILE` judges it offline."""

from __future__ import annotations

import reprlib
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from fabriccheck.cloud import resolve, support
from fabriccheck.errors import FabricCheckError, in_our_words
from fabriccheck.inventory import Inventory
from fabriccheck.jsonfiles import read_json
from fabriccheck.model import PROVIDERS, SCHEMA_VERSION, CollectionError, Provider, field_path
from fabriccheck.outputs import write_atomic

NOT_COLLECTED = "NotCollected"


def snapshot_of(inventory: Inventory) -> bytes:
    """The saved inventory's bytes, as --save-inventory writes them."""
    return orjson.dumps(inventory.model_dump(mode="json"), option=orjson.OPT_INDENT_2)


def save_inventory(inventory: Inventory, path: Path) -> None:
    """Written atomically: a full disk or Ctrl-C leaves no half-written snapshot (and an older one intact)."""
    write_atomic(path, snapshot_of(inventory), "--save-inventory")


def load_inventory(path: Path) -> Inventory:
    data = read_json(path)
    if not isinstance(data, dict):
        raise FabricCheckError(f"{path}: not a saved inventory (expected a JSON object)")
    version = data.get("schema_version")
    if version == 2:
        data = _from_version_2(data)
    elif version != SCHEMA_VERSION:
        hint = " (saved before scopes were recorded: collect it again)" if version == 1 else ""
        raise FabricCheckError(
            f"{path}: field schema_version: {reprlib.repr(version)} is not a version this fabriccheck reads "
            f"(2 or {SCHEMA_VERSION}){hint}"
        )
    try:
        inventory = Inventory.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise FabricCheckError(f"{path}: field {field_path(first['loc'])}: {in_our_words(first)}") from None
    for index, key in enumerate(inventory.collected):  # provider:account:region:fact (model.fact_key)
        if key.count(":") < 3 or key.split(":", 1)[0] not in PROVIDERS:
            raise FabricCheckError(
                f"{path}: field collected.{index}: {reprlib.repr(key)} is not provider:account:region:fact "
                f"(provider: {', '.join(PROVIDERS)})"
            )
    resolve(inventory)
    missing = _not_collected(path, data, inventory)
    inventory.source = f"snapshot {path} (of {inventory.source})"
    if missing is not None:
        inventory.errors.append(missing)
    return inventory


def _from_version_2(data: dict[str, Any]) -> dict[str, Any]:
    """A version 2 inventory as version 3 reads it: the VpcId of an instance listed without network interfaces
    was kept in `aws.instance_networks`; version 3 keeps it on the node (`network`)."""
    aws = data.get("aws")
    networks = aws.get("instance_networks") if isinstance(aws, dict) else None
    if not isinstance(networks, list):
        return {**data, "schema_version": SCHEMA_VERSION}
    vpcs = {
        (n.get("account"), n.get("region"), n.get("instance_id")): n.get("vpc_id")
        for n in networks
        if isinstance(n, dict)
    }
    nodes = [
        {**n, "network": vpcs[key]}
        if isinstance(n, dict) and (key := (n.get("account"), n.get("region"), n.get("id"))) in vpcs
        else n
        for n in data.get("nodes") or []
    ]
    rest = {k: v for k, v in aws.items() if k != "instance_networks"} if isinstance(aws, dict) else aws
    return {**data, "schema_version": SCHEMA_VERSION, "aws": rest, "nodes": nodes}


def _not_collected(path: Path, data: dict[str, object], inventory: Inventory) -> CollectionError | None:
    """A snapshot that does not say which facts were collected (no `collected`, or an empty one beside nodes)
    vouches for nothing: every rule would judge on empty lists. It must not pass a gate, so the run is
    incomplete and the report says which facts are missing."""
    if "collected" in data and (inventory.collected or not (inventory.nodes or inventory.specs)):
        return None
    found = {n.provider for n in [*inventory.nodes, *inventory.specs]}
    providers: list[Provider] = [p for p in PROVIDERS if p in found] or ["aws"]
    facts = "; ".join(f"{p}: {', '.join(support(p).collected_facts) or 'all of them'}" for p in providers)
    why = "has no field collected" if "collected" not in data else "has nodes but its field collected is empty"
    return CollectionError(
        provider=providers[0],
        call="snapshot",
        code=NOT_COLLECTED,
        message=f"{path} {why}, so none of these facts count as collected ({facts}); "
        "collect it again and save it with --save-inventory",
    )
