"""Group nodes that train together.

A finding only matters for nodes that exchange collective traffic. Each node gets the strongest grouping
signal it carries: the user's --cluster-tag first, then its provider's signals in the provider's order
(scheduler and orchestrator tags, then placement). Every key carries the node's provider and account, and all
but the user's tag its region: two accounts that both have a group named `trainers` are two clusters. A node
with no signal trains alone. A node that a template or plan would launch forms a cluster of its own kind
(`spec`), judged as the group it would launch.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from fabriccheck.cloud import PlacementSignal, TagSignal, support
from fabriccheck.inventory import Inventory
from fabriccheck.model import PROVIDERS, NetworkPath, Node, NodeShape

# Only these are training nodes; stopped, stopping, shutting-down and terminated ones are counted, not judged.
JUDGED_STATES = frozenset({"pending", "running", "planned"})  # planned: a Terraform plan would create it
TRAINING, INFERENCE, IGNORE = "training", "inference", "ignore"
ROLES = (TRAINING, INFERENCE, IGNORE)


@dataclass
class Cluster:
    id: str
    provider: str
    account: str
    signal: str  # what grouped these nodes, for the report (words for people: nothing reads it)
    nodes: list[Node] = field(default_factory=list)
    spec: bool = False  # what one template or plan would launch, not nodes that run
    role: str = TRAINING  # training | inference | ignore
    role_reason: str = ""  # why it is not judged as training
    # The path its nodes' NCCL sockets take, as the signal that grouped them declares it (the penalty reads it).
    network_path: NetworkPath = NetworkPath.HOST

    @property
    def judged(self) -> bool:
        return self.role == TRAINING

    @property
    def size(self) -> int:
        return len(self.nodes)


_Signal = tuple[tuple[str, ...], frozenset[str], str | None, str, str, str | None, NetworkPath]
# (cluster id, what grouped it in words, the path its sockets take)
Group = tuple[str, str, NetworkPath]


@functools.cache
def _signals(provider: str) -> tuple[_Signal, ...]:
    """The provider's signals as (tag keys, the same as a set, placement kind, slug, label, placement kind a tag's
    group is split along, network path), strongest first."""
    return tuple(
        (
            signal.keys,
            frozenset(signal.keys),
            None,
            signal.slug,
            signal.label,
            signal.within,
            signal.network_path,
        )
        if isinstance(signal, TagSignal)
        else ((), frozenset(), signal.kind, signal.slug, signal.label, None, signal.network_path)
        for signal in support(provider).signals
        if isinstance(signal, TagSignal | PlacementSignal)
    )


@functools.cache
def _grouping(provider: str) -> tuple[frozenset[tuple[str, str]], tuple[_Signal, ...]]:
    """The provider's (tag, value) pairs that mark a node alone, and its signals: looked up once per provider,
    not once per node (a fleet has thousands)."""
    return frozenset(support(provider).alone_tags), _signals(provider)


@functools.cache
def _renamed(provider: str) -> dict[str, str]:
    """The provider's former signal slugs, each to the slug that replaced it."""
    return {old: signal.slug for signal in support(provider).signals for old in signal.former_slugs}


def current_id(cluster_id: str) -> str | None:
    """The id now given to the cluster an earlier version called `cluster_id` (or a glob over such ids, as
    `aws:*:eks-node-group/*`), when a signal's slug was renamed since (TagSignal.former_slugs); None when it names
    no renamed slug. Ids are `provider:account:region:slug/name...`: the slug is the last `:` part before the
    first `/`, and only it is mapped (a node alone has no `/`; a --cluster-tag id's `tag` is no signal's slug)."""
    head, sep, name = cluster_id.partition("/")
    prefix, _, slug = head.rpartition(":")
    provider = head.split(":", 1)[0]
    new = _renamed(provider).get(slug) if sep and prefix and provider in PROVIDERS else None
    return f"{prefix}:{new}/{name}" if new else None


def _alone(node: Node) -> Group:
    return f"{node.provider}:{node.account}:{node.region}:{node.id}", "single node", NetworkPath.HOST


