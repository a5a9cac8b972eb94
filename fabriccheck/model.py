"""The cloud-neutral part of the model every source ends in.

A node is a node on every cloud: an EC2 instance, an Azure VM or a Compute Engine instance, and equally a node
that a launch template, a scale-set model or a Terraform plan would launch (`origin`). Each node carries its
scope (`account`: AWS account id, Azure subscription id, GCP project id), its network interfaces each with
their own network and subnet, and its placement as neutral references (kind + id). Resources that exist on
one cloud only (security groups, scale sets, resource policies ...) live in that provider's namespace of the
`Inventory` (fabriccheck/inventory.py). Raw API answers are dropped after normalization.
"""

from __future__ import annotations

import functools
import operator
import typing
from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any, Literal, NoReturn, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

SCHEMA_VERSION = 3

# k8s: a Kubernetes pod, judged against the node (of any cloud) it runs or would run on.
# slurm: a Slurm node as one partition schedules it, judged against the cloud instance it runs on.
Provider = Literal["aws", "azure", "gcp", "k8s", "slurm"]
# The registration of the providers: each name is a folder fabriccheck/providers/<name>/ whose DECLARATION says the
# rest (fabriccheck/provider.py). The saved inventory's and the report's provider enum is this list.
PROVIDERS: tuple[Provider, ...] = typing.get_args(Provider)
# running: it exists now. template: a launch template / scale-set model / instance template would launch it.
# plan: a Terraform plan would create it.
Origin = Literal["running", "template", "plan"]
UNKNOWN_ACCOUNT = "unknown"

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


class FabricKind(StrEnum):
    EFA = "efa"
    INFINIBAND = "infiniband"
    TCPX = "gpudirect-tcpx"
    TCPXO = "gpudirect-tcpxo"
    RDMA = "rdma"
    NONE = "none"


class NetworkPath(StrEnum):
    """How a node's NCCL sockets reach the network: the VM's own NIC (or a pod with host networking), a Kubernetes
    pod network (a veth: no PCI vendor for NCCL to tune for), or a pod network through a VXLAN overlay. A grouping
    signal declares it (cloud.TagSignal), and the penalty reads it (penalty.links.nccl_sockets)."""

    HOST = "host"
    POD = "pod"
    OVERLAY = "overlay"


class Capability(Model):
    """What an instance type / VM size / machine type offers, from the cloud's own API or the shipped catalog."""

    instance_type: str
    provider: Provider
    fabric: FabricKind
    fabric_interfaces: Count = 0  # most fabric NICs the type takes (MaximumEfaInterfaces, IB ports, GPU NICs)
    fabric_gbps: Gbps | None = None  # total fabric bandwidth, one direction
    ethernet_gbps: Gbps | None = None  # what ordinary TCP traffic can use when the fabric is not used
    gpudirect_rdma: bool | None = None
    network_cards: Count | None = None
    accelerators: Count = 0
    accelerator_name: str | None = None  # "H100", "A100", "Trainium", ...
    source: str  # "EC2 DescribeInstanceTypes (live)" or a catalog citation
    as_of: str | None = None  # date the row was checked, for catalog rows


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


class FrozenTags(dict[str, str]):
    """A node's tags (labels) as a read-only dict: part of a node's shape, which no one may change once made."""

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("a node's tags are part of its shape and cannot be changed")

    __setitem__ = __delitem__ = update = pop = popitem = clear = setdefault = _refuse


Tags = Annotated[dict[str, str], AfterValidator(FrozenTags)]


class NetworkInterface(Frozen):
    """A network interface as the node's shape holds it: what it is and where it is attached. Its id is the node's
    own (`Node.interface_ids`), so the nodes of a pool share their interfaces."""

    # The cloud's own word for the NIC: AWS InterfaceType (interface | efa | efa-only | trunk), GCP nicType
    # (GVNIC | VIRTIO_NET | MRDMA ...), Azure "nic". Which of them carry the fabric is the provider's call.
    interface_type: str = "interface"
    network: str | None = None  # AWS VPC id, Azure virtual network id, GCP network URL
    subnet: str | None = None
    security_groups: tuple[str, ...] = ()
    # True: has (or asks for) a public address; None: not said (a template leaves it to the subnet).
    public_ip: bool | None = False
    network_card_index: Index = 0
    device_index: Index = 0
    # Whether the cloud accelerates it (Azure accelerated networking, read off the NIC's own record when the
    # shape is made); None: not said, or the record was not seen.
    accelerated: bool | None = None


