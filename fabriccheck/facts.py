"""Derived facts: the small dicts rule conditions read (`node`, `cluster`).

Rules stay one line because the arithmetic lives here: what fabric a type offers, how much of it is attached
(the provider decides), how many zones or networks a cluster spans. The neutral facts are the same on every
cloud; each provider adds its own (cloud.CloudSupport.schema). A fact that could not be collected is
"unknown" (or a `*_known` flag is false), never a silent default that would fire or hide a rule. A node that
a template or plan would launch gets the same facts as a running one, so one rule judges both.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from itertools import count, repeat
from typing import Any, TypeVar

from fabriccheck import catalog
from fabriccheck.cloud import FabricAttachment, Facts, support
from fabriccheck.clusters import Cluster
from fabriccheck.inventory import Inventory
from fabriccheck.model import Capability, Node, fact_key

T = TypeVar("T")
_UNSEEN: Any = object()
_PROVIDER = operator.attrgetter("provider")
_UNKNOWN = operator.attrgetter("unknown")

# The neutral facts, as dotted paths (the engine refuses a rule that reads anything else).
NODE_FACTS = {
    "id": "the node's id (instance id, VM id; for a spec, template id:version)",
    "label": "how a message names the node",
    "origin": "running, template or plan",
    "spec": "what would launch the node (empty for running nodes)",
    "spec.kind": "launch-template, scale-set-model, instance-template, terraform",
    "spec.name": "the template's or resource's name",
    "spec.version": "its version, if it has one",
    "spec.role": "how it is used (e.g. the default and latest version)",
    "account": "AWS account id, Azure subscription id or GCP project id",
    "instance_type": "instance type, VM size or machine type",
    "family": "the type's family as its cloud names it",
    "region": "region",
    "zone": "zone, or empty",
    "network": "the primary interface's network (VPC, virtual network), or empty",
    "accelerators": "GPUs or other accelerators of the type",
    "accelerator": "their name, e.g. H100",
    "fabric_expected": "the type has a fabric and trains (accelerators) or runs HPC jobs",
    "fabric": "the node's fabric",
    "fabric.kind": "efa, infiniband, gpudirect-tcpx, gpudirect-tcpxo, rdma, none or unknown",
    "fabric.known": "whether the type's capability is known",
    "fabric.max": "most fabric NICs or ports the type takes",
    "fabric.attached": "fabric NICs or ports attached (the provider decides what counts)",
    "fabric.cards": "distinct network cards or networks carrying them",
    "fabric.gbps": "the type's total fabric bandwidth",
    "interfaces": "network interfaces",
    "public_ip_interfaces": "interfaces with (or asking for) a public IP address",
}
CLUSTER_FACTS = {
    "id": "the cluster's id",
    "signal": "what grouped its nodes",
    "size": "nodes (0 for a template: the group it launches has no size yet)",
    "multi_node": "more than one node (a template counts: it launches a group)",
    "spec": "the cluster is what one template or plan would launch",
    "gpus": "accelerators in all",
    "fabric_cluster": "two or more nodes that have, or should have, a fabric",
    "fabric_nodes": "nodes that should use a fabric",
    "fabric_attached_nodes": "nodes with any fabric attached",
    "zones": "distinct zones",
    "zone_names": "their names",
    "networks": "distinct networks (VPCs, virtual networks) of the nodes' primary interfaces",
    "network_names": "their names",
    "regions": "distinct regions",
    "fabric_subnets": "distinct subnets of the fabric interfaces",
    "fabric_subnet_names": "their names",
    "types": "instance types",
    "type_names": "their names",
    "topology": "network topology, where collected",
    "topology.known": "every node's topology was collected",
    "topology.top_nodes": "distinct top-layer network nodes",
    "topology.top_node_names": "their names",
    "nvlink": "multi-node NVLink domains (GB200/GB300 NVL72 racks)",
    "nvlink.applies": "the nodes' accelerator comes in a multi-node NVLink domain",
    "nvlink.known": "the cloud told every such node's domain",
    "nvlink.domains": "distinct domains the nodes sit in",
    "nvlink.needed": "the fewest domains that would hold the cluster",
    "nvlink.names": "the domains' names",
    "choice": "instance choice",
    "choice.weaker": "all nodes are a type without fabric, where the same generation has one",
    "choice.suggestion": "that fabric type",
    "unknown_types": "types whose capability is unknown",
}


# Node facts that come from the type's capability: unknown with it.
_CAPABILITY_FACTS = ("fabric", "fabric_expected", "accelerators", "accelerator")
_CAPABILITY_CLUSTER_FACTS = ("fabric_cluster", "fabric_nodes", "fabric_attached_nodes", "gpus", "choice")


def described(provider: str) -> tuple[dict[str, str], dict[str, str]]:
    """Every fact path a rule of `provider` may read, with its meaning: (node facts, cluster facts)."""
    extra = support(provider).schema
    return NODE_FACTS | extra.node, CLUSTER_FACTS | extra.cluster


def schema(provider: str) -> tuple[set[str], set[str]]:
    """Every fact path a rule of `provider` may read: (node facts, cluster facts)."""
    node, cluster = described(provider)
    return set(node), set(cluster)


def first_indexes(values: list[Any]) -> dict[Any, int]:
    """Each distinct value's first index, found in C (a dict keeps the last index it is given, so the list is read
    reversed; the dict's order is therefore not the values' order)."""
    return dict(zip(reversed(values), range(len(values) - 1, -1, -1), strict=True))


class FactBuilder:
    def __init__(self, inventory: Inventory) -> None:
        self.inventory = inventory
        self.collected = set(inventory.collected)
        self._capabilities: dict[str, Capability | None] = {}
        self._node_facts: dict[int, Facts] = {}
        self._attachments: dict[int, FabricAttachment] = {}  # id(node) ->
        self._shape_attachments: dict[int, FabricAttachment] = {}  # shape number ->
        self._siblings: dict[tuple[str, str], list[catalog.Sibling]] = {}
        self._cluster_facts: dict[str, Facts] = {}
        self._cache: dict[str, Any] = {}
        self._families: dict[tuple[str, str], str] = {}
        self._neutral: dict[tuple[Any, ...], Facts] = {}
        # Node facts by the node's shape (CloudSupport.node_shape): a pool's nodes share them.
        self._shapes: dict[int, int | None] = {}  # id(node) -> its shape's number
        self._numbers: dict[Any, int] = {}  # shape -> number
        self._counter = count()  # the numbers: unique, not dense
        self._by_shape: dict[int, Facts] = {}
        self._neutral_clusters: dict[tuple[str, tuple[int | None, ...]], Facts] = {}  # (provider, shapes) ->

    # ---------------------------------------------------------------------------------------- context

    def capability(self, node: Node) -> Capability | None:
        found = self._capabilities.get(node.instance_type or "", _UNSEEN)
        return self.type_capability(node.instance_type) if found is _UNSEEN else found

    def attachment(self, node: Node) -> FabricAttachment:
        found = self._attachments.get(id(node))
        if found is None:
            # A shape's nodes share their attachment (CloudSupport.node_shape): made once per shape.
            shape = self._shapes.get(id(node))
            found = None if shape is None else self._shape_attachments.get(shape)
            if found is None:
                found = support(node.provider).fabric_attachment(node, self.capability(node))
                if shape is not None:
                    self._shape_attachments[shape] = found
            self._attachments[id(node)] = found
        return found

    def type_capability(self, instance_type: str | None) -> Capability | None:
        if not instance_type:
            return None
        if instance_type not in self._capabilities:
            self._capabilities[instance_type] = catalog.resolve(instance_type, self.inventory.capabilities)
        return self._capabilities[instance_type]

    def siblings(self, provider: str, instance_type: str) -> list[catalog.Sibling]:
        key = (provider, instance_type)
        if key not in self._siblings:
            self._siblings[key] = catalog.fabric_siblings(support(provider), instance_type, self.inventory.capabilities)
        return self._siblings[key]

    def has(self, node: Node, fact: str) -> bool:
        return fact_key(node.provider, node.account, node.region, fact) in self.collected

    def cached(self, key: str, build: Callable[[], T]) -> T:
        if key not in self._cache:
            self._cache[key] = build()
        value: T = self._cache[key]
        return value

    # ---------------------------------------------------------------------------------------- node

    def node(self, node: Node) -> Facts:
        # Keyed by object: a running node and a spec may share an id across accounts or origins.
        cached = self._node_facts.get(id(node))
        return self.nodes([node])[0] if cached is None else cached

    def nodes(self, nodes: list[Node]) -> list[Facts]:
        """Each node's facts, as `node` gives them, in one pass: a cluster's nodes mostly share one shape, and
        building them by the list costs a look-up and a dict copy per node rather than a few calls."""
        cache = self._node_facts
        keys = list(map(id, nodes))
        found: list[Facts | None] = list(map(cache.get, keys))
        if None not in found:
            return found  # type: ignore[return-value]  # none is missing
        numbers = self.shapes(nodes)
        by_shape = self._by_shape
        for index, facts in enumerate(found):
            if facts is not None:
                continue
            node = nodes[index]
            number = numbers[index]
            if number is None:
                facts = self._build_node(node)
            else:
                shared = by_shape.get(number)
                if shared is None:
                    facts = by_shape[number] = self._build_node(node)  # the first node of its shape
                else:
                    facts = {**shared, "id": node.id, "label": node.id}
            found[index] = cache[keys[index]] = facts
        return found  # type: ignore[return-value]  # every one is filled

    def shared(self, nodes: list[Node]) -> list[Facts]:
        """Each node's facts, where the nodes of one shape share one dict: the facts of their shape, which name
        the node they were built from. For what reads facts but a node's name (sums over a cluster, verdicts):
        no dict is copied per node."""
        numbers = self.shapes(nodes)
        by_shape = self._by_shape
        firsts = first_indexes(numbers)
        own = firsts.pop(None, -1) >= 0  # a node whose facts are its own
        for number, index in firsts.items():
            if number not in by_shape:
                self.nodes([nodes[index]])  # builds the shape's facts from its first node
        if not own:
            return list(map(by_shape.__getitem__, numbers))  # type: ignore[arg-type]  # no number is None
        return [
            self.node(node) if number is None else by_shape[number] for node, number in zip(nodes, numbers, strict=True)
        ]

    def shapes(self, nodes: list[Node]) -> list[int | None]:
        """The number of each node's shape (CloudSupport.node_shapes), or None for a node whose facts are its own.
        Numbered, so that later look-ups hash an int rather than the shape's nested tuples."""
        known = self._shapes
        found: list[int | None] = list(map(known.get, map(id, nodes), repeat(_UNSEEN)))
        if _UNSEEN not in found:
            return found
        todo = (
            nodes
            if found.count(_UNSEEN) == len(nodes)
            else [n for n, f in zip(nodes, found, strict=True) if f is _UNSEEN]
        )
        providers = set(map(_PROVIDER, todo))
        numbers = self._numbers
        for provider in providers:
            these = todo if len(providers) == 1 else [n for n in todo if n.provider == provider]
            shapes = support(provider).node_shapes(these, self)
            these_numbers: list[int | None]
            if None not in shapes and not any(map(_UNKNOWN, these)):
                # Numbered in C: a shape seen before keeps its number, a new one takes the counter's next.
                these_numbers = list(map(numbers.setdefault, shapes, self._counter))
            else:  # facts a node's source left unknown are its own: such a node shares nothing
                these_numbers = [
                    None if shape is None or node.unknown else numbers.setdefault(shape, next(self._counter))
                    for node, shape in zip(these, shapes, strict=True)
                ]
            known.update(zip(map(id, these), these_numbers, strict=True))
        return list(map(known.get, map(id, nodes)))

    def _build_node(self, node: Node) -> Facts:
        cloud = support(node.provider)
        cap = self.capability(node)
        attachment = self.attachment(node)
        instance_type = node.instance_type or ""
        primary = node.primary_interface
        spec = node.spec
        # The neutral facts but the node's name depend on these alone: the nodes of a pool share them (and
        # their nested dicts, which nothing changes), built once.
        key = (
            node.provider,
            node.origin,
            (spec.kind, spec.name, spec.version, spec.role) if spec else None,
            node.account,
            instance_type,
            node.region,
            node.zone,
            primary.network if primary else None,
            len(node.interfaces),
            sum(1 for i in node.interfaces if i.public_ip),
            attachment.attached,
            attachment.paths,
            cloud.expects_fabric(node, cap),
        )
        shared = self._neutral.get(key)
        if shared is None:
            shared = self._neutral[key] = self._neutral_facts(node, cap, key)
        facts: Facts = {"id": node.id, "label": node.id, **shared}
        extra = cloud.node_facts(node, self)
        facts["unknown"] = shared["unknown"] | extra.pop("unknown", {}) | node.unknown
        facts.update(extra)
        return facts

    def _neutral_facts(self, node: Node, cap: Capability | None, key: tuple[Any, ...]) -> Facts:
        """The neutral facts of a node but its id and label, from its `_build_node` key."""
        instance_type, network, interfaces, public, attached, paths, expected = key[4], *key[7:]
        family = self._families.get((node.provider, instance_type))
        if family is None:
            family = self._families[(node.provider, instance_type)] = (
                support(node.provider).family(instance_type) if instance_type else ""
            )
        unknown: dict[str, str] = {}
        if cap is None and instance_type:
            why = f"the capability of {instance_type} is unknown (not in the live answer or the catalog)"
            unknown = dict.fromkeys(_CAPABILITY_FACTS, why)
        return {
            "origin": node.origin,
            "spec": {
                "kind": node.spec.kind if node.spec else "",
                "name": node.spec.name if node.spec else "",
                "version": (node.spec.version or "") if node.spec else "",
                "role": (node.spec.role or "") if node.spec else "",
            },
            "account": node.account,
            "instance_type": instance_type,
            "family": family,
            "region": node.region,
            "zone": node.zone or "",
            "network": network or "",
            "accelerators": cap.accelerators if cap else 0,
            "accelerator": (cap.accelerator_name if cap else None) or "",
            "fabric_expected": expected,
            "fabric": {
                "kind": cap.fabric.value if cap else "unknown",
                "known": cap is not None,
                "max": cap.fabric_interfaces if cap else 0,
                "attached": attached,
                "cards": paths,
                "gbps": (cap.fabric_gbps or 0.0) if cap else 0.0,
            },
            "interfaces": interfaces,
            "public_ip_interfaces": public,
            # Facts that could only be called unknown, with why; a rule reading one is reported as not judged.
            "unknown": unknown,
        }

    # ---------------------------------------------------------------------------------------- cluster

    def cluster(self, cluster: Cluster) -> Facts:
        cached = self._cluster_facts.get(cluster.id)
        if cached is None:
            cached = self._cluster_facts[cluster.id] = self._build_cluster(cluster)
        return cached

    def _build_cluster(self, cluster: Cluster) -> Facts:
        nodes = cluster.nodes
        every = self.shared(nodes)  # for the cloud's cluster facts: a shape's nodes share theirs
        numbers = self.shapes(nodes)
        # The neutral facts but a cluster's name and topology follow from its nodes' shapes, in order, and its
        # provider (a spec's from the spec too): running clusters with the same shapes share them (and their
        # nested dicts and lists, which nothing changes), made once. A node of its own (None) shares nothing.
        key = None if cluster.spec or None in numbers else (cluster.provider, tuple(numbers))
        neutral = self._neutral_clusters.get(key) if key is not None else None
        if neutral is None:
            neutral = self._neutral_cluster(cluster, every, numbers)
            if key is not None:
                self._neutral_clusters[key] = neutral
        facts = neutral.copy()  # its keys in their order, the cluster's own values set in their places
        facts["id"] = cluster.id
        facts["signal"] = cluster.signal
        facts["topology"] = self._topology(cluster)  # read off each node: its own
        facts["nvlink"] = self._nvlink(cluster, facts["types"])
        extra = support(cluster.provider).cluster_facts(nodes, every, self)
        facts["unknown"] = facts["unknown"] | extra.pop("unknown", {})
        facts.update(extra)
        return facts

    def _neutral_cluster(self, cluster: Cluster, every: list[Facts], numbers: list[int | None]) -> Facts:
        """A cluster's neutral facts but its id, signal and topology (whose places they keep, to be filled)."""
        nodes = cluster.nodes
        # Nodes of one shape have the same facts but for their names: the sums and sets below are taken over the
        # distinct shapes, each counted as many times as it has nodes (a pool of 500 is read once).
        # Each shape's first node, taken in the order the shapes first appear (sorted indexes); a node of its own
        # (None) is a group of one.
        firsts = first_indexes(numbers)
        if None in firsts:
            del firsts[None]
            order = sorted([*firsts.values(), *(index for index, number in enumerate(numbers) if number is None)])
        else:
            order = sorted(firsts.values())
        # Each shape counted by a pass in C over the numbers (a cluster has a handful of shapes).
        counted = [(every[index], 1 if numbers[index] is None else numbers.count(numbers[index])) for index in order]
        fabric_subnets = {i.subnet for index in order for i in self.attachment(nodes[index]).interfaces if i.subnet}
        distinct = [facts for facts, _ in counted]
        types = sorted({f["instance_type"] for f in distinct})
        fabric_nodes = sum(n for f, n in counted if f["fabric_expected"])
        size = 0 if cluster.spec else cluster.size
        # A node whose interfaces could not be read (a misshapen live answer) tells nothing of the cluster's
        # networks or attachment: the cluster facts drawn from them are counted without it and called unknown.
        unread = [f["unknown"]["network"] for f in distinct if "network" in f["unknown"]]
        read = [f for f in distinct if "network" not in f["unknown"]] if unread else distinct
        # Likewise a node whose zone its source could not tell (a plan's subnet that the plan does not create).
        unzoned = [f["unknown"]["zone"] for f in distinct if "zone" in f["unknown"]]
        zoned = [f for f in distinct if "zone" not in f["unknown"]] if unzoned else distinct
        facts: Facts = {
            "id": "",
            "signal": "",
            "size": size,
            # A template or plan launches a group: judge it as the multi-node cluster it is meant to be.
            "multi_node": cluster.spec or cluster.size > 1,
            "spec": cluster.spec,
            "gpus": sum(f["accelerators"] * n for f, n in counted),
            # A cluster whose fabric matters: two or more nodes that have (or should have) a fabric.
            "fabric_cluster": bool(fabric_nodes) if cluster.spec else cluster.size > 1 and fabric_nodes > 1,
            "fabric_nodes": fabric_nodes,
            "fabric_attached_nodes": sum(
                n for f, n in counted if f["fabric"]["attached"] > 0 or "fabric" in f["unknown"]
            ),
            "zones": len({f["zone"] for f in zoned}),
            "zone_names": ", ".join(sorted({f["zone"] or "?" for f in zoned})),
            "networks": len({f["network"] for f in read}),
            "network_names": ", ".join(sorted({f["network"] or "?" for f in read})),
            "regions": len({f["region"] for f in distinct}),
            "fabric_subnets": len(fabric_subnets),
            "fabric_subnet_names": ", ".join(sorted(fabric_subnets)),
            "types": types,
            "type_names": ", ".join(types),
            "topology": {},
            "nvlink": {},
            "choice": self._choice(cluster, distinct),
            "unknown_types": ", ".join(sorted({f["instance_type"] for f in distinct if not f["fabric"]["known"]})),
            "unknown": {},
        }
        if facts["unknown_types"]:
            why = f"the capability of {facts['unknown_types']} is unknown (not in the live answer or the catalog)"
            facts["unknown"] = dict.fromkeys(
                ("fabric_cluster", "fabric_nodes", "fabric_attached_nodes", "gpus", "choice"), why
            )
        if unread:
            facts["unknown"] = facts["unknown"] | dict.fromkeys(
                ("networks", "network_names", "fabric_attached_nodes", "fabric_subnets", "fabric_subnet_names"),
                unread[0],
            )
        if unzoned:
            facts["unknown"] = facts["unknown"] | dict.fromkeys(("zones", "zone_names"), unzoned[0])
        return facts

    def _topology(self, cluster: Cluster) -> Facts:
        paths = [n.network_nodes for n in cluster.nodes]
        known = bool(paths) and all(p for p in paths)
        top = {p[0] for p in paths if p} if known else set()
        return {"known": known, "top_nodes": len(top), "top_node_names": ", ".join(sorted(top))}

    def _nvlink(self, cluster: Cluster, types: list[str]) -> Facts:
        """Where the cluster's nodes sit among multi-node NVLink domains, for accelerators that come in them: a
        domain holds `nvlink_domain_gpus` GPUs (72 on GB200/GB300 NVL72), so 18 nodes of 4."""
        per_domain = 0
        for name in types:
            cap = self.type_capability(name)
            if cap is None:
                continue
            accel = catalog.accelerator(cap.accelerator_name)
            if accel is not None and accel.nvlink_domain_gpus and 0 < cap.accelerators < accel.nvlink_domain_gpus:
                per_domain = accel.nvlink_domain_gpus // cap.accelerators
        if not per_domain:
            return {"applies": False, "known": False, "domains": 0, "needed": 0, "names": ""}
        cloud = support(cluster.provider)
        domains = [cloud.nvlink_domain(n) for n in cluster.nodes]
        known = all(domains)
        names = sorted({d for d in domains if d})
        needed = max(1, -(-cluster.size // per_domain)) if cluster.size else 0
        return {"applies": True, "known": known, "domains": len(names), "needed": needed, "names": ", ".join(names)}

    def _choice(self, cluster: Cluster, nodes: list[Facts]) -> Facts:
        """A multi-node accelerated cluster on a type without fabric, where its generation has one."""
        weaker = cluster.size > 1 and all(
            f["fabric"]["known"] and f["fabric"]["kind"] == "none" and f["accelerators"] > 0 for f in nodes
        )
        suggestion = ""
        if weaker:
            want = max(f["accelerators"] for f in nodes)
            options = [s for t in {f["instance_type"] for f in nodes} for s in self.siblings(cluster.provider, t)]
            same = [s for s in options if s.capability.accelerators >= want]
            pick = (same or options)[:1]
            suggestion = pick[0].instance_type if pick else ""
        return {"weaker": weaker and bool(suggestion), "suggestion": suggestion}
