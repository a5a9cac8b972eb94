"""Pools: the nodes of one scale set, node pool or launch template share one shape, read once.

An API item (an instance, a VM) is its own values (its name, state, NIC ids, physical host: what differs between
the nodes of a pool) and the rest. A provider reads a node's shape from the rest alone (`read_shape`), so the rest
is the pool key: two items whose rests are equal have equal shapes, whatever `read_shape` reads, and a value read
can never be left out of the key. The rest is compared as its JSON encoding (msgspec, in C), which also keeps
`1` and `true` apart. What the shape reads beside the item (a resource policy the provider has seen, a scale set's
model) is given as `lookups`, part of the key too.

Shapes are interned by value: every node of a pool holds the same shape object, so facts and verdicts keyed by
shape find it at once, and a 100,000-node estate holds each distinct shape once.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar

import msgspec

from fabriccheck.model import Node, NodeShape, Topology

T = TypeVar("T")
# A field of an item: its keys from the top, "*" for every element of a list.
Path = tuple[str, ...]

_encode = msgspec.json.Encoder().encode


def without(item: dict[str, Any], paths: Iterable[Path]) -> dict[str, Any]:
    """A copy of `item` without the fields at `paths` (the item's own values); what is not copied is shared."""
    rest = dict(item)
    for path in paths:
        _drop(rest, path)
    return rest


def _drop(value: dict[str, Any], path: Path) -> None:
    head, tail = path[0], path[1:]
    if head not in value:
        return
    if not tail:
        del value[head]
        return
    inner = value[head]
    if tail[0] == "*" and isinstance(inner, list):
        copied = [dict(element) if isinstance(element, dict) else element for element in inner]
        for element in copied:
            if isinstance(element, dict) and tail[1:]:
                _drop(element, tail[1:])
        value[head] = copied
    elif isinstance(inner, dict):
        value[head] = inner = dict(inner)
        _drop(inner, tail)


class Pools:
    """Shapes of one source's items, each read once per pool and interned by value."""

    def __init__(self) -> None:
        self._by_rest: dict[tuple[Hashable, bytes], NodeShape] = {}
        self._shapes: dict[NodeShape, NodeShape] = {}

    def shape(
        self, rest: dict[str, Any], read_shape: Callable[[dict[str, Any]], NodeShape], lookups: Hashable = ()
    ) -> NodeShape:
        """The shape `read_shape(rest)` gives, read once for every item whose rest (and lookups) is equal."""
        try:
            key = (lookups, _encode(rest))
        except (TypeError, msgspec.EncodeError):  # a value JSON cannot hold (a live answer's object): read alone
            return self.intern(read_shape(rest))
        found = self._by_rest.get(key)
        if found is None:
            found = self._by_rest[key] = self.intern(read_shape(rest))
        return found

    def intern(self, shape: NodeShape) -> NodeShape:
        """The one shape object equal to `shape` in this source."""
        return self._shapes.setdefault(shape, shape)


def node(
    node_id: str,
    shape: NodeShape,
    state: str = "running",
    interface_ids: tuple[str, ...] = (),
    topology: Topology | None = None,
    unknown: dict[str, str] | None = None,
) -> Node:
    """A node of an interned shape, validated (in pydantic's core: faster than `model_construct`'s Python). The
    shape, a model already validated, is kept as it is, not copied."""
    return Node(
        id=node_id,
        state=state,
        topology=topology,
        unknown=unknown if unknown is not None else {},
        interface_ids=interface_ids,
        shape=shape,
    )