class Placement(Frozen):
    """A neutral reference to what places a node: an AWS placement group, Capacity Block or capacity
    reservation; an Azure scale set, availability set or proximity placement group; a GCP resource policy."""

    kind: str  # e.g. "placement-group", "capacity-block", "capacity-reservation", "scale-set", "resource-policy"
    id: str


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


class NodeSpec(Frozen):
    """What would launch a node that does not exist yet."""

    kind: str  # "launch-template", "scale-set-model", "instance-template", "terraform"
    name: str
    version: str | None = None
    role: str | None = None  # how the spec is used, e.g. "the default and latest version"


class SourceLocation(Model):
    """Where a planned node is declared: its Terraform address, the file and line of the resource block (when the
    configuration was read), and the cloud's own id when the resource exists already."""

    address: str
    file: str | None = None
    line: int | None = Field(default=None, ge=1)
    cloud_id: str | None = None


Counts = tuple[tuple[str, int], ...]  # (resource name, quantity) pairs, sorted


class PodPart(Frozen):
    """What a Kubernetes pod (provider k8s) asks of the node it runs on, and what that node offers: the fabric is
    opt-in a second time in Kubernetes, so the node's type alone does not say what the pod gets. The pod's node
    (type, zone, pool) is the rest of its shape."""

    workload: str  # namespace/Kind/name of the pod's top owner, or namespace/Pod/name for a bare pod
    kind: str  # that owner's kind (PyTorchJob, JobSet, StatefulSet ...)
    node: str | None = None  # the Kubernetes node it runs on; None: pending, or a manifest's pod
    node_pool: str | None = None  # EKS node group, GKE node pool, AKS agent pool, Karpenter node pool
    cloud: str | None = None  # aws | gcp | azure: the node's cloud (spec.providerID, else its type)
    instance: str | None = None  # the node's cloud instance id (from spec.providerID), to join a cloud report
    cloud_account: str | None = None  # that instance's GCP project or Azure subscription (an AWS providerID names none)
    gpus: Count = 0  # accelerators the pod requests
    requests: Counts = ()  # fabric resources it requests (vpc.amazonaws.com/efa, rdma/*, hugepages-*)
    allocatable: Counts | None = None  # fabric resources its node advertises; None: not known (no node)
    ipc_lock: bool = False  # some container adds IPC_LOCK (or runs privileged)
    default_interface: str | None = None  # networking.gke.io/default-interface
    networks: tuple[str, ...] = ()  # networks mapped in networking.gke.io/interfaces, default one excepted
    interfaces: tuple[str, ...] = ()  # the interface names that annotation gives those networks (eth1, eth2 ...)
    host_network: bool = False  # spec.hostNetwork: the pod sees every NIC of its node (not its devices)
    containers: tuple[tuple[str, str], ...] = ()  # (name, image) of its containers and native sidecars
    env: tuple[tuple[str, str], ...] = ()  # NCCL_* and FI_* settings in its containers' env
    # NCCL_* and FI_* settings an MPIJob's launcher passes its ranks (mpirun -x NAME=VALUE, or -x NAME with the
    # launcher's own value): what the ranks on this worker see, where its own env does not reach them.
    launcher_env: tuple[tuple[str, str], ...] = ()
    privileged: bool = False  # some container runs privileged: it sees every device of its node (fabric included)
    host_paths: tuple[str, ...] = ()  # hostPath volumes under /dev it mounts (/dev/infiniband ...)
    claimed: Counts = ()  # devices its DRA ResourceClaims give it, by kind (gpu, fabric-nic, imex-channel)
    claims_unknown: tuple[str, ...] = ()  # claims whose devices could not be told (unknown class, claim not read)
    # rdma/* resources it requests that none of its node candidates (its node, or those its selector allows) advertise
    unadvertised: tuple[str, ...] = ()


class SlurmPart(Frozen):
    """What Slurm (provider slurm) says of a node as one partition schedules it: the partition, where the topology
    plugin puts the node, and the cloud instance it was joined to (providers/slurm/join.py). The instance's type,
    zone and placement are the rest of its shape. Slurm's topology stays here, Slurm's own words, until the model
    has a neutral one."""

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


