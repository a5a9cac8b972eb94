"""Derived facts: the small dicts rule conditions read (`node`, `cluster`).

Rules stay one line because the arithmetic lives here: what fabric a type offers, how much of it is attached
(the provider decides), how many zones or networks a cluster spans. The neutral facts are the same on every
cloud; each provider adds its own (cloud.CloudSupport.schema). A fact that could not be collected is
"unknown" (or a `*_known` flag is false), never a silent default that would fire or hide a rule. A node that
a template or plan would launch gets the same facts as a running one, so one rule judges both.

A node's facts are a function of its shape (model.NodeShape) and of the facts its source left unknown, but for
its name: they are built once per such key (`FactKey`) and shared by every node that has it, read-only. A node's
own facts add its name (`node`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

from fabriccheck import catalog
from fabriccheck.cloud import FabricAttachment, Facts, support
from fabriccheck.clusters import Cluster
from fabriccheck.inventory import Inventory
from fabriccheck.model import Capability, Node, NodeShape, fact_key

T = TypeVar("T")

# The neutral facts, as dotted paths (the rule book refuses a rule that reads anything else).
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
    "topology": "network topology the cloud publishes (model.Topology), where collected",
    "topology.known": "every node's topology was collected",
    "topology.source": "who published it (DescribeInstanceTopology, physicalHostTopology, node labels ...)",
    "topology.top_nodes": "distinct top-layer network nodes",
    "topology.top_node_names": "their names",
    "topology.split_depth": "the coarsest level (1 = the top) at which the nodes part, 0 when they share every level",
    "topology.split_level": "what the cloud calls that level (layer-1, cluster, block, subblock ...), or empty",
    "topology.parts": "distinct network nodes (blocks ...) at that level",
    "topology.part_names": "their names",
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
# The node facts that differ between the nodes of one shape: their names (and a provider's naming facts).
NAMING_FACTS = frozenset({"id", "label"})

# Node facts that come from the type's capability: unknown with it.
_CAPABILITY_FACTS = ("fabric", "fabric_expected", "accelerators", "accelerator")
_CAPABILITY_CLUSTER_FACTS = ("fabric_cluster", "fabric_nodes", "fabric_attached_nodes", "gpus", "choice")

# What a node's facts but its name are a function of: its shape and the facts its source left unknown, with why.
FactKey = tuple[NodeShape, tuple[tuple[str, str], ...]]


def fact_key_of(node: Node) -> FactKey:
    return (node.shape, tuple(sorted(node.unknown.items())) if node.unknown else ())


def described(provider: str) -> tuple[dict[str, str], dict[str, str]]:
    """Every fact path a rule of `provider` may read, with its meaning: (node facts, cluster facts)."""
    extra = support(provider).schema
    return NODE_FACTS | extra.node, CLUSTER_FACTS | extra.cluster


def schema(provider: str) -> tuple[set[str], set[str]]:
    """Every fact path a rule of `provider` may read: (node facts, cluster facts)."""
    node, cluster = described(provider)
    return set(node), set(cluster)


def naming(provider: str) -> frozenset[str]:
    """The node facts of `provider` that name the node: they differ between the nodes of one shape."""
    return NAMING_FACTS | support(provider).schema.naming


class FactBuilder:
    """The facts of one inventory's nodes and clusters, each built once per run and shared read-only."""

    def __init__(self, inventory: Inventory) -> None:
        self.inventory = inventory
        self.collected = set(inventory.collected)
        self._capabilities: dict[str, Capability | None] = {}
        self._attached: dict[str, Capability] = {}  # a type's capability with a node's attached GPUs
        self._nodes: dict[FactKey, tuple[Facts, FabricAttachment]] = {}  # a key's facts, and its fabric attachment
        self._kinds: dict[FactKey, int] = {}  # a key -> the number of its facts' value
        self._values: dict[Any, int] = {}  # a facts' value (frozen) -> its number
        self._clusters: dict[tuple[str, bool], Facts] = {}
        self._siblings: dict[tuple[str, str], list[catalog.Sibling]] = {}
        self._cache: dict[str, Any] = {}

    # ---------------------------------------------------------------------------------------- context

    def capability(self, shape: NodeShape) -> Capability | None:
        """The capability of the shape's type, with the GPUs attached to the node when it says (GCP N1)."""
        cap = self.type_capability(shape.instance_type)
        if cap is None or shape.accelerators is None:
            return cap
        key = f"{shape.instance_type}+{shape.accelerators}x{shape.accelerator}"
        found = self._attached.get(key)
        if found is None:
            update = {"accelerators": shape.accelerators, "accelerator_name": shape.accelerator}
            found = self._attached[key] = cap.model_copy(update=update)
        return found

    def type_capability(self, instance_type: str | None) -> Capability | None:
        if not instance_type:
            return None
        if instance_type not in self._capabilities:
            self._capabilities[instance_type] = catalog.resolve(instance_type, self.inventory.capabilities)
        return self._capabilities[instance_type]

    def attachment(self, key: FactKey) -> FabricAttachment:
        """The fabric attachment of the nodes of `key`, as their provider decides it."""
        return self._node(key)[1]

    def siblings(self, provider: str, instance_type: str) -> list[catalog.Sibling]:
        key = (provider, instance_type)
        if key not in self._siblings:
            self._siblings[key] = catalog.fabric_siblings(support(provider), instance_type, self.inventory.capabilities)
        return self._siblings[key]

    def has(self, shape: NodeShape, fact: str) -> bool:
        return fact_key(shape.provider, shape.account, shape.region, fact) in self.collected

    def cached(self, key: str, build: Callable[[], T]) -> T:
        """A value built once per run (indexes of a provider's namespace)."""
        if key not in self._cache:
            self._cache[key] = build()
        value: T = self._cache[key]
        return value

    # ---------------------------------------------------------------------------------------- node

    def node(self, node: Node) -> Facts:
        """The node's own facts: those of its key, and its names."""
        shared = self.of(fact_key_of(node))
        own = support(node.provider).naming_facts(node, shared)
        facts: Facts = {**shared, "id": node.id, "label": node.id, **own}
        if "unknown" in own:
            facts["unknown"] = shared["unknown"] | own["unknown"]
        return facts

    def of(self, key: FactKey) -> Facts:
        """The facts every node with this key shares (their `id` and `label` are the empty string). Read-only."""
        return self._node(key)[0]

    def _node(self, key: FactKey) -> tuple[Facts, FabricAttachment]:
        found = self._nodes.get(key)
        if found is None:
            shape = key[0]
            attachment = support(shape.provider).fabric_attachment(shape, self.capability(shape))
            found = self._nodes[key] = (self._build(shape, key[1], attachment), attachment)
        return found

    def kind(self, key: FactKey) -> int:
        """The number of the value of the facts of `key`: keys whose facts are equal (the pools of two placement
        groups alike) have one, so what follows from the facts alone (a rule's verdict) is worked out once."""
        found = self._kinds.get(key)
        if found is None:
            value = frozen(self.of(key))
            found = self._kinds[key] = self._values.setdefault(value, len(self._values))
        return found

    def _build(self, shape: NodeShape, unknown: tuple[tuple[str, str], ...], attachment: FabricAttachment) -> Facts:
        cloud = support(shape.provider)
        cap = self.capability(shape)
        instance_type = shape.instance_type or ""
        primary = shape.primary_interface
        spec = shape.spec
        why_unknown: dict[str, str] = {}
        if cap is None and instance_type:
            why = f"the capability of {instance_type} is unknown (not in the live answer or the catalog)"
            why_unknown = dict.fromkeys(_CAPABILITY_FACTS, why)
        facts: Facts = {
            "id": "",
            "label": "",
            "origin": shape.origin,
            "spec": {
                "kind": spec.kind if spec else "",
                "name": spec.name if spec else "",
                "version": (spec.version or "") if spec else "",
                "role": (spec.role or "") if spec else "",
            },
            "account": shape.account,
            "instance_type": instance_type,
            "family": cloud.family(instance_type) if instance_type else "",
            "region": shape.region,
            "zone": shape.zone or "",
            "network": (primary.network if primary else None) or "",
            "accelerators": cap.accelerators if cap else 0,
            "accelerator": (cap.accelerator_name if cap else None) or "",
            "fabric_expected": cloud.expects_fabric(shape, cap),
            "fabric": {
                "kind": cap.fabric.value if cap else "unknown",
                "known": cap is not None,
                "max": cap.fabric_interfaces if cap else 0,
                "attached": attachment.attached,
                "cards": attachment.paths,
                "gbps": (cap.fabric_gbps or 0.0) if cap else 0.0,
            },
            "interfaces": len(shape.interfaces),
            "public_ip_interfaces": sum(1 for i in shape.interfaces if i.public_ip),
        }
        extra = cloud.node_facts(shape, self, attachment)
        # Facts that could only be called unknown, with why; a rule reading one is reported as not judged.
        facts["unknown"] = why_unknown | extra.pop("unknown", {}) | dict(unknown)
        facts.update(extra)
        return facts

    # ---------------------------------------------------------------------------------------- cluster

    def cluster(self, cluster: Cluster) -> Facts:
        key = (cluster.id, cluster.spec)
        found = self._clusters.get(key)
        if found is None:
            found = self._clusters[key] = self._build_cluster(cluster)
        return found

    def _build_cluster(self, cluster: Cluster) -> Facts:
        keys = list(map(fact_key_of, cluster.nodes))
        # Nodes of one key have the same facts: each key's are looked up once, and counted as many times as it has
        # nodes (a pool of 500 is read once), in the order the keys first appear.
        counted = Counter(keys)
        facts_of = {key: self.of(key) for key in counted}
        every = [facts_of[key] for key in keys]
        facts = self._neutral_cluster(cluster, counted, facts_of)
        facts["id"] = cluster.id
        facts["signal"] = cluster.signal
        facts["topology"] = _topology(cluster)
        facts["nvlink"] = self._nvlink(cluster, facts["types"], facts["gpus"])
        unpublished = self._topology_failed(cluster)
        if unpublished:
            # The call that publishes topology failed for these nodes: what it would tell is unknown, never "not split"
            read = ("topology", "nvlink") if facts["nvlink"]["applies"] else ("topology",)
            facts["unknown"] = facts["unknown"] | dict.fromkeys(read, unpublished)
        extra = support(cluster.provider).cluster_facts(cluster.nodes, every, self)
        facts["unknown"] = facts["unknown"] | extra.pop("unknown", {})
        facts.update(extra)
        return facts

    def _neutral_cluster(self, cluster: Cluster, counted: Counter[FactKey], facts_of: dict[FactKey, Facts]) -> Facts:
        """A cluster's neutral facts but its id, signal, topology and NVLink domains (whose places they keep, to be
        filled), from its nodes' distinct keys (each with its number of nodes) and their facts."""
        distinct = list(facts_of.values())
        weighted = [(facts_of[key], count) for key, count in counted.items()]
        fabric_subnets = {i.subnet for key in counted for i in self.attachment(key).interfaces if i.subnet}
        types = sorted({f["instance_type"] for f in distinct})
        fabric_nodes = sum(n for f, n in weighted if f["fabric_expected"])
        size = 0 if cluster.spec else cluster.size
        # A node whose interfaces could not be read (a misshapen live answer) tells nothing of the cluster's
        # networks or attachment: the cluster facts drawn from them are counted without it and called unknown.
        unread = [f["unknown"]["network"] for f in distinct if "network" in f["unknown"]]
        read = [f for f in distinct if "network" not in f["unknown"]]
        # Likewise a node whose zone its source could not tell (a plan's subnet that the plan does not create).
        unzoned = [f["unknown"]["zone"] for f in distinct if "zone" in f["unknown"]]
        zoned = [f for f in distinct if "zone" not in f["unknown"]]
        unknown_types = ", ".join(sorted({f["instance_type"] for f in distinct if not f["fabric"]["known"]}))
        facts: Facts = {
            "id": "",
            "signal": "",
            "size": size,
            # A template or plan launches a group: judge it as the multi-node cluster it is meant to be.
            "multi_node": cluster.spec or cluster.size > 1,
            "spec": cluster.spec,
            "gpus": sum(f["accelerators"] * n for f, n in weighted),
            # A cluster whose fabric matters: two or more nodes that have (or should have) a fabric.
            "fabric_cluster": bool(fabric_nodes) if cluster.spec else cluster.size > 1 and fabric_nodes > 1,
            "fabric_nodes": fabric_nodes,
            "fabric_attached_nodes": sum(
                n for f, n in weighted if f["fabric"]["attached"] > 0 or "fabric" in f["unknown"]
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
            "unknown_types": unknown_types,
            "unknown": {},
        }
        if unknown_types:
            why = f"the capability of {unknown_types} is unknown (not in the live answer or the catalog)"
            facts["unknown"] = dict.fromkeys(_CAPABILITY_CLUSTER_FACTS, why)
        if unread:
            facts["unknown"] = facts["unknown"] | dict.fromkeys(
                ("networks", "network_names", "fabric_attached_nodes", "fabric_subnets", "fabric_subnet_names"),
                unread[0],
            )
        if unzoned:
            facts["unknown"] = facts["unknown"] | dict.fromkeys(("zones", "zone_names"), unzoned[0])
        return facts

    def _nvlink(self, cluster: Cluster, types: list[str], gpus: int) -> Facts:
        """Where the cluster's nodes sit among multi-node NVLink domains, for accelerators that come in them: a
        domain holds `nvlink_domain_gpus` GPUs (72 on GB200/GB300 NVL72: 18 nodes of 4), so the cluster's GPUs (a
        Kubernetes workload's pods may take part of a node each) need that many domains at least."""
        domain_gpus = 0
        cloud = support(cluster.provider)
        for name in types:
            cap = self.type_capability(name)
            if cap is None:
                continue
            accel = catalog.accelerator(cap.accelerator_name)
            if accel is not None and accel.nvlink_domain_gpus and 0 < cap.accelerators < accel.nvlink_domain_gpus:
                domain_gpus = cloud.nvlink_domain_gpus(name, accel.nvlink_domain_gpus)
        if not domain_gpus:
            return {"applies": False, "known": False, "domains": 0, "needed": 0, "names": ""}
        published = {n.topology.nvlink_domain_gpus for n in cluster.nodes if n.topology is not None}
        if len(published) == 1 and None not in published:  # the publisher's own size (an UltraServer of 36 GPUs)
            domain_gpus = published.pop() or domain_gpus
        domains = [cloud.nvlink_domain(n) for n in cluster.nodes]
        names = sorted({d for d in domains if d})
        needed = max(1, -(-gpus // domain_gpus)) if cluster.size else 0
        known = all(domains)
        return {"applies": True, "known": known, "domains": len(names), "needed": needed, "names": ", ".join(names)}

    def _topology_failed(self, cluster: Cluster) -> str | None:
        """Why the topology of the cluster's nodes is unknown, when the call that publishes it failed in their
        scope (CloudSupport.topology_calls: EC2 DescribeInstanceTopology denied), else None."""
        calls = support(cluster.provider).topology_calls
        if not calls:
            return None
        failed = self.cached(
            f"topology-failed:{cluster.provider}",
            lambda: {
                (e.account, e.region): e
                for e in self.inventory.errors
                if e.provider == cluster.provider and e.call in calls
            },
        )
        for account, region in {(n.account, n.region) for n in cluster.nodes}:
            error = failed.get((account, region))
            if error is not None:
                return f"{error.call} failed in {account} {region} ({error.code}): the nodes' topology is unknown"
        return None

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


def frozen(value: Any) -> Any:
    """A fact's value as a dict key. True and 1 are equal in Python but not in CEL: bools keep their type."""
    kind = type(value)
    if kind is str or kind is int or kind is float or value is None:
        return value
    if kind is bool:
        return (bool, value)
    if kind is dict:  # most values are plain: taken as they are, without a call each
        return (dict, *[(k, v if type(v) in _PLAIN else frozen(v)) for k, v in value.items()])
    if kind is list:
        return (list, *[v if type(v) in _PLAIN else frozen(v) for v in value])
    return (kind, value)


_PLAIN = frozenset({str, int, float, type(None)})  # the values frozen() keeps as they are


def _topology(cluster: Cluster) -> Facts:
    """Where the cluster's nodes sit in the network their cloud publishes (model.Topology): the coarsest level at
    which they part, and the network nodes (blocks ...) they part into there. Unknown unless every node's is known."""
    published = [n.topology for n in cluster.nodes]
    paths = [t.levels if t is not None else () for t in published]
    if not paths or not all(paths):
        return {
            "known": False, "source": "", "top_nodes": 0, "top_node_names": "",
            "split_depth": 0, "split_level": "", "parts": 0, "part_names": "",
        }  # fmt: skip
    top = {p[0] for p in paths}
    depth = min(map(len, paths))
    split = next((i for i in range(depth) if len({p[i] for p in paths}) > 1), None)
    parts = sorted({p[split] for p in paths}) if split is not None else []
    names = next((t.level_names for t in published if t is not None and t.level_names), ())
    return {
        "known": True,
        "source": ", ".join(sorted({t.source for t in published if t is not None})),
        "top_nodes": len(top),
        "top_node_names": ", ".join(sorted(top)),
        "split_depth": split + 1 if split is not None else 0,
        "split_level": names[split] if split is not None and split < len(names) else "",
        "parts": len(parts),
        "part_names": ", ".join(parts),
    }
