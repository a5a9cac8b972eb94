"""The one inventory model every source ends in.

A live AWS account, a saved snapshot and (later) a Terraform plan or another cloud all normalize into
`Inventory`, so a rule written once judges them alike. The model keeps only the facts rules and the
penalty model need; raw API responses are dropped after normalization.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1

Provider = Literal["aws", "azure", "gcp"]


class Model(BaseModel):
    # Unknown keys in a saved inventory are a user error worth naming, not something to drop silently.
    model_config = ConfigDict(extra="forbid", frozen=False)


class FabricKind(StrEnum):
    EFA = "efa"
    INFINIBAND = "infiniband"
    TCPX = "gpudirect-tcpx"
    TCPXO = "gpudirect-tcpxo"
    RDMA = "rdma"
    NONE = "none"


class Capability(Model):
    """What an instance type offers, from the cloud's own API or the shipped catalog."""

    instance_type: str
    provider: Provider
    fabric: FabricKind
    fabric_interfaces: int = 0  # most fabric NICs the type takes (MaximumEfaInterfaces on AWS)
    fabric_gbps: float | None = None  # total fabric bandwidth, one direction
    ethernet_gbps: float | None = None  # what ordinary TCP traffic can use when the fabric is not used
    gpudirect_rdma: bool | None = None
    network_cards: int | None = None
    accelerators: int = 0
    accelerator_name: str | None = None  # "H100", "A100", "Trainium", ...
    source: str  # "EC2 DescribeInstanceTypes (live)" or a catalog citation
    as_of: str | None = None  # date the row was checked, for catalog rows


class NetworkInterface(Model):
    id: str
    interface_type: str = "interface"  # AWS InterfaceType: interface | efa | efa-only | trunk ...
    network_card_index: int = 0
    device_index: int = 0
    subnet_id: str | None = None
    security_group_ids: list[str] = Field(default_factory=list)
    public_ip: bool = False

    @property
    def is_fabric(self) -> bool:
        return self.interface_type in ("efa", "efa-only")


class Node(Model):
    """One instance / VM."""

    id: str
    provider: Provider = "aws"
    account: str | None = None
    region: str
    zone: str | None = None
    vpc_id: str | None = None
    subnet_id: str | None = None
    instance_type: str
    state: str = "running"
    image_id: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)
    interfaces: list[NetworkInterface] = Field(default_factory=list)
    placement_group: str | None = None
    capacity_reservation_id: str | None = None
    capacity_block_id: str | None = None
    network_nodes: list[str] | None = None  # EC2 topology, top layer first; None when not collected


class PlacementGroup(Model):
    name: str
    region: str
    strategy: str  # cluster | spread | partition
    state: str = "available"
    id: str | None = None


class SecurityRule(Model):
    protocol: str  # "-1" means all traffic
    group_ids: list[str] = Field(default_factory=list)
    cidrs: list[str] = Field(default_factory=list)


class SecurityGroup(Model):
    id: str
    region: str
    name: str | None = None
    vpc_id: str | None = None
    ingress: list[SecurityRule] = Field(default_factory=list)
    egress: list[SecurityRule] = Field(default_factory=list)

    def allows_all_with_itself(self) -> bool:
        """EFA's rule: all traffic in AND out, each naming this group itself (ParallelCluster's
        EfaSecurityGroupValidator). Egress to 0.0.0.0/0 alone does not count."""

        def has(rules: list[SecurityRule]) -> bool:
            return any(r.protocol == "-1" and self.id in r.group_ids for r in rules)

        return has(self.ingress) and has(self.egress)


class Subnet(Model):
    id: str
    region: str
    vpc_id: str | None = None
    zone: str | None = None
    map_public_ip_on_launch: bool = False


class CapacityReservation(Model):
    id: str
    region: str
    reservation_type: str | None = None  # "capacity-block" for Capacity Blocks
    instance_type: str | None = None
    placement_group_arn: str | None = None


class TemplateInterface(Model):
    interface_type: str = "interface"
    network_card_index: int = 0
    device_index: int = 0
    associate_public_ip: bool | None = None
    subnet_id: str | None = None


class LaunchTemplate(Model):
    """A launch template version that node groups or scaling groups would launch from."""

    id: str
    name: str
    version: int
    region: str
    is_default: bool = False
    is_latest: bool = False
    instance_type: str | None = None  # None: chosen elsewhere (scaling group override, node group)
    interfaces: list[TemplateInterface] = Field(default_factory=list)
    placement_group: str | None = None


class CollectionError(Model):
    """Something that could not be collected. Any of these makes the run incomplete."""

    provider: Provider = "aws"
    region: str | None = None
    call: str  # e.g. "DescribeInstances" or "describe-instances.json"
    code: str  # AccessDenied, Throttled, Unreachable, MissingDump, ...
    message: str
    permission: str | None = None  # the IAM action that was missing, when known


class Inventory(Model):
    schema_version: int = SCHEMA_VERSION
    source: str = "unknown"  # "aws live", "aws dump DIR", "snapshot FILE", ...
    nodes: list[Node] = Field(default_factory=list)
    capabilities: dict[str, Capability] = Field(default_factory=dict)  # live answers, by instance type
    placement_groups: list[PlacementGroup] = Field(default_factory=list)
    security_groups: list[SecurityGroup] = Field(default_factory=list)
    subnets: list[Subnet] = Field(default_factory=list)
    capacity_reservations: list[CapacityReservation] = Field(default_factory=list)
    launch_templates: list[LaunchTemplate] = Field(default_factory=list)
    errors: list[CollectionError] = Field(default_factory=list)
    # Which kinds of facts were collected at all; a rule needing facts that were not collected stays silent
    # and the report says so, rather than judging on an empty list.
    collected: list[str] = Field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.errors

    def merge(self, other: Inventory) -> None:
        self.nodes.extend(other.nodes)
        self.capabilities.update(other.capabilities)
        self.placement_groups.extend(other.placement_groups)
        self.security_groups.extend(other.security_groups)
        self.subnets.extend(other.subnets)
        self.capacity_reservations.extend(other.capacity_reservations)
        self.launch_templates.extend(other.launch_templates)
        self.errors.extend(other.errors)
        self.collected = sorted(set(self.collected) | set(other.collected))
