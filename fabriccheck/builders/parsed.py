"""Rebuild fabriccheck/data/parsed.json: every YAML file the package ships (rules/, fabriccheck/data/), parsed,
under the SHA-256 of its text (see fabriccheck/shipped.py). Run after editing a built-in rule or a data table:
python tools/build_parsed.py   (tests/test_shipped.py fails until it is run)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import yaml

from fabriccheck.builders import checkout
from fabriccheck.shipped import CACHE, digest

ROOT = checkout()
SHIPPED = (ROOT / "rules", ROOT / "fabriccheck" / "data")


def shipped_files() -> list[Path]:
    return sorted(p for folder in SHIPPED for p in folder.rglob("*.yaml"))


def parsed() -> dict[str, Any]:
    entries: dict[str, Any] = {}
    for path in shipped_files():
        text = path.read_text(encoding="utf-8")
        doc = yaml.load(text, Loader=yaml.CSafeLoader)
        if orjson.loads(orjson.dumps(doc)) != doc:  # a date or other value JSON would change
            raise SystemExit(f"{path}: holds a value JSON cannot carry unchanged; quote it")
        entries[digest(text)] = doc
    return entries


def main() -> None:
    out = ROOT / "fabriccheck" / "data" / CACHE
    out.write_bytes(orjson.dumps(parsed(), option=orjson.OPT_SORT_KEYS) + b"\n")
    print(f"{out}: {len(shipped_files())} files")

