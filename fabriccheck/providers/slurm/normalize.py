"""A Slurm dump (and the cloud dump underneath, when given) as the one inventory every source ends in.

A Slurm node is judged once per partition it is in: a node of provider slurm whose `slurm` part names the partition,
and whose shape is the joined cloud instance's (type, zone, placement, interfaces, read by the cloud's own dump
reader) with the Slurm scope: the account is Slurm's ClusterName. Slurm's scope has no region of its own, so every
node of one Slurm cluster has the region `slurm` (a partition over two cloud regions is one cluster, whose zones show
the split).
"""

from __future__ import annotations

from fabriccheck.inventory import Inventory
from fabriccheck.model import FrozenTags, Node, NodeShape, NodeSpec, fact_key
from fabriccheck.providers.slurm.files import Job, SlurmDump, SlurmNode
from fabriccheck.providers.slurm.join import Joined, Joiner
from fabriccheck.providers.slurm.scripts import JobScript
from fabriccheck.providers.slurm.support import JOB_TAG, PARTITION_TAG
from fabriccheck.providers.slurm.topology import Topology
from fabriccheck.resources.slurm import JoinedInstance, SlurmPart, TopologyGroup

REGION = "slurm"
# Job states (data_parser JOB_STATE flags) in which the job holds its nodes.
ALLOCATED = frozenset({"RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING", "STAGE_OUT", "SIGNALING"})
# Inventory.collected kinds (model.fact_key): which optional parts of the dump were there.
PARTITIONS, TOPOLOGY, CLOUD = "partitions", "topology", "cloud"


def _topology(dump: SlurmDump, partition: str) -> tuple[str, Topology | None]:
    """(plugin, topology in force) for a partition's jobs: the one its `topology` names (topology.yaml), else the
    cluster's. slurm.conf's TopologyPlugin says which plugin reads topology.conf: topology/flat ignores the file."""
    wanted = dump.partitions[partition].topology if dump.partitions and partition in dump.partitions else ""
    found = dump.topologies.get(wanted) or dump.topologies.get("")
    conf = dump.topology_plugin
    if found is not None and not (conf == "flat" and found.source.endswith("topology.conf")):
        return found.plugin, found
    return conf or "", None


