"""Slurm-only resources: the `slurm` namespace of the inventory. Each carries the Slurm cluster (`account`).

What Slurm says of a node (its partition, its block or leaf switch, the cloud instance it was joined to) is on the
node's shape (`model.SlurmPart`), so its facts are a function of the shape. What is kept here is what belongs to
no one node: the topology groups as the dump defines them, with every node each holds (also the nodes of no
partition), so a report or a later rule can name a group's whole membership, and the instance each node was joined to (a
node's own value, kept off its shape so that the nodes of one block and pool share one).
"""

from __future__ import annotations

from pydantic import Field

from fabriccheck.values import Model, Scoped


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


class SlurmResources(Model):
    groups: list[TopologyGroup] = Field(default_factory=list)
    instances: list[JoinedInstance] = Field(default_factory=list)

    def merge(self, other: SlurmResources) -> None:
        self.groups.extend(other.groups)
        self.instances.extend(other.instances)
