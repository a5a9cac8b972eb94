"""Keeping a large inventory small in memory.

A 100,000-instance estate has about a million network interfaces, and most of what they hold repeats: the
same subnet, VPC, security group and interface type on thousands of them, each a separate string as the JSON
parser made it. Pydantic also gives every model instance its own set of the fields that were given (728 bytes
for a set of 5 to 19 names, more than the interface's own values). `Compactor` shares both: equal strings
become one object (`sys.intern`), as do equal lists of security groups, and every instance of a model class
shares one set naming all its fields.

Sharing the field set changes nothing the project reads: nothing dumps with `exclude_unset`, and because the
shared set already names every field, pydantic's `__setattr__` (which adds the assigned name to the set) never
changes it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from pydantic import BaseModel

from fabriccheck.model import NetworkInterface, Node, Placement
from fabriccheck.trusted import maker

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
_intern = sys.intern


def _all_fields(cls: type[BaseModel]) -> set[str]:
    return set(cls.model_fields)


_NODE_FIELDS = _all_fields(Node)
_NIC_FIELDS = _all_fields(NetworkInterface)
_PLACEMENT_FIELDS = _all_fields(Placement)
# Values that repeat across nodes (an instance id does not, so it is left alone).
_NODE_STRINGS = ("account", "region", "zone", "instance_type", "state", "image", "provider", "origin")


def compacted_maker(cls: type[M]) -> Callable[[dict[str, Any]], M]:
    """An instance of `cls` from every field's value in declaration order (trusted.complete), values already
    compacted by the caller (repeated strings interned, lists shared): it shares the class's field set, which is
    how `Compactor` knows to leave it be. For a normalizer that stamps the nodes of a pool from one template."""
    return maker(cls, _FIELD_SETS[cls])


_FIELD_SETS: dict[Any, set[str]] = {Node: _NODE_FIELDS, NetworkInterface: _NIC_FIELDS, Placement: _PLACEMENT_FIELDS}


class Compactor:
    """Compacts nodes as a source makes them (one call per batch, so the whole estate is never held twice)."""

    def __init__(self) -> None:
        # One list per distinct set of security groups, shared by every interface that has it. Nothing changes
        # an interface's list in place after normalizing (an assignment replaces it, which is safe).
        self._groups: dict[tuple[str, ...], list[str]] = {}

    def nodes(self, nodes: list[Node], start: int = 0) -> None:
        """Compact `nodes[start:]` in place."""
        for index in range(start, len(nodes)):
            node = nodes[index]
            if node.__pydantic_fields_set__ is not _NODE_FIELDS:  # else compacted already (a stamped pool's)
                self.node(node)

    def node(self, node: Node) -> None:
        # Plain loops and direct writes to the instances' dicts: this runs once per network interface, and a
        # pydantic assignment would validate and cost ten times as much.
        if node.__pydantic_fields_set__ is _NODE_FIELDS:
            return  # compacted already, or made compacted (compacted_maker)
        intern, share = _intern, object.__setattr__
        values = node.__dict__
        for name in _NODE_STRINGS:
            value = values[name]
            if type(value) is str:
                values[name] = intern(value)
        if node.tags:
            values["tags"] = {intern(k): intern(v) for k, v in node.tags.items()}
        share(node, "__pydantic_fields_set__", _NODE_FIELDS)
        for nic in node.interfaces:
            nic_values = nic.__dict__
            nic_values["interface_type"] = intern(nic_values["interface_type"])
            if (network := nic_values["network"]) is not None:
                nic_values["network"] = intern(network)
            if (subnet := nic_values["subnet"]) is not None:
                nic_values["subnet"] = intern(subnet)
            groups = nic_values["security_groups"]
            if groups:
                key = tuple(groups)
                shared = self._groups.get(key)
                if shared is None:
                    shared = self._groups[key] = [intern(g) for g in groups]
                nic_values["security_groups"] = shared
            share(nic, "__pydantic_fields_set__", _NIC_FIELDS)
        for placement in node.placement:
            placement_values = placement.__dict__
            placement_values["kind"] = intern(placement_values["kind"])
            placement_values["id"] = intern(placement_values["id"])
            share(placement, "__pydantic_fields_set__", _PLACEMENT_FIELDS)


def compacting(items: Iterable[T], nodes: list[Node]) -> Iterator[T]:
    """`items` passed on one by one to a normalizer that appends to `nodes`; what it made from each item is
    compacted before the next one is read."""
    compactor = Compactor()
    for item in items:
        made = len(nodes)
        yield item
        compactor.nodes(nodes, made)