class Normalizer:
    def __init__(
        self, dump: SlurmDump, cloud: Inventory | None, joiner: Joiner | None, scripts: list[JobScript] | None = None
    ) -> None:
        self.dump = dump
        self.scripts = scripts or []
        self.cloud = cloud
        self.joiner = joiner
        self._groups: dict[str, dict[str, str]] = {}
        self._shapes: dict[tuple[NodeShape | None, SlurmPart, str], NodeShape] = {}

    def _group(self, topology: Topology) -> dict[str, str]:
        key = f"{topology.source}:{topology.name}"
        if key not in self._groups:
            self._groups[key] = topology.group_of()
        return self._groups[key]

    def _partitions(self, node: SlurmNode) -> list[str]:
        """The partitions the node is in (those partitions.json lists, when it was given)."""
        known = self.dump.partitions
        return [p for p in node.partitions if known is None or p in known]

    def _multi_node(self, partition: str) -> bool:
        known = self.dump.partitions
        most = known[partition].max_nodes if known and partition in known else None
        return most is None or most > 1

    def _node(
        self, slurm: SlurmNode, partition: str, joined: Joined | None, job: Job | None = None, pending: bool = False
    ) -> Node:
        plugin, topology = _topology(self.dump, partition)
        group = self._group(topology).get(slurm.name) if topology is not None else None
        part = SlurmPart(
            cluster=self.dump.cluster,
            partition=partition,
            multi_node=self._multi_node(partition),
            gpus=min(slurm.gpus, 256),
            gpu_types=slurm.gpu_types,
            topology=plugin,
            groups_known=topology is not None and bool(topology.groups),
            group=group,
            group_size=topology.size_of(group) if topology is not None and group else 0,
            job=job.id if job else None,
            job_pending=pending,
            job_name=job.name if job else "",
            cloud=joined.node.provider if joined else None,
            joined_by=joined.how if joined else None,
        )
        base = joined.node.shape if joined is not None else None
        key = (base, part, slurm.instance_type if base is None else "")
        shape = self._shapes.get(key)
        if shape is None:
            # Made once per cloud shape and Slurm part: the nodes of one block and pool share it, as the pools of
            # every source do (sources/pools.py), so facts and verdicts are worked out once for all of them.
            tags = {JOB_TAG: job.id} if job else {PARTITION_TAG: partition}
            parts = base.with_part(part) if base is not None else (part,)  # the instance's parts, and Slurm's
            update = {"provider": "slurm", "account": self.dump.cluster, "region": REGION, "origin": "running",
                      "spec": None, "tags": tags, "extensions": parts}  # fmt: skip
            made = {**base.model_dump(), **update} if base is not None else {**update, "instance_type": key[2] or None}
            shape = self._shapes[key] = NodeShape.model_validate(made)
        ids = joined.node.interface_ids if joined is not None else ()
        published = joined.node.topology if joined is not None else None  # the cloud's, not Slurm's
        return Node(id=slurm.name, state=slurm.state, interface_ids=ids, topology=published, shape=shape)

    def _jobs(self, joins: dict[str, tuple[SlurmNode, Joined | None]]) -> list[Node]:
        """The nodes of each running job that holds more than one (its allocation), and of each pending job that Slurm
        plans on more than one (its scheduled_nodes), judged as a cluster of its own (a node the job names that
        nodes.json does not hold is left out: it has nothing to judge it by)."""
        nodes = []
        for job in self.dump.jobs or []:
            pending = "PENDING" in job.states and not set(job.states) & ALLOCATED
            held = job.scheduled if pending else job.nodes if set(job.states) & ALLOCATED else []
            if len(held) < 2:
                continue  # trains alone, or pending with no planned nodes yet: nothing to judge
            for name in held:
                if name in joins:
                    slurm, joined = joins[name]
                    nodes.append(self._node(slurm, job.partition, joined, job, pending))
        return nodes

    def _scripts(self, inventory: Inventory) -> None:
        """Each job script as a spec node of the partition it names, shaped as that partition's first node."""
        first: dict[str, Node] = {}
        for node in inventory.nodes:
            if (own := node.shape.part(SlurmPart)) is not None and own.job is None:
                first.setdefault(own.partition, node)
        for script in self.scripts:
            found = first.get(script.partition or "")
            own = found.shape.part(SlurmPart) if found is not None else None
            if found is None or own is None:
                named = f"partition {script.partition}" if script.partition else "no partition (#SBATCH --partition)"
                inventory.notes.append(f"{script.path} names {named} of the dump: not judged")
                continue
            part = own.model_copy(update={"job": script.path, "job_nodes": min(script.nodes, 256), "env": script.env})
            spec = NodeSpec(kind="job-script", name=script.path, role=f"sbatch, {script.nodes} node(s)")
            tags = FrozenTags({JOB_TAG: script.path})
            parts = found.shape.with_part(part)
            shape = found.shape.model_copy(
                update={"origin": "template", "spec": spec, "extensions": parts, "tags": tags}
            )
            inventory.specs.append(Node(id=script.path, interface_ids=found.interface_ids, shape=shape))

    def inventory(self, source: str) -> Inventory:
        inventory = Inventory(source=source)
        joins: dict[str, tuple[SlurmNode, Joined | None]] = {}
        for slurm in self.dump.nodes:
            joined = self.joiner.join(slurm) if self.joiner else None
            joins[slurm.name] = (slurm, joined)
            for partition in self._partitions(slurm):
                inventory.nodes.append(self._node(slurm, partition, joined))
        inventory.nodes.extend(self._jobs(joins))
        cluster = self.dump.cluster
        inventory.slurm.instances = [
            JoinedInstance(account=cluster, region=REGION, node=name, cloud=j.node.provider, instance=j.instance)
            for name, (_, j) in joins.items()
            if j is not None and j.instance
        ]
        self._scripts(inventory)
        if self.cloud is not None:
            inventory.capabilities.update(self.cloud.capabilities)
        cluster = self.dump.cluster
        kinds = ["nodes"]
        kinds += [PARTITIONS] if self.dump.partitions is not None else []
        kinds += [TOPOLOGY] if self.dump.topologies or self.dump.topology_plugin else []
        kinds += [CLOUD] if self.joiner is not None else []
        inventory.collected = [fact_key("slurm", cluster, REGION, kind) for kind in kinds]
        for topology in {id(t): t for t in self.dump.topologies.values()}.values():  # the default is also named
            inventory.slurm.groups.extend(
                TopologyGroup(account=cluster, region=REGION, kind=topology.group_kind, name=name, nodes=nodes)
                for name, nodes in topology.groups.items()
            )
        return inventory
