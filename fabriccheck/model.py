"""The cloud-neutral part of the model every source ends in.

A node is a node on every cloud: an EC2 instance, an Azure VM or a Compute Engine instance, and equally a node
that a launch template, a scale-set model or a Terraform plan would launch (`origin`). Each node carries its
scope (`account`: AWS account id, Azure subscription id, GCP project id), its network interfaces each with
their own network and subnet, and its placement as neutral references (kind + id). Resources that exist on
one cloud only (security groups, scale sets, resource policies ...) live in that provider's namespace of the
`Inventory` (fabriccheck/inventory.py). Raw API answers are dropped after normalization.
"""

from __future__ import annotations

import operator
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 2

Provider = Literal["aws", "azure", "gcp"]
PROVIDERS: tuple[Provider, ...] = ("aws", "azure", "gcp")
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


class NetworkInterface(Model):
    id: str
    # The cloud's own word for the NIC: AWS InterfaceType (interface | efa | efa-only | trunk), GCP nicType
    # (GVNIC | VIRTIO_NET | MRDMA ...), Azure "nic". Which of them carry the fabric is the provider's call.
    interface_type: str = "interface"
    network: str | None = None  # AWS VPC id, Azure virtual network id, GCP network URL
    subnet: str | None = None
    security_groups: list[str] = Field(default_factory=list)
    # True: has (or asks for) a public address; None: not said (a template leaves it to the subnet).
    public_ip: bool | None = False
    network_card_index: Index = 0
    device_index: Index = 0


class Placement(Model):
    """A neutral reference to what places a node: an AWS placement group, Capacity Block or capacity
    reservation; an Azure scale set, availability set or proximity placement group; a GCP resource policy."""

    kind: str  # e.g. "placement-group", "capacity-block", "capacity-reservation", "scale-set", "resource-policy"
    id: str


class NodeSpec(Model):
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


class Node(Scoped):
    """One instance / VM that runs, or would run from a template or plan (then `spec` says what)."""

    id: str
    provider: Provider = "aws"
    origin: Origin = "running"
    spec: NodeSpec | None = None
    zone: str | None = None
    instance_type: str | None = None  # None only for a spec that leaves the type to something else
    state: str = "running"
    image: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)
    interfaces: list[NetworkInterface] = Field(default_factory=list)
    placement: list[Placement] = Field(default_factory=list)
    network_nodes: list[str] | None = None  # network topology, top layer first; None when not collected
    source: SourceLocation | None = None  # a planned node's Terraform resource
    # Neutral facts its source leaves unknown (a plan's values known only after apply), with why.
    unknown: dict[str, str] = Field(default_factory=dict)

    def placed_by(self, kind: str) -> str | None:
        """The id of this node's placement of `kind`, if any."""
        for placement in self.placement:
            if placement.kind == kind:
                return placement.id
        return None

    @property
    def primary_interface(self) -> NetworkInterface | None:
        if len(self.interfaces) < 2:
            return self.interfaces[0] if self.interfaces else None
        return min(self.interfaces, key=_CARD_AND_DEVICE)


_CARD_AND_DEVICE = operator.attrgetter("network_card_index", "device_index")


class CollectionError(Model):
    """Something that could not be collected. Any of these makes the run incomplete."""

    provider: Provider = "aws"
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


def fact_key(provider: str, account: str, region: str, fact: str) -> str:
    """How `Inventory.collected` records that one kind of fact was collected for one account and region."""
    return f"{provider}:{account}:{region}:{fact}"
