"""Slurm's network topology as one of its three sources gives it: the text of `scontrol show topology` (what
slurmctld holds now), topology.yaml (Slurm 25.05+) or topology.conf. Only what the rules read is kept: the plugin
(block, tree or flat) and each node's leaf group (the base block, or the leaf switch: the one that lists nodes).

Shapes (SchedMD/slurm at 284c3b95):
- `scontrol show topology`: `SwitchName=%s Level=%u LinkSpeed=%u[ Nodes=%s][ Switches=%s]` per switch, an upper
  switch with both (src/plugins/topology/tree/topology_tree.c _print_topo_record; src/api/topo_info.c at
  slurm-22-05-8-1 the same), `BlockName=%s BlockIndex=%u[ Nodes=%s] BlockSize=%u`, aggregated blocks as
  `AggregatedBlock=` (src/plugins/topology/block/topology_block.c).
- topology.conf: `SwitchName=s0 Nodes=dev[0-5]`, `SwitchName=s3 Switches=s[0-2]`, `BlockName=block1
  Nodes=node[1-32]`, `BlockSizes=30,120` (doc/man/man5/topology.conf.5, EXAMPLE).
- topology.yaml: a list of `{topology: NAME, cluster_default: BOOL, tree: {switches: [{switch, children, nodes}]}
  | block: {block_sizes: [..], blocks: [{block, nodes}]} | flat: true}` (doc/man/man5/topology.yaml.5, EXAMPLE).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from fabriccheck.errors import FabricCheckError
from fabriccheck.providers.slurm.hostlist import expand
from fabriccheck.textfiles import load_yaml, read_text, yaml_error

BLOCK, TREE, FLAT = "block", "tree", "flat"
_PAIR = re.compile(r"(\w+)=(\S*)")


@dataclass
class Topology:
    """One topology: its plugin, and each node's leaf group (block or leaf switch)."""

    plugin: str  # block | tree | flat
    source: str  # the file it was read from
    name: str = "default"
    groups: dict[str, list[str]] = field(default_factory=dict)  # leaf group -> its nodes
    block_sizes: tuple[int, ...] = ()

    @property
    def group_kind(self) -> str:
        return "block" if self.plugin == BLOCK else "switch"

    def size_of(self, group: str) -> int:
        return len(self.groups.get(group, ()))

    def group_of(self) -> dict[str, str]:
        """Each node's leaf group (a node listed twice keeps the first)."""
        found: dict[str, str] = {}
        for group, nodes in self.groups.items():
            for node in nodes:
                found.setdefault(node, group)
        return found


def _pairs(line: str) -> dict[str, str]:
    return {key.lower(): value for key, value in _PAIR.findall(line)}


def from_lines(text: str, source: str) -> Topology:
    """topology.conf, or the text `scontrol show topology` prints: the same Key=Value words, one record a line. An
    empty text is a flat topology (topology/flat has no record to print)."""
    topology: Topology | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        pairs = _pairs(line)
        if "blocksizes" in pairs:
            sizes = pairs["blocksizes"].split(",")
            if not all(s.isdigit() for s in sizes):
                raise FabricCheckError(f"{source}: line {number}: BlockSizes={pairs['blocksizes']} is not numbers")
            topology = topology or Topology(BLOCK, source)
            topology.block_sizes = tuple(int(s) for s in sizes)
            continue
        name, plugin = pairs.get("blockname"), BLOCK
        if name is None:
            name, plugin = pairs.get("switchname"), TREE
        if name is None and "aggregatedblock" in pairs:
            continue  # an aggregate of base blocks: the base blocks hold the nodes
        if name is None and "ringname" in pairs:  # topology/ring (RingName=): no group this release judges
            topology = topology or Topology("ring", source)
            continue
        if name is None:
            raise FabricCheckError(f"{source}: line {number}: neither SwitchName= nor BlockName= ({line[:60]!r})")
        topology = topology or Topology(plugin, source)
        if topology.plugin != plugin:
            raise FabricCheckError(f"{source}: line {number}: mixes SwitchName= and BlockName= records")
        # Leaf switches and base blocks list nodes. An upper switch lists its switches, and in the text of
        # `scontrol show topology` also every node under them (_print_topo_record prints Nodes= and Switches= alike,
        # as src/api/topo_info.c did at slurm-22-05-8-1; Debian's 22.05.8 prints `SwitchName=spine Level=1
        # LinkSpeed=1 Nodes=gpu-[1-4] Switches=leaf[1-2]`): it is no leaf group.
        if "nodes" in pairs and "switches" not in pairs:
            topology.groups[name] = expand(pairs["nodes"], f"{source}: line {number}: Nodes=")
    # No record at all: what `scontrol show topology` prints under topology/flat (nothing to print).
    return topology or Topology(FLAT, source)


