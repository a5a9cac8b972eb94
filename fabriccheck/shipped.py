"""The YAML the package ships (built-in rules, the catalog, the accelerator table), parsed ahead of time.

PyYAML builds its documents in Python: parsing the built-in rules and the catalog took about 40 ms on every run,
as long as normalizing a 5,000-VM dump. `tools/build_parsed.py` stores each shipped file's document in
fabriccheck/data/parsed.json under the SHA-256 of its text; `load_yaml(text)` returns that document when the
text is one shipped, and parses it otherwise. A file edited since (or a user's rule) is parsed as before, so a
stale entry can cost time but never give a wrong document. tests/test_shipped.py checks every shipped file has
its entry.
"""

from __future__ import annotations

import functools
import hashlib
from importlib import resources
from typing import Any

import orjson
import yaml

CACHE = "parsed.json"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@functools.cache
def _entries() -> dict[str, bytes]:
    """digest -> the document as JSON (decoded afresh for each caller, so that no caller shares another's)."""
    try:
        doc = orjson.loads((resources.files("fabriccheck") / "data" / CACHE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    if not isinstance(doc, dict):
        return {}
    return {key: orjson.dumps(value) for key, value in doc.items()}


def load_yaml(text: str) -> Any:
    """The document `text` holds (yaml.YAMLError when it is not YAML, as yaml.load raises)."""
    entry = _entries().get(digest(text))
    if entry is not None:
        return orjson.loads(entry)
    return yaml.load(text, Loader=yaml.CSafeLoader)
