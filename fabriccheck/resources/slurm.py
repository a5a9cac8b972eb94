"""Slurm-only resources: the `slurm` namespace of the inventory, and the Slurm part of a node's shape.

What Slurm says of a node (its partition, its block or leaf switch, the cloud instance it was joined to) is its
`SlurmPart`, one of its shape's `extensions`, so its facts are a function of the shape. What the namespace keeps
(each with the Slurm cluster as `account`) is what belongs to no one node: the topology groups as the dump defines
them, with every node each holds (also the nodes of no partition), so a report or a later rule can name a group's
whole membership, and the instance each node was joined to (a node's own value, kept off its shape so that the
nodes of one block and pool share one).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from fabriccheck.values import Count, JobPart, ProviderResources, Scoped, Setting


class SlurmPart(JobPart):
    """What Slurm says of a node as one partition schedules it, part of the node's shape (model.NodeShape.extensions):
    the partition, where the topology plugin puts the node, and the cloud instance it was joined to
    (providers/slurm/join.py). The instance's type, zone, placement and parts are the rest of its shape. Slurm's
    topology stays here, Slurm's own words, until the model has a neutral one."""

    provider: Literal["slurm"] = "slurm"
    cluster: str  # Slurm's ClusterName
    partition: str
    multi_node: bool = True  # the partition lets a job have more than one node (MaxNodes unset or above 1)
    gpus: Count = 0  # GPUs its Gres= gives the node (gpu:8, gpu:h100:8)
    gpu_types: tuple[str, ...] = ()  # the GPU types its Gres= (gpu:h100:8) or gres.conf Type= give it
    topology: str = ""  # the topology plugin: block, tree, flat (ring, torus3d); "" when the dump does not say
    groups_known: bool = False  # the dump says which block or leaf switch holds each node
    group: str | None = None  # the block (topology/block) or leaf switch (topology/tree) that holds the node
    group_size: int = Field(default=0, ge=0)  # the nodes that block or switch holds (of every partition)
    job: str | None = None  # a running job's id: the node as that job's allocation holds it (None: the partition's)
    job_pending: bool = False  # the job is pending: its nodes are those Slurm plans to start it on (scheduled_nodes)
    # A job script (`fabriccheck slurm --scripts`): the nodes it asks for, and its NCCL_* / FI_* settings.
    job_nodes: Count = 0
    env: tuple[tuple[str, str], ...] = ()
    # aws | azure | gcp: the cloud of the instance it was joined to. The instance's own id is no part of the shape
    # (the nodes of one block and pool share one): resources.slurm.SlurmResources.instances holds it.
    cloud: str | None = None
    joined_by: str | None = None  # instance_id | address | name: how the join was made (None: not joined)

    def rank_env(self) -> tuple[Setting, ...]:
        """A job script's own NCCL_* / FI_* settings: its ranks inherit the script's environment (srun exports it)."""
        return tuple((name, value, "") for name, value in self.env)


class TopologyGroup(Scoped):
    """A Slurm block (topology/block) or leaf switch (topology/tree), as topology.conf, topology.yaml or
    `scontrol show topology` defines it."""

    kind: str  # block | switch
    name: str
    nodes: list[str] = Field(default_factory=list)


class JoinedInstance(Scoped):
    """The cloud instance a Slurm node was joined to (providers/slurm/join.py)."""

    node: str  # Slurm's NodeName
    cloud: str  # aws | azure | gcp
    instance: str  # the instance's id (EC2 instance id, Azure VM id, GCE instance name)


class SlurmResources(ProviderResources):
    groups: list[TopologyGroup] = Field(default_factory=list)
    instances: list[JoinedInstance] = Field(default_factory=list)
