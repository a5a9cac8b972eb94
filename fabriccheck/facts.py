"""Derived facts: the small dicts rule conditions read (`node`, `cluster`).

Rules stay one line because the arithmetic lives here: what fabric a type offers, how much of it is attached
(the provider decides), how many zones or networks a cluster spans. The neutral facts are the same on every
cloud; each provider adds its own (cloud.CloudSupport.schema). A fact that could not be collected is
"unknown" (or a `*_known` flag is false), never a silent default that would fire or hide a rule. A node that
a template or plan would launch gets the same facts as a running one, so one rule judges both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fabriccheck import catalog
from fabriccheck.cloud import FabricAttachment, Facts, support
from fabriccheck.clusters import Cluster
from fabriccheck.inventory import Inventory
from fabriccheck.model import Capability, Node, fact_key

T = TypeVar("T")
_UNSEEN: Any = object()

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


class FactBuilder:
    def __init__(self, inventory: Inventory) -> None:
        self.inventory = inventory
        self.collected = set(inventory.collected)
        self._capabilities: dict[str, Capability | None] = {}
        self._node_facts: dict[int, Facts] = {}
        self._attachments: dict[int, FabricAttachment] = {}
        self._siblings: dict[tuple[str, str], list[catalog.Sibling]] = {}
        self._cluster_facts: dict[str, Facts] = {}
        self._cache: dict[str, Any] = {}
        self._families: dict[tuple[str, str], str] = {}
        self._neutral: dict[tuple[Any, ...], Facts] = {}
        # Node facts by the node's shape (CloudSupport.node_shape): a pool's nodes share them.
        self._shapes: dict[int, int | None] = {}  # id(node) -> its shape's number
        self._numbers: dict[Any, int] = {}  # shape -> number
        self._by_shape: dict[int, Facts] = {}

    # ---------------------------------------------------------------------------------------- context

    def capability(self, node: Node) -> Capability | None:
        found = self._capabilities.get(node.instance_type or "", _UNSEEN)
        return self.type_capability(node.instance_type) if found is _UNSEEN else found

    def attachment(self, node: Node) -> FabricAttachment:
        found = self._attachments.get(id(node))
        if found is None:
            found = self._attachments[id(node)] = support(node.provider).fabric_attachment(node, self.capability(node))
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
        if cached is None:
            cached = self._node_facts[id(node)] = self._shaped_node(node)
        return cached

    def _shape(self, node: Node) -> int | None:
        """The number of the node's shape (CloudSupport.node_shape), or None when its facts are its own."""
        found: int | None = self._shapes.get(id(node), _UNSEEN)
        if found is _UNSEEN:
            # Facts a node's source left unknown are its own: such a node shares nothing.
            shape = None if node.unknown else support(node.provider).node_shape(node, self)
            # Numbered, so that later lookups hash an int rather than the shape's nested tuples.
            number = None if shape is None else self._numbers.setdefault(shape, len(self._numbers))
            found = self._shapes[id(node)] = number
        return found

    def _shaped_node(self, node: Node) -> Facts:
        """A node's facts: those of its shape (built once, from the first node of that shape) with its name."""
        shape = self._shape(node)
        if shape is None:
            return self._build_node(node)
        shared = self._by_shape.get(shape)
        if shared is None:
            shared = self._by_shape[shape] = self._build_node(node)
            return shared
        return {**shared, "id": node.id, "label": node.id}

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
        cloud = support(cluster.provider)
        # Nodes of one shape have the same facts but for their names: the sums and sets below are taken over the
        # distinct shapes, each counted as many times as it has nodes (a pool of 500 is read once).
        groups: dict[int, tuple[Facts, list[int]]] = {}
        fabric_subnets: set[str] = set()
        every: list[Facts] = []  # each node's, for the cloud's cluster facts
        for node in cluster.nodes:
            facts_of_node = self.node(node)
            every.append(facts_of_node)
            shape = self._shapes[id(node)]  # set by node()
            key = -1 - id(node) if shape is None else shape  # a node of its own (negative), or a shape's number
            group = groups.get(key)
            if group is None:
                groups[key] = (facts_of_node, [1])
                fabric_subnets.update(i.subnet for i in self.attachment(node).interfaces if i.subnet)
            else:
                group[1][0] += 1
        counted = [(facts, count[0]) for facts, count in groups.values()]
        distinct = [facts for facts, _ in counted]
        types = sorted({f["instance_type"] for f in distinct})
        fabric_nodes = sum(n for f, n in counted if f["fabric_expected"])
        size = 0 if cluster.spec else cluster.size
        # A node whose interfaces could not be read (a misshapen live answer) tells nothing of the cluster's
        # networks or attachment: the cluster facts drawn from them are counted without it and called unknown.
        unread = [f["unknown"]["network"] for f in distinct if "network" in f["unknown"]]
        read = [f for f in distinct if "network" not in f["unknown"]] if unread else distinct
        facts: Facts = {
            "id": cluster.id,
            "signal": cluster.signal,
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
            "zones": len({f["zone"] for f in distinct}),
            "zone_names": ", ".join(sorted({f["zone"] or "?" for f in distinct})),
            "networks": len({f["network"] for f in read}),
            "network_names": ", ".join(sorted({f["network"] or "?" for f in read})),
            "regions": len({f["region"] for f in distinct}),
            "fabric_subnets": len(fabric_subnets),
            "fabric_subnet_names": ", ".join(sorted(fabric_subnets)),
            "types": types,
            "type_names": ", ".join(types),
            "topology": self._topology(cluster),
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
        extra = cloud.cluster_facts(cluster.nodes, every, self)
        facts["unknown"] = facts["unknown"] | extra.pop("unknown", {})
        facts.update(extra)
        return facts

    def _topology(self, cluster: Cluster) -> Facts:
        paths = [n.network_nodes for n in cluster.nodes]
        known = bool(paths) and all(p for p in paths)
        top = {p[0] for p in paths if p} if known else set()
        return {"known": known, "top_nodes": len(top), "top_node_names": ", ".join(sorted(top))}

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
