"""One misshapen item of a live answer, read on its own: the rest of the answer stands.

A live collection normalizes its answers item by item. When one instance cannot be read (a field of the wrong
type, a missing one), the normalizer records a CollectionError naming the instance and the field, so the run is
incomplete and says which node it could not read and why, instead of losing its whole scope. When the fault is
in the instance's network interfaces, the node is kept without them and its interface facts are marked unknown:
the rules reading those facts report it as not judged rather than firing on NICs that were never read.
(A dump keeps its one clear line naming the file: a file is fixed as a whole, an API answer is not.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fabriccheck.errors import DumpShapeError
from fabriccheck.sources.shape import SHAPE_ERRORS

T = TypeVar("T")

# The node facts made from a node's network interfaces, in every cloud; each cloud adds its own.
INTERFACE_FACTS = ("network", "fabric", "interfaces", "public_ip_interfaces")

# What reading one item may raise: a Python error of a misshapen value, or a Shape check naming the path.
ITEM_ERRORS = (*SHAPE_ERRORS, DumpShapeError)


def without(item: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any] | None:
    """A copy of `item` without the field at `path` (nested keys), or None when that field is not there."""
    head, rest = path[0], path[1:]
    if head not in item:
        return None
    if not rest:
        return {k: v for k, v in item.items() if k != head}
    inner = item[head]
    trimmed = without(inner, rest) if isinstance(inner, dict) else None
    return None if trimmed is None else {**item, head: trimmed}


def salvage(
    build: Callable[[dict[str, Any]], T], item: Any, fields: tuple[tuple[str, ...], ...]
) -> tuple[T, str] | None:
    """An item that failed to read, built again without each field that may hold the fault: what it built and
    the field left out, or None when no such field is the one at fault."""
    if not isinstance(item, dict):
        return None
    for path in fields:
        trimmed = without(item, path)
        if trimmed is None:
            continue
        try:
            return build(trimmed), ".".join(path)
        except ITEM_ERRORS:
            continue
    return None


def named(item: Any, key: str) -> str | None:
    """The item's id when it can be read."""
    value = item.get(key) if isinstance(item, dict) else None
    return value if isinstance(value, str) and value else None


def unknown_because(facts: tuple[str, ...], why: str) -> dict[str, str]:
    return dict.fromkeys(facts, why)
