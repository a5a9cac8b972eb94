"""Saved inventories: `--save-inventory FILE` writes one, `fabriccheck check FILE` judges it offline."""

from __future__ import annotations

from pathlib import Path

import orjson
from pydantic import ValidationError

from fabriccheck.errors import FabricCheckError
from fabriccheck.inventory import Inventory
from fabriccheck.model import SCHEMA_VERSION
from fabriccheck.sources.common import read_json


def save_inventory(inventory: Inventory, path: Path) -> None:
    try:
        path.write_bytes(orjson.dumps(inventory.model_dump(mode="json"), option=orjson.OPT_INDENT_2))
    except OSError as exc:
        raise FabricCheckError(f"--save-inventory {path}: cannot write ({exc.strerror})") from None


def load_inventory(path: Path) -> Inventory:
    data = read_json(path)
    if not isinstance(data, dict):
        raise FabricCheckError(f"{path}: not a saved inventory (expected a JSON object)")
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        hint = " (saved before scopes were recorded: collect it again)" if version == 1 else ""
        raise FabricCheckError(
            f"{path}: field schema_version: {version!r} is not a version this fabriccheck reads "
            f"({SCHEMA_VERSION}){hint}"
        )
    try:
        inventory = Inventory.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise FabricCheckError(f"{path}: field {'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
    inventory.source = f"snapshot {path} (of {inventory.source})"
    return inventory
