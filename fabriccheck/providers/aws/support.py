"""AWS's answers to the neutral stages: EC2 type names, which interfaces carry EFA, the grouping signals, and
the AWS-only facts rules read (security groups, placement groups, Capacity Blocks, isolated families)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from fabriccheck.cloud import (
    CloudSupport,
    FabricAttachment,
    FactContext,
    Facts,
    FactSchema,
    PlacementSignal,
    Signal,
    TagSignal,
)
from fabriccheck.model import Capability, NetworkPath, Node, NodeShape
from fabriccheck.resources.aws import CapacityReservation, PlacementGroup, SecurityGroup

if TYPE_CHECKING:
    from fabriccheck.inventory import Inventory

# Placement kinds an EC2 instance can have (model.Placement.kind).
PLACEMENT_GROUP = "placement-group"
CAPACITY_BLOCK = "capacity-block"
CAPACITY_RESERVATION = "capacity-reservation"
OUTPOST = "outpost"  # an instance on AWS Outposts (OutpostArn)

FABRIC_INTERFACE_TYPES = frozenset({"efa", "efa-only"})
# Types whose EFA traffic cannot cross to other types (AWS EFA limitations; fabric-requirements A8).
EFA_ISOLATED_FAMILIES = ("p4d", "p4de", "dl1")

_GENERATION = re.compile(r"^([a-z]+\d+)")
_SIZE = re.compile(r"(\d+)xlarge")


class AwsSupport(CloudSupport):
    name = "aws"
    # Tag names as each tool writes them. The placement group is deliberately below the scheduler tags: it is
    # one of the things being judged, so a node group split over two placement groups must stay one cluster
    # for the split to be seen.
    signals: tuple[Signal, ...] = (
        # AWS ParallelCluster v3 compute nodes: each compute resource of a queue has its own instance type and
        # placement group, and trains together; older nodes without the tag fall back to their queue.
        TagSignal(
            (
                "parallelcluster:cluster-name",
                "parallelcluster:queue-name",
                "parallelcluster:compute-resource-name",
            ),
            "ParallelCluster compute resource",
            NetworkPath.HOST,
            slug="parallelcluster-compute-resource",
        ),
        TagSignal(
            ("parallelcluster:cluster-name", "parallelcluster:queue-name"),
            "ParallelCluster queue",
            NetworkPath.HOST,
            slug="parallelcluster-queue",
        ),
        # AWS Parallel Computing Service compute node groups.
        TagSignal(
            ("aws:pcs:compute-node-group-id",), "AWS PCS node group", NetworkPath.HOST, slug="aws-pcs-node-group"
        ),
        # EKS managed node groups.
        TagSignal(("eks:cluster-name", "eks:nodegroup-name"), "EKS node group", NetworkPath.POD, slug="eks-node-group"),
        # Karpenter-launched nodes.
        TagSignal(("karpenter.sh/nodepool",), "Karpenter node pool", NetworkPath.POD, slug="karpenter-node-pool"),
        # Any Auto Scaling group (self-managed node groups, Slurm fleets built on ASGs).
        TagSignal(("aws:autoscaling:groupName",), "Auto Scaling group", NetworkPath.HOST, slug="auto-scaling-group"),
        PlacementSignal(PLACEMENT_GROUP, "placement group", NetworkPath.HOST, slug="placement-group"),
        PlacementSignal(CAPACITY_BLOCK, "Capacity Block", NetworkPath.HOST, slug="capacity-block"),
        PlacementSignal(CAPACITY_RESERVATION, "capacity reservation", NetworkPath.HOST, slug="capacity-reservation"),
    )
    alone_tags = (("parallelcluster:node-type", "HeadNode"),)
    schema = FactSchema(
        node={
            "efa_security": "ok, missing (no group on an EFA interface allows all traffic with itself both "
            "ways), n/a (no EFA interface) or unknown (security groups not collected)",
            "efa_security_groups": "the security groups on the node's EFA interfaces, comma-separated",
            "placement_group": "the node's placement group name, or empty",
            "capacity_block": "true in a Capacity Block, false if not, null when the reservation is unknown",
        },
        cluster={
            "placement": "the cluster's placement groups",
            "placement.strategy": "cluster, spread, partition, several (several cluster groups), none or unknown",
            "placement.groups": "the placement group names, (none) for nodes outside any",
            "placement.capacity_block": "every node runs in a Capacity Block (which brings its own placement)",
            "placement.capacity_block_known": "whether that could be decided for every node",
            "efa_isolated_mix": "p4d, p4de or dl1 mixed with other types (their EFA cannot cross types)",
        },
    )
    collected_facts = (
        "instances",
        "instance_types",
        "placement_groups",
        "security_groups",
        "subnets",
        "launch_templates",
        "capacity_reservations",
        "topology",
    )
    topology_calls = ("DescribeInstanceTopology",)

    def family(self, instance_type: str) -> str:
        """'p4de.24xlarge' -> 'p4de'."""
        return instance_type.split(".", 1)[0]

    def generation(self, instance_type: str) -> str:
        """p3 and p3dn, g6 and g6e, trn1 and trn1n share one generation."""
        match = _GENERATION.match(self.family(instance_type))
        return match.group(1) if match else self.family(instance_type)

    def size_rank(self, instance_type: str) -> int:
        """'8xlarge' -> 8, 'xlarge' -> 1, 'metal' -> large: smaller sizes are suggested first."""
        size = instance_type.split(".", 1)[-1]
        match = _SIZE.match(size)
        return int(match.group(1)) if match else (1 if size.endswith("large") else 10_000)

    def owns(self, instance_type: str) -> bool:
        return "." in instance_type and not instance_type.startswith("Standard_")

    def is_hpc(self, instance_type: str) -> bool:
        return self.family(instance_type).startswith("hpc")

    def default_role(self, instance_type: str) -> str | None:
        # Inf1 and Inf2 carry AWS Inferentia, AWS's inference accelerator (Trainium is its training one).
        return "inference" if self.generation(instance_type) in ("inf1", "inf2") else None

    def nvlink_domain_gpus(self, instance_type: str, catalog_gpus: int) -> int:
        """p6e-gb200 comes in two UltraServers: "u-p6e-gb200x36 has 9 p6e-gb200.36xlarge instances, u-p6e-gb200x72
        has 18" (EKS user guide, "Use P6e-GB200 UltraServers with Amazon EKS",
        https://docs.aws.amazon.com/eks/latest/userguide/ml-eks-nvidia-ultraserver.html). DescribeInstanceTopology
        names an instance's UltraServer (CapacityBlockId) but not its size, so the smaller is assumed: a job is
        never said to fit one UltraServer that a x36 could not hold."""
        return min(catalog_gpus, 36) if self.family(instance_type).startswith("p6e-") else catalog_gpus

    def expects_fabric(self, shape: NodeShape, cap: Capability | None) -> bool:
        # EFA is not supported on AWS Outposts (EC2 User Guide, EFA limitations).
        return super().expects_fabric(shape, cap) and not shape.placed_by(OUTPOST)

    def fabric_attachment(self, shape: NodeShape, cap: Capability | None) -> FabricAttachment:
        """EFA is an interface: `efa` (EFA with ENA) or `efa-only`, at most one per network card."""
        fabric = tuple(i for i in shape.interfaces if i.interface_type in FABRIC_INTERFACE_TYPES)
        return FabricAttachment(len(fabric), len({i.network_card_index for i in fabric}), fabric)

    def resolve(self, nodes: list[Node], inventory: Inventory) -> None:
        """A node not launched yet (a plan's, a launch template's) that names a Capacity Reservation or Block sits
        where that reservation's capacity sits: its DescribeCapacityReservationTopology answer ("the physical host
        placement of your pending or active Capacity Reservations ... before it is launched", EC2 API reference)."""
        placed = {r.scope_key(r.id): r.topology for r in inventory.aws.capacity_reservations if r.topology}
        if not placed:
            return
        for node in nodes:
            if node.origin == "running" or node.topology is not None:
                continue
            reservation = node.placed_by(CAPACITY_RESERVATION) or node.placed_by(CAPACITY_BLOCK)
            found = placed.get(node.scope_key(reservation)) if reservation else None
            if found is not None:
                node.topology = found

    def notes(self, inventory: Inventory) -> list[str]:
        facts = {c.rsplit(":", 1)[-1] for c in inventory.collected if c.startswith("aws:")}
        notes = []
        if any(n.provider == "aws" for n in inventory.nodes) and "instance_types" not in facts:
            notes.append("instance-type capabilities come from the shipped catalog (no DescribeInstanceTypes answer)")
        aws_nodes = [n for n in inventory.nodes if n.provider == "aws"]
        planned = bool(aws_nodes) and all(n.origin == "plan" for n in aws_nodes)  # no topology before launch
        if facts and "topology" not in facts and not planned:
            notes.append("EC2 topology not collected (aws --topology, or describe-instance-topology.json in a dump)")
        return notes

    # ---------------------------------------------------------------------------------------- facts

    def node_facts(self, shape: NodeShape, context: FactContext, attachment: FabricAttachment) -> Facts:
        fabric = attachment.interfaces
        # Nodes of a group share their NICs' security groups: judge each distinct combination once.
        group_sets = {tuple(nic.security_groups) for nic in fabric}
        security, security_why = self._efa_security(shape, group_sets, context)
        capacity_block, block_why = self._capacity_block(shape, context)
        unknown = {}
        if security_why:
            unknown["efa_security"] = security_why
        if block_why:
            unknown["capacity_block"] = block_why
        facts: Facts = {
            "efa_security": security,
            "efa_security_groups": ", ".join(sorted({g for groups in group_sets for g in groups})),
            "placement_group": shape.placed_by(PLACEMENT_GROUP) or "",
            "capacity_block": capacity_block,
            "unknown": unknown,
        }
        if not shape.interfaces and shape.network is not None:
            # Listed without interfaces (a pending launch): its network is the instance's own VpcId.
            facts["network"] = shape.network
        return facts

    def cluster_facts(self, nodes: list[Node], node_facts: list[Facts], context: FactContext) -> Facts:
        types = {n.instance_type or "" for n in nodes}
        placement, why = self._placement(nodes, node_facts, context)
        return {
            "placement": placement,
            "efa_isolated_mix": len(types) > 1 and any(self.family(t) in EFA_ISOLATED_FAMILIES for t in types),
            "unknown": {"placement": why} if why else {},
        }

    def _efa_security(
        self, shape: NodeShape, group_sets: set[tuple[str, ...]], context: FactContext
    ) -> tuple[str, str | None]:
        """Whether every EFA interface has a group that lets EFA traffic flow with itself, both ways, and why
        not when that cannot be told."""
        if not group_sets:
            return "n/a", None
        if not context.has(shape, "security_groups"):
            return "unknown", f"security groups were not collected for {shape.account} {shape.region}"
        if shape.origin != "running" and () in group_sets:
            return "unknown", "the template leaves its EFA interfaces' security groups to the launch request"
        index = _index(context)
        unseen: set[str] = set()
        for groups in group_sets:
            if any(index.allows_self(shape.scope_key(g)) for g in groups):
                continue
            missing = {g for g in groups if shape.scope_key(g) not in index.security_groups}
            if not missing:
                return "missing", None
            unseen |= missing  # a group not seen may be the one that allows it: unknown, not missing
        if unseen:
            return "unknown", (
                f"security group(s) {', '.join(sorted(unseen))} on the EFA interfaces were not among the "
                f"groups collected for {shape.account} {shape.region}"
            )
        return "ok", None

    def _capacity_block(self, shape: NodeShape, context: FactContext) -> tuple[bool | None, str | None]:
        if shape.placed_by(CAPACITY_BLOCK):
            return True, None
        reservation_id = shape.placed_by(CAPACITY_RESERVATION)
        if not reservation_id:
            return False, None
        reservation = _index(context).reservations.get(shape.scope_key(reservation_id))
        if reservation is None:
            if not context.has(shape, "capacity_reservations"):
                return None, f"capacity reservations were not collected for {shape.account} {shape.region}"
            return None, f"capacity reservation {reservation_id} was not among the collected reservations"
        return reservation.reservation_type == "capacity-block", None

    def _placement(self, nodes: list[Node], node_facts: list[Facts], context: FactContext) -> tuple[Facts, str | None]:
        known = all(context.has(n.shape, "placement_groups") for n in nodes)
        in_block = [f["capacity_block"] for f in node_facts]
        groups = sorted({n.placed_by(PLACEMENT_GROUP) or "" for n in nodes})
        index = _index(context).placement_groups
        strategies = set()
        unseen = set()
        for node in nodes:
            name = node.placed_by(PLACEMENT_GROUP)
            if not name:
                strategies.add("none")
                continue
            group = index.get(node.scope_key(name))
            if group is None:
                unseen.add(name)
            strategies.add(group.strategy if group else "unknown")
        why = None
        if not known or "unknown" in strategies:
            strategy = "unknown"
            missing = sorted({f"{n.account} {n.region}" for n in nodes if not context.has(n.shape, "placement_groups")})
            why = (
                f"placement groups were not collected for {', '.join(missing)}"
                if missing
                else f"placement group(s) {', '.join(sorted(unseen))} were not among the collected groups"
            )
        elif len(strategies) == 1 and len(groups) == 1:
            strategy = strategies.pop()
        elif strategies == {"cluster"}:
            strategy = "several"  # several cluster placement groups: nodes of one job placed apart
        elif strategies & {"spread", "partition"}:
            strategy = sorted(strategies & {"spread", "partition"})[0]
        else:
            strategy = "none"  # some nodes have no placement group at all
        placement = {
            "strategy": strategy,
            "groups": ", ".join(g or "(none)" for g in groups),
            "capacity_block": all(b is True for b in in_block),
            "capacity_block_known": all(b is not None for b in in_block),
        }
        return placement, why


class _Index:
    """The AWS namespace keyed by (account, region, id), built once per inventory."""

    def __init__(self, context: FactContext) -> None:
        aws = context.inventory.aws
        self.security_groups: dict[tuple[str, str, str], SecurityGroup] = {
            g.scope_key(g.id): g for g in aws.security_groups
        }
        self.placement_groups: dict[tuple[str, str, str], PlacementGroup] = {
            g.scope_key(g.name): g for g in aws.placement_groups
        }
        self.reservations: dict[tuple[str, str, str], CapacityReservation] = {
            r.scope_key(r.id): r for r in aws.capacity_reservations
        }
        self._verdicts: dict[tuple[str, str, str], bool] = {}

    def allows_self(self, key: tuple[str, str, str]) -> bool:
        """Whether the group (scoped key) lets EFA traffic flow with itself; a group not seen does not."""
        verdict = self._verdicts.get(key)
        if verdict is None:
            group = self.security_groups.get(key)
            verdict = self._verdicts[key] = group is not None and group.allows_all_with_itself()
        return verdict


def _index(context: FactContext) -> _Index:
    return context.cached("aws-index", lambda: _Index(context))


SUPPORT = AwsSupport()
