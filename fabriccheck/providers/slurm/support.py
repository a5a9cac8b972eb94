"""Slurm's answers to the neutral stages: a Slurm node (provider slurm), judged once per partition it is in, against
the cloud instance it runs on (providers/slurm/join.py). Its type, zone, placement and interfaces are that
instance's, so its fabric is the cloud's own call (the cloud's support decides what is attached); what Slurm adds is
where its topology plugin puts the node (the block or leaf switch) and which nodes a partition lets one job span.
Imports nothing but the model: a saved inventory is judged without the dump readers.

Sources: the topology plugins' own warnings when nodes are in no block or switch ("Blocks lack access to %d nodes",
src/plugins/topology/block/block_record.c; "switches lack access to %d nodes",
src/plugins/topology/tree/switch_record.c; SchedMD/slurm at 284c3b95); what that costs in public:
GoogleCloudPlatform/cluster-toolkit#3316 (a node "not visible to Slurm topology-wise" cannot be allocated),
aws/aws-parallelcluster-cookbook#3123 (nodes fall out of their blocks on power-down; `--exclusive=topo` jobs fail
until `scontrol reconfigure`), nebius/soperator#2614 (one switch over fabrics that are not connected).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from fabriccheck import catalog, ncclenv
from fabriccheck.cloud import (
    FabricAttachment,
    FactContext,
    Facts,
    FactSchema,
    HostedSupport,
    HostInstance,
    Signal,
    TagSignal,
    support,
)
from fabriccheck.model import Capability, NetworkPath, Node, NodeShape
from fabriccheck.provider import clouds
from fabriccheck.resources.slurm import SlurmPart

if TYPE_CHECKING:
    from fabriccheck.inventory import Inventory

PARTITION_TAG = "fabriccheck.io/slurm-partition"  # set by the reader (normalize.py): the partition judged
JOB_TAG = "fabriccheck.io/slurm-job"  # set by the reader: the running job whose allocation the node is judged in
GROUPED = ("block", "tree")  # the plugins that put nodes in groups a job is kept within
# Placements that make an island of the fabric: jobs across two of them lose the tight placement, or the fabric.
ISLANDS = ("placement-group", "scale-set", "availability-set", "resource-policy", "capacity-block")
_LISTED = 8  # names a message lists before "and N more"
NOT_JOINED = "not joined to a cloud instance (give --cloud-dump DIR holding the instances)"
NO_GROUPS = "the dump holds no topology (scontrol show topology, topology.yaml or topology.conf)"
NO_PLUGIN = "the dump says no topology plugin (slurm.conf or a topology file)"
NO_ACCELERATOR = "the accelerator of the node's instance type is not known"
_GROUP = {"block": "block", "tree": "leaf switch"}


def _names(names: Iterable[str]) -> str:
    ordered = sorted(set(names))
    shown = ", ".join(ordered[:_LISTED])
    return shown + (f" and {len(ordered) - _LISTED} more" if len(ordered) > _LISTED else "")


def _mixed(groups: dict[str, set[str]]) -> tuple[int, str]:
    """The groups that hold more than one of something, and them in words: `b1 (nvl-1, nvl-2)`."""
    mixed = {group: values for group, values in groups.items() if len(values) > 1}
    words = "; ".join(f"{group} ({', '.join(sorted(values))})" for group, values in sorted(mixed.items())[:_LISTED])
    return len(mixed), words + (f"; and {len(mixed) - _LISTED} more" if len(mixed) > _LISTED else "")


class SlurmSupport(HostedSupport):
    name = "slurm"
    signals: tuple[Signal, ...] = (
        TagSignal((JOB_TAG,), "Slurm job", NetworkPath.HOST, slug="slurm-job"),
        TagSignal((PARTITION_TAG,), "Slurm partition", NetworkPath.HOST, slug="slurm-partition"),
    )
    collected_facts = ("nodes", "partitions", "topology", "cloud")
    schema = FactSchema(
        node={
            "partition": "the Slurm partition the node is judged in",
            "slurm_gpus": "GPUs its Gres= gives the node",
            "slurm_gpu_types": "the GPU types its Gres= (gpu:h100:8) or gres.conf Type= give the node, "
            "comma-separated, or empty",
            "gpu_type_disagrees": "those of them that name a GPU other than its instance type's (by the accelerator "
            "table: h100, nvidia_h100_80gb_hbm3 are H100), each with the GPU it names, or empty",
            "cloud": "the cloud of the instance it was joined to: aws, azure, gcp, or empty",
            "joined_by": "instance_id, address or name: how the node was joined to its instance, or empty",
            "topology_group": "the block or leaf switch that holds the node, or empty",
            "fabric_off": "a job script's NCCL or libfabric setting that turns the node's fabric off, or empty",
            "socket_ifname": "a job script's NCCL_SOCKET_IFNAME that leaves NCCL only the loopback or a Docker "
            "bridge, or empty",
        },
        cluster={
            "partition": "the Slurm partition",
            "job": "the running or pending job whose allocation the cluster is, or empty (a partition)",
            "job_runs": "'runs on' for a running job, 'is planned on' for a pending one (its scheduled_nodes)",
            "slurm_cluster": "Slurm's ClusterName",
            "job_nodes": "the nodes a job script asks for (#SBATCH --nodes), 0 for a partition or a running job",
            "multi_node_jobs": "the partition has two or more nodes and lets a job have more than one",
            "slurm_gpus": "GPUs the partition's nodes' Gres= give in all",
            "topology_plugin": "block, tree, flat (ring, torus3d): the topology its jobs are placed by",
            "ungrouped": "nodes in no block (topology/block) or leaf switch (topology/tree)",
            "ungrouped_names": "their names",
            "ungrouped_gpus": "their GPUs",
            "groups": "distinct blocks or leaf switches its nodes are in",
            "groups_needed": "the fewest of them that would hold its nodes (by the largest block or switch it uses)",
            "nvlink_mixed": "blocks or leaf switches that hold nodes of two or more NVLink domains",
            "nvlink_mixed_names": "them, each with its domains",
            "zone_mixed": "blocks or leaf switches that hold nodes of two or more zones",
            "zone_mixed_names": "them, each with its zones",
            "islands": "distinct placement groups, scale sets, availability sets, resource policies or capacity "
            "blocks of the joined instances",
            "zone_islands": "the most of them among the nodes of one zone (a split the zones do not already make)",
            "zone_blocks": "a sentence naming the blocks or leaf switches that hold nodes of two or more zones, or "
            "empty",
            "island_names": "their names",
            "clouds": "the clouds of the joined instances, comma-separated (aws, azure, gcp)",
            "instance_types": "distinct instance types of its nodes (the joined instance's, else Slurm's InstanceType)",
            "instance_type_names": "them, comma-separated",
            "unjoined": "nodes not joined to a cloud instance",
            "unjoined_names": "their names",
        },
    )

    # ---------------------------------------------------------------------------------------- naming

    def default_role(self, instance_type: str) -> str | None:
        cloud = self.cloud_of(instance_type)
        return cloud.default_role(instance_type) if cloud else None

    # ---------------------------------------------------------------------------------------- fabric

    def fabric_attachment(self, shape: NodeShape, cap: Capability | None) -> FabricAttachment:
        """The joined instance's attachment, as its cloud decides it; a node not joined has none that is known."""
        part = shape.part(SlurmPart)
        if part is None or part.cloud not in {d.name for d in clouds()}:
            return FabricAttachment(0, 0)
        as_cloud = shape.model_copy(update={"provider": part.cloud, "extensions": shape.without_part(SlurmPart)})
        return support(part.cloud).fabric_attachment(as_cloud, cap)

    # ---------------------------------------------------------------------------------------- facts

    def node_facts(self, shape: NodeShape, context: FactContext, attachment: FabricAttachment) -> Facts:
        part = shape.part(SlurmPart) or SlurmPart(cluster=shape.account, partition="")
        facts: Facts = {
            "partition": part.partition,
            "slurm_gpus": part.gpus,
            "slurm_gpu_types": ", ".join(part.gpu_types),
            "gpu_type_disagrees": "",
            "cloud": part.cloud or "",
            "joined_by": part.joined_by or "",
            "topology_group": part.group or "",
            "fabric_off": "",
            "socket_ifname": "",
        }
        if part.env:
            # The same settings, judged as the Kubernetes provider judges a pod's env (providers/k8s/support.py).
            env = part.rank_env()  # a job script's own settings
            cap = context.capability(shape)
            facts["fabric_off"] = ncclenv.fabric_off(env, cap.fabric) if cap else ""
            facts["socket_ifname"] = ncclenv.local_socket_ifname(env)
        unknown: dict[str, str] = {}
        if part.gpu_types:
            cap = context.capability(shape)
            if cap is None or not cap.accelerator_name:
                unknown["gpu_type_disagrees"] = NOT_JOINED if part.cloud is None else NO_ACCELERATOR
            else:
                facts["gpu_type_disagrees"] = _disagreeing(part.gpu_types, cap.accelerator_name)
        if part.cloud is None:
            # What only the cloud tells: unknown, so no rule reads an empty zone as "one zone".
            unknown |= dict.fromkeys(("zone", "network", "fabric"), NOT_JOINED)
        if not part.topology or (part.topology in GROUPED and not part.groups_known):
            unknown["topology_group"] = NO_GROUPS
        if unknown:
            facts["unknown"] = unknown
        return facts

    def host_instances(self, clusters: list[list[Node]], inventory: Inventory) -> list[list[HostInstance]]:
        """The instances each cluster's nodes were joined to (providers/slurm/join.py): a machine a cloud cluster
        also reports is paid for once, and `merge` joins the two."""
        joined = {
            (i.account, i.node): HostInstance(node=i.node, cloud=i.cloud, instance=i.instance, account=None,
                                              members=(i.node,))
            for i in inventory.slurm.instances
        }  # fmt: skip
        return [[joined[(n.account, n.id)] for n in nodes if (n.account, n.id) in joined] for nodes in clusters]

    def cluster_facts(self, nodes: list[Node], node_facts: list[Facts], context: FactContext) -> Facts:
        parts = [node.shape.part(SlurmPart) or SlurmPart(cluster=node.account, partition="") for node in nodes]
        first = parts[0]
        grouped = [(node, part) for node, part in zip(nodes, parts, strict=True) if part.group]
        ungrouped = [(node, part) for node, part in zip(nodes, parts, strict=True) if not part.group]
        domains: dict[str, set[str]] = {}
        zones: dict[str, set[str]] = {}
        untold = 0  # nodes whose accelerator comes in NVLink domains, of which the cloud did not tell the domain
        for node, part in grouped:
            assert part.group is not None  # grouped
            domain = self.nvlink_domain(node)
            if domain:
                domains.setdefault(part.group, set()).add(domain)
            elif part.cloud is not None and _in_domains(node.shape, context):
                untold += 1
            if node.zone:
                zones.setdefault(part.group, set()).add(node.zone)
        islands = {p.id for node in nodes for p in node.placement if p.kind in ISLANDS}
        by_zone: dict[str, set[str]] = {}  # the islands of each zone's nodes
        for node in nodes:
            by_zone.setdefault(node.zone or "", set()).update(p.id for p in node.placement if p.kind in ISLANDS)
        unjoined = [node.id for node, part in zip(nodes, parts, strict=True) if part.cloud is None]
        nvlink_mixed, nvlink_words = _mixed(domains)
        zone_mixed, zone_words = _mixed(zones)
        in_groups = first.topology in GROUPED
        facts: Facts = {
            "partition": first.partition,
            "slurm_cluster": first.cluster,
            "job": first.job or "",
            "job_runs": "is planned on" if first.job_pending else "runs on",
            "job_nodes": first.job_nodes,
            # A partition's: a job's allocation is judged by the job rules.
            "multi_node_jobs": len(nodes) > 1 and all(p.multi_node for p in parts) and not first.job,
            "slurm_gpus": sum(p.gpus for p in parts),
            "topology_plugin": first.topology,
            "ungrouped": len(ungrouped) if in_groups else 0,
            "ungrouped_names": _names(node.id for node, _ in ungrouped) if in_groups else "",
            "ungrouped_gpus": sum(part.gpus for _, part in ungrouped) if in_groups else 0,
            "groups": len({part.group for _, part in grouped}),
            "groups_needed": -(-len(nodes) // largest)
            if (largest := max((p.group_size for p in parts), default=0))
            else 0,
            "nvlink_mixed": nvlink_mixed,
            "nvlink_mixed_names": nvlink_words,
            "zone_mixed": zone_mixed,
            "zone_mixed_names": zone_words,
            "islands": len(islands),
            "zone_islands": max((len(found) for found in by_zone.values()), default=0),
            "zone_blocks": f" Its topology also puts nodes of two or more zones in one {_GROUP[first.topology]}: "
            f"{zone_words}; even a job Slurm keeps inside one is split."
            if zone_mixed and in_groups
            else "",
            "island_names": _names(islands),
            "clouds": ", ".join(sorted({p.cloud for p in parts if p.cloud})),
            "unjoined": len(unjoined),
            "unjoined_names": _names(unjoined),
            "instance_types": len(types := sorted({node.instance_type for node in nodes if node.instance_type})),
            "instance_type_names": ", ".join(types),
        }
        facts["unknown"] = _unknown(parts, bool(unjoined))
        untyped = any(p.cloud is None and not node.instance_type for node, p in zip(nodes, parts, strict=True))
        if untyped:  # a node of no known type may be of any: how many types the partition mixes is not known
            facts["unknown"] |= dict.fromkeys(("instance_types", "instance_type_names"), NOT_JOINED)
        if untyped and (facts["multi_node_jobs"] or (first.job and len(nodes) > 1)):
            # Slurm alone does not tell a node's type: whether the partition's fabric matters is not known either,
            # so what could not be judged is said, never taken as nothing to judge.
            facts["unknown"] |= dict.fromkeys(("fabric_cluster", "nvlink"), NOT_JOINED)
        if untold and "nvlink_mixed" not in facts["unknown"]:
            why = f"the cloud did not tell the NVLink domain of {untold} node(s)"
            facts["unknown"] |= dict.fromkeys(("nvlink_mixed", "nvlink_mixed_names"), why)
        return facts


def _disagreeing(types: tuple[str, ...], accelerator: str) -> str:
    """The Slurm GPU types that name a GPU the accelerator table knows and that is not the instance's, in words
    (`a100 (A100)`); a type the table does not know names nothing to compare (providers/slurm/gres.py)."""
    own = catalog.accelerator(accelerator)
    if own is None:
        return ""
    # gres.conf(5) "Type": a type may be a substring of the name AutoDetect reports, NVML's name with spaces as
    # underscores ("NVIDIA GB200" -> nvidia_gb200). Such a type (b200 on a GB200, b300 on a GB300) is the node's own
    # GPU to Slurm, whatever GPU the table reads it as.
    detected = [f"nvidia_{alias}".lower().replace(" ", "_") for alias in (own.name, *own.aliases)]
    wrong = []
    for name in types:
        named = catalog.accelerator(name)
        if named is None or named.name == own.name or any(name.lower() in d for d in detected):
            continue
        wrong.append(f"{name} ({named.name})")
    return ", ".join(wrong)


def _in_domains(shape: NodeShape, context: FactContext) -> bool:
    """Whether the node's accelerator comes in multi-node NVLink domains (GB200/GB300 NVL72)."""
    cap = context.capability(shape)
    accel = catalog.accelerator(cap.accelerator_name) if cap else None
    return bool(accel and accel.nvlink_domain_gpus)


def _unknown(parts: list[SlurmPart], unjoined: bool) -> dict[str, str]:
    """The cluster facts the dump could not tell, with why."""
    unknown: dict[str, str] = {}
    if not parts[0].topology:
        unknown["topology_plugin"] = NO_PLUGIN
    if (parts[0].topology in GROUPED and not parts[0].groups_known) or not parts[0].topology:
        unknown |= dict.fromkeys(
            ("ungrouped", "ungrouped_names", "ungrouped_gpus", "groups", "groups_needed"), NO_GROUPS
        )
    if unjoined:
        unknown |= dict.fromkeys(("islands", "island_names", "zone_islands", "clouds"), NOT_JOINED)
    if unjoined or "ungrouped" in unknown:
        why = unknown.get("ungrouped", NOT_JOINED)
        unknown |= dict.fromkeys(("nvlink_mixed", "nvlink_mixed_names", "zone_mixed", "zone_mixed_names"), why)
    return unknown


SUPPORT = SlurmSupport()
