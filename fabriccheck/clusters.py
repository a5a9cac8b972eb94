"""Group nodes that train together.

A finding only matters for nodes that exchange collective traffic. Each node gets the strongest grouping
signal it carries, in this order: the user's --cluster-tag; scheduler and orchestrator tags (ParallelCluster
queue, AWS PCS node group, EKS node group, Karpenter node pool, Auto Scaling group); the placement group;
the Capacity Block or capacity reservation. The placement group is deliberately below the scheduler tags:
it is one of the things being judged, so a node group split over two placement groups must stay one
cluster for the split to be seen. A node with no signal trains alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fabriccheck.model import Inventory, Node

# (tag keys that together name the group, human label). Tag names as each tool writes them.
SCHEDULER_TAGS: tuple[tuple[tuple[str, ...], str], ...] = (
    # AWS ParallelCluster v3 compute nodes: one queue's compute resource trains together.
    (("parallelcluster:cluster-name", "parallelcluster:queue-name"), "ParallelCluster queue"),
    # AWS Parallel Computing Service compute node groups.
    (("aws:pcs:compute-node-group-id",), "AWS PCS node group"),
    # EKS managed node groups.
    (("eks:cluster-name", "eks:nodegroup-name"), "EKS node group"),
    # Karpenter-launched nodes.
    (("karpenter.sh/nodepool",), "Karpenter node pool"),
    # Any Auto Scaling group (self-managed node groups, Slurm fleets built on ASGs).
    (("aws:autoscaling:groupName",), "Auto Scaling group"),
)


@dataclass
class Cluster:
    id: str
    provider: str
    signal: str  # what grouped these nodes, for the report
    nodes: list[Node] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.nodes)


def _key(node: Node, cluster_tag: str | None) -> tuple[str, str]:
    if cluster_tag and cluster_tag in node.tags:
        # A user's tag names a job across regions, which is exactly when a region split must show.
        return f"{node.provider}:tag/{cluster_tag}={node.tags[cluster_tag]}", f"tag {cluster_tag}"
    if node.tags.get("parallelcluster:node-type") == "HeadNode":
        return f"{node.provider}:{node.region}:{node.id}", "single node"
    for keys, label in SCHEDULER_TAGS:
        if all(k in node.tags for k in keys):
            name = "/".join(node.tags[k] for k in keys)
            return f"{node.provider}:{node.region}:{label.lower().replace(' ', '-')}/{name}", label
    if node.placement_group:
        return f"{node.provider}:{node.region}:placement-group/{node.placement_group}", "placement group"
    if node.capacity_block_id:
        return f"{node.provider}:{node.region}:capacity-block/{node.capacity_block_id}", "Capacity Block"
    if node.capacity_reservation_id:
        return (
            f"{node.provider}:{node.region}:capacity-reservation/{node.capacity_reservation_id}",
            "capacity reservation",
        )
    return f"{node.provider}:{node.region}:{node.id}", "single node"


def build_clusters(inventory: Inventory, cluster_tag: str | None = None) -> list[Cluster]:
    groups: dict[str, Cluster] = {}
    for node in inventory.nodes:
        key, signal = _key(node, cluster_tag)
        cluster = groups.get(key)
        if cluster is None:
            cluster = groups[key] = Cluster(id=key, provider=node.provider, signal=signal)
        cluster.nodes.append(node)
    return sorted(groups.values(), key=lambda c: c.id)
