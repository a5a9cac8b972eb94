"""What each cloud tells the neutral stages, and where to find it.

The neutral stages (catalog, clusters, facts, rule book, judge, penalty, flow, reports) never name a cloud: they ask the
node's provider, through `support(node.provider)`, how its type names parse, whether it should use a fabric,
how much of its fabric is attached, which signals group its nodes, and which extra facts its rules read. Each
provider implements `CloudSupport` in `fabriccheck/providers/<name>/support.py` (its declaration, provider.py, says
where); that module imports no SDK,
so judging a saved inventory never loads boto3 or the Azure and Google clients.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from fabriccheck.model import Capability, FabricKind, NetworkInterface, NetworkPath, Node, NodeShape
from fabriccheck.provider import clouds, declaration

if TYPE_CHECKING:
    from fabriccheck.inventory import Inventory

Facts = dict[str, Any]
T = TypeVar("T")


# The placement kind an earlier version recorded for a node's multi-node NVLink domain (now model.Topology's
# nvlink_domain): still read from a saved inventory.
NVLINK_DOMAIN = "nvlink-domain"


@dataclass(frozen=True)
class TagSignal:
    """Nodes whose tags (labels) carry all of `keys` with the same values train together; with `within`, only
    those that also share their placement of that kind (see model.Placement), when they have one: the tag names a
    group its scheduler splits along those placements (a CycleCloud node array over several scale sets).
    `label` is for people only (the report's grouped_by); what the program needs of the group is typed beside it:
    `network_path`, the path its nodes' NCCL sockets take, and `slug`, the part of a cluster id that names the
    signal (baselines and waivers key on ids: a slug is never reworded; a renamed one keeps its old slugs in
    `former_slugs`, which clusters.current_id maps to it, so old ids in baselines and waivers still match)."""

    keys: tuple[str, ...]
    label: str
    network_path: NetworkPath
    within: str | None = None
    slug: str = field(kw_only=True)
    former_slugs: tuple[str, ...] = field(default=(), kw_only=True)


@dataclass(frozen=True)
class PlacementSignal:
    """Nodes with the same placement of `kind` (see model.Placement) train together; `network_path`, `slug` and
    `former_slugs` as TagSignal's."""

    kind: str
    label: str
    network_path: NetworkPath
    slug: str = field(kw_only=True)
    former_slugs: tuple[str, ...] = field(default=(), kw_only=True)


Signal = TagSignal | PlacementSignal


@dataclass(frozen=True)
class FabricAttachment:
    """How much of a node's fabric is there: `attached` fabric NICs or ports in use, on `paths` distinct
    cards or networks, carried by `interfaces` (empty where the fabric is not a NIC, as Azure InfiniBand)."""

    attached: int
    paths: int
    interfaces: tuple[NetworkInterface, ...] = ()


@dataclass(frozen=True)
class HostInstance:
    """A cloud instance that members of a scheduler's cluster run on: `node`, as the scheduler names it; `cloud`,
    `instance` and `account` as that cloud's report names it; `members`, the cluster's nodes on it (a Kubernetes
    node's pods, a Slurm node itself). What joins a Kubernetes or Slurm report to a cloud report of the estate."""

    node: str
    cloud: str
    instance: str
    account: str | None
    members: tuple[str, ...]


class FactContext(Protocol):
    """What provider fact hooks may read: the inventory, capabilities, and whether a fact was collected."""

    inventory: Inventory

    def capability(self, shape: NodeShape) -> Capability | None: ...

    def type_capability(self, instance_type: str | None) -> Capability | None:
        """An instance type's capability as the catalog or the live answer gives it (no GPUs attached by hand)."""
        ...

    def has(self, shape: NodeShape, fact: str) -> bool: ...

    def cached(self, key: str, build: Callable[[], T]) -> T:
        """A value built once per run (indexes of a provider's namespace)."""
        ...


@dataclass(frozen=True)
class FactSchema:
    """The facts a provider adds to the neutral ones, as dotted paths with one line each: the engine refuses a
    rule that reads any other fact, and a test holds the built facts to this list."""

    node: dict[str, str] = field(default_factory=dict)
    cluster: dict[str, str] = field(default_factory=dict)
    naming: frozenset[str] = frozenset()  # node facts that name the node (CloudSupport.naming_facts)


_SIZE = re.compile(r"(\d+)")


class CloudSupport:
    """One cloud's answers. Subclasses override what differs; the defaults are the common case."""

    name: str = ""
    # Strongest grouping signal first. The user's --cluster-tag comes before all of them.
    signals: tuple[Signal, ...] = ()
    # Tag (key, value) pairs that mark a node that never trains with others (a scheduler's head node).
    alone_tags: tuple[tuple[str, str], ...] = ()
    schema: FactSchema = FactSchema()
    # The tag (label) by which users say what a group of nodes is: training, inference or ignore.
    role_tag: str = "fabriccheck:role"
    # The kinds of facts its collector records in Inventory.collected (model.fact_key); examples in rule
    # files count all of them as collected unless they say otherwise.
    collected_facts: tuple[str, ...] = ()
    # The calls that publish its nodes' topology (model.Topology) apart from the nodes themselves: when one failed in a
    # scope (access denied), the topology of that scope's nodes is unknown, and the rules that read it are not judged.
    topology_calls: tuple[str, ...] = ()

    # ---------------------------------------------------------------------------------------- naming

    def family(self, instance_type: str) -> str:
        return instance_type

    def generation(self, instance_type: str) -> str:
        """Types that can stand in for each other (same generation and accelerator), for suggestions."""
        return self.family(instance_type)

    def size_rank(self, instance_type: str) -> int:
        """Smaller sizes sort first when suggesting a type."""
        match = _SIZE.search(instance_type)
        return int(match.group(1)) if match else 10_000

    def owns(self, instance_type: str) -> bool:
        """Whether a type name is this cloud's (catalog rows carry their provider; this guards free text)."""
        return True

    # ---------------------------------------------------------------------------------------- fabric

    def default_role(self, instance_type: str) -> str | None:
        """'inference' for types built only to serve models (their groups are no training clusters)."""
        return None

    def workload_role(self, shapes: Iterable[NodeShape]) -> tuple[str, str] | None:
        """(role, why) when what the nodes run says they are no training cluster (a Kubernetes Deployment serves),
        else None. The user's role tag comes first."""
        return None

    def is_hpc(self, instance_type: str) -> bool:
        """CPU types built for tightly coupled HPC jobs, which use the fabric without accelerators."""
        return False

    def named_capability(self, instance_type: str) -> Capability | None:
        """What the type's name alone says (a CPU family has no fabric), for a type no answer or table holds."""
        return None

    def fabric_expected(self, instance_type: str, cap: Capability | None) -> bool:
        """Worth a fabric: a type that has one and trains (accelerators) or runs HPC jobs. Types that merely
        support a fabric (network-optimized CPU fleets) are not flagged."""
        return bool(cap and cap.fabric is not FabricKind.NONE and (cap.accelerators > 0 or self.is_hpc(instance_type)))

    def expects_fabric(self, shape: NodeShape, cap: Capability | None) -> bool:
        """Whether a node of this shape should use a fabric: its type's answer, unless where it runs rules it out."""
        return self.fabric_expected(shape.instance_type or "", cap)

    def fabric_attachment(self, shape: NodeShape, cap: Capability | None) -> FabricAttachment:
        raise NotImplementedError

    # ---------------------------------------------------------------------------------------- facts

    def resolve(self, nodes: list[Node], inventory: Inventory) -> None:
        """Copy onto each node's shape what this cloud reads from the inventory's other resources by the node's own
        ids (Azure: each NIC's record, the VM's extensions), so that its facts are a function of its shape."""

    def node_facts(self, shape: NodeShape, context: FactContext, attachment: FabricAttachment) -> Facts:
        """This cloud's facts of a node of `shape`, whose fabric attachment (`fabric_attachment`) is `attachment`: a
        function of the shape (and of the inventory's resources it names), shared by every node of the shape. May
        hold `unknown`: facts it could only call unknown, with why."""
        return {}

    def naming_facts(self, node: Node, shared: Facts) -> Facts:
        """Facts that name one node (its NICs by their ids), beside those of its shape (`shared`): the facts of
        `schema.naming`, and `unknown` when why one is unknown names the node's own resources."""
        return {}

    def notes(self, inventory: Inventory) -> list[str]:
        """What the report should say about this cloud's collection (facts that fall back or were skipped)."""
        return []

    def nvlink_domain(self, node: Node) -> str | None:
        """The multi-node NVLink domain (a GB200/GB300 NVL72 rack) the node sits in, when its publisher told it (its
        topology, or a saved inventory's placement of kind `nvlink-domain`). None: not told."""
        if node.topology is not None and node.topology.nvlink_domain:
            return node.topology.nvlink_domain
        return node.placed_by(NVLINK_DOMAIN)

    def nvlink_domain_gpus(self, instance_type: str, catalog_gpus: int) -> int:
        """GPUs one multi-node NVLink domain of nodes of this type holds, as far as this cloud sells it, where its
        nodes do not publish it (model.Topology.nvlink_domain_gpus): the accelerator table's (72 for NVL72) unless
        the cloud sells smaller domains it does not tell apart."""
        return catalog_gpus

    def host_instances(self, clusters: list[list[Node]], inventory: Inventory) -> list[list[HostInstance]]:
        """The cloud instances each cluster (its nodes) runs on, in the clusters' order, as far as its source told (a
        scheduler's cluster: a cloud's nodes are instances themselves, and run on none). Asked once a run for all
        of a provider's clusters, so a look-up over the inventory is built once, not once a cluster."""
        return [[] for _ in clusters]

    def cluster_facts(self, nodes: list[Node], node_facts: list[Facts], context: FactContext) -> Facts:
        """A cluster's facts of this cloud. `node_facts` holds the facts of each node's shape, in order (shared by
        the nodes of one shape, without their names): a node's name is read from `nodes`."""
        return {}


def resolve(inventory: Inventory) -> None:
    """Every node's and spec's shape made whole from the inventory's other resources (CloudSupport.resolve): what
    every source does once it has read all of its answers. Doing it again changes nothing."""
    by_provider: dict[str, list[Node]] = {}
    for node in [*inventory.nodes, *inventory.specs]:
        by_provider.setdefault(node.provider, []).append(node)
    for provider, nodes in by_provider.items():
        support(provider).resolve(nodes, inventory)


@functools.cache
def support(provider: str) -> CloudSupport:
    """The provider's support object, imported on first use (its declaration says where)."""
    found: CloudSupport = declaration(provider).module("support").SUPPORT
    return found


class HostedSupport(CloudSupport):
    """A provider whose nodes are a cloud's instances seen through a scheduler (Kubernetes, Slurm): what an instance
    type is called, its generation and whether it is an HPC type are the owning cloud's answers."""

    def cloud_of(self, instance_type: str) -> CloudSupport | None:
        """The cloud that sells `instance_type`, if any does."""
        for name in (d.name for d in clouds()):
            cloud = support(name)
            if cloud.owns(instance_type):
                return cloud
        return None

    def family(self, instance_type: str) -> str:
        cloud = self.cloud_of(instance_type)
        return cloud.family(instance_type) if cloud else instance_type

    def generation(self, instance_type: str) -> str:
        cloud = self.cloud_of(instance_type)
        return cloud.generation(instance_type) if cloud else instance_type

    def owns(self, instance_type: str) -> bool:
        return False  # a node's type is its cloud's

    def is_hpc(self, instance_type: str) -> bool:
        cloud = self.cloud_of(instance_type)
        return cloud.is_hpc(instance_type) if cloud else False
