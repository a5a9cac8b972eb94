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

from fabriccheck import textfiles

CACHE = "parsed.json"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@functools.cache
def _entries() -> dict[str, Any]:
    """digest -> the shipped document (never handed out itself: each caller gets its own copy)."""
    try:
        doc = orjson.loads((resources.files("fabriccheck") / "data" / CACHE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return doc if isinstance(doc, dict) else {}


def load_yaml(text: str) -> Any:
    """The document `text` holds (yaml.YAMLError when it is not YAML, as yaml.load raises)."""
    entry = _entries().get(digest(text))
    if entry is not None:
        return orjson.loads(orjson.dumps(entry))  # a copy, so that no caller shares another's
    return textfiles.load_yaml(text)  # a safe load whose impossible dates are YAML errors
