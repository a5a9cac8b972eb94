"""The base of every model and value, below the neutral model (model.py) and the provider parts that model holds
(resources/<provider>.py), so both can build on it without an import circle: a model that refuses unknown keys, a
value that is frozen and hashed by its fields, what belongs to one account and region, the bounds of counts, and
where a node sits in its cloud's topology (a provider part holds it too: a reservation's topology before launch)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

# Bounds no real machine comes near (the largest today: 32 network cards and EFA interfaces on p5.48xlarge,
# 16 accelerators on inf1.24xlarge and trn1, 6,400 Gbps on p6-b300), so a corrupt or hand-edited saved
# inventory (`accelerators: 1e9`) is one line naming the field rather than a penalty for a billion GPUs.
MAX_COUNT = 256  # accelerators, fabric interfaces, network cards per node
MAX_INDEX = MAX_COUNT - 1  # network card and device indexes count from 0
MAX_GBPS = 100_000.0  # 100 Tbit/s per node
Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
Index = Annotated[int, Field(ge=0, le=MAX_INDEX)]
Gbps = Annotated[float, Field(ge=0, le=MAX_GBPS, allow_inf_nan=False)]


class Model(BaseModel):
    # Unknown keys in a saved inventory are a user error worth naming, not something to drop silently.
    model_config = ConfigDict(extra="forbid", frozen=False)


class Scoped(Model):
    """Anything that belongs to one account and region. Every lookup goes through `scope_key`, so two
    accounts (or regions) that both have a `trainers` group or an `sg-1` never lend each other facts."""

    account: str
    region: str

    def scope_key(self, resource_id: str) -> tuple[str, str, str]:
        return (self.account, self.region, resource_id)


class ProviderResources(Model):
    """A provider's namespace of the inventory (resources/<provider>.py): lists only, so merging two inventories
    appends each of the other's lists to this one's, field by field (a list added later is merged too)."""

    def merge(self, other: Self) -> None:
        for name in type(self).model_fields:
            getattr(self, name).extend(getattr(other, name))


class Frozen(BaseModel):
    """A value: immutable once made, equal and hashed by its fields, so equal values share one memo entry (facts,
    verdicts) whoever made them. Unknown keys are refused, as for every model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def __hash__(self) -> int:
        # Computed once and kept beside the fields: a shape is looked up many times (facts, verdicts, clusters), and
        # its hash walks every NIC.
        found: int | None = self.__dict__.get("_hash")
        if found is None:
            found = self.__dict__["_hash"] = hash(tuple(self.__dict__[name] for name in type(self).model_fields))
        return found

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with `update`'s values (not validated: give values of the fields' types), with no value derived
        from the original's fields: its kept hash and cached properties (NodeShape.primary_interface) are made afresh
        from the copy's own fields when asked."""
        copied = super().model_copy(update=update, deep=deep)
        fields = type(self).model_fields
        for derived in [key for key in copied.__dict__ if key not in fields]:
            del copied.__dict__[derived]
        return copied


Setting = tuple[str, str, str]  # an NCCL/libfabric setting: (name, value, where it was set, in words for a message)


class JobPart(Frozen):
    """A provider's node part that stands for a job on the node (a Kubernetes pod, a Slurm job script): what names
    the job and the NCCL settings its ranks see. Neutral stages (cost) read a job through these two, never through a
    provider's part; a part that knows neither keeps the empty defaults."""

    def job_words(self) -> tuple[str, ...]:
        """Lower-case texts that say what the job is (its name, its containers' names and images)."""
        return ()

    def rank_env(self) -> tuple[Setting, ...]:
        """The NCCL_* and FI_* settings that reach the job's ranks on this node, in the order they apply."""
        return ()


class Topology(Frozen):
    """Where a node sits in the network and NVLink fabric its cloud (or its scheduler) publishes: one neutral fact
    whoever published it, so rules (and a Slurm reader later) read one thing. `levels` are the network levels above
    the host, coarsest first, each as an id unique in the whole estate (a path where the cloud's ids are only unique
    under their parent): EC2 DescribeInstanceTopology NetworkNodes (layer 1..3 or 4), EKS's
    topology.k8s.aws/network-node-layer-N labels, GCP resourceStatus.physicalHostTopology (cluster, block, sub-block),
    GKE's cloud.google.com/gce-topology-block/-subblock labels. `level_names` says what the cloud calls each level.
    `nvlink_domain`: the multi-node NVLink domain (a GB200/GB300 NVL72 rack) the node's GPUs share NVLink with: an
    UltraServer's Capacity Block, an A4X sub-block, NVIDIA's nvidia.com/gpu.clique; `nvlink_domain_gpus`: how many GPUs
    the domain holds when the publisher says (else the accelerator table's figure)."""

    source: str  # who published it: "DescribeInstanceTopology", "physicalHostTopology", "node labels" ...
    levels: tuple[str, ...] = ()
    level_names: tuple[str, ...] = ()
    nvlink_domain: str | None = None
    nvlink_domain_gpus: Count | None = None

    @model_validator(mode="after")
    def _one_name_per_level(self) -> Topology:
        if self.level_names and len(self.level_names) != len(self.levels):
            raise ValueError(f"{len(self.level_names)} level names for {len(self.levels)} levels")
        return self