def group_of(shape: NodeShape, cluster_tag: str | None) -> Group | None:
    """(cluster id, what grouped it, its network path) for the nodes of `shape`, or None when such a node trains
    alone. A user's tag and a Terraform resource say nothing of pods: their nodes' sockets take the host's path."""
    tags = shape.tags
    if cluster_tag and cluster_tag in tags:
        # A user's tag names a job across regions, which is exactly when a region split must show.
        tagged = f"{shape.provider}:{shape.account}:tag/{cluster_tag}={tags[cluster_tag]}"
        return tagged, f"tag {cluster_tag}", NetworkPath.HOST
    here = f"{shape.provider}:{shape.account}:{shape.region}"
    alone, signals = _grouping(shape.provider)
    if tags and alone and not tags.items().isdisjoint(alone):
        return None
    for keys, keyset, kind, slug, label, within, path in signals:
        if kind is None:
            if tags and tags.keys() >= keyset:
                name = tags[keys[0]] if len(keys) == 1 else "/".join([tags[k] for k in keys])
                part = shape.placed_by(within) if within else None
                if part and within:  # one placement of the tag's group: a cluster of its own
                    return f"{here}:{slug}/{name}:{within}/{part}", f"{label}, one {within.replace('-', ' ')}", path
                return f"{here}:{slug}/{name}", label, path
        else:
            placed = shape.placed_by(kind)
            if placed:
                return f"{here}:{slug}/{placed}", label, path
    if shape.origin == "plan" and shape.spec is not None:
        # The instances of one Terraform resource (count, for_each) are one group the configuration launches.
        return f"{here}:terraform/{shape.spec.name}", "Terraform resource", NetworkPath.HOST
    return None


def build_clusters(inventory: Inventory, cluster_tag: str | None = None) -> list[Cluster]:
    """Clusters of running (and pending) nodes, sorted by id, each with its role."""
    groups: dict[str, Cluster] = {}
    grouped: dict[NodeShape, Group | None] = {}  # the nodes of a pool share their group
    for node in inventory.nodes:
        if node.state not in JUDGED_STATES:
            continue
        shape = node.shape
        if shape in grouped:
            found = grouped[shape]
        else:
            found = grouped[shape] = group_of(shape, cluster_tag)
        key, signal, path = found or _alone(node)
        cluster = groups.get(key)
        if cluster is None:
            cluster = groups[key] = Cluster(key, node.provider, node.account, signal, network_path=path)
        cluster.nodes.append(node)
    for cluster in groups.values():
        cluster.role, cluster.role_reason = _role(cluster)
    return sorted(groups.values(), key=lambda c: c.id)


def _role(cluster: Cluster) -> tuple[str, str]:
    """The user's role tag wins (training first, should nodes disagree); else inference-only types are no
    training cluster. A tag value that is not a role is judged as training (flow notes it)."""
    cloud = support(cluster.provider)
    shapes = {node.shape for node in cluster.nodes}
    said = {shape.tags[cloud.role_tag].strip().lower() for shape in shapes if cloud.role_tag in shape.tags}
    for role in ROLES:
        if role in said:
            return role, "" if role == TRAINING else f"tagged {cloud.role_tag}={role}"
    if said:
        return TRAINING, ""
    found = cloud.workload_role(shapes)
    if found is not None:
        return found
    types = sorted({shape.instance_type or "" for shape in shapes})
    if all(cloud.default_role(t) == INFERENCE for t in types):
        return INFERENCE, (
            f"{', '.join(types)} is an inference type; tag {cloud.role_tag}=training to judge it as training"
        )
    return TRAINING, ""


def spec_clusters(inventory: Inventory) -> list[Cluster]:
    """One cluster per spec: the group a template or plan would launch, with its role (the template's role tag,
    or its type's), as a running cluster has."""
    specs = [
        Cluster(
            id=f"{spec.provider}:{spec.account}:{spec.region}:{spec.spec.kind if spec.spec else 'spec'}/{spec.id}",
            provider=spec.provider,
            account=spec.account,
            signal=spec.spec.kind if spec.spec else "spec",
            nodes=[spec],
            spec=True,
        )
        for spec in inventory.specs
    ]
    for cluster in specs:
        cluster.role, cluster.role_reason = _role(cluster)
    return specs