def _leaves(entries: Any, key: str, source: str) -> dict[str, list[str]]:
    if not isinstance(entries, list):
        raise FabricCheckError(f"{source}: {key}s is not a list")
    groups: dict[str, list[str]] = {}
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get(key), str):
            raise FabricCheckError(f"{source}: {key}s[{index}] has no {key} name")
        if isinstance(entry.get("nodes"), str):
            groups[entry[key]] = expand(entry["nodes"], f"{source}: {key}s[{index}].nodes")
    return groups


def from_yaml(document: Any, source: str) -> dict[str, Topology]:
    """Every topology a topology.yaml defines, by name; the cluster default (or the only one) also as ''."""
    if not isinstance(document, list) or not document:
        raise FabricCheckError(f"{source}: not a topology.yaml (a list of topologies)")
    found: dict[str, Topology] = {}
    for index, entry in enumerate(document):
        if not isinstance(entry, dict) or not isinstance(entry.get("topology"), str):
            raise FabricCheckError(f"{source}: item {index} has no topology name")
        name = entry["topology"]
        if isinstance(entry.get("block"), dict):
            block = entry["block"]
            sizes = block.get("block_sizes") or []
            if not isinstance(sizes, list) or not all(isinstance(s, int) for s in sizes):
                raise FabricCheckError(f"{source}: {name}: block_sizes is not a list of numbers")
            groups = _leaves(block.get("blocks", []), "block", source)
            topology = Topology(BLOCK, source, name, groups, tuple(sizes))
        elif isinstance(entry.get("tree"), dict):
            topology = Topology(TREE, source, name, _leaves(entry["tree"].get("switches", []), "switch", source))
        else:  # flat, ring, torus3d: no leaf group this slice judges
            plugin = next((kind for kind in (FLAT, "ring", "torus3d") if kind in entry), None)
            if plugin is None:
                raise FabricCheckError(f"{source}: {name}: no tree, block, flat, ring or torus3d")
            topology = Topology(plugin, source, name)
        found[name] = topology
        if entry.get("cluster_default") is True or len(document) == 1:
            found.setdefault("", topology)
    return found


def read_yaml(path: Path) -> Any:
    """A YAML file, parsed; a bad one is one line naming it."""
    try:
        return load_yaml(read_text(path))
    except yaml.YAMLError as exc:
        raise yaml_error(path, exc) from None


def read_topologies(folder: Path) -> dict[str, Topology]:
    """The dump's topologies, by name ('' the cluster default): `scontrol show topology` first (what slurmctld
    holds, SchedMD/slurm#225 and aws-parallelcluster-cookbook#3123 show it can differ from the files), then
    topology.yaml, then topology.conf. Empty: the dump has none of them."""
    found: dict[str, Topology] = {}
    shown, yaml_file, conf = folder / "topology.txt", folder / "topology.yaml", folder / "topology.conf"
    if yaml_file.is_file():
        found = from_yaml(read_yaml(yaml_file), str(yaml_file))
    elif conf.is_file():
        found = {"": from_lines(read_text(conf), str(conf))}
    if shown.is_file():
        found[""] = from_lines(read_text(shown), str(shown))
    return found
