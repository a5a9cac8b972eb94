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
from typing import Annotated, Any, Literal, NoReturn, TypeVar

from pydantic import (
    AfterValidator,
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)

from fabriccheck.resources.azure import AzureNicPart
from fabriccheck.resources.gcp import GcpNodePart
from fabriccheck.resources.k8s import PodPart
from fabriccheck.resources.slurm import SlurmPart

# The base models and bounds live one room down (values.py), where the provider parts below build on them too; they
# are read from here as they always were.
from fabriccheck.values import MAX_COUNT as MAX_COUNT
from fabriccheck.values import MAX_GBPS as MAX_GBPS
from fabriccheck.values import MAX_INDEX as MAX_INDEX
from fabriccheck.values import Count as Count
from fabriccheck.values import Frozen as Frozen
from fabriccheck.values import Gbps as Gbps
from fabriccheck.values import Index as Index
from fabriccheck.values import Model as Model
from fabriccheck.values import Scoped as Scoped
from fabriccheck.values import Topology as Topology

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

# What only one provider's nodes or NICs have is no field of the neutral model: it is a part of that provider's
# (resources/<provider>.py), held in a node's `extensions` or a NIC's `extension` and told apart by its `provider`.
# A provider with a part of its own adds it to the union here (issue 30 item 4).
NodePart = Annotated[GcpNodePart | PodPart | SlurmPart, Field(discriminator="provider")]
NicPart = Annotated[AzureNicPart, Field(discriminator="provider")]
Part = TypeVar("Part", bound=Frozen)
# Keys a flat node or NIC held before a provider's part held them (saved inventories, rule examples, custom rules'
# examples): read into that part. A null value was "not said", which is the part's absence.
_NODE_KEYS_MOVED: dict[str, type[Frozen]] = {"firewall_targets": GcpNodePart}
_NIC_KEYS_MOVED: dict[str, type[Frozen]] = {"accelerated": AzureNicPart}
# Keys a flat node held a whole part in before its provider's part went into `extensions`.
_NODE_PARTS_MOVED: dict[str, type[Frozen]] = {"pod": PodPart, "slurm": SlurmPart}


def _moved_keys(
    data: dict[str, Any], fields: dict[str, type[Frozen]], parts: Mapping[str, type[Frozen]] = {}
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """`data` (a flat node or NIC) without the keys a provider's part holds now, and those parts: `fields` held one
    field of a part each, `parts` a whole part."""
    if not (fields.keys() | parts.keys()) & data.keys():
        return data, []
    data = dict(data)
    found: dict[type[Frozen], dict[str, Any]] = {}
    for key, part in fields.items():
        if key in data and (value := data.pop(key)) is not None:
            found.setdefault(part, {"provider": part.model_fields["provider"].default})[key] = value
    for key, part in parts.items():
        value = data.pop(key, None)
        if isinstance(value, dict):
            found[part] = {"provider": part.model_fields["provider"].default, **value}
        elif value is not None:
            found[part] = value  # not a part: the validation names it
    return data, list(found.values())


def part_of(parts: tuple[Frozen, ...], kind: type[Part]) -> Part | None:
    """The part of `kind` among `parts`, if any."""
    return next((part for part in parts if isinstance(part, kind)), None)


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
    # What only its cloud says of it (Azure's accelerated networking: resources.azure.AzureNicPart); None: nothing.
    extension: NicPart | None = None

    @model_validator(mode="before")
    @classmethod
    def _moved_into_parts(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        values, parts = _moved_keys(data, _NIC_KEYS_MOVED)
        return {**values, "extension": parts[0]} if parts else values

    def part(self, kind: type[Part]) -> Part | None:
        """Its extension if that is a `kind`, else None."""
        return part_of((self.extension,) if self.extension is not None else (), kind)


class Placement(Frozen):
    """A neutral reference to what places a node: an AWS placement group, Capacity Block or capacity
    reservation; an Azure scale set, availability set or proximity placement group; a GCP resource policy."""

    kind: str  # e.g. "placement-group", "capacity-block", "capacity-reservation", "scale-set", "resource-policy"
    id: str


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
    # What only one provider's nodes have, at most one part per provider (resources/<provider>.py): a Compute Engine
    # instance's firewall targets, the pod a k8s node stands for, the Slurm node and partition a slurm node stands
    # for. A Slurm node joined to an instance keeps the instance's parts beside its own.
    extensions: tuple[NodePart, ...] = ()

    @model_validator(mode="after")
    def _one_part_per_provider(self) -> NodeShape:
        providers = [part.provider for part in self.extensions]
        if len(set(providers)) != len(providers):
            raise ValueError(f"more than one extension of one provider: {', '.join(providers)}")
        return self

    def part(self, kind: type[Part]) -> Part | None:
        """Its provider part of `kind`, if it has one."""
        return part_of(self.extensions, kind)

    def with_part(self, part: NodePart) -> tuple[NodePart, ...]:
        """Its extensions with `part` in place of any of that part's kind (for a copy's `extensions`)."""
        return (*self.without_part(type(part)), part)

    def without_part(self, kind: type[Frozen]) -> tuple[NodePart, ...]:
        """Its extensions but the one of `kind` (for a copy's `extensions`)."""
        return tuple(part for part in self.extensions if not isinstance(part, kind))

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
    "interfaces", "placement", "network", "software", "accelerators", "accelerator", "extensions",
    "topology", "source", "unknown",
)  # fmt: skip
# Absent from nodes whose type says it all, that no one published a topology of, and that have no provider part.
_WRITTEN_WHEN_SET = frozenset({"accelerators", "accelerator", "extensions", "topology"})


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
        # Keys written before a provider's part held them.
        data, parts = _moved_keys(data, _NODE_KEYS_MOVED, _NODE_PARTS_MOVED)
        if parts:
            data["extensions"] = [*(data.get("extensions") or []), *parts]
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
            name: values[name]
            for name in _FLAT_ORDER
            if name not in _WRITTEN_WHEN_SET or values[name] not in (None, [], ())
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