class NodeShape(Frozen):
    """Everything about a node but its name and its own values (state, topology, source location, unknown facts,
    interface ids): the nodes of one scale set, node pool or launch template share one shape, and every fact and
    verdict is a function of it. What a provider reads from other resources by the node's own ids (Azure NIC
    acceleration, VM extensions; an AWS instance's VpcId) is copied onto the shape when it is made."""

    provider: Provider = "aws"
    account: str
    region: str
    origin: Origin = "running"
    spec: NodeSpec | None = None
    zone: str | None = None
    instance_type: str | None = None  # None only for a spec that leaves the type to something else
    image: str | None = None
    tags: Tags = Field(default_factory=FrozenTags)
    interfaces: tuple[NetworkInterface, ...] = ()
    placement: tuple[Placement, ...] = ()
    network: str | None = None  # the node's own network when it lists no interfaces (AWS VpcId of a pending launch)
    software: tuple[str, ...] = ()  # agents the cloud installed on it (Azure VM extensions: publisher/type)
    # GPUs attached to this node beside what its type has (GCP N1 guestAccelerators: instances of one N1 type attach
    # none, one or several GPUs of a kind they choose); None: the type says (the capability's accelerators).
    accelerators: Count | None = None
    accelerator: str | None = None  # their kind, as the accelerator table names it ("V100"), else as the API does
    pod: PodPart | None = None  # provider k8s: the pod this node stands for
    slurm: SlurmPart | None = None  # provider slurm: the Slurm node and partition this node stands for
    # GCP: what VPC firewall rules target it by, its network tags ("tag:NAME", instances.tags.items) and service
    # accounts ("sa:EMAIL", instances.serviceAccounts[].email); None: not read (rules are then taken to apply).
    firewall_targets: tuple[str, ...] | None = None

    def placed_by(self, kind: str) -> str | None:
        """The id of this node's placement of `kind`, if any."""
        for placement in self.placement:
            if placement.kind == kind:
                return placement.id
        return None

    @functools.cached_property
    def primary_interface(self) -> NetworkInterface | None:
        if len(self.interfaces) < 2:
            return self.interfaces[0] if self.interfaces else None
        return min(self.interfaces, key=_CARD_AND_DEVICE)

    def scope_key(self, resource_id: str) -> tuple[str, str, str]:
        return (self.account, self.region, resource_id)


_CARD_AND_DEVICE = operator.attrgetter("network_card_index", "device_index")


class FlatInterface(NetworkInterface):
    """A network interface as a flat node lists it (a plan, a template): its id beside its values. A node keeps the
    id as its own (`Node.interface_ids`) and the rest in its shape."""

    id: str

    def values(self) -> NetworkInterface:
        return NetworkInterface.model_construct(**{k: v for k, v in self.__dict__.items() if k != "id"})


# A node's own values; everything else a flat node (a saved inventory, a rule example, a plan) names is its shape.
_OWN_FIELDS = frozenset({"id", "state", "topology", "source", "unknown", "interface_ids"})
# The order a flat node's fields are written in (saved inventories).
_FLAT_ORDER = (
    "account", "region", "id", "provider", "origin", "spec", "zone", "instance_type", "state", "image", "tags",
    "interfaces", "placement", "network", "software", "accelerators", "accelerator", "pod", "slurm", "topology",
    "source", "unknown",
)  # fmt: skip
# Absent from nodes whose type says it all, and that no one published a topology of.
_WRITTEN_WHEN_SET = frozenset({"accelerators", "accelerator", "pod", "slurm", "topology"})


class Node(Model):
    """One instance / VM that runs, or would run from a template or plan (then `shape.spec` says what): its id,
    its own values and its shape. Read and written flat (a saved inventory, a rule example, a plan's values), with
    each interface's id beside the interface."""

    id: str
    state: str = "running"
    topology: Topology | None = None  # where it sits in the published network and NVLink fabric; None: not told
    source: SourceLocation | None = None  # a planned node's Terraform resource
    # Neutral facts its source leaves unknown (a plan's values known only after apply), with why.
    unknown: dict[str, str] = Field(default_factory=dict)
    interface_ids: tuple[str, ...] = ()  # the ids of the shape's interfaces, in their order
    shape: NodeShape

    @classmethod
    def flat(cls, **values: Any) -> Node:
        """A node from its flat fields (every field beside its id, interfaces with their ids), validated."""
        return cls.model_validate(values)

    @model_validator(mode="before")
    @classmethod
    def _from_flat(cls, data: Any) -> Any:
        """A flat node (every field beside its id, each interface with its id) split into its own values and its
        shape."""
        if not isinstance(data, dict) or "shape" in data:
            return data
        if "network_nodes" in data:  # a saved inventory of an earlier version: its network nodes, top layer first
            data = dict(data)
            levels = data.pop("network_nodes")
            if levels is not None and "topology" not in data:
                data["topology"] = {"source": "network_nodes", "levels": levels}
        own = {k: v for k, v in data.items() if k in _OWN_FIELDS}
        shape = {k: v for k, v in data.items() if k not in _OWN_FIELDS}
        interfaces = shape.get("interfaces")
        if isinstance(interfaces, list | tuple) and all(isinstance(i, dict | FlatInterface) for i in interfaces):
            own["interface_ids"] = [i.id if isinstance(i, FlatInterface) else i.get("id") for i in interfaces]
            shape["interfaces"] = [
                i.values() if isinstance(i, FlatInterface) else {k: v for k, v in i.items() if k != "id"}
                for i in interfaces
            ]
        own["shape"] = shape
        return own

    @model_serializer(mode="wrap")
    def _to_flat(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        own = handler(self)
        values: dict[str, Any] = {**own.pop("shape"), **own}
        ids = values.pop("interface_ids")
        values["interfaces"] = [{"id": i, **nic} for i, nic in zip(ids, values["interfaces"], strict=True)]
        return {
            name: values[name] for name in _FLAT_ORDER if name not in _WRITTEN_WHEN_SET or values[name] is not None
        }

    @model_validator(mode="after")
    def _one_id_per_interface(self) -> Node:
        if len(self.interface_ids) != len(self.shape.interfaces):
            raise ValueError(f"{len(self.interface_ids)} interface ids for {len(self.shape.interfaces)} interfaces")
        return self

    # The shape's values, read as the node's own.
    @property
    def provider(self) -> Provider:
        return self.shape.provider

    @property
    def account(self) -> str:
        return self.shape.account

    @property
    def region(self) -> str:
        return self.shape.region

    @property
    def origin(self) -> Origin:
        return self.shape.origin

    @property
    def spec(self) -> NodeSpec | None:
        return self.shape.spec

    @property
    def zone(self) -> str | None:
        return self.shape.zone

    @property
    def instance_type(self) -> str | None:
        return self.shape.instance_type

    @property
    def image(self) -> str | None:
        return self.shape.image

    @property
    def tags(self) -> dict[str, str]:
        return self.shape.tags

    @property
    def interfaces(self) -> tuple[NetworkInterface, ...]:
        return self.shape.interfaces

    @property
    def placement(self) -> tuple[Placement, ...]:
        return self.shape.placement

    def placed_by(self, kind: str) -> str | None:
        return self.shape.placed_by(kind)

    @property
    def primary_interface(self) -> NetworkInterface | None:
        return self.shape.primary_interface

    def scope_key(self, resource_id: str) -> tuple[str, str, str]:
        return (self.shape.account, self.shape.region, resource_id)


class CollectionError(Model):
    """Something that could not be collected. Any of these makes the run incomplete."""

    # The provider whose facts were not collected; for an evidence command that could not run (bad usage, unreadable
    # input), the command itself.
    provider: Provider | Literal["nccl-log", "nccl-tests"] = "aws"
    account: str = UNKNOWN_ACCOUNT
    region: str | None = None
    call: str  # e.g. "DescribeInstances" or "describe-instances.json"
    code: str  # AccessDenied, Throttled, Unreachable, MissingDump, ...
    message: str
    permission: str | None = None  # the permission that was missing, when known


class ScopeStatus(Model):
    """How the collection of one scope went (an AWS account in a region, an Azure subscription, a GCP project):
    complete or not and why, the nodes it held, and the API requests it took (retries included)."""

    provider: Provider
    account: str
    region: str | None = None
    complete: bool
    nodes: int = 0
    api_calls: int = 0  # HTTP requests sent, retries included
    retries: int = 0
    reason: str | None = None  # why it is incomplete (its errors, in short)


def field_path(location: tuple[int | str, ...]) -> str:
    """Where a validation error is, as the flat file names it: a node's shape is no field of the file."""
    return ".".join(str(part) for part in location if part != "shape")


def fact_key(provider: str, account: str, region: str, fact: str) -> str:
    """How `Inventory.collected` records that one kind of fact was collected for one account and region."""
    return f"{provider}:{account}:{region}:{fact}"
